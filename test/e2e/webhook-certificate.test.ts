// The admission webhook's certificate in a running controller (Kubernetes mode, the fake API server):
// the flags reach the provisioner, the elected leader creates the Secret and writes the caBundle, and
// the graceful stop stops it. Also with --disable-leader-election (leader from the start).
import { X509Certificate } from 'node:crypto';
import { request } from 'node:https';
import t, { type Test } from 'tap';
import { parseFlags } from '../../lib/config/flags.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { decodeSecretData } from '../../lib/source/kube/webhook-pki.ts';
import { type KubeObject, startFakeApiServer } from '../support/fake-apiserver.ts';
import { LOOPBACK_PORT_0 } from '../support/http.ts';
import { testThreadsKube } from '../support/threads.ts';

t.setTimeout(60_000);
const threads = testThreadsKube([]);

const configuration: KubeObject = {
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingWebhookConfiguration',
  metadata: { name: 'edge-admission' },
  webhooks: [
    {
      name: 'validate.ingress-ts.dev',
      clientConfig: {
        service: { namespace: 'ingress', name: 'edge-admission', path: '/networking/v1/ingresses' },
      },
      sideEffects: 'None',
      admissionReviewVersions: ['v1'],
    },
  ],
};

/** The fake API server with the webhook configuration, and the flags of a controller keeping the certificate. */
async function controllerWith(t: Test, extra: string[]) {
  const api = await startFakeApiServer({ objects: [...threads.objects, configuration] });
  t.teardown(() => api.close());
  const parsed = parseFlags([
    '--kubeconfig',
    await api.writeKubeconfig(),
    ...LOOPBACK_PORT_0,
    ...threads.flags,
    '--validating-webhook-secret=ingress/edge-admission',
    '--validating-webhook-service=ingress/edge-admission',
    '--validating-webhook-configuration=edge-admission',
    ...extra,
  ]);
  if (parsed.kind !== 'run') throw new Error('expected run');
  return { api, config: parsed.config };
}

for (const election of [true, false]) {
  t.test(
    `the controller provisions the webhook certificate (leader election ${election ? 'on' : 'off'})`,
    async (t) => {
      const { api, config } = await controllerWith(t, [
        ...(election ? ['--election-ttl=2s'] : ['--disable-leader-election']),
      ]);
      const created = api.waitForRequest({ verb: 'create', resource: 'secrets' }, 20_000);
      const patched = api.waitForRequest(
        { verb: 'patch', resource: 'validatingwebhookconfigurations' },
        20_000,
      );
      const controller = await start(config, createLogger('silent'), {
        env: { POD_NAME: 'pod-a', POD_NAMESPACE: 'ingress' },
      });
      let stopped = false;
      t.teardown(() => (stopped ? undefined : controller.stop(0)));
      t.equal((await created).status, 201, 'the Secret created');
      t.equal((await patched).status, 200, 'the caBundle written');
      const data = decodeSecretData(
        api.get({ kind: 'Secret', namespace: 'ingress', name: 'edge-admission' })?.data,
      );
      t.match(
        new X509Certificate(data['tls.crt'] as string).subjectAltName,
        /DNS:edge-admission.ingress.svc/,
      );
      const secretWatches = () =>
        api.requests.filter(
          (r) => r.verb === 'watch' && r.query.fieldSelector === 'metadata.name=edge-admission',
        ).length;
      t.ok(secretWatches() >= 2, 'the Secret and the configuration watched by name');
      await controller.stop(0); // resolves once the provisioner is stopped too
      stopped = true;
    },
  );
}

/** POST an AdmissionReview trusting only `ca`; a handshake refused (no certificate yet) is null. */
function postReview(port: number, ca: string, body: string): Promise<Record<string, unknown> | null> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        servername: 'edge-admission.ingress.svc',
        ca,
        agent: false,
        method: 'POST',
        path: '/networking/v1/ingresses',
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve(JSON.parse(text) as Record<string, unknown>));
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => {
      // before the provisioner hands the pair over, the server has no certificate to offer
      if (error.code === 'ECONNRESET' || /handshake|alert|socket hang up/i.test(error.message)) resolve(null);
      else reject(error);
    });
    req.end(body);
  });
}

t.test('the webhook serves the provisioned certificate: the caBundle written verifies it', async (t) => {
  const { api, config } = await controllerWith(t, [
    '--validating-webhook=127.0.0.1:0',
    '--disable-leader-election',
    '--watch-ingress-without-class',
  ]);
  const patched = api.waitForRequest({ verb: 'patch', resource: 'validatingwebhookconfigurations' }, 20_000);
  const controller = await start(config, createLogger('silent'), {
    env: { POD_NAME: 'pod-a', POD_NAMESPACE: 'ingress' },
  });
  t.teardown(() => controller.stop(0));
  await patched;
  const stored = api.get({
    kind: 'ValidatingWebhookConfiguration',
    namespace: '',
    name: 'edge-admission',
  }) as {
    webhooks: Array<{ clientConfig: { caBundle?: string } }>;
  };
  const caBundle = Buffer.from(stored.webhooks[0]?.clientConfig.caBundle ?? '', 'base64').toString('utf8');
  t.match(caBundle, /BEGIN CERTIFICATE/, 'the caBundle holds the CA');
  const body = JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'review-1',
      kind: { group: 'networking.k8s.io', version: 'v1', kind: 'Ingress' },
      resource: { group: 'networking.k8s.io', version: 'v1', resource: 'ingresses' },
      operation: 'CREATE',
      namespace: 'e2e',
      name: 'snippet',
      object: {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
        metadata: {
          name: 'snippet',
          namespace: 'e2e',
          annotations: { 'nginx.ingress.kubernetes.io/server-snippet': 'return 200;' },
        },
        spec: {
          rules: [
            {
              host: 'a.example',
              http: {
                paths: [
                  {
                    path: '/',
                    pathType: 'Prefix',
                    backend: { service: { name: 'web', port: { number: 80 } } },
                  },
                ],
              },
            },
          ],
        },
      },
    },
  });
  const port = controller.webhook?.port ?? 0;
  // the Secret reaches every replica through its watch: until then handshakes are refused
  let reply: Record<string, unknown> | null = null;
  const deadline = Date.now() + 20_000;
  while (reply === null && Date.now() < deadline) {
    reply = await postReview(port, caBundle, body);
    if (reply === null) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.match(
    reply,
    { response: { uid: 'review-1', allowed: false, status: { message: /SNIPPET_REFUSED/ } } },
    'verified against the caBundle, and refused for its snippet',
  );
});
