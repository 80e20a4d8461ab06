// An endpoints-only change that a data-plane thread rebuilt from a delta names the upstreams it
// changes (model-changes.ts), and its compile updates those balancers alone and patches the peer
// counts. Over random sequences of endpoint moves (Services sharing addresses, so one peer may
// serve several upstreams), it must leave every balancer with the same peers, the same peer counts
// and the same retired peers as the compile that looks at every balancer.
import { deserialize, serialize } from 'node:v8';
import fc from 'fast-check';
import t from 'tap';
import { generateDefaultCertificate } from '../../lib/dataplane/listening/sni.ts';
import { compileRuntime, type Runtime } from '../../lib/dataplane/routing/runtime.ts';
import type { BalancerEnv } from '../../lib/dataplane/upstream/balancer.ts';
import { createEwmaStore } from '../../lib/dataplane/upstream/balancers/ewma.ts';
import { diffModel, patchModel } from '../../lib/dataplane/worker/model-delta.ts';
import type { Model } from '../../lib/model/index.ts';
import { build, ingress, path, rule, service, slice } from '../model/helpers.ts';

const env: BalancerEnv = { random: () => 0, now: () => 0 };
const deps = {
  generatedDefaultCertificate: await generateDefaultCertificate(),
  balancerEnv: env,
  ewmaStore: createEwmaStore(),
};

const SERVICES = ['s1', 's2', 's3'];
const ADDRESSES = ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4'];
type Endpoints = Record<string, string[]>;
const arbitraryEndpoints: fc.Arbitrary<Endpoints> = fc.record(
  Object.fromEntries(SERVICES.map((s) => [s, fc.subarray(ADDRESSES)])),
) as fc.Arbitrary<Endpoints>;

/** The same Ingresses every time: only the endpoints move. */
function modelOf(endpoints: Endpoints): Model {
  const model = build({
    ingresses: [
      ingress('web', {
        rules: [rule('a.com', path('/', 's1:80'), path('/two', 's2:80')), rule('b.com', path('/', 's3:80'))],
      }),
      ingress('ewma', { nginx: { 'load-balance': 'ewma' }, rules: [rule('c.com', path('/', 's2:80'))] }),
    ],
    services: SERVICES.map((s) => service(s, [{ port: 80, targetPort: 80 }])),
    slices: SERVICES.map((s) => slice(s, [{ addresses: endpoints[s] ?? [] }], [{ port: 80 }])),
    autoBackends: false,
  }).model;
  return deserialize(serialize(model)) as Model;
}

/** Each balancer's peers, and the peer counts, comparable across runtimes. */
function peersOf(runtime: Runtime): unknown {
  return {
    balancers: [...runtime.balancers]
      .map(([name, balancer]) => [name, balancer.peers.map((p) => p.key).sort()])
      .sort(),
    counts: [...runtime.peerKeys].sort(),
  };
}

t.test(
  'an endpoints-only change of noted upstreams = the compile that looks at every balancer',
  async (t) => {
    let retired = 0;
    fc.assert(
      fc.property(
        arbitraryEndpoints,
        fc.array(arbitraryEndpoints, { minLength: 1, maxLength: 6 }),
        (first, moves) => {
          const start = modelOf(first);
          // two runtimes of the same model with balancers of their own (they are updated in place)
          let noted = compileRuntime(start, null, deps);
          let plain = compileRuntime(structuredClone(start), null, deps);
          for (const [index, endpoints] of moves.entries()) {
            const next = modelOf(endpoints);
            const delta = diffModel(noted.model, next);
            if (delta === null) return t.fail('built models carry content hashes');
            const patched = patchModel(noted.model, deserialize(serialize(delta)) as typeof delta);
            const before = plain;
            noted = compileRuntime(patched, noted, deps);
            plain = compileRuntime(structuredClone(patched), plain, deps);
            if (noted.retiredPeers === null)
              return t.fail(`move ${index}: the noted upstreams were not used`);
            if (!t.strictSame(peersOf(noted), peersOf(plain), `move ${index}: the same peers and counts`))
              return false;
            const gone = [...before.peerKeys.keys()].filter((key) => !plain.peerKeys.has(key)).sort();
            if (!t.strictSame([...noted.retiredPeers].sort(), gone, `move ${index}: the same retired peers`))
              return false;
            retired += gone.length;
          }
          return true;
        },
      ),
      { numRuns: 150 },
    );
    t.ok(retired > 0, `peers were retired (${retired})`);
  },
);
