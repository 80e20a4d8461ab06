// /debug/model in Kubernetes mode (the fake API server): the endpoints of a Service that are not
// ready are listed beside those served, follow the EndpointSlice, and a change to them alone (the
// served endpoints, so the model's hash, unchanged) is a new answer under a new ETag.
import t from 'tap';
import { parseFlags } from '../../lib/config/flags.ts';
import type { ModelDescription } from '../../lib/debug-model.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { echoBackend } from '../support/echo.ts';
import { type KubeObject, startFakeApiServer } from '../support/fake-apiserver.ts';
import { LOOPBACK_PORT_0, listen, send } from '../support/http.ts';
import { logSink } from '../support/log-sink.ts';
import { nextSwap } from '../support/swaps.ts';
import { testThreadsKube } from '../support/threads.ts';

t.setTimeout(60_000);

type Conditions = { ready?: boolean; terminating?: boolean };

function slice(port: number, endpoints: Array<[address: string, conditions: Conditions | null]>): KubeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 'web-1', namespace: 'e2e', labels: { 'kubernetes.io/service-name': 'web' } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port, protocol: 'TCP' }],
    endpoints: endpoints.map(([address, conditions]) =>
      conditions === null ? { addresses: [address] } : { addresses: [address], conditions },
    ),
  };
}

t.test('not-ready endpoints are listed, follow the EndpointSlice, and change the ETag', async (t) => {
  const backend = echoBackend('web');
  const port = await listen(backend);
  t.teardown(() => new Promise<void>((resolve) => backend.close(() => resolve())));
  const threads = testThreadsKube([]);
  const api = await startFakeApiServer({
    objects: [
      ...threads.objects,
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'IngressClass',
        metadata: { name: 'ingress-ts' },
        spec: { controller: 'ingress-ts.dev/controller' },
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'web', namespace: 'e2e' },
        spec: { ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
      },
      slice(port, [
        ['127.0.0.1', { ready: true }],
        ['10.9.0.1', { ready: false }],
        ['10.9.0.2', { ready: false, terminating: true }],
        // no conditions: ready, as Kubernetes and ingress-nginx read it
        ['10.9.0.9', null],
      ]),
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
        metadata: {
          name: 'site',
          namespace: 'e2e',
          annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': '30' },
        },
        spec: {
          ingressClassName: 'ingress-ts',
          rules: [
            {
              host: 'site.test',
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
    ],
  });
  t.teardown(() => api.close());
  const parsed = parseFlags([
    '--kubeconfig',
    await api.writeKubeconfig(),
    ...LOOPBACK_PORT_0,
    '--watch-namespace',
    'e2e',
    ...threads.flags,
  ]);
  if (parsed.kind !== 'run') throw new Error('expected run');
  // follows changes: each new version described at once, without the floor across versions
  const log = logSink();
  const controller = await start(parsed.config, createLogger('debug', log.stream), {
    describeEveryVersion: true,
  });
  t.teardown(() => controller.stop(0));
  // with an ETag: the question a polling page asks
  const fetchModel = async (etag?: string) => {
    const headers: Record<string, string> = etag === undefined ? {} : { 'If-None-Match': etag };
    const reply = await send(controller.healthz.port, 'localhost', '/debug/model', { headers });
    return {
      status: reply.status,
      etag: String(reply.headers.etag),
      model: reply.status === 200 ? (JSON.parse(reply.body) as ModelDescription) : null,
    };
  };
  const web = (model: ModelDescription | null) => model?.backends.find((b) => b.name === 'e2e-web-80');

  const first = await fetchModel();
  t.strictSame(
    web(first.model)?.endpoints,
    [`10.9.0.9:${port}`, `127.0.0.1:${port}`],
    'the ready ones served',
  );
  t.strictSame(
    web(first.model)?.notReady,
    [`10.9.0.1:${port}`, `10.9.0.2:${port}`],
    'the not-ready ones listed, not served',
  );
  t.strictSame(first.model?.ingresses, {
    'e2e/site': {
      annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': '30' },
      created: String(first.model?.ingresses?.['e2e/site']?.created),
      class: 'ingress-ts',
    },
  });
  t.match(first.model?.ingresses?.['e2e/site']?.created, /^\d{4}-\d\d-\d\dT/, 'the API server set it');

  // one becomes ready: it is served, no longer listed
  const swapped = nextSwap();
  api.apply(
    slice(port, [
      ['127.0.0.1', { ready: true }],
      ['10.9.0.1', { ready: true }],
      ['10.9.0.2', { ready: false, terminating: true }],
      ['10.9.0.9', null],
    ]),
  );
  t.match(await swapped, { kind: 'endpoints' });
  const second = await fetchModel(first.etag);
  t.equal(second.status, 200);
  t.strictSame(web(second.model)?.endpoints, [`10.9.0.1:${port}`, `10.9.0.9:${port}`, `127.0.0.1:${port}`]);
  t.strictSame(web(second.model)?.notReady, [`10.9.0.2:${port}`]);

  // a new endpoint that is not ready: nothing served changes (no swap), the answer does
  const rebuilt = log.next(/no configuration change/);
  api.apply(
    slice(port, [
      ['127.0.0.1', { ready: true }],
      ['10.9.0.1', { ready: true }],
      ['10.9.0.2', { ready: false, terminating: true }],
      ['10.9.0.3', { ready: false }],
      ['10.9.0.9', null],
    ]),
  );
  await rebuilt;
  const third = await fetchModel(second.etag);
  t.equal(third.status, 200, 'a new version');
  t.equal(third.model?.hash, second.model?.hash, 'the same model is served');
  t.not(third.etag, second.etag, 'under a new ETag');
  t.strictSame(web(third.model)?.notReady, [`10.9.0.2:${port}`, `10.9.0.3:${port}`]);
});
