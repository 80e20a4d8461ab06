// HTTPRoute status.parents when two controllers share a route: each replaces its own entries where
// they stand, so neither reorders the list and the two never undo each other's write.

import t from 'tap';
import type { Condition, HTTPRouteStatusReport } from '../../../lib/model/gateway/types.ts';
import { httpRouteStatus } from '../../../lib/source/kube/gateway-status.ts';

const OURS = 'ingress-ts.dev/gateway-controller';
const THEIRS = 'example.com/other';
const NOW = '2026-11-27T00:00:00Z';
const accepted = (generation: number): Condition => ({
  type: 'Accepted',
  status: 'True',
  reason: 'Accepted',
  message: '',
  observedGeneration: generation,
});
const ref = (name: string) => ({ group: 'gateway.networking.k8s.io', kind: 'Gateway', name });
const report = (...names: string[]): HTTPRouteStatusReport => ({
  namespace: 'ns',
  name: 'route',
  generation: 2,
  parents: names.map((name) => ({ parentRef: ref(name), conditions: [accepted(2)] })),
});
const entry = (controllerName: string, name: string) => ({
  parentRef: ref(name),
  controllerName,
  conditions: [{ ...accepted(1), lastTransitionTime: '2026-01-01T00:00:00Z' }],
});
const order = (status: { parents?: unknown }) =>
  (status.parents as Array<{ controllerName: string; parentRef: { name: string } }>).map(
    (p) => `${p.controllerName === OURS ? 'ours' : 'theirs'}:${p.parentRef.name}`,
  );

t.test('ours replaced in place; others kept where they are; new ones last', async (t) => {
  const current = { parents: [entry(OURS, 'a'), entry(THEIRS, 'x'), entry(OURS, 'b')] };
  const next = httpRouteStatus(report('b', 'a', 'c'), current, OURS, NOW);
  t.same(order(next), ['ours:a', 'theirs:x', 'ours:b', 'ours:c']);
  t.equal(
    (next.parents as Array<{ conditions: Array<{ lastTransitionTime: string }> }>)[0]?.conditions[0]
      ?.lastTransitionTime,
    '2026-01-01T00:00:00Z',
    'an unchanged condition keeps its transition time',
  );
});

t.test('the other controller, writing the same way, leaves our order alone', async (t) => {
  const current = { parents: [entry(THEIRS, 'x'), entry(OURS, 'a')] };
  const mine = httpRouteStatus(report('a'), current, OURS, NOW);
  t.same(order(mine), ['theirs:x', 'ours:a'], 'our write keeps their entry first');
  const theirs = httpRouteStatus(
    { ...report('x'), parents: [{ parentRef: ref('x'), conditions: [accepted(2)] }] },
    mine,
    THEIRS,
    NOW,
  );
  t.same(order(theirs), ['theirs:x', 'ours:a'], 'their write keeps ours second');
});

t.test('ours no longer reported are removed, others stay', async (t) => {
  const current = { parents: [entry(OURS, 'a'), entry(THEIRS, 'x')] };
  t.same(order(httpRouteStatus(undefined, current, OURS, NOW)), ['theirs:x']);
});
