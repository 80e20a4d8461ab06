// Canary Ingresses through the real proxy (standalone controller, two echo backends): weight shares
// measured over 20,000 requests each (±2%, about 5 standard deviations), weight-total, header
// always/never/value/pattern/invalid pattern, cookie always/never, the fall-through order, a canary
// without endpoints, a canary without a main Ingress, and the `canary` label of the request metrics.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { echoServer } from '../../examples/demo-backends.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { get, listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { parseExposition, samplesOf } from '../support/prometheus.ts';
import { rawGets } from '../support/raw-gets.ts';

t.setTimeout(180_000); // 80,000 requests; tap's 30 s default is too short on a shared CI machine
const agent = new Agent({ keepAlive: true, maxSockets: 32 });
t.teardown(() => agent.destroy());

/** The backend ("main" or "canary") that answered one request. */
function backendFor(port: number, host: string, headers: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      { port, host: '127.0.0.1', path: '/', agent, headers: { host, ...headers } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () =>
          resolve(
            res.statusCode === 200
              ? (JSON.parse(body) as { backend: string }).backend
              : String(res.statusCode),
          ),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The share of `n` requests the canary served, with 32 requests in flight. */
async function canaryShare(port: number, host: string, n: number): Promise<number> {
  const replies = await rawGets(port, host, Array<string>(n).fill('/'), 32);
  const canary = replies.filter(
    (reply) => reply.status === 200 && (JSON.parse(reply.body) as { backend: string }).backend === 'canary',
  ).length;
  return canary / n;
}

const service = (name: string, port: number | null) => serviceYaml(name, port === null ? [] : [port]);
const ingress = (
  name: string,
  host: string,
  svc: string,
  annotations: Record<string, string> = {},
  created?: string,
) => ingressYaml({ name, host, service: svc, annotations, created });
/** An Ingress with only a spec.defaultBackend: the catch-all (or a canary of it). */
const catchAll = (name: string, svc: string, annotations: Record<string, string>, created?: string) =>
  ingressYaml({ name, host: null, service: svc, annotations, created });

/** A main Ingress on `host` and a canary of it with `annotations`. */
const pair = (host: string, annotations: Record<string, string>) =>
  ingress(`${host}-main`, host, 'main') +
  ingress(`${host}-canary`, host, 'canary', { canary: 'true', ...annotations }, '2026-01-02T00:00:00Z');

t.test('canary routing through the proxy', async (t) => {
  const main = echoServer('main');
  const canary = echoServer('canary');
  const canary2 = echoServer('canary2');
  const ports = { main: await listen(main), canary: await listen(canary), canary2: await listen(canary2) };
  for (const server of [main, canary, canary2])
    t.teardown(() => new Promise((resolve) => server.close(resolve)));
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-canary-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'all.yaml'),
    [
      INGRESS_CLASS,
      service('main', ports.main),
      service('canary', ports.canary),
      service('empty', null),
      service('canary2', ports.canary2),
      pair('w10.test', { 'canary-weight': '10' }),
      pair('w50.test', { 'canary-weight': '50' }),
      pair('w90.test', { 'canary-weight': '90' }),
      pair('total1000.test', { 'canary-weight': '100', 'canary-weight-total': '1000' }),
      pair('total50.test', { 'canary-weight': '25', 'canary-weight-total': '50' }),
      pair('header.test', { 'canary-by-header': 'X-Canary', 'canary-by-cookie': 'beta' }),
      pair('value.test', {
        'canary-by-header': 'X-Canary',
        'canary-by-header-value': 'yes',
        'canary-by-cookie': 'beta',
      }),
      pair('pattern.test', {
        'canary-by-header': 'X-Region',
        'canary-by-header-pattern': '^eu-(west|north)',
      }),
      pair('bad.test', {
        'canary-by-header': 'X-Region',
        'canary-by-header-pattern': '(eu',
        'canary-weight': '100',
      }),
      ingress('noeps-main', 'noeps.test', 'main'),
      ingress(
        'noeps-canary',
        'noeps.test',
        'empty',
        { canary: 'true', 'canary-weight': '100' },
        '2026-01-02T00:00:00Z',
      ),
      ingress('lost', 'lost.test', 'canary', { canary: 'true', 'canary-weight': '100' }),
      ingress('down-main', 'down.test', 'empty'),
      ingress(
        'down-canary',
        'down.test',
        'canary',
        { canary: 'true', 'canary-weight': '100' },
        '2026-01-02T00:00:00Z',
      ),
      // two canaries of one route: the older one (canary) wins over the newer (canary2)
      ingress('two-main', 'two.test', 'main'),
      ingress(
        'two-newer',
        'two.test',
        'canary2',
        { canary: 'true', 'canary-weight': '100' },
        '2026-01-03T00:00:00Z',
      ),
      ingress(
        'two-older',
        'two.test',
        'canary',
        { canary: 'true', 'canary-weight': '100' },
        '2026-01-02T00:00:00Z',
      ),
      // the catch-all from an Ingress's spec.defaultBackend, and a canary of it
      catchAll('catch-all', 'main', {}),
      catchAll(
        'catch-all-canary',
        'canary',
        { canary: 'true', 'canary-by-header': 'X-Canary' },
        '2026-01-02T00:00:00Z',
      ),
    ].join(''),
  );
  // ~80,000 requests: their access log lines go nowhere
  const controller = await start(testConfig(dir), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;

  t.test('weight: 10, 50 and 90 of 100, within ±2% over 20,000 requests each', async (t) => {
    for (const [host, expected] of [
      ['w10.test', 0.1],
      ['w50.test', 0.5],
      ['w90.test', 0.9],
    ] as const) {
      const share = await canaryShare(port, host, 20_000);
      t.ok(Math.abs(share - expected) <= 0.02, `${host}: ${(share * 100).toFixed(1)}% to the canary`);
    }
  });

  t.test('weight-total: 1000 is honoured; under 100 counts as 100', async (t) => {
    const thousand = await canaryShare(port, 'total1000.test', 10_000);
    t.ok(Math.abs(thousand - 0.1) <= 0.02, `100/1000: ${(thousand * 100).toFixed(1)}%`);
    const fifty = await canaryShare(port, 'total50.test', 10_000);
    t.ok(Math.abs(fifty - 0.25) <= 0.03, `25/50 is 25/100: ${(fifty * 100).toFixed(1)}%`);
  });

  t.test('header and cookie, in ingress-nginx order', async (t) => {
    const cases: Array<[string, Record<string, string>, string, string]> = [
      ['header.test', { 'x-canary': 'always' }, 'canary', 'header always'],
      [
        'header.test',
        { 'x-canary': 'never', cookie: 'beta=always' },
        'main',
        'header never wins over the cookie',
      ],
      [
        'header.test',
        { 'x-canary': 'maybe', cookie: 'beta=always' },
        'canary',
        'another header value falls through to the cookie',
      ],
      ['header.test', { cookie: 'a=1; beta=always; c=2' }, 'canary', 'cookie always'],
      ['header.test', { cookie: 'beta=never' }, 'main', 'cookie never'],
      ['header.test', {}, 'main', 'neither, weight 0'],
      ['value.test', { 'x-canary': 'yes' }, 'canary', 'the exact value'],
      ['value.test', { 'x-canary': 'always' }, 'main', 'with a value, always means nothing'],
      [
        'value.test',
        { 'x-canary': 'no', cookie: 'beta=always' },
        'canary',
        'a value mismatch falls through to the cookie',
      ],
      ['pattern.test', { 'x-region': 'eu-west-1' }, 'canary', 'pattern match'],
      ['pattern.test', { 'x-region': 'us-east-1' }, 'main', 'pattern miss, weight 0'],
      [
        'bad.test',
        { 'x-region': 'eu' },
        'main',
        'an invalid pattern sends the header to main, before weight 100',
      ],
      ['bad.test', {}, 'canary', 'without the header, weight 100 applies'],
    ];
    for (const [host, headers, expected, name] of cases) {
      t.equal(await backendFor(port, host, headers), expected, name);
    }
  });

  t.test(
    'a canary without endpoints leaves the traffic to main; a canary without main is a 404',
    async (t) => {
      for (let i = 0; i < 20; i++) t.equal(await backendFor(port, 'noeps.test'), 'main');
      t.equal(
        await backendFor(port, 'down.test'),
        '503',
        'a main route without endpoints answers 503, canary or not',
      );
      t.equal(
        await backendFor(port, 'lost.test'),
        'main',
        'no host of its own: the catch-all (here an Ingress) serves',
      );
    },
  );

  t.test('two canaries: the oldest serves; a canary of the catch-all', async (t) => {
    for (let i = 0; i < 10; i++) t.equal(await backendFor(port, 'two.test'), 'canary', 'the older canary');
    t.equal(await backendFor(port, 'unknown.test'), 'main', 'the catch-all Ingress');
    t.equal(await backendFor(port, 'unknown.test', { 'x-canary': 'always' }), 'canary', 'its canary');
  });

  t.test('the request metrics say which backend served', async (t) => {
    const families = parseExposition((await get(controller.healthz.port, 'localhost', '/metrics')).body);
    const requests = samplesOf(families, 'nginx_ingress_controller_requests').filter(
      (s) => s.labels.host === 'header.test',
    );
    const byCanary = new Map(requests.map((s) => [s.labels.canary, s.value]));
    t.ok((byCanary.get('e2e-canary-80') ?? 0) >= 3, 'canary-served requests carry the canary upstream');
    t.ok((byCanary.get('') ?? 0) >= 3, 'main-served ones an empty canary label');
    t.ok(
      requests.every((s) => s.labels.service === 'main' && s.labels.ingress === 'header.test-main'),
      'service and ingress stay the main route’s',
    );
  });
});
