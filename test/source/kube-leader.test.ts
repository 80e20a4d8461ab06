// Leader election on a Lease of the fake API server: one leader among candidates, MicroTime writes,
// release on stop (a successor at once), and takeover after the TTL when the leader vanishes
// without releasing.
import t from 'tap';
import { createLeaderElection, type LeaderElection } from '../../lib/source/kube/leader.ts';
import { type FakeApiServer, startFakeApiServer } from '../support/fake-apiserver.ts';

const TTL_MS = 1000; // retry period 250 ms, renew deadline 500 ms

interface Candidate {
  election: LeaderElection;
  /** resolves when this candidate's leadership becomes `leader` */
  becomes(leader: boolean): Promise<void>;
}

function candidate(
  api: FakeApiServer,
  identity: string,
  t: { teardown(fn: () => unknown): void },
): Candidate {
  let waiters: Array<{ leader: boolean; resolve: () => void }> = [];
  const election = createLeaderElection({
    kubeConfig: api.kubeConfig(),
    namespace: 'ingress',
    name: 'ingress-ts-leader',
    identity,
    ttlMs: TTL_MS,
    onChange: (leader) => {
      for (const w of waiters.filter((w) => w.leader === leader)) w.resolve();
      waiters = waiters.filter((w) => w.leader !== leader);
    },
  });
  t.teardown(() => election.stop());
  return {
    election,
    becomes: (leader) =>
      election.leader === leader
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiters.push({ leader, resolve })),
  };
}

const holder = (api: FakeApiServer) =>
  (
    api.get({ kind: 'Lease', namespace: 'ingress', name: 'ingress-ts-leader' })?.spec as {
      holderIdentity?: string;
    }
  )?.holderIdentity;

t.test('one leader; stop() releases the Lease and the other takes over at once', async (t) => {
  const api = await startFakeApiServer();
  t.teardown(() => api.close());
  const a = candidate(api, 'pod-a', t);
  a.election.start();
  await a.becomes(true);
  t.equal(holder(api), 'pod-a');
  const lease = api.get({ kind: 'Lease', namespace: 'ingress', name: 'ingress-ts-leader' }) as {
    spec: { renewTime: string; leaseDurationSeconds: number };
  };
  t.match(lease.spec.renewTime, /\.\d{6}Z$/, 'MicroTime with 6 digits (a real API server insists)');
  t.equal(lease.spec.leaseDurationSeconds, 1);

  const b = candidate(api, 'pod-b', t);
  b.election.start();
  // b has looked at the Lease at least twice (it is renewed meanwhile) and stays a follower
  await api.waitForRequest((r) => r.resource === 'leases' && r.verb === 'update');
  await api.waitForRequest((r) => r.resource === 'leases' && r.verb === 'update');
  t.notOk(b.election.leader, 'a live leader is not overthrown');
  t.ok(a.election.leader);

  await a.election.stop();
  t.notOk(a.election.leader);
  t.equal(holder(api), '', 'released');
  await b.becomes(true);
  t.equal(holder(api), 'pod-b');
  const transitions = (
    api.get({ kind: 'Lease', namespace: 'ingress', name: 'ingress-ts-leader' })?.spec as
      | { leaseTransitions: number }
      | undefined
  )?.leaseTransitions;
  t.equal(transitions, 0, 'taking a released Lease is no transition (no previous holder)');
});

t.test('a leader that vanishes without releasing is replaced after the TTL', async (t) => {
  const api = await startFakeApiServer();
  t.teardown(() => api.close());
  const a = candidate(api, 'pod-a', t);
  a.election.start();
  await a.becomes(true);
  const b = candidate(api, 'pod-b', t);
  b.election.start();
  // pod-a "crashes": its release write fails, and it renews no more
  api.failNext(
    (r) =>
      r.resource === 'leases' &&
      r.verb === 'update' &&
      (r.body as { spec?: { holderIdentity?: string } })?.spec?.holderIdentity === '',
    { status: 500 },
  );
  await a.election.stop();
  t.equal(holder(api), 'pod-a', 'still recorded as the holder');
  await b.becomes(true);
  t.equal(holder(api), 'pod-b');
  const spec = api.get({ kind: 'Lease', namespace: 'ingress', name: 'ingress-ts-leader' })?.spec as {
    leaseTransitions: number;
  };
  t.equal(spec.leaseTransitions, 1, 'a takeover from a holder counts as a transition');
});

t.test('a leader that cannot renew steps down before its Lease expires', async (t) => {
  const api = await startFakeApiServer();
  t.teardown(() => api.close());
  const a = candidate(api, 'pod-a', t);
  a.election.start();
  await a.becomes(true);
  await api.stop(); // unreachable
  await a.becomes(false);
  await api.restart();
  await a.becomes(true);
  t.pass('leader again once the API server is back (its own Lease)');
});
