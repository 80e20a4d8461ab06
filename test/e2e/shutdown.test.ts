// Graceful stop: /healthz turns 500 at once, a slow in-flight request still completes, then the
// listeners are closed.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { get, testConfig } from '../support/http.ts';
import { INGRESS_CLASS } from '../support/manifests.ts';

t.test('stop: health fails first, in-flight requests finish, then listeners close', async (t) => {
  let releaseSlow: () => void = () => {};
  let slowArrived: () => void = () => {};
  const arrived = new Promise<void>((resolve) => {
    slowArrived = resolve;
  });
  const backend = createServer((req, res) => {
    if (req.url === '/slow') {
      slowArrived();
      releaseSlow = () => res.end('slow done');
      return;
    }
    res.end('fast');
  });
  await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
  const port = (backend.address() as AddressInfo).port;
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-stop-'));
  t.teardown(async () => {
    backend.closeAllConnections();
    backend.close();
    await rm(dir, { recursive: true, force: true });
  });
  await writeFile(
    join(dir, 'all.yaml'),
    `${INGRESS_CLASS}---
apiVersion: v1
kind: Service
metadata: { name: web, namespace: default }
spec: { ports: [{ port: 80, targetPort: ${port} }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: web-1, namespace: default, labels: { kubernetes.io/service-name: web } }
ports: [{ port: ${port} }]
endpoints: [{ addresses: [127.0.0.1] }]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: web, namespace: default }
spec:
  ingressClassName: ingress-ts
  rules: [{ host: web.test, http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }] } }]
`,
  );
  const controller = await start(testConfig(dir), createLogger('silent'));
  const http = controller.http.port;
  t.equal((await get(controller.healthz.port, 'x', '/healthz')).status, 200);
  t.equal((await get(http, 'web.test', '/')).body, 'fast');

  const slow = get(http, 'web.test', '/slow');
  await arrived;
  const stopped = controller.stop(0, 10_000);
  let stopDone = false;
  void stopped.then(() => {
    stopDone = true;
  });
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(stopDone, false, 'stop waits for the in-flight request');
  t.equal((await get(controller.healthz.port, 'x', '/healthz')).status, 500, '/healthz fails while draining');
  t.equal((await get(controller.healthz.port, 'x', '/livez')).status, 200, '/livez: alive while draining');
  releaseSlow();
  const reply = await slow;
  t.equal(reply.status, 200);
  t.equal(reply.body, 'slow done', 'the in-flight request completed');
  await stopped;
  await t.rejects(get(http, 'web.test', '/'), { code: 'ECONNREFUSED' }, 'listeners are closed');
});
