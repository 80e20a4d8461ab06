// HTTPRoute backends in the data plane: weighted backendRefs shared by weight (smooth weighted round
// robin: exact shares over one connection, which one thread serves), weight 0 never served, a
// refused backendRef (null upstream) answering 500 for its share, no backends or every weight 0
// answering 500, a Service without endpoints keeping 503; the request records name the HTTPRoute and
// the Service that served (metrics and access log read them).
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { Agent } from 'node:http';
import t from 'tap';
import { requestLogged, requestMeasured } from '../../../lib/dataplane/events.ts';
import type { Backend } from '../../../lib/model/index.ts';
import { send } from '../../support/http.ts';
import { THREAD_MODE } from '../../support/threads.ts';
import { answeredBy, gatewayPlane, HOST, type RouteKit } from './plane.ts';

const weighted = (kit: RouteKit, ...entries: Array<[string | null, number]>): Backend => ({
  type: 'weighted',
  backends: entries.map(([name, weight]) => ({
    upstream: name === null ? null : kit.upstream(name),
    weight,
  })),
});

/** `n` requests to `path` over one kept-alive connection; how many each backend (or status) got. */
async function tally(port: number, path: string, n: number): Promise<Record<string, number>> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const counts: Record<string, number> = {};
  try {
    for (let i = 0; i < n; i++) {
      const who = answeredBy(await send(port, HOST, path, { agent }));
      counts[who] = (counts[who] ?? 0) + 1;
    }
  } finally {
    agent.destroy();
  }
  return counts;
}

t.test('weights: shares are exact, weight 0 is never served', async (t) => {
  const { http } = await gatewayPlane(t, (kit) => [
    kit.route('even', '/even', 'Prefix', weighted(kit, ['v1', 1], ['v2', 1], ['v3', 0])),
    kit.route('split', '/split', 'Prefix', weighted(kit, ['v1', 70], ['v2', 30], ['v3', 0])),
  ]);
  t.strictSame(await tally(http, '/even', 200), { v1: 100, v2: 100 });
  t.strictSame(await tally(http, '/split', 100), { v1: 70, v2: 30 });
});

t.test(
  '500 for a refused backendRef share, no backends, every weight 0; 503 without endpoints',
  async (t) => {
    const { http } = await gatewayPlane(t, (kit) => [
      kit.route('half', '/half', 'Prefix', weighted(kit, ['v1', 1], [null, 1])),
      kit.route('refused', '/refused', 'Prefix', weighted(kit, [null, 1])),
      kit.route('none', '/none', 'Prefix', weighted(kit)),
      kit.route('zero', '/zero', 'Prefix', weighted(kit, ['v1', 0], ['v2', 0])),
      kit.route('empty', '/empty', 'Prefix', weighted(kit, ['empty', 1])),
      kit.route('empty', '/single', 'Prefix', 'v3'),
    ]);
    t.strictSame(await tally(http, '/half', 10), { v1: 5, 500: 5 });
    t.strictSame(await tally(http, '/refused', 3), { 500: 3 });
    t.strictSame(await tally(http, '/none', 3), { 500: 3 });
    t.strictSame(await tally(http, '/zero', 3), { 500: 3 });
    t.strictSame(await tally(http, '/empty', 3), { 503: 3 });
    t.strictSame(await tally(http, '/single', 3), { v3: 3 });
  },
);

t.test('request records name the HTTPRoute and the Service drawn', async (t) => {
  const records: Array<{
    status: number;
    ingress: string;
    service: string;
    namespace: string;
    path: string;
  }> = [];
  const channel = THREAD_MODE ? requestMeasured : requestLogged;
  const onRecord = (record: unknown) => records.push(record as (typeof records)[number]);
  subscribe(channel.name, onRecord);
  t.teardown(() => unsubscribe(channel.name, onRecord));
  const { http, handle } = await gatewayPlane(t, (kit) => [
    kit.route('shop', '/shop', 'Prefix', weighted(kit, ['v1', 1], ['v2', 1], [null, 1])),
  ]);
  await tally(http, '/shop', 3);
  await handle.flushed?.();
  const seen = records
    .filter((r) => r.path === '/shop')
    .map((r) => `${r.status} ${r.namespace}/${r.ingress} ${r.service}`)
    .sort();
  t.strictSame(seen, ['200 default/shop v1', '200 default/shop v2', '500 default/shop ']);
});
