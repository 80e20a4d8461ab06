// Makes docs/images/routing-page.png, the README's picture of /debug/routing: ingress-ts in
// standalone mode over `npm start`'s demo (examples/manifests) plus a canary of the app and an
// annotation with a typo (so the picture shows a canary weight and a finding), the page in the
// distribution's headless Chromium at 1200×800, the app's host expanded. The demo backends answer
// a few hundred requests first, so the traffic columns have figures.
// Usage: node scripts/routing-page-screenshot.ts [output.png]

import { copyFileSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { startDemoBackends } from '../examples/demo-backends.ts';
import { parseFlags } from '../lib/config/flags.ts';
import { createLogger } from '../lib/log.ts';
import { start } from '../lib/main.ts';
import { findBrowser, launchBrowser } from '../test/support/browser.ts';

const EXTRA = `apiVersion: v1
kind: ConfigMap
metadata: { name: ingress-ts, namespace: demo }
data: { disable-access-log: "true" }
---
apiVersion: v1
kind: Service
metadata: { name: app-v2, namespace: demo }
spec: { ports: [{ name: http, port: 80, targetPort: 18083 }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: app-v2-1, namespace: demo, labels: { kubernetes.io/service-name: app-v2 } }
addressType: IPv4
ports: [{ name: http, port: 18083, protocol: TCP }]
endpoints: [{ addresses: [127.0.0.1] }]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: app-canary
  namespace: demo
  annotations:
    nginx.ingress.kubernetes.io/canary: "true"
    nginx.ingress.kubernetes.io/canary-weight: "20"
    nginx.ingress.kubernetes.io/canary-by-header: x-canary
    nginx.ingress.kubernetes.io/proxy-read-timeout: "30s"
spec:
  ingressClassName: ingress-ts
  rules:
    - host: app.example.test
      http:
        paths:
          - { path: /, pathType: Prefix, backend: { service: { name: app-v2, port: { number: 80 } } } }
`;

const output = process.argv[2] ?? new URL('../docs/images/routing-page.png', import.meta.url).pathname;
const browserPath = findBrowser();
if ('missing' in browserPath) {
  process.stderr.write(`routing-page-screenshot: ${browserPath.missing}\n`);
  process.exit(3);
}
const dir = mkdtempSync(join(tmpdir(), 'ingress-ts-screenshot-'));
const demo = new URL('../examples/manifests/', import.meta.url).pathname;
for (const name of readdirSync(demo)) copyFileSync(join(demo, name), join(dir, name));
writeFileSync(join(dir, 'canary.yaml'), EXTRA);
const parsed = parseFlags([
  '--manifests',
  dir,
  '--http-port',
  '0',
  '--https-port',
  '0',
  '--healthz-port',
  '0',
  '--configmap',
  'demo/ingress-ts',
]);
if (parsed.kind !== 'run') throw new Error('expected flags that run');
const backends = await startDemoBackends();
const controller = await start(parsed.config, createLogger('silent'));
const browser = await launchBrowser(browserPath.path);
try {
  await sendTraffic(controller.http.port, controller.healthz.port);
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  await page.goto(`http://127.0.0.1:${controller.healthz.port}/debug/routing`);
  const app = page.locator('li.host[data-host="app.example.test"]');
  await app.locator('button.toggle').click();
  await app.locator('.details').waitFor();
  await page.locator('#search').focus();
  await page.screenshot({ path: output });
  process.stdout.write(`${output}: ${statSync(output).size} bytes\n`);
} finally {
  await browser.close();
  await controller.stop(0);
  await backends.close();
  rmSync(dir, { recursive: true, force: true });
}

/** Requests to the demo's routes (the canary by header too), then waits for /debug/traffic's next sample to hold them. */
async function sendTraffic(httpPort: number, statusPort: number): Promise<void> {
  const targets = [
    { host: 'app.example.test', path: '/', headers: {} },
    { host: 'app.example.test', path: '/api/items', headers: {} },
    { host: 'app.example.test', path: '/', headers: { 'x-canary': 'always' } },
    { host: 'secure.example.test', path: '/', headers: {} },
  ];
  for (let i = 0; i < 400; i++) {
    const target = targets[i % targets.length];
    if (target === undefined) continue;
    const answer = await request(`http://127.0.0.1:${httpPort}${target.path}`, {
      headers: { host: target.host, ...target.headers },
    });
    await answer.body.dump();
  }
  for (;;) {
    const answer = await request(`http://127.0.0.1:${statusPort}/debug/traffic`);
    const traffic = (await answer.body.json()) as { routes: { requests: number }[] };
    if (traffic.routes.some((route) => route.requests > 0)) return;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
