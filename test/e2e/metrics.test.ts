// /metrics on the healthz port: ingress-nginx's controller-level series with its names and const
// labels, following real swaps of a standalone controller.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { get, testConfig } from '../support/http.ts';
import { INGRESS_CLASS } from '../support/manifests.ts';
import { nextSwap } from '../support/swaps.ts';

const CLASS = `${INGRESS_CLASS}---
apiVersion: v1
kind: Service
metadata: { name: web, namespace: m }
spec: { ports: [{ name: http, port: 80, targetPort: 8080 }] }
`;

function ingress(paths: string[], annotations = '', service = 'web'): string {
  return `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: site, namespace: m${annotations === '' ? '' : `, annotations: { ${annotations} }`} }
spec:
  ingressClassName: ingress-ts
  rules:
    - host: site.example.test
      http:
        paths:
${paths.map((p) => `          - { path: ${p}, pathType: Prefix, backend: { service: { name: ${service}, port: { number: 80 } } } }`).join('\n')}
`;
}

const SLICE = `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: web-1, namespace: m, labels: { kubernetes.io/service-name: web } }
addressType: IPv4
ports: [{ name: http, port: 8080, protocol: TCP }]
endpoints: [{ addresses: [127.0.0.1] }]
`;

/** `name{labels} value` lines → value by `name{labels}`, and the plain names seen. */
function parse(text: string): { values: Map<string, number>; names: Set<string> } {
  const values = new Map<string, number>();
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    const series = line.slice(0, space);
    values.set(series, Number(line.slice(space + 1)));
    names.add(series.replace(/\{.*$/, ''));
  }
  return { values, names };
}

const CONST =
  'controller_namespace="ns1",controller_class="ingress-ts.dev/controller",controller_pod="pod-1"';
const series = (name: string, labels = '') => `${name}{${labels}${labels === '' ? '' : ','}${CONST}}`;

t.test('controller metrics follow the swaps', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-metrics-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'class.yaml'), CLASS);
  await writeFile(join(dir, 'ingress.yaml'), ingress(['/']));
  const controller = await start(testConfig(dir), createLogger('silent'), {
    version: '9.9.9',
    env: { POD_NAMESPACE: 'ns1', POD_NAME: 'pod-1' },
  });
  t.teardown(() => controller.stop(0));
  const scrape = async () => {
    const reply = await get(controller.healthz.port, 'localhost', '/metrics');
    t.equal(reply.status, 200);
    t.match(reply.headers['content-type'], /^text\/plain; version=0\.0\.4/);
    return parse(reply.body);
  };

  const first = await scrape();
  const v = first.values;
  t.equal(v.get(series('nginx_ingress_controller_success')), 1, 'the first configuration is a reload');
  t.equal(v.get(series('nginx_ingress_controller_errors')), 0);
  t.equal(v.get(series('nginx_ingress_controller_config_last_reload_successful')), 1);
  const hash1 = v.get(series('nginx_ingress_controller_config_hash')) ?? 0;
  t.ok(hash1 > 0, 'config_hash set');
  t.ok(Number.isSafeInteger(hash1), 'config_hash is an exact integer');
  const reloadedAt = v.get(
    series('nginx_ingress_controller_config_last_reload_successful_timestamp_seconds'),
  );
  t.ok(reloadedAt !== undefined && Math.abs(reloadedAt - Date.now() / 1000) < 60, 'reload timestamp is now');
  t.equal(
    v.get(
      series(
        'nginx_ingress_controller_build_info',
        'release="9.9.9",build="ingress-ts",repository="ingress-ts"',
      ),
    ),
    1,
  );
  t.ok((v.get(series('nginx_ingress_controller_nginx_process_resident_memory_bytes')) ?? 0) > 1e6);
  t.equal(v.get(series('ingress_ts_swaps_total', 'kind="full"')), 1);
  t.equal(v.get(series('ingress_ts_model_build_duration_seconds_count')), 1);
  t.notOk(
    first.names.has('nginx_ingress_controller_success_total'),
    'no _total added to ingress-nginx counters',
  );
  t.ok(first.names.has('process_cpu_user_seconds_total'), "Node's default metrics");

  // requests and connections of the data plane (the scrapes go to the healthz port: not counted)
  t.equal(v.get(series('nginx_ingress_controller_nginx_process_requests_total')), 0);
  for (let i = 0; i < 3; i++) await get(controller.http.port, 'site.example.test', '/');
  const traffic = (await scrape()).values;
  t.equal(traffic.get(series('nginx_ingress_controller_nginx_process_requests_total')), 3);
  const accepted = traffic.get(
    series('nginx_ingress_controller_nginx_process_connections_total', 'state="accepted"'),
  );
  t.ok(accepted !== undefined && accepted >= 1 && accepted <= 3, 'connections accepted');
  t.equal(
    traffic.get(series('nginx_ingress_controller_nginx_process_connections_total', 'state="handled"')),
    accepted,
  );
  t.ok(
    (traffic.get(series('nginx_ingress_controller_nginx_process_connections', 'state="active"')) ?? -1) >= 0,
    'active connections',
  );

  // a route change: a reload in ingress-nginx's sense, with a new hash
  let swapped = nextSwap();
  await writeFile(join(dir, 'ingress.yaml'), ingress(['/', '/api']));
  await swapped;
  const second = (await scrape()).values;
  t.equal(second.get(series('nginx_ingress_controller_success')), 2);
  const hash2 = second.get(series('nginx_ingress_controller_config_hash'));
  t.not(hash2, hash1, 'config_hash changed');
  t.equal(second.get(series('ingress_ts_swaps_total', 'kind="full"')), 2);

  // an endpoints-only change: applied in place, no reload, same hash
  swapped = nextSwap();
  await writeFile(join(dir, 'slice.yaml'), SLICE);
  await swapped;
  const third = (await scrape()).values;
  t.equal(third.get(series('nginx_ingress_controller_success')), 2, 'not a reload');
  t.equal(third.get(series('nginx_ingress_controller_config_hash')), hash2);
  t.equal(third.get(series('ingress_ts_swaps_total', 'kind="endpoints"')), 1);
  t.equal(
    third.get(series('ingress_ts_diagnostics', 'code="ANNOTATION_UNSUPPORTED",severity="warning"')),
    undefined,
  );

  // diagnostics of the last build, by code (a Service that does not exist also changes the routes)
  swapped = nextSwap();
  await writeFile(
    join(dir, 'ingress.yaml'),
    ingress(['/', '/api'], 'nginx.ingress.kubernetes.io/fastcgi-index: "index.php"', 'missing'),
  );
  await swapped;
  const fourth = await scrape();
  const diagnostics = [...fourth.values].filter(([key]) => key.startsWith('ingress_ts_diagnostics{'));
  t.equal(
    fourth.values.get(series('ingress_ts_diagnostics', 'code="ANNOTATION_UNSUPPORTED",severity="warning"')),
    1,
  );
  t.ok(
    diagnostics.every(
      ([key, value]) => /code="[A-Z_]+",severity="(error|warning|info)"/.test(key) && value >= 1,
    ),
    'by code and severity',
  );
});

t.test('--enable-metrics=false: no /metrics', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-metrics-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'class.yaml'), CLASS);
  const controller = await start(testConfig(dir, '--enable-metrics=false'), createLogger('silent'));
  t.teardown(() => controller.stop(0));
  t.equal((await get(controller.healthz.port, 'localhost', '/metrics')).status, 404);
  t.equal((await get(controller.healthz.port, 'localhost', '/healthz')).status, 200);
});
