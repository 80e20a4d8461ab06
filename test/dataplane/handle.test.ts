// The data-plane handle: everything the controller gets from a data plane. What crosses it is plain
// data (it survives structuredClone as it is, so a worker thread could answer), a stats snapshot is a
// copy, apply acknowledges with the swap kind, and the controller's applier drives any implementation
// of the interface (here a fake that answers later, as a worker would).
import bcrypt from 'bcryptjs';
import t, { type Test } from 'tap';
import { type AppliedChange, createApplier } from '../../lib/controller/apply.ts';
import { DataPlane } from '../../lib/dataplane/dataplane.ts';
import type { DataPlaneHandle, SwapResult } from '../../lib/dataplane/handle.ts';
import { generateDefaultCertificate } from '../../lib/dataplane/listening/sni.ts';
import { createBuildCaches, type Model, type Snapshot } from '../../lib/model/index.ts';
import { build, ingress, path, pem, rule, service, slice, snapshotOf, tlsSecret } from '../model/helpers.ts';
import { caSecret } from '../model/helpers-client-auth.ts';
import { get } from '../support/http.ts';

const A = pem('a-example');
const htpasswd = `alice:${bcrypt.hashSync('secret', 4)}\n`;

/** A model that uses most of what a description shows: TLS, client certificates, basic auth, regexes, a canary. */
function world(addresses: string[], extraPath = '/extra') {
  return {
    ingresses: [
      ingress('site', {
        tls: [{ hosts: ['a.example.com'], secretName: 'a-tls' }],
        nginx: {
          'use-regex': 'true',
          'auth-type': 'basic',
          'auth-secret': 'htpasswd',
          'auth-tls-secret': 'default/client-ca',
          'load-balance': 'ewma',
        },
        rules: [rule('a.example.com', path('/api/v[0-9]+', 'web:80'), path(extraPath, 'web:80'))],
      }),
      ingress('plain', { created: 1, rules: [rule('plain.test', path('/', 'web:80'))] }),
      ingress('plain-canary', {
        created: 2,
        nginx: { canary: 'true', 'canary-weight': '10' },
        rules: [rule('plain.test', path('/', 'other:80'))],
      }),
    ],
    services: [service('web', [{ port: 80 }]), service('other', [{ port: 80 }])],
    slices: [
      slice('web', [{ addresses }], [{ port: 80 }]),
      slice('other', [{ addresses: ['10.9.0.1'] }], [{ port: 80 }]),
    ],
    secrets: [
      tlsSecret('a-tls', A),
      caSecret('client-ca', A.crt),
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'htpasswd', namespace: 'default' },
        data: { auth: Buffer.from(htpasswd).toString('base64') },
      },
    ],
  };
}

/** Only what structuredClone copies without loss: primitives, arrays and plain objects. */
function plainPath(value: unknown, at = '$'): string | null {
  if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) return null;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = plainPath(item, `${at}[${i}]`);
      if (found !== null) return found;
    }
    return null;
  }
  if (typeof value !== 'object') return `${at} is a ${typeof value}`;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return `${at} is a ${proto?.constructor?.name}`;
  for (const [key, item] of Object.entries(value)) {
    const found = plainPath(item, `${at}.${key}`);
    if (found !== null) return found;
  }
  return null;
}

function crossesAsIs(t: Test, value: unknown, what: string): void {
  t.equal(plainPath(value), null, `${what}: plain data only`);
  t.strictSame(structuredClone(value), value, `${what}: survives structuredClone unchanged`);
}

t.test(
  'a DataPlane through its handle: acknowledged swaps, readiness, snapshots, descriptions',
  async (t) => {
    const dataPlane = new DataPlane({
      httpPort: 0,
      httpsPort: 0,
      bindAddress: '127.0.0.1',
      generatedDefaultCertificate: await generateDefaultCertificate(),
    });
    const handle: DataPlaneHandle = dataPlane;
    t.teardown(() => handle.close());
    const { http } = await handle.listen();

    t.equal(handle.ready(), false, 'not ready before a model');
    t.equal(await handle.describe(), null, 'nothing to describe before a model');
    const before = handle.statsSnapshot();
    crossesAsIs(t, before, 'stats');

    // the model crosses too: apply a clone, as a worker would receive it
    const first = build(world(['10.0.0.1'])).model;
    crossesAsIs(t, first, 'the model');
    const full = await handle.apply(structuredClone(first));
    t.strictSame(full, { kind: 'full', hash: first.hash }, 'a full swap, acknowledged');
    crossesAsIs(t, full, 'the swap result');
    t.equal(handle.ready(), true, 'ready once a model serves');

    const endpoints = build(world(['10.0.0.1', '10.0.0.2'])).model;
    t.strictSame(await handle.apply(endpoints), { kind: 'endpoints', hash: endpoints.hash });
    t.strictSame(await handle.apply(endpoints), { kind: 'unchanged', hash: endpoints.hash });

    const description = await handle.describe();
    crossesAsIs(t, description, 'the description');
    t.equal(description?.hash, endpoints.hash, 'of the runtime being served');
    const site = description?.hosts.find((host) => host.host === 'a.example.com');
    t.equal(site?.tls?.secret, 'default/a-tls');
    t.equal(site?.clientAuth?.secret, 'default/client-ca');
    t.strictSame(
      description?.backends.find((b) => b.name === 'default-web-80')?.endpoints,
      ['10.0.0.1:80', '10.0.0.2:80'],
      'the endpoints the balancers have now',
    );

    const snapshot = handle.statsSnapshot();
    await get(http.port, 'plain.test', '/');
    t.equal(snapshot.requests, before.requests, 'a snapshot does not move');
    t.equal(handle.statsSnapshot().requests, snapshot.requests + 1, 'the next one counts the request');
    t.not(handle.statsSnapshot(), handle.statsSnapshot(), 'each call is a new copy');
  },
);

/** A handle that acknowledges when told to, as a proxy to worker threads would. */
function laterHandle() {
  const pending: Array<{ model: Model; ack: (result: SwapResult) => void; fail: (error: Error) => void }> =
    [];
  let served: Model | null = null;
  const handle: DataPlaneHandle = {
    apply: (model) =>
      new Promise((resolve, reject) => {
        pending.push({
          model,
          ack: (result) => {
            served = model;
            resolve(result);
          },
          fail: reject,
        });
      }),
    ready: () => served !== null,
    statsSnapshot: () => ({ accepted: 0, active: 0, requests: 0 }),
    describe: async () => null,
    listen: async () => {
      throw new Error('not listening');
    },
    close: async () => {},
  };
  return { handle, pending };
}

t.test('the applier waits for the acknowledgement before reporting', async (t) => {
  const { handle, pending } = laterHandle();
  const applied: AppliedChange[] = [];
  let snapshot: Snapshot = snapshotOf(world(['10.0.0.1']));
  const applier = createApplier({
    handle,
    modelOptions: {},
    caches: createBuildCaches(),
    snapshot: () => snapshot,
    onApplied: (change) => applied.push(change),
  });
  t.equal(applier.latest().model, null, 'nothing applied yet');

  const run = applier.run();
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(pending.length, 1, 'the model was handed over');
  t.equal(applied.length, 0, 'not reported before the data plane acknowledges');
  t.equal(applier.latest().model, null);
  const model = pending[0]?.model as Model;
  pending[0]?.ack({ kind: 'full', hash: model.hash });
  await run;
  t.equal(applied.length, 1, 'reported once acknowledged');
  t.strictSame(applied[0]?.swap, { kind: 'full', hash: model.hash }, 'with the kind the data plane said');
  t.equal(applier.latest().model, model);
  t.ok((applied[0]?.swapMs ?? -1) >= 0 && (applied[0]?.buildMs ?? -1) >= 0);

  // a refused swap: the run fails, nothing is reported, the last applied model stays
  snapshot = snapshotOf(world(['10.0.0.1'], '/other'));
  const refused = applier.run();
  await new Promise((resolve) => setImmediate(resolve));
  pending[1]?.fail(new Error('the compile failed'));
  await t.rejects(refused, /the compile failed/);
  t.equal(applied.length, 1, 'a refused swap is not reported as applied');
  t.equal(applier.latest().model, model, 'the previous model is still the applied one');
});
