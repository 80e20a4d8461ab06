// mirror-target, mirror-host, mirror-request-body through the running proxy: a main backend and a
// mirror backend both get each request (method, `$request_uri`, the body); the copy's Host is
// mirror-host (default the target's host name); `mirror-request-body: off` sends no body; a mirror
// that never answers, refuses connections or cannot keep up with a streamed body never delays or
// fails the client's request; an invalid target is a diagnostic and mirrors nothing; a route without
// the annotations, or after a swap that removed them, mirrors nothing.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { dataplaneError } from '../../lib/dataplane/events.ts';
import type { ModelDescription } from '../../lib/debug-model.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { get, listen, type SendOptions, send, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { parseExposition, sampleValue } from '../support/prometheus.ts';
import { nextSwap } from '../support/swaps.ts';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

async function bodyOf(req: IncomingMessage): Promise<string> {
  let text = '';
  req.setEncoding('utf8');
  for await (const chunk of req) text += chunk;
  return text;
}

/** A backend recording every request (once its body is read); `seen(url)` waits for a request to `url`. */
async function recorder(answer: (res: ServerResponse) => void) {
  const requests: Seen[] = [];
  const waiters: Array<{ url: string; resolve: (s: Seen) => void }> = [];
  const server = createServer(async (req, res) => {
    const body = await bodyOf(req);
    const seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
    requests.push(seen);
    for (const w of waiters.filter((w) => w.url === seen.url)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(seen);
    }
    answer(res);
  });
  const port = await listen(server);
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const seen = (url: string): Promise<Seen> => {
    const found = requests.find((s) => s.url === url);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve) => waiters.push({ url, resolve }));
  };
  return { port, requests, seen };
}

t.test('mirror-target through the proxy', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-mirror-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));

  const main = await recorder((res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('main');
  });
  const mirror = await recorder((res) => {
    res.writeHead(500);
    res.end('the mirror answer is ignored');
  });
  // a mirror that accepts copies and never answers (nor reads their bodies)
  const hang = createServer();
  const hangPort = await listen(hang);
  t.teardown(() => {
    hang.closeAllConnections();
    hang.close();
  });
  // a port nobody listens on: connections are refused
  const closed = createServer();
  const refusedPort = await listen(closed);
  await new Promise<void>((resolve) => closed.close(() => resolve()));

  const m = `http://127.0.0.1:${mirror.port}`;
  const site = (name: string, annotations: Record<string, string> = {}) =>
    ingressYaml({ name, host: `${name}.test`, service: 'main', annotations });
  const manifests = (getAnnotations: Record<string, string>) =>
    [
      INGRESS_CLASS,
      serviceYaml('main', [main.port]),
      site('get', getAnnotations),
      site('path', { 'mirror-target': `${m}/copy/$scheme/$host$request_uri` }),
      site('nobody', { 'mirror-target': `${m}$request_uri`, 'mirror-request-body': 'off' }),
      site('stream', { 'mirror-target': `${m}$request_uri`, 'proxy-request-buffering': 'off' }),
      site('hang', { 'mirror-target': `http://127.0.0.1:${hangPort}$request_uri` }),
      site('hangstream', {
        'mirror-target': `http://127.0.0.1:${hangPort}$request_uri`,
        'proxy-request-buffering': 'off',
        'proxy-body-size': '0',
      }),
      site('refused', { 'mirror-target': `http://127.0.0.1:${refusedPort}$request_uri` }),
      site('bad', { 'mirror-target': `${m}/a b` }),
      site('plain'),
    ].join('');
  const mirrored = { 'mirror-target': `${m}$request_uri`, 'mirror-host': 'mirror.example' };
  await writeFile(join(dir, 'all.yaml'), manifests(mirrored));
  const controller = await start(testConfig(dir), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;
  const request = (host: string, path: string, options: SendOptions = {}) =>
    send(port, `${host}.test`, path, options);
  const mirrorCounts = async () => {
    const metrics = parseExposition((await get(controller.healthz.port, 'localhost', '/metrics')).body);
    const of = (result: string) => sampleValue(metrics, 'ingress_ts_mirror_requests_total', { result }) ?? 0;
    return { answered: of('answered'), failed: of('failed'), dropped: of('dropped') };
  };

  // first: the only mirror failure reported so far (reports are rate-limited to one a minute)
  t.test('a mirror refusing connections: the client is served, the failure counted and logged', async (t) => {
    const reported = new Promise<{ message: string; code?: string }>((resolve) => {
      const onError = (message: unknown) => {
        const m = message as { message: string; code?: string };
        if (!m.message.startsWith('mirror:')) return;
        unsubscribe(dataplaneError.name, onError);
        resolve(m);
      };
      subscribe(dataplaneError.name, onError);
    });
    const reply = await request('refused', '/r1');
    t.equal(reply.status, 200);
    t.equal(reply.body, 'main');
    t.equal((await main.seen('/r1')).method, 'GET');
    const report = await reported;
    t.equal(report.code, 'ECONNREFUSED');
    t.match(report.message, /1 request copies failed/);
    t.ok((await mirrorCounts()).failed >= 1, 'ingress_ts_mirror_requests_total{result="failed"}');
  });

  t.test('GET: the copy has the method, $request_uri, mirror-host and the client headers', async (t) => {
    const reply = await request('get', '/g/1?x=1&y=%20', {
      headers: { 'x-custom': 'yes', connection: 'x-hop', 'x-hop': '1' },
    });
    t.equal(reply.status, 200);
    t.equal(reply.body, 'main', "the client gets the main backend's answer, not the mirror's 500");
    const copy = await mirror.seen('/g/1?x=1&y=%20');
    t.equal(copy.method, 'GET');
    t.equal(copy.headers.host, 'mirror.example', 'Host: mirror-host');
    t.equal(copy.headers['x-custom'], 'yes', "the client's headers");
    t.equal(copy.headers['x-hop'], undefined, 'not the ones Connection names');
    t.equal(
      copy.headers['x-forwarded-for'],
      undefined,
      'no X-Forwarded-* of the proxy (ingress-nginx sets only Host)',
    );
    t.equal(copy.headers['content-length'], undefined);
    t.equal(copy.body, '');
    const original = await main.seen('/g/1?x=1&y=%20');
    t.equal(original.headers.host, 'get.test', 'the upstream request is unchanged');
    t.equal(original.headers['x-forwarded-for'], '127.0.0.1');
  });

  t.test('POST: the body reaches both (request buffering on)', async (t) => {
    const reply = await request('get', '/p/1', { method: 'POST', body: 'hello mirror' });
    t.equal(reply.status, 200);
    const copy = await mirror.seen('/p/1');
    t.equal(copy.method, 'POST');
    t.equal(copy.body, 'hello mirror');
    t.equal(copy.headers['content-length'], '12');
    t.equal((await main.seen('/p/1')).body, 'hello mirror');
  });

  t.test('streamed body (proxy-request-buffering off): the chunks reach both', async (t) => {
    const chunks = ['a'.repeat(5000), 'b'.repeat(7000), 'c'];
    const reply = await request('stream', '/s/1', { method: 'PUT', chunks });
    t.equal(reply.status, 200);
    const copy = await mirror.seen('/s/1');
    t.equal(copy.method, 'PUT');
    t.equal(copy.body, chunks.join(''));
    t.equal((await main.seen('/s/1')).body, chunks.join(''));
  });

  t.test('the default Host is the target host name; $scheme and $host in the target', async (t) => {
    await request('path', '/v?q=1');
    const copy = await mirror.seen('/copy/http/path.test/v?q=1');
    t.equal(copy.headers.host, '127.0.0.1', 'the host name of the target, without its port');
  });

  t.test('mirror-request-body off: the copy has no body', async (t) => {
    const reply = await request('nobody', '/n/1', { method: 'POST', body: 'secret' });
    t.equal(reply.status, 200);
    const copy = await mirror.seen('/n/1');
    t.equal(copy.method, 'POST');
    t.equal(copy.body, '');
    t.not(copy.headers['content-length'], '6', 'not the length of a body it does not carry');
    t.equal((await main.seen('/n/1')).body, 'secret', 'the upstream still gets it');
  });

  t.test('a mirror that never answers does not delay the client', async (t) => {
    const arrived = once(hang, 'request') as Promise<[IncomingMessage, ServerResponse]>;
    const reply = await request('hang', '/h/1', { method: 'POST', body: 'x' });
    t.equal(reply.status, 200, 'answered while the copy is unanswered');
    const [copy, res] = await arrived;
    t.equal(copy.url, '/h/1');
    t.equal(res.writableEnded, false, 'the mirror still has not answered');
    // again on the same client connection: the proxy is not stuck behind the mirror
    const again = await request('hang', '/h/2');
    t.equal(again.status, 200);
  });

  t.test(
    'a streamed body the mirror does not read: the upstream gets it all, the copy is dropped',
    async (t) => {
      const before = (await mirrorCounts()).dropped;
      // far more than the 1 MiB mirror backlog plus what the loopback socket buffers hold
      const chunks = Array.from({ length: 64 }, (_, i) =>
        String.fromCharCode(97 + (i % 26)).repeat(256 * 1024),
      );
      const reply = await request('hangstream', '/hs/1', { method: 'POST', chunks });
      t.equal(reply.status, 200);
      const original = await main.seen('/hs/1');
      t.equal(original.body.length, 16 * 1024 * 1024, 'the upstream got the whole 16 MiB');
      t.ok((await mirrorCounts()).dropped > before, 'the copy that fell behind is counted as dropped');
    },
  );

  t.test('an invalid mirror-target: a diagnostic, nothing mirrored, the Ingress served', async (t) => {
    const model = JSON.parse(
      (await get(controller.healthz.port, 'localhost', '/debug/model')).body,
    ) as ModelDescription;
    t.match(model.diagnostics['Ingress e2e/bad'], [{ code: 'ANNOTATION_INVALID', severity: 'warning' }]);
    t.equal(model.hosts.find((h) => h.host === 'bad.test')?.routes[0]?.mirror, undefined);
    const reply = await request('bad', '/bad/1');
    t.equal(reply.status, 200);
    // a mirrored request sent after it arrives; a copy of the first would have gone out before
    await request('get', '/marker/bad');
    await mirror.seen('/marker/bad');
    t.notOk(
      mirror.requests.some((s) => s.url.includes('/bad/1')),
      'no copy of the request',
    );
  });

  t.test('/debug/model shows the mirror settings of a route', async (t) => {
    const model = JSON.parse(
      (await get(controller.healthz.port, 'localhost', '/debug/model')).body,
    ) as ModelDescription;
    const route = (host: string) => model.hosts.find((h) => h.host === host)?.routes[0];
    t.strictSame(route('get.test')?.mirror, {
      target: `${m}$request_uri`,
      host: 'mirror.example',
      requestBody: true,
    });
    t.equal(route('nobody.test')?.mirror?.requestBody, false);
    t.equal(route('plain.test')?.mirror, undefined);
  });

  t.test('a route without mirror annotations mirrors nothing', async (t) => {
    const reply = await request('plain', '/plain/1', { method: 'POST', body: 'p' });
    t.equal(reply.status, 200);
    await request('get', '/marker/plain');
    await mirror.seen('/marker/plain');
    t.notOk(
      mirror.requests.some((s) => s.url.includes('/plain/1')),
      'no copy of the request',
    );
    t.ok((await mirrorCounts()).answered >= 1, 'answered copies are counted');
  });

  t.test('a swap removing the annotations stops the mirroring', async (t) => {
    const swapped = nextSwap();
    await writeFile(join(dir, 'all.yaml'), manifests({}));
    await swapped;
    const reply = await request('get', '/after/1');
    t.equal(reply.status, 200);
    await request('nobody', '/marker/swap');
    await mirror.seen('/marker/swap');
    t.notOk(
      mirror.requests.some((s) => s.url.includes('/after/1')),
      'no copy after the swap',
    );
    t.equal((await main.seen('/after/1')).method, 'GET');
  });
});
