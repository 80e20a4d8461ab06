// Request bodies swept through every path they can take, so that a crash of this class is caught
// here: (HTTP/1.1, HTTPS/1.1, h2) × (Content-Length, chunked, empty, cut midway) × a host per
// body-related annotation set (proxy-body-size 0 / small / large, proxy-request-buffering on/off,
// client-body-buffer-size, limit-rate, mirror-target with mirror-request-body, custom-http-errors,
// proxy-next-upstream with retries over a dead endpoint, auth-url, canary, and all of them at once)
// × two ConfigMaps (the defaults; the body keys set globally). Properties: every request that was
// sent whole gets a response (never a hang, never the boundary's 500); after each batch the process
// still serves a plain request, no exception escaped and none needed the boundary; bytes_sent is
// never negative; at the end no upstream request is left in flight (the stop completes). Seeded, so
// a failure replays; about 5 s here.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import fc from 'fast-check';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import {
  allowingAuth,
  bodyBackend,
  collectRecords,
  type Framing,
  type Protocol,
  sendBody,
  until,
  watchFailures,
} from '../support/body-traffic.ts';
import { get, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { nextSwap } from '../support/swaps.ts';
import { withTestThreads } from '../support/threads.ts';

t.setTimeout(90_000);

const PROTOCOLS: readonly Protocol[] = ['http', 'https', 'h2'];
const FRAMINGS: readonly Framing[] = ['content-length', 'chunked', 'empty', 'aborted'];

/** A port nothing listens on: a refused connection, for proxy-next-upstream's retries. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function configMap(data: Record<string, string>): string {
  const entries = Object.entries(withTestThreads(data))
    .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
    .join(', ');
  return `---
apiVersion: v1
kind: ConfigMap
metadata: { name: config, namespace: e2e }
data: { ${entries} }
`;
}

t.test('request bodies through every body-related setting', async (t) => {
  const failures = watchFailures(t);
  const records = collectRecords(t);
  const { port } = await bodyBackend(t);
  const authUrl = await allowingAuth(t);
  const mirror = `http://127.0.0.1:${port}/mirror$request_uri`;
  const dead = await deadPort();

  const everything = {
    'proxy-body-size': '0',
    'proxy-request-buffering': 'off',
    'client-body-buffer-size': '1k',
    'limit-rate': '100',
    'limit-rate-after': '1',
    'mirror-target': mirror,
    'mirror-request-body': 'on',
    'custom-http-errors': '502,503',
    'default-backend': 'web',
    'proxy-next-upstream': 'error timeout http_502',
    'proxy-next-upstream-tries': '3',
    'auth-url': authUrl,
  };
  /** host → annotations (the service is `web`, except where the host's name says `flaky`) */
  const hosts: Record<string, Record<string, string>> = {
    'defaults.test': {},
    'size-zero.test': { 'proxy-body-size': '0' },
    'size-small.test': { 'proxy-body-size': '1k' },
    'size-large.test': { 'proxy-body-size': '100m' },
    'buffered.test': { 'proxy-request-buffering': 'on', 'client-body-buffer-size': '1k' },
    'streamed.test': { 'proxy-request-buffering': 'off' },
    'streamed-small.test': { 'proxy-request-buffering': 'off', 'proxy-body-size': '1k' },
    'rate.test': { 'limit-rate': '10', 'limit-rate-after': '1' },
    'mirror.test': { 'mirror-target': mirror, 'mirror-request-body': 'on' },
    'mirror-streamed.test': {
      'mirror-target': mirror,
      'mirror-request-body': 'on',
      'proxy-request-buffering': 'off',
    },
    'errors.test': { 'custom-http-errors': '502,503', 'default-backend': 'web' },
    'flaky.test': { 'proxy-next-upstream': 'error timeout http_502', 'proxy-next-upstream-tries': '3' },
    'flaky-streamed.test': {
      'proxy-next-upstream': 'error timeout non_idempotent',
      'proxy-next-upstream-tries': '3',
      'proxy-request-buffering': 'off',
    },
    'auth.test': { 'auth-url': authUrl },
    'auth-streamed.test': { 'auth-url': authUrl, 'proxy-request-buffering': 'off', 'proxy-body-size': '0' },
    'canary.test': {},
    'everything.test': everything,
    'everything-flaky.test': everything,
  };
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-body-fuzz-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const yaml = [
    INGRESS_CLASS,
    serviceYaml('web', [port]),
    // two endpoints, one refusing: every other try fails and is retried
    serviceYaml('flaky', [dead, port]),
    ...Object.entries(hosts).map(([host, annotations], i) =>
      ingressYaml({
        name: `h${i}`,
        host,
        service: host.startsWith('flaky') || host === 'everything-flaky.test' ? 'flaky' : 'web',
        annotations,
      }),
    ),
    ingressYaml({
      name: 'canary',
      host: 'canary.test',
      service: 'web',
      created: '2026-01-02T00:00:00Z',
      annotations: { canary: 'true', 'canary-weight': '50', 'proxy-request-buffering': 'off' },
    }),
    // a host whose canary takes the body with other limits than its main route
    ingressYaml({
      name: 'canary-small',
      host: 'size-small.test',
      service: 'web',
      created: '2026-01-02T00:00:00Z',
      annotations: { canary: 'true', 'canary-weight': '50', 'proxy-body-size': '2k' },
    }),
  ].join('');
  await writeFile(join(dir, 'all.yaml'), yaml);
  const configFile = join(dir, 'config.yaml');
  await writeFile(configFile, configMap({}));
  const controller = await start(testConfig(dir, '--configmap', 'e2e/config'), createLogger('silent'), {
    accessLogStdout: new Writable({ write: (_chunk, _encoding, done) => done() }),
  });
  t.teardown(() => controller.stop(0));
  const ports = { http: controller.http.port, https: controller.https.port };

  const configMaps: Array<Record<string, string>> = [
    {},
    {
      'proxy-body-size': '2k',
      'proxy-request-buffering': 'off',
      'client-body-buffer-size': '1k',
      'client-body-timeout': '2',
      'limit-rate': '50',
      'custom-http-errors': '413,502',
      'proxy-next-upstream': 'error http_502',
      'proxy-next-upstream-tries': '2',
      'proxy-buffering': 'on',
    },
  ];
  // bodies: empty, under 1k, between 1k and 2k, over 2k; methods with and without bodies
  const cases = fc.record({
    host: fc.constantFrom(...Object.keys(hosts)),
    size: fc.constantFrom(0, 1, 700, 1500, 5000, 70_000),
    method: fc.constantFrom('POST', 'PUT', 'PATCH', 'GET', 'DELETE'),
    path: fc.constantFrom('/', '/upload', '/status/502', '/size/3000'),
  });
  let seed = 20_261_126;
  // requests that got an answer: each has a record (an aborted one may have one too)
  let answered = 0;
  for (const [n, data] of configMaps.entries()) {
    if (n > 0) {
      const swapped = nextSwap();
      await writeFile(configFile, configMap(data));
      await swapped;
    }
    for (const protocol of PROTOCOLS) {
      for (const framing of FRAMINGS) {
        const batch = fc.sample(cases, { numRuns: 14, seed: seed++ });
        const outcomes = await Promise.all(
          batch.map((c) =>
            sendBody({
              ...ports,
              protocol,
              framing,
              host: c.host,
              path: c.path,
              method: c.method,
              body: 'z'.repeat(c.size),
            }).then((outcome) => ({ c, outcome })),
          ),
        );
        const where = `ConfigMap ${n}, ${protocol}, ${framing}`;
        for (const { c, outcome } of outcomes) {
          if (outcome.status > 0) answered++;
          const label = `${where}: ${c.method} ${c.host}${c.path} ${c.size} B → ${outcome.status} ${outcome.error ?? ''}`;
          if (outcome.status === -1) t.fail(`a hang: ${label}`);
          else if (framing !== 'aborted' && (outcome.status === 0 || outcome.status === 500)) {
            // a body sent whole gets an answer; 500 is the error boundary's
            t.fail(label);
          }
        }
        t.equal((await get(ports.http, 'defaults.test', '/')).status, 200, `${where}: still serving`);
        answered++;
        failures.check();
        t.same(failures.contained, [], `${where}: nothing needed the boundary`);
      }
    }
  }
  // each record counts its own request's bytes, cut ones included (never the connection's, never < 0)
  // (aborted requests: a record or none, depending on how far the request got, so no fixed count)
  t.ok(await until(() => records.length >= answered), `records: ${records.length} for ${answered} answered`);
  // with data-plane threads, what they hold has arrived too
  await controller.handle.flushed?.();
  t.same(
    records
      .filter((r) => r.bytesSent < 0 || (r.status < 499 && r.bytesSent === 0))
      .map((r) => `${r.method} ${r.host} ${r.status}`),
    [],
    'bytes_sent is never negative, and never 0 with a response',
  );
  failures.check();
  // nothing was left holding an upstream request open (e.g. a request whose client left while its
  // auth-url check ran): the stop closes every upstream pool, which waits for each request in flight
  // (a request left open would hold the stop until the file's timeout fails it)
  await controller.stop(0);
  t.pass('the controller stops: no upstream request left in flight');
});
