// What the routing page reads on the status port, from a running standalone controller: the
// Ingresses with their annotations (credentials never shown), the ewma scores, the ETag and 304 of
// an unchanged model, gzip and compact JSON; /debug/traffic's per-route counts after real requests
// (summed over the data-plane threads with INGRESS_TS_TEST_THREADS=2); and
// --enable-debug-pages=false, which leaves every debug page answering 404.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { type IncomingHttpHeaders, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import t, { type Test } from 'tap';
import { DataPlaneThreads } from '../../lib/dataplane/worker/pool.ts';
import type { ModelDescription } from '../../lib/debug-model.ts';
import { createLogger } from '../../lib/log.ts';
import { type Controller, start } from '../../lib/main.ts';
import type { TrafficDescription } from '../../lib/metrics/traffic.ts';
import { echoBackend, send } from '../support/echo.ts';
import { listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS } from '../support/manifests.ts';
import { nextSwap } from '../support/swaps.ts';
import { THREAD_MODE } from '../support/threads.ts';

const TOKEN = 's3cr3t-t0ken';

function objects(port: number): string {
  return `${INGRESS_CLASS}---
apiVersion: v1
kind: Service
metadata: { name: web, namespace: e2e }
spec: { ports: [{ name: http, port: 80, targetPort: ${port} }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: web-1, namespace: e2e, labels: { kubernetes.io/service-name: web } }
addressType: IPv4
ports: [{ name: http, port: ${port}, protocol: TCP }]
endpoints: [{ addresses: [127.0.0.1] }]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: other, namespace: e2e, annotations: { kubernetes.io/ingress.class: someone-else } }
spec:
  rules: [{ host: other.example.test, http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }] } }]
`;
}

/** refused (a snippet, a URL with userinfo), so not served, but listed with its annotations */
const SECRETS = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: secrets
  namespace: e2e
  creationTimestamp: "2026-03-02T10:00:00Z"
  annotations:
    nginx.ingress.kubernetes.io/configuration-snippet: |
      more_set_input_headers "Authorization: Bearer ${TOKEN}";
    nginx.ingress.kubernetes.io/auth-url: "https://user:${TOKEN}@auth.example.test/check?token=${TOKEN}&x=$arg_x"
    nginx.ingress.kubernetes.io/upstream-api-token: "${TOKEN}"
spec:
  ingressClassName: ingress-ts
  rules:
    - host: secrets.example.test
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }] }
`;

function site(extra = ''): string {
  return `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: site
  namespace: e2e
  creationTimestamp: "2026-03-01T10:00:00Z"
  annotations:
    nginx.ingress.kubernetes.io/load-balance: ewma
    example.com/owner: team-a${extra}
spec:
  ingressClassName: ingress-ts
  rules:
    - host: site.example.test
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }] }
`;
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** GET on the status port with these request headers; the body as received (not decoded). */
function fetchRaw(port: number, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ port, host: '127.0.0.1', path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

async function startSite(t: Test, ...flags: string[]): Promise<{ controller: Controller; dir: string }> {
  const backend: Server = echoBackend('web');
  const port = await listen(backend);
  t.teardown(() => new Promise<void>((resolve) => backend.close(() => resolve())));
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-debug-pages-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'objects.yaml'), objects(port));
  await writeFile(join(dir, 'site.yaml'), site());
  await writeFile(join(dir, 'secrets.yaml'), SECRETS);
  const discard = new Writable({ write: (_chunk, _encoding, done) => done() });
  const controller = await start(testConfig(dir, ...flags), createLogger('silent'), {
    accessLogStdout: discard,
    // the first test follows a change: each new version described at once
    describeEveryVersion: true,
  });
  t.teardown(() => controller.stop(0));
  return { controller, dir };
}

t.test('/debug/model: annotations redacted, ewma scores, ETag and 304, gzip, compact', async (t) => {
  const { controller, dir } = await startSite(t);
  // traffic first: the scores have something to show
  for (let i = 0; i < 8; i++) {
    t.equal((await send(controller.http.port, 'site.example.test', '/')).status, 200);
  }
  const status = controller.healthz.port;
  const first = await fetchRaw(status, '/debug/model');
  t.equal(first.status, 200);
  t.equal(first.headers['cache-control'], 'no-cache', 'kept, but asked again every time');
  t.match(first.headers.etag, /^W\/"[0-9a-f]{16}\.\d+(\.\d+)?"$/);
  t.equal(first.headers['content-encoding'], undefined, 'no gzip unless asked for');
  const text = first.body.toString('utf8');
  t.notOk(text.includes(TOKEN), 'the token appears nowhere');
  t.match(text, /^\{\n {2}"hash"/, 'pretty-printed by default');
  const model = JSON.parse(text) as ModelDescription;

  t.strictSame(
    model.ingresses,
    {
      'e2e/secrets': {
        annotations: {
          'nginx.ingress.kubernetes.io/auth-url': 'https://***@auth.example.test/check?token=***&x=$arg_x',
          'nginx.ingress.kubernetes.io/configuration-snippet': '***',
          'nginx.ingress.kubernetes.io/upstream-api-token': '***',
        },
        created: '2026-03-02T10:00:00Z',
        class: 'ingress-ts',
      },
      'e2e/site': {
        annotations: { 'nginx.ingress.kubernetes.io/load-balance': 'ewma' },
        created: '2026-03-01T10:00:00Z',
        class: 'ingress-ts',
      },
    },
    'every Ingress of this class (served or not), the prefix only, credentials redacted',
  );
  const web = model.backends.find((b) => b.name === 'e2e-web-80');
  t.equal(web?.balancer, 'ewma');
  const key = web?.endpoints[0] ?? '';
  t.match(key, /^127\.0\.0\.1:\d+$/);
  t.strictSame(Object.keys(web?.scores ?? {}), [key], 'a score per served endpoint');
  if (THREAD_MODE) t.type(web?.scores?.[key], 'number', "the first thread's score");
  else t.ok((web?.scores?.[key] ?? 0) > 0, 'the endpoint has answered: its score is its latency');
  t.equal(web?.notReady, undefined, 'every endpoint is ready');

  const etag = first.headers.etag as string;
  const again = await fetchRaw(status, '/debug/model', { 'If-None-Match': etag });
  t.equal(again.status, 304, 'an unchanged model: 304');
  t.equal(again.body.length, 0);
  t.equal(again.headers.etag, etag);

  const zipped = await fetchRaw(status, '/debug/model', { 'Accept-Encoding': 'br, gzip;q=0.8' });
  t.equal(zipped.status, 200);
  t.equal(zipped.headers['content-encoding'], 'gzip');
  t.equal(zipped.headers.vary, 'Accept-Encoding');
  t.equal(zipped.headers.etag, etag);
  t.ok(
    zipped.body.length < first.body.length / 3,
    `gzip: ${zipped.body.length} of ${first.body.length} bytes`,
  );
  t.equal(gunzipSync(zipped.body).toString('utf8'), text, 'the same answer, compressed');
  const refused = await fetchRaw(status, '/debug/model', { 'Accept-Encoding': 'gzip;q=0' });
  t.equal(refused.headers['content-encoding'], undefined, 'q=0: not gzip');

  const compact = await fetchRaw(status, '/debug/model?compact=1');
  const compactText = compact.body.toString('utf8');
  t.notOk(compactText.includes('\n '), 'compact: one line');
  t.strictSame(JSON.parse(compactText), model, 'the same JSON');

  // an annotation changed: a new version, a new ETag, the new value
  const swapped = nextSwap();
  await writeFile(join(dir, 'site.yaml'), site('\n    nginx.ingress.kubernetes.io/proxy-read-timeout: "30"'));
  await swapped;
  const changed = await fetchRaw(status, '/debug/model', { 'If-None-Match': etag });
  t.equal(changed.status, 200, 'the old ETag no longer matches');
  t.not(changed.headers.etag, etag);
  const changedModel = JSON.parse(changed.body.toString('utf8')) as ModelDescription;
  t.equal(
    changedModel.ingresses?.['e2e/site']?.annotations['nginx.ingress.kubernetes.io/proxy-read-timeout'],
    '30',
  );
});

t.test('/debug/traffic: per-route requests, rate, error rate and p99 from the metrics', async (t) => {
  const { controller } = await startSite(t);
  const status = controller.healthz.port;
  for (let i = 0; i < 15; i++) {
    const path = i % 5 === 0 ? '/status/503' : '/ok';
    await send(controller.http.port, 'site.example.test', path);
  }
  if (THREAD_MODE) {
    // 15 connections of their own: the kernel spreads them over both threads' sockets
    t.ok(controller.handle instanceof DataPlaneThreads);
    const pool = controller.handle as DataPlaneThreads;
    await pool.flushed();
    t.ok(
      pool.threads.every((thread) => thread.requests > 0),
      `every thread served some: ${pool.threads.map((thread) => thread.requests).join(' + ')}`,
    );
  }
  const answer = await fetchRaw(status, '/debug/traffic');
  t.equal(answer.status, 200);
  t.equal(answer.headers['cache-control'], 'no-cache', 'kept until the next sample, asked again');
  t.match(answer.headers.etag, /^W\/"[0-9a-z]+\.\d+"$/, 'an ETag per sample tick');
  const notModified = await fetchRaw(status, '/debug/traffic', {
    'If-None-Match': answer.headers.etag as string,
  });
  t.ok(
    notModified.status === 304 || notModified.headers.etag !== answer.headers.etag,
    'its ETag: 304 until the next tick',
  );
  const traffic = JSON.parse(answer.body.toString('utf8')) as TrafficDescription;
  t.equal(traffic.metricsEnabled, true);
  t.ok(traffic.windowSeconds > 0 && traffic.windowSeconds <= 60, `window ${traffic.windowSeconds}s`);
  t.ok(Math.abs(Date.parse(traffic.sampledAt) - Date.now()) < 60_000, 'sampled now');
  t.equal(traffic.routes.length, 1, 'one route (summed over the threads with INGRESS_TS_TEST_THREADS=2)');
  const [route] = traffic.routes;
  t.match(route, {
    host: 'site.example.test',
    ingress: 'e2e/site',
    path: '/',
    service: 'web',
    canary: '',
    requests: 15,
    errorRate: 3 / 15,
  });
  t.ok(
    Math.abs((route?.rate ?? 0) - 15 / traffic.windowSeconds) < 1e-6,
    'rate: requests per second of the window',
  );
  t.ok((route?.p99 ?? 0) > 0 && (route?.p99 ?? 1) <= 10, `p99 ${route?.p99}s within the buckets`);

  const compact = await fetchRaw(status, '/debug/traffic?compact=1', { 'Accept-Encoding': 'gzip' });
  t.equal(compact.headers['content-encoding'], undefined, 'small answers are not compressed');
  t.notOk(compact.body.toString('utf8').trimEnd().includes('\n'), 'compact: one line');
});

t.test('/debug/traffic without metrics, and without the host label', async (t) => {
  const { controller } = await startSite(t, '--enable-metrics=false');
  await send(controller.http.port, 'site.example.test', '/');
  const off = JSON.parse(
    (await fetchRaw(controller.healthz.port, '/debug/traffic')).body.toString(),
  ) as TrafficDescription;
  t.equal(off.metricsEnabled, false, 'says metrics are off');
  t.strictSame(off.routes, []);
  t.equal((await fetchRaw(controller.healthz.port, '/debug/model')).status, 200, '/debug/model still served');

  const perRoute = await startSite(t, '--metrics-per-host=false');
  await send(perRoute.controller.http.port, 'site.example.test', '/');
  const traffic = JSON.parse(
    (await fetchRaw(perRoute.controller.healthz.port, '/debug/traffic')).body.toString(),
  ) as TrafficDescription;
  t.equal(traffic.routes.length, 1);
  t.notOk('host' in (traffic.routes[0] ?? {}), 'no host label, no host field');
  t.equal(traffic.routes[0]?.requests, 1);
});

t.test('--enable-debug-pages=false: every debug page answers 404, the rest is served', async (t) => {
  const { controller } = await startSite(t, '--enable-debug-pages=false');
  const status = controller.healthz.port;
  for (const path of ['/debug/model', '/debug/model?compact=1', '/debug/traffic', '/debug/routing']) {
    t.equal((await fetchRaw(status, path)).status, 404, path);
  }
  t.equal((await fetchRaw(status, '/metrics')).status, 200, '/metrics');
  t.equal((await fetchRaw(status, '/healthz')).status, 200, '/healthz');
});
