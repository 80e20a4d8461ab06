// A request keeps the runtime it was routed with to its end, also across an external-auth check:
// when a swap lands while the auth service is still thinking, the answer that follows the verdict
// (proxied or denied) carries the response headers of the configuration that routed it, not of
// the one current when the verdict came back.
import { createServer, type ServerResponse } from 'node:http';
import t from 'tap';
import { DataPlane } from '../../lib/dataplane/dataplane.ts';
import { generateDefaultCertificate } from '../../lib/dataplane/listening/sni.ts';
import type { Model } from '../../lib/model/index.ts';
import { build, ingress, path, rule, service, slice } from '../model/helpers.ts';
import { echoBackend, send } from '../support/echo.ts';
import { listen } from '../support/http.ts';

function modelFor(generation: string, authPort: number, backendPort: number): Model {
  const result = build(
    {
      ingresses: [
        ingress('app', {
          nginx: { 'auth-url': `http://127.0.0.1:${authPort}/check` },
          rules: [rule('app.test', path('/', 'web:80'))],
        }),
      ],
      services: [service('web', [{ port: 80, targetPort: backendPort }])],
      slices: [slice('web', [{ addresses: ['127.0.0.1'] }], [{ port: backendPort }])],
      configMaps: [
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'controller', namespace: 'default' },
          data: { 'add-headers': 'default/response-headers' },
        },
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'response-headers', namespace: 'default' },
          data: { 'x-generation': generation },
        },
      ],
    },
    { configMap: 'default/controller' },
  );
  return result.model;
}

t.test('the verdict is answered with the runtime that routed the request', async (t) => {
  const backend = echoBackend('web');
  const backendPort = await listen(backend);
  t.teardown(() => backend.close());
  // the auth service holds each check until the test lets it go: /check?deny answers 401
  const held: Array<{ res: ServerResponse; deny: boolean }> = [];
  let arrived: () => void = () => {};
  const auth = createServer((req, res) => {
    held.push({ res, deny: (req.headers['x-original-url'] ?? '').includes('deny') });
    arrived();
  });
  const authPort = await listen(auth);
  t.teardown(() => auth.close());
  const nextCheck = () =>
    new Promise<void>((resolve) => {
      arrived = resolve;
    });

  const dataPlane = new DataPlane({
    httpPort: 0,
    httpsPort: 0,
    bindAddress: '127.0.0.1',
    generatedDefaultCertificate: await generateDefaultCertificate(),
  });
  const a = modelFor('a', authPort, backendPort);
  const b = modelFor('b', authPort, backendPort);
  dataPlane.swap(a);
  const { http } = await dataPlane.listen();
  t.teardown(() => dataPlane.close());

  for (const [what, target, status] of [
    ['allowed and proxied', '/', 200],
    ['denied', '/deny', 401],
  ] as const) {
    dataPlane.swap(a);
    const checked = nextCheck();
    const reply = send(http.port, 'app.test', target);
    await checked;
    t.equal(dataPlane.swap(b), 'full', `${what}: the swap lands while the check is held`);
    const check = held.shift();
    if (check === undefined) throw new Error('no check held');
    check.res.writeHead(check.deny ? 401 : 200).end();
    const answer = await reply;
    t.equal(answer.status, status, `${what}: the verdict is followed`);
    t.equal(answer.headers['x-generation'], 'a', `${what}: with the headers of the runtime that routed it`);
    const after = send(http.port, 'app.test', target);
    await nextCheck();
    held.shift()?.res.writeHead(200).end();
    t.equal(
      (await after).headers['x-generation'],
      'b',
      `${what}: a request routed after the swap gets the new ones`,
    );
  }
});
