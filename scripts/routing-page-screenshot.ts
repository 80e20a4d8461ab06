// Makes docs/images/routing-page.png, the README's picture of /debug/routing: ingress-ts in
// standalone mode over `npm start`'s demo (examples/manifests) plus a canary of the app and an
// annotation with a typo (so the picture shows a canary weight and a finding), the page in the
// distribution's headless Chromium at 1200×800, the app's host expanded.
// Usage: node scripts/routing-page-screenshot.ts [output.png]

import { copyFileSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseFlags } from '../lib/config/flags.ts';
import { createLogger } from '../lib/log.ts';
import { start } from '../lib/main.ts';
import { findBrowser, launchBrowser } from '../test/support/browser.ts';

const EXTRA = `apiVersion: v1
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
]);
if (parsed.kind !== 'run') throw new Error('expected flags that run');
const controller = await start(parsed.config, createLogger('silent'));
const browser = await launchBrowser(browserPath.path);
try {
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
  rmSync(dir, { recursive: true, force: true });
}
