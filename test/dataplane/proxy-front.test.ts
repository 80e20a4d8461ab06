// The listeners' PROXY front on real sockets: the verdict stored on the socket (peerOf, the server
// port) for a trusted and an untrusted balancer and for LOCAL; off, a connection passes untouched;
// malformed headers reported at most once per interval without their bytes; connections still sending
// their header cut by destroyPending.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { once } from 'node:events';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { peerOf, proxiedServerPort } from '../../lib/dataplane/access/access.ts';
import { dataplaneError } from '../../lib/dataplane/events.ts';
import {
  createProxyProtocolFront,
  type ProxyProtocolSettings,
} from '../../lib/dataplane/listening/proxy-front.ts';
import { encodeProxyV1, encodeProxyV2 } from '../../lib/dataplane/listening/proxy-protocol.ts';

const HEADER = encodeProxyV1({ address: '203.0.113.7', port: 4000 }, { address: '10.0.0.1', port: 8443 });

/** A server whose connections go through a front with `settings()`; resolves each handed-on socket. */
async function frontServer(t: Test, settings: () => ProxyProtocolSettings) {
  const front = createProxyProtocolFront(settings);
  const handed: Socket[] = [];
  const all: Socket[] = [];
  const server = createServer((socket) => {
    all.push(socket);
    front.accept(socket, (next) => {
      handed.push(next);
      server.emit('handed');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    for (const s of all) s.destroy();
    server.close();
  });
  const port = (server.address() as AddressInfo).port;
  const next = async () => {
    while (handed.length === 0) await once(server, 'handed');
    return handed.shift() as Socket;
  };
  const open = (bytes: Buffer | string) => {
    const client = connect(port, '127.0.0.1');
    client.on('error', () => {});
    client.write(bytes);
    t.teardown(() => client.destroy());
    return client;
  };
  return { front, next, open, server };
}

const on = (trusted: (address: string) => boolean): ProxyProtocolSettings => ({
  proxyProtocol: { headerTimeoutMs: 5000 },
  trustedPeer: trusted,
});

t.test('the verdict on the socket', async (t) => {
  let settings = on(() => true);
  const { next, open } = await frontServer(t, () => settings);

  open(HEADER);
  const trusted = await next();
  t.strictSame([peerOf(trusted), proxiedServerPort(trusted)], ['203.0.113.7', 8443], 'a trusted balancer');

  settings = on((address) => address !== '127.0.0.1');
  open(HEADER);
  const untrusted = await next();
  t.strictSame(
    [peerOf(untrusted), proxiedServerPort(untrusted)],
    ['127.0.0.1', 8443],
    'an untrusted balancer: its own address, the port it was asked for',
  );

  settings = on(() => true);
  open(encodeProxyV2({ address: 'x', port: 1 }, { address: 'y', port: 2 }));
  const local = await next();
  t.strictSame([peerOf(local), proxiedServerPort(local)], ['127.0.0.1', undefined], 'LOCAL: the socket');

  open(encodeProxyV2({ address: '::ffff:192.0.2.5', port: 1 }, { address: '::ffff:10.0.0.1', port: 80 }));
  t.equal(peerOf(await next()), '192.0.2.5', 'an IPv4-mapped source as IPv4');

  settings = { proxyProtocol: null, trustedPeer: () => true };
  const client = open('GET / HTTP/1.1\r\n\r\n');
  const plain = await next();
  t.equal(peerOf(plain), '127.0.0.1', 'off: untouched');
  plain.setEncoding('latin1');
  const [first] = (await once(plain, 'data')) as [string];
  t.equal(first, 'GET / HTTP/1.1\r\n\r\n', 'off: nothing read ahead');
  client.destroy();
});

t.test('malformed headers: one report per interval, never their bytes', async (t) => {
  const messages: { message: string; peer: string }[] = [];
  const onError = (message: unknown) => messages.push(message as { message: string; peer: string });
  subscribe(dataplaneError.name, onError);
  t.teardown(() => unsubscribe(dataplaneError.name, onError));
  const { open } = await frontServer(t, () => on(() => true));
  const closed = (socket: Socket) => new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await closed(open('GET /secret?token=abc HTTP/1.1\r\n\r\n'));
  await closed(open('PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n'));
  t.strictSame(messages, [
    { message: 'PROXY protocol: no PROXY header; connection closed', peer: '127.0.0.1' },
  ]);
  t.notMatch(JSON.stringify(messages), /secret|token/, 'no byte of the client');
});

t.test('the deadline: one sweeping timer closes a connection whose header is late', async (t) => {
  const { open, next } = await frontServer(t, () => ({
    proxyProtocol: { headerTimeoutMs: 1000 },
    trustedPeer: () => true,
  }));
  const late = open('PROXY TCP4 ');
  let lateClosed = false;
  const closed = new Promise<void>((resolve) =>
    late.once('close', () => {
      lateClosed = true;
      resolve();
    }),
  );
  const onTime = open(HEADER);
  t.equal(peerOf(await next()), '203.0.113.7', 'a header in time goes on');
  t.equal(lateClosed, false, 'the late one is still waiting when the other went on');
  await closed;
  t.equal(onTime.destroyed, false, 'the one in time is left open');
});

t.test('destroyPending cuts the connections still sending their header', async (t) => {
  const { front, open, server } = await frontServer(t, () => on(() => true));
  const client = open('PROXY TCP4 ');
  await once(server, 'connection');
  const gone = new Promise<void>((resolve) => client.once('close', () => resolve()));
  // the front took the connection in the same 'connection' event: it waits for the rest of the header
  front.destroyPending();
  await gone;
  t.pass('closed');
});
