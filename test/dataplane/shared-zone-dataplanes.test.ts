// The hook a pool of data-plane threads uses, on real sockets: the owner's ZoneMemory allocates the
// zones of a model, each data plane adopts them into its own ZoneMemory before applying the model
// (as a worker will with the buffers posted beside the model), and requests through either data
// plane are counted in the same zone: together they pass exactly 1 + burst. Without the adoption
// each data plane counts alone and lets twice as many through.
import type { Test } from 'tap';
import t from 'tap';
import { echoServer } from '../../examples/demo-backends.ts';
import { ZoneMemory } from '../../lib/dataplane/access/zone-memory.ts';
import { DataPlane } from '../../lib/dataplane/dataplane.ts';
import { generateDefaultCertificate } from '../../lib/dataplane/listening/sni.ts';
import type { Model } from '../../lib/model/index.ts';
import { build, ingress, path, rule, service, slice } from '../model/helpers.ts';
import { getFrom } from '../support/client.ts';
import { listen } from '../support/http.ts';

const generatedDefaultCertificate = await generateDefaultCertificate();

async function model(t: Test): Promise<Model> {
  const backend = echoServer('web');
  const port = await listen(backend);
  t.teardown(() => new Promise<void>((resolve) => backend.close(() => resolve())));
  return build({
    ingresses: [
      ingress('limited', {
        // 1 r/m: nothing drains during the test; a burst of 3
        nginx: { 'limit-rpm': '1', 'limit-burst-multiplier': '3' },
        rules: [rule('limited.test', path('/', 'web:80'))],
      }),
    ],
    services: [service('web', [{ port: 80, targetPort: port }])],
    slices: [slice('web', [{ addresses: ['127.0.0.1'] }], [{ port }])],
  }).model;
}

/** Two data planes, each with its own ZoneMemory; `share`: both adopt the owner's buffers first. */
async function twoDataPlanes(t: Test, limited: Model, share: boolean): Promise<number[]> {
  const owner = new ZoneMemory();
  const ports: number[] = [];
  for (let i = 0; i < 2; i++) {
    const zoneMemory = new ZoneMemory();
    const dataPlane = new DataPlane({
      httpPort: 0,
      httpsPort: 0,
      bindAddress: '127.0.0.1',
      generatedDefaultCertificate,
      zoneMemory,
    });
    t.teardown(() => dataPlane.close());
    const { http } = await dataPlane.listen();
    const posted = structuredClone({ model: limited, zones: share ? owner.buffersFor(limited) : new Map() });
    zoneMemory.adopt(posted.zones);
    await dataPlane.apply(posted.model);
    ports.push(http.port);
  }
  return ports;
}

async function statuses(ports: number[], n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++)
    out.push((await getFrom('127.0.0.1', { port: ports[i % 2] as number }, 'limited.test')).status);
  return out;
}

t.test('two data planes over the owner zones: one limit between them', async (t) => {
  const ports = await twoDataPlanes(t, await model(t), true);
  const got = await statuses(ports, 8);
  t.strictSame(got, [200, 200, 200, 200, 503, 503, 503, 503], '1 + burst in all, alternating between them');
});

t.test('without adopting them, each counts alone (what the shared zones prevent)', async (t) => {
  const ports = await twoDataPlanes(t, await model(t), false);
  const got = await statuses(ports, 10);
  t.equal(got.filter((status) => status === 200).length, 8, '1 + burst through each');
});
