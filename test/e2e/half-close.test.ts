// A client that half-closes its connection right after its request (writes it, then shuts down its
// sending side, as `nc -N` does) is treated as NGINX treats it, which is what ingress-nginx users see:
// a request the proxy answers itself (an unknown host's 404) is answered; a proxied one is not, its
// upstream request is closed and it is logged 499 ("epoll_wait() reported that client prematurely
// closed connection, so upstream connection is closed too": NGINX 1.22 measured, proxy_ignore_client_abort
// off as ingress-nginx leaves it), with compression or without, over HTTP and HTTPS.
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { accessLogSink } from '../support/access-log-sink.ts';
import { listen, testConfig } from '../support/http.ts';
import { JSON_LOG_KEYS } from '../support/json-log-format.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { raw } from '../support/raw-http.ts';
import { withTestThreads } from '../support/threads.ts';

const HOST = 'half.test';

/** The request over TLS, the client's side closed (close_notify, then FIN) once it is written. */
function tlsHalfClosed(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = tlsConnect(
      { port, host: '127.0.0.1', servername: HOST, rejectUnauthorized: false },
      () => {
        socket.end(request);
      },
    );
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
}

t.test('a client that half-closes after its request, as NGINX treats it', async (t) => {
  // the backend holds every request: the client's FIN always comes before an answer could
  const held: IncomingMessage[] = [];
  const backend = createServer((req) => {
    held.push(req);
  });
  const backendPort = await listen(backend);
  t.teardown(() => {
    backend.closeAllConnections();
    backend.close();
  });
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-half-close-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'all.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('half', [backendPort]),
      ingressYaml({ name: 'half', host: HOST, service: 'half' }),
      `---\napiVersion: v1\nkind: ConfigMap\nmetadata: { name: ingress-ts, namespace: e2e }\ndata: ${JSON.stringify(
        withTestThreads({
          ...JSON_LOG_KEYS,
          'use-gzip': 'true',
          'enable-access-log-for-default-backend': 'true',
        }),
      )}\n`,
    ].join(''),
  );
  const log = accessLogSink();
  const controller = await start(testConfig(dir, '--configmap', 'e2e/ingress-ts'), createLogger('silent'), {
    accessLogStdout: log.stream,
  });
  t.teardown(() => controller.stop(0));

  await t.test('answered by the proxy itself: answered', async (t) => {
    const reply = await raw(controller.http.port, 'GET /local HTTP/1.1\r\nHost: nowhere.test\r\n\r\n');
    t.equal(reply.status, 404, "the default backend's 404 reaches the half-closed client");
    t.match(reply.text, '<center><h1>404 Not Found</h1></center>');
    t.ok(reply.closed);
    const line = JSON.parse(await log.line('"request_uri":"/local"'));
    t.equal(line.status, 404);
  });

  for (const compressed of [false, true]) {
    const encoding = compressed ? 'Accept-Encoding: gzip\r\n' : '';
    const label = compressed ? 'gzip accepted' : 'no compression';
    for (const scheme of ['http', 'https']) {
      await t.test(`proxied over ${scheme}, ${label}: 499, the upstream request closed`, async (t) => {
        const path = `/${scheme}-${compressed ? 'gzip' : 'plain'}`;
        const request = `GET ${path} HTTP/1.1\r\nHost: ${HOST}\r\n${encoding}\r\n`;
        const answer =
          scheme === 'http'
            ? raw(controller.http.port, request).then((reply) => reply.text)
            : tlsHalfClosed(controller.https.port, request);
        t.equal(await answer, '', 'no answer, the connection closed');
        const line = JSON.parse(await log.line(`"request_uri":"${path}"`));
        t.equal(line.status, 499, 'logged 499');
        t.equal(line.proxy_upstream_name, 'e2e-half-80');
        // the upstream may have got the request (or only the connection): whatever it got is closed
        for (const req of held.splice(0)) if (!req.socket.destroyed) await once(req.socket, 'close');
        t.pass('the upstream request was closed, as NGINX closes it');
      });
    }
  }
});
