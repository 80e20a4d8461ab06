// Controller metrics: what a failed build does, the hash gauge's value, and how often the default
// metrics wake an idle process.
import { createRequire } from 'node:module';
import t from 'tap';
import { createControllerMetrics, hashValue } from '../../lib/metrics/controller.ts';
import { record } from '../support/request-record.ts';

const sample = (text: string, name: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
};

t.test(
  'a failed build: errors +1, last reload unsuccessful, hash 0; a later success restores them',
  async (t) => {
    const metrics = createControllerMetrics({
      controllerClass: 'k8s.io/ingress-nginx',
      podNamespace: 'default',
      podName: 'p',
      version: '1',
    });
    const applied = (routesHash: string) =>
      metrics.applied({ routesHash, kind: 'full', buildSeconds: 0.01, swapSeconds: 0.001, diagnostics: [] });
    applied('abcdef0123456789');
    metrics.failed();
    let text = (await metrics.scrape()).body;
    t.equal(sample(text, 'nginx_ingress_controller_errors'), 1);
    t.equal(sample(text, 'nginx_ingress_controller_success'), 1);
    t.equal(sample(text, 'nginx_ingress_controller_config_last_reload_successful'), 0);
    t.equal(sample(text, 'nginx_ingress_controller_config_hash'), 0);
    applied('0123456789abcdef');
    text = (await metrics.scrape()).body;
    t.equal(sample(text, 'nginx_ingress_controller_config_last_reload_successful'), 1);
    t.equal(sample(text, 'nginx_ingress_controller_config_hash'), 0x0123456789abc);
  },
);

t.test('hashValue: the first 52 bits, exact', async (t) => {
  t.equal(hashValue('ffffffffffffffff'), 2 ** 52 - 1);
  t.ok(Number.isSafeInteger(hashValue('ffffffffffffffff')));
  t.equal(hashValue('not hex'), 0);
});

t.test('connections by state: writing = requests in progress, waiting = the other open ones', async (t) => {
  const stats = { accepted: 6, active: 4, requests: 10 };
  const metrics = createControllerMetrics({
    controllerClass: 'k8s.io/ingress-nginx',
    podNamespace: 'default',
    podName: 'p',
    version: '1',
    dataPlaneStats: () => stats,
  });
  for (let i = 0; i < 7; i++) metrics.observe(record());
  const state = async (name: string) =>
    sample(
      (await metrics.scrape()).body
        .split('\n')
        .filter((l) => l.includes(`state="${name}"`))
        .join('\n'),
      'nginx_ingress_controller_nginx_process_connections',
    );
  t.equal(await state('active'), 4);
  t.equal(await state('writing'), 3, '10 requests started, 7 finished');
  t.equal(await state('waiting'), 1, 'the fourth connection is idle');
  t.equal(await state('reading'), 0);
  for (let i = 0; i < 3; i++) metrics.observe(record());
  t.equal(await state('writing'), 0);
  t.equal(await state('waiting'), 4, 'all idle keep-alive connections');
  stats.requests = 20; // more in flight than connections (never in HTTP/1.1): capped
  t.equal(await state('writing'), 4);
  t.equal(await state('waiting'), 0);
});

t.test("the event loop delay is sampled every 100 ms, not prom-client's 10 ms", async (t) => {
  // prom-client looks perf_hooks.monitorEventLoopDelay up when the default metrics are registered:
  // the resolution asked for is the sampler's timer, which wakes an idle process that often
  const perfHooks = createRequire(import.meta.url)('node:perf_hooks') as typeof import('node:perf_hooks');
  const original = perfHooks.monitorEventLoopDelay;
  const resolutions: Array<number | undefined> = [];
  perfHooks.monitorEventLoopDelay = (options) => {
    resolutions.push(options?.resolution);
    return original(options);
  };
  t.teardown(() => {
    perfHooks.monitorEventLoopDelay = original;
  });
  createControllerMetrics({ controllerClass: 'c', podNamespace: 'n', podName: 'p', version: '1' });
  t.strictSame(resolutions, [100], 'one sampler, every 100 ms');
});
