// Which request header names NGINX ignores, as a table (name, underscores allowed → ignored?), and
// the drop itself on a request: rawHeaders and headers both lose the header, pseudo-headers stay.
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import type { Duplex } from 'node:stream';
import t from 'tap';
import { dropIgnoredHeaders, ignoredHeaderName } from '../../lib/dataplane/listening/header-names.ts';

const ROWS: Array<[name: string, underscores: boolean, ignored: boolean]> = [
  ['Host', false, false],
  ['X-Request-ID', false, false],
  ['x-b3-traceid', false, false],
  ['Accept-Language', false, false],
  ['X_Custom', false, true],
  ['X_Custom', true, false],
  ['_', false, true],
  ['_', true, false],
  ['X.Dot', false, true],
  ['X.Dot', true, true],
  ["X'Quote", true, true],
  ['X~Tilde', true, true],
  ['X|Bar', true, true],
  ['X!Bang', true, true],
  ['X#Hash', true, true],
  ['X*Star', true, true],
  ['X+Plus', true, true],
  ['X^Caret', true, true],
  ['X`Tick', true, true],
  ['X$Dollar', true, true],
  ['X%Pct', true, true],
  ['X&Amp', true, true],
  ['Xé', true, true],
  // HTTP/2 pseudo-headers are the request line, never judged; a colon elsewhere is
  [':authority', false, false],
  [':path', false, false],
  ['x:y', false, true],
];

t.test('names NGINX takes: letters, digits, -, and _ when enabled', async (t) => {
  for (const [name, underscores, ignored] of ROWS) {
    t.equal(ignoredHeaderName(name, underscores), ignored, `${name} (underscores ${underscores})`);
  }
});

const request = (raw: string[]) => {
  const headers: Record<string, string> = {};
  for (let i = 0; i < raw.length; i += 2) headers[(raw[i] as string).toLowerCase()] = raw[i + 1] as string;
  return { rawHeaders: raw, headers, httpVersionMajor: 1 } as unknown as IncomingMessage;
};

t.test('the drop: rawHeaders and headers lose the header, the rest keep their order', async (t) => {
  const raw = ['Host', 'a.test', 'X_One', '1', 'X-Keep', 'k', 'X.Two', '2', 'x_one', '3', 'Accept', '*/*'];
  const req = request([...raw]);
  dropIgnoredHeaders(req, false, true);
  t.strictSame(req.rawHeaders, ['Host', 'a.test', 'X-Keep', 'k', 'Accept', '*/*']);
  t.strictSame(Object.keys(req.headers).sort(), ['accept', 'host', 'x-keep']);

  const underscores = request([...raw]);
  dropIgnoredHeaders(underscores, true, true);
  t.strictSame(underscores.rawHeaders, [
    'Host',
    'a.test',
    'X_One',
    '1',
    'X-Keep',
    'k',
    'x_one',
    '3',
    'Accept',
    '*/*',
  ]);

  const kept = request([...raw]);
  dropIgnoredHeaders(kept, false, false);
  t.strictSame(kept.rawHeaders, raw, 'ignore-invalid-headers false: nothing is dropped, underscores neither');
});

t.test(
  "on Node's own request: headers and headersDistinct agree with rawHeaders, built or not",
  async (t) => {
    const server = createServer();
    const seen = new Promise<[string[], string[], string[]]>((resolve) => {
      // an upgrade request: Node has not built req.headers yet when it is handed over
      server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
        dropIgnoredHeaders(req, false, true);
        resolve([req.rawHeaders, Object.keys(req.headers), Object.keys(req.headersDistinct)]);
        socket.destroy();
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    t.teardown(() => server.close());
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write(
      'GET / HTTP/1.1\r\nHost: a\r\nX_Under: 1\r\nX.Dot: 2\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
    );
    const [raw, headers, distinct] = await seen;
    t.strictSame(raw, ['Host', 'a', 'Connection', 'Upgrade', 'Upgrade', 'websocket']);
    t.strictSame(headers.sort(), ['connection', 'host', 'upgrade']);
    t.strictSame(distinct.sort(), ['connection', 'host', 'upgrade']);
  },
);
