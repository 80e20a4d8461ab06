// The admission webhook's certificate in a running controller (Kubernetes mode, the fake API server):
// the flags reach the provisioner, the elected leader creates the Secret and writes the caBundle, and
// the graceful stop stops it. Also with --disable-leader-election (leader from the start).
import { X509Certificate } from 'node:crypto';
import t from 'tap';
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

for (const election of [true, false]) {
  t.test(
    `the controller provisions the webhook certificate (leader election ${election ? 'on' : 'off'})`,
    async (t) => {
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
        ...(election ? ['--election-ttl=2s'] : ['--disable-leader-election']),
      ]);
      if (parsed.kind !== 'run') throw new Error('expected run');
      const created = api.waitForRequest({ verb: 'create', resource: 'secrets' }, 20_000);
      const patched = api.waitForRequest(
        { verb: 'patch', resource: 'validatingwebhookconfigurations' },
        20_000,
      );
      const controller = await start(parsed.config, createLogger('silent'), {
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
