// The webhook certificate through the fake API server, under the RBAC rules the chart grants (the
// fake refuses anything else): the leader creates the Secret and writes the caBundle, a second
// replica serves the same pair, a caBundle reset by `helm upgrade` is written back, a certificate due
// for renewal and an invalid Secret are replaced, two replicas racing end with one certificate, and
// without --validating-webhook-service the Secret is only read. A real TLS handshake checks the
// served pair against the caBundle the API server would use.
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { connect } from 'node:tls';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import {
  createWebhookCertificate,
  type WebhookCertificate,
} from '../../lib/source/kube/webhook-certificate.ts';
import {
  decodeSecretData,
  encodeSecretData,
  issueCertificate,
  serviceDnsNames,
} from '../../lib/source/kube/webhook-pki.ts';
import { type FakeApiServer, type RbacRule, startFakeApiServer } from '../support/fake-apiserver.ts';

const NAMESPACE = 'ingress';
const SECRET = 'edge-ingress-ts-admission';
const SERVICE = 'edge-ingress-ts-controller-admission';
const CONFIGURATION = 'edge-ingress-ts-admission';
const DAY = 24 * 3600 * 1000;

/** What the chart grants for the certificate (test/chart/chart.test.ts checks the chart renders these). */
const RBAC: RbacRule[] = [
  {
    apiGroups: [''],
    resources: ['secrets'],
    resourceNames: [SECRET],
    verbs: ['list', 'watch', 'update'],
    namespaces: [NAMESPACE],
  },
  { apiGroups: [''], resources: ['secrets'], verbs: ['create'], namespaces: [NAMESPACE] },
  {
    apiGroups: ['admissionregistration.k8s.io'],
    resources: ['validatingwebhookconfigurations'],
    resourceNames: [CONFIGURATION],
    verbs: ['list', 'watch', 'patch'],
  },
];

const configuration = (caBundle?: string) => ({
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingWebhookConfiguration',
  metadata: { name: CONFIGURATION },
  webhooks: [
    {
      name: 'validate.ingress-ts.dev',
      clientConfig: {
        service: { namespace: NAMESPACE, name: SERVICE, path: '/networking/v1/ingresses', port: 443 },
        ...(caBundle === undefined ? {} : { caBundle }),
      },
      rules: [
        {
          apiGroups: ['networking.k8s.io'],
          apiVersions: ['v1'],
          operations: ['CREATE', 'UPDATE'],
          resources: ['ingresses'],
        },
      ],
      sideEffects: 'None',
      admissionReviewVersions: ['v1'],
    },
  ],
});

const storedSecret = (api: FakeApiServer) => api.get({ kind: 'Secret', namespace: NAMESPACE, name: SECRET });
const storedData = (api: FakeApiServer) => decodeSecretData(storedSecret(api)?.data);
const caBundleOf = (api: FakeApiServer): string => {
  const object = api.get({ kind: 'ValidatingWebhookConfiguration', name: CONFIGURATION }) as {
    webhooks: Array<{ clientConfig: { caBundle?: string } }>;
  };
  return Buffer.from(object.webhooks[0]?.clientConfig.caBundle ?? '', 'base64').toString('utf8');
};
const fingerprint = (pem: string | undefined) => new X509Certificate(pem as string).fingerprint256;

interface Replica {
  provisioner: WebhookCertificate;
  /** every pair handed to onCertificate */
  pairs: Array<{ certPem: string; keyPem: string }>;
  /** resolves with the next pair handed over */
  next(): Promise<{ certPem: string; keyPem: string }>;
  logs: string[];
}

function replica(
  api: FakeApiServer,
  t: { teardown(fn: () => unknown): void },
  provision = true,
  clock: { now?: () => number; recheckMs?: number } = {},
): Replica {
  const pairs: Replica['pairs'] = [];
  const logs: string[] = [];
  let waiters: Array<(pair: { certPem: string; keyPem: string }) => void> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const provisioner = createWebhookCertificate({
    kubeConfig: api.kubeConfig(),
    secret: { namespace: NAMESPACE, name: SECRET },
    service: provision ? { namespace: NAMESPACE, name: SERVICE } : null,
    configuration: provision ? CONFIGURATION : null,
    onCertificate(certPem, keyPem) {
      pairs.push({ certPem, keyPem });
      const ready = waiters;
      waiters = [];
      for (const resolve of ready) resolve({ certPem, keyPem });
    },
    log: createLogger('debug', sink),
    backoff: { initialMs: 50, maxMs: 200 },
    ...clock,
  });
  t.teardown(() => provisioner.stop());
  return {
    provisioner,
    pairs,
    logs,
    next: () => new Promise((resolve) => waiters.push(resolve)),
  };
}

/** A TLS handshake with a server serving `pair`, trusting only `caPem`, by the Service's DNS name. */
async function handshake(pair: { certPem: string; keyPem: string }, caPem: string): Promise<boolean> {
  const server = createServer({ cert: pair.certPem, key: pair.keyPem }, (_req, res) => res.end('ok'));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const socket = connect({
      port: (server.address() as AddressInfo).port,
      host: '127.0.0.1',
      servername: `${SERVICE}.${NAMESPACE}.svc`,
      ca: caPem,
    });
    const result = await Promise.race([
      once(socket, 'secureConnect').then(() => socket.authorized),
      once(socket, 'error').then(() => false),
    ]);
    socket.destroy();
    return result;
  } finally {
    server.close();
  }
}

const writes = (api: FakeApiServer) =>
  api.requests.filter((r) => r.verb === 'create' || r.verb === 'update' || r.verb === 'patch').length;

t.test('the leader provisions; a second replica serves the same certificate', async (t) => {
  const api = await startFakeApiServer({ rbac: RBAC, objects: [configuration()] });
  t.teardown(() => api.close());
  const leader = replica(api, t);
  const delivered = leader.next();
  const patched = api.waitForRequest({ verb: 'patch', resource: 'validatingwebhookconfigurations' });
  await leader.provisioner.start();
  leader.provisioner.setLeader(true);
  const pair = await delivered;
  await patched;

  const secret = storedSecret(api) as { type: string };
  t.equal(secret.type, 'kubernetes.io/tls');
  const data = storedData(api);
  t.same(Object.keys(data).sort(), ['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
  t.equal(pair.certPem, data['tls.crt'], 'the leader serves what it wrote');
  t.equal(
    new X509Certificate(pair.certPem).subjectAltName,
    serviceDnsNames({ namespace: NAMESPACE, name: SERVICE })
      .map((name) => `DNS:${name}`)
      .join(', '),
  );
  t.equal(caBundleOf(api), data['ca.crt'], 'caBundle is the Secret’s ca.crt');
  t.ok(
    await handshake(pair, caBundleOf(api)),
    'a client trusting the caBundle accepts the served certificate',
  );
  t.equal(api.count({ verb: 'get' }), 0, 'no get: the watches deliver the objects');
  t.notOk(
    api.requests.some((r) => r.status === 403),
    'nothing beyond the chart’s RBAC was asked for',
  );

  const logs = leader.logs.join('');
  t.match(logs, fingerprint(pair.certPem), 'the fingerprint is logged');
  t.notMatch(logs, /PRIVATE KEY/, 'no key in the logs');
  t.notMatch(logs, encodeSecretData({ 'tls.key': pair.keyPem })['tls.key'] as string, 'nor its base64');

  const before = writes(api);
  const follower = replica(api, t);
  const followerPair = follower.next();
  await follower.provisioner.start();
  t.equal((await followerPair).certPem, pair.certPem, 'the other replica serves the same certificate');
  t.equal(writes(api), before, 'a replica that does not lead writes nothing');
});

t.test('helm upgrade resets the caBundle: the leader writes it back', async (t) => {
  const api = await startFakeApiServer({ rbac: RBAC, objects: [configuration()] });
  t.teardown(() => api.close());
  const leader = replica(api, t);
  const first = api.waitForRequest({ verb: 'patch' });
  const written = leader.next();
  await leader.provisioner.start();
  leader.provisioner.setLeader(true);
  await Promise.all([first, written]);
  const ca = storedData(api)['ca.crt'];
  t.equal(caBundleOf(api), ca);

  for (const reset of [undefined, '']) {
    const again = api.waitForRequest({ verb: 'patch' });
    api.apply(configuration(reset)); // what `helm upgrade` applies: the chart's object, no caBundle
    t.equal(caBundleOf(api), '', 'reset');
    t.equal((await again).status, 200);
    t.equal(caBundleOf(api), ca, `caBundle ${JSON.stringify(reset)} written back`);
  }
  t.equal(storedSecret(api)?.metadata?.resourceVersion !== undefined, true);
  t.equal(api.count({ verb: 'create' }), 1, 'the certificate itself is not renewed for that');
});

t.test('a certificate due for renewal is renewed under the same CA', async (t) => {
  const names = serviceDnsNames({ namespace: NAMESPACE, name: SERVICE });
  const aged = await issueCertificate(names, null, null, Date.now() - 300 * DAY); // 65 days left
  const api = await startFakeApiServer({
    rbac: RBAC,
    objects: [
      configuration(Buffer.from(aged['ca.crt'] as string).toString('base64')),
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: SECRET, namespace: NAMESPACE, labels: { keep: 'me' } },
        type: 'kubernetes.io/tls',
        data: encodeSecretData(aged),
      },
    ],
  });
  t.teardown(() => api.close());
  const leader = replica(api, t);
  const loaded = leader.next();
  await leader.provisioner.start();
  t.equal((await loaded).certPem, aged['tls.crt'], 'served until renewed');
  const renewed = leader.next();
  leader.provisioner.setLeader(true);
  const pair = await renewed;
  const left = (Date.parse(new X509Certificate(pair.certPem).validTo) - Date.now()) / DAY;
  t.ok(left > 364, `a year again (${left.toFixed(0)} days)`);
  t.equal(storedData(api)['ca.crt'], aged['ca.crt'], 'same CA');
  t.equal(api.count({ verb: 'patch' }), 0, 'so the caBundle needed no write');
  t.equal(api.count({ verb: 'update', resource: 'secrets' }), 1, 'replaced, guarded by its resourceVersion');
  t.same(storedSecret(api)?.metadata?.labels, { keep: 'me' }, 'its labels kept');
});

t.test('the periodic recheck renews a certificate that fell due while nothing changed', async (t) => {
  const issued = await issueCertificate(
    serviceDnsNames({ namespace: NAMESPACE, name: SERVICE }),
    null,
    null,
    Date.now(),
  );
  const api = await startFakeApiServer({
    rbac: RBAC,
    objects: [
      configuration(Buffer.from(issued['ca.crt'] as string).toString('base64')),
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: SECRET, namespace: NAMESPACE },
        type: 'kubernetes.io/tls',
        data: encodeSecretData(issued),
      },
    ],
  });
  t.teardown(() => api.close());
  let offset = 0;
  const leader = replica(api, t, true, { now: () => Date.now() + offset, recheckMs: 20 });
  const loaded = leader.next();
  await leader.provisioner.start();
  t.equal((await loaded).certPem, issued['tls.crt']);
  // judged at once (valid, caBundle right: nothing to write); from here on nothing changes
  leader.provisioner.setLeader(true);
  const renewed = leader.next();
  offset = 250 * DAY; // 115 days left of 365: under a third
  const pair = await renewed;
  t.not(pair.certPem, issued['tls.crt'], 'renewed by the timer alone');
  t.equal(api.count({ verb: 'update', resource: 'secrets' }), 1);
  t.equal(api.count({ verb: 'patch' }), 0, 'same CA: the caBundle needed no write');
  leader.provisioner.setLeader(false);
});

t.test('an invalid Secret is replaced; the previous pair serves meanwhile', async (t) => {
  const api = await startFakeApiServer({ rbac: RBAC, objects: [configuration()] });
  t.teardown(() => api.close());
  const leader = replica(api, t);
  const follower = replica(api, t);
  const first = follower.next();
  await Promise.all([leader.provisioner.start(), follower.provisioner.start()]);
  leader.provisioner.setLeader(true);
  const original = await first;

  const replaced = follower.next();
  const broken = structuredClone(storedSecret(api)) as { data: Record<string, string> };
  broken.data['tls.crt'] = Buffer.from(
    '-----BEGIN CERTIFICATE-----\nbroken\n-----END CERTIFICATE-----\n',
  ).toString('base64');
  api.apply(broken as never);
  const pair = await replaced;
  t.not(pair.certPem, original.certPem, 'a new certificate');
  t.equal(follower.pairs.length, 2, 'the broken one was never handed over');
  t.match(follower.logs.join(''), /admission webhook Secret unusable/);
  t.equal(pair.certPem, storedData(api)['tls.crt']);
  t.ok(await handshake(pair, caBundleOf(api)), 'trusted through the caBundle');
});

t.test('a deleted Secret is created again', async (t) => {
  const api = await startFakeApiServer({ rbac: RBAC, objects: [configuration()] });
  t.teardown(() => api.close());
  const leader = replica(api, t);
  const first = leader.next();
  await leader.provisioner.start();
  leader.provisioner.setLeader(true);
  const original = await first;
  const again = leader.next();
  api.remove({ kind: 'Secret', namespace: NAMESPACE, name: SECRET });
  const pair = await again;
  t.not(pair.certPem, original.certPem);
  t.equal(pair.certPem, storedData(api)['tls.crt']);
});

t.test('two replicas racing end with one certificate everywhere', async (t) => {
  const api = await startFakeApiServer({ rbac: RBAC, objects: [configuration()] });
  t.teardown(() => api.close());
  const a = replica(api, t);
  const b = replica(api, t);
  await Promise.all([a.provisioner.start(), b.provisioner.start()]);
  // both believe they lead (a leadership hand-over overlaps for a moment)
  a.provisioner.setLeader(true);
  b.provisioner.setLeader(true);
  const settled = () => {
    const data = storedData(api);
    const served = data['tls.crt'] === undefined ? null : fingerprint(data['tls.crt']);
    return (
      served !== null &&
      a.provisioner.served === served &&
      b.provisioner.served === served &&
      caBundleOf(api) === data['ca.crt']
    );
  };
  const deadline = Date.now() + 10_000;
  while (!settled() && Date.now() < deadline) {
    await Promise.race([a.next(), b.next(), api.waitForRequest({}, 10_000).catch(() => undefined)]);
  }
  t.ok(settled(), 'one Secret, served by both, trusted by the caBundle');
  t.equal(api.count({ verb: 'create', resource: 'secrets', status: 201 } as never), 1, 'created once');
  t.ok(await handshake(a.pairs.at(-1) as never, caBundleOf(api)));
});

t.test('without a Service the Secret is only read (cert-manager owns it)', async (t) => {
  const api = await startFakeApiServer({
    rbac: [
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: [SECRET],
        verbs: ['list', 'watch'],
        namespaces: [NAMESPACE],
      },
    ],
  });
  t.teardown(() => api.close());
  const reader = replica(api, t, false);
  await reader.provisioner.start();
  reader.provisioner.setLeader(true);
  const loaded = reader.next();
  const issued = await issueCertificate(
    serviceDnsNames({ namespace: NAMESPACE, name: SERVICE }),
    null,
    null,
    Date.now(),
  );
  // as cert-manager writes it: no ca.key
  api.apply({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: SECRET, namespace: NAMESPACE },
    type: 'kubernetes.io/tls',
    data: encodeSecretData({ ...issued, 'ca.key': undefined }),
  });
  t.equal((await loaded).certPem, issued['tls.crt']);
  t.equal(writes(api), 0, 'nothing written, even as the leader');
});
