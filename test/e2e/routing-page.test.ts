// The routing page (/debug/routing) in a real headless Chromium against a running standalone
// ingress-ts: what a person sees (a host, a canary weight, certificates about to expire or expired, a
// diagnostic, the search narrowing the list, `/` to search, keyboard expansion), hostile model text
// rendered as text, a live update after a manifest changes, and the stale state once the status port
// stops answering. The fields other parts of the controller add to /debug/model and /debug/traffic
// (annotations, endpoint readiness, EWMA scores, traffic) are checked in their own subtests, which
// skip while this controller does not report them. Skips, saying why, where no Chromium is installed.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { generate } from 'selfsigned';
import t, { type Test } from 'tap';
import { createLogger } from '../../lib/log.ts';
import { type Controller, start } from '../../lib/main.ts';
import { findBrowser, launchBrowser } from '../support/browser.ts';
import { echoBackend } from '../support/echo.ts';
import { get, listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, tlsSecret } from '../support/manifests.ts';

const DAY_MS = 86_400_000;

async function certificate(
  host: string,
  notBefore: number,
  notAfter: number,
): Promise<{ crt: string; key: string }> {
  const pems = await generate([{ name: 'commonName', value: host }], {
    keyType: 'ec',
    algorithm: 'sha256',
    notBeforeDate: new Date(notBefore),
    notAfterDate: new Date(notAfter),
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: host }] }],
  });
  return { crt: pems.cert, key: pems.private };
}

function service(name: string, port: number, addresses: string[]): string {
  return `---
apiVersion: v1
kind: Service
metadata: { name: ${name}, namespace: d }
spec: { ports: [{ name: http, port: 80, targetPort: ${port} }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: ${name}-1, namespace: d, labels: { kubernetes.io/service-name: ${name} } }
addressType: IPv4
ports: [{ name: http, port: ${port}, protocol: TCP }]
endpoints: [${addresses.map((a, i) => `{ addresses: [${a}], conditions: { ready: ${i < addresses.length - 1 || addresses.length === 1} } }`).join(', ')}]
`;
}

function ingress(
  name: string,
  host: string,
  backend: string,
  annotations: Record<string, string> = {},
  tls = '',
): string {
  const notes = Object.entries(annotations)
    .map(([k, v]) => `\n    nginx.ingress.kubernetes.io/${k}: ${JSON.stringify(v)}`)
    .join('');
  return `---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: ${JSON.stringify(name)}
  namespace: d
  creationTimestamp: "2026-01-01T00:00:00Z"
  annotations:${notes === '' ? ' {}' : notes}
spec:
  ingressClassName: ingress-ts${tls === '' ? '' : `\n  tls: [{ hosts: [${host}], secretName: ${tls} }]`}
  rules:
    - host: ${host}
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: ${backend}, port: { number: 80 } } } }] }
`;
}

const HOSTILE = '<img src=x onerror="window.__pwned=1">';

interface Site {
  dir: string;
  controller: Controller;
  /** stops the controller (once; the teardown does it otherwise) */
  stop: () => Promise<void>;
  echo: Server;
  shots: string;
}

async function startSite(t: Test): Promise<Site> {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-routing-page-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const echo = echoBackend('shop');
  const echoPort = await listen(echo);
  t.teardown(() => new Promise<void>((resolve) => echo.close(() => resolve())));
  const now = Date.now();
  const soon = await certificate('soon.example.test', now - 80 * DAY_MS, now + 5 * DAY_MS + 3_600_000);
  const old = await certificate('old.example.test', now - 90 * DAY_MS, now - 2 * DAY_MS - 3_600_000);
  const objects = [
    INGRESS_CLASS,
    service('shop', echoPort, ['127.0.0.1']),
    service('shop-next', echoPort, ['127.0.0.1']),
    service('web', 8080, ['10.1.0.1', '10.1.0.2', '10.1.0.9']),
    `---\n${tlsSecret('d', 'soon-tls', soon)}`,
    `---\n${tlsSecret('d', 'old-tls', old)}`,
  ].join('');
  await writeFile(join(dir, 'objects.yaml'), objects);
  await writeFile(
    join(dir, 'ingresses.yaml'),
    [
      ingress('shop', 'shop.example.test', 'shop', { 'load-balance': 'ewma' }),
      ingress('shop-canary', 'shop.example.test', 'shop-next', { canary: 'true', 'canary-weight': '30' }),
      ingress('soon', 'soon.example.test', 'web', {}, 'soon-tls'),
      ingress('old', 'old.example.test', 'web', {}, 'old-tls'),
      // its value is reported back in a diagnostic: that text must stay text
      ingress('evil', 'evil.example.test', 'web', { 'proxy-read-timeout': HOSTILE }),
      ingress('<b>bold</b>', 'bold.example.test', 'web'),
    ].join(''),
  );
  // the page follows manifest changes: each new version described at once, without the 5 s floor
  const controller = await start(testConfig(dir), createLogger('silent'), { describeEveryVersion: true });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await controller.stop(0);
  };
  t.teardown(stop);
  const shots = join(tmpdir(), 'ingress-ts-routing-page-shots');
  await mkdir(shots, { recursive: true });
  return { dir, controller, stop, echo, shots };
}

const card = (page: Page, host: string) => page.locator(`li.host[data-host="${host}"]`);
/** the hosts (or objects) listed, in order */
const listed = (page: Page): Promise<string[]> =>
  page.evaluate(
    "[...document.querySelectorAll('#hosts > li')].map((i) => i.dataset.host ?? i.dataset.object)",
  );
const focused = (page: Page): Promise<string> => page.evaluate('document.activeElement?.id');

/** WCAG 2 contrast ratio of two opaque CSS rgb() colours. */
function contrast(a: string, b: string): number {
  const luminance = (css: string) => {
    const [r = 0, g = 0, bl = 0] = (css.match(/[\d.]+/g) ?? []).map(Number).map((c) => {
      const v = c / 255;
      return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

// a browser starts in 1-2 s alone; beside the rest of the suite on 2 cores, several times that
t.setTimeout(120_000);

const browser = findBrowser();
const skip = 'missing' in browser ? `no browser to run the page in: ${browser.missing}` : false;

t.test('the routing page shows the live configuration', { skip }, async (t) => {
  if ('missing' in browser) return;
  const site = await startSite(t);
  const chromium = await launchBrowser(browser.path);
  t.teardown(() => chromium.close());
  const page = await chromium.newPage({ viewport: { width: 1200, height: 800 } });
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  page.on('console', (message) => {
    // a 404 from /debug/traffic on a controller without it is logged by the browser, not the page
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
      errors.push(message.text());
  });
  const base = `http://127.0.0.1:${site.controller.healthz.port}`;
  const loaded = await page.goto(`${base}/debug/routing?refresh=1`);
  t.equal(loaded?.status(), 200);
  t.match(loaded?.headers()['content-security-policy'], /default-src 'self'/, 'a strict CSP');
  await page.locator('#status').filter({ hasText: 'Live' }).waitFor();
  // what this controller's /debug/model and /debug/traffic report beyond the fields every version has
  const status = site.controller.healthz.port;
  const first = await get(status, 'localhost', '/debug/model');
  const model = JSON.parse(first.body) as {
    ingresses?: unknown;
    backends: Array<{ name: string; notReady?: string[] }>;
  };
  const hasTraffic = (await get(status, 'localhost', '/debug/traffic')).status !== 404;

  t.test('hosts with their paths and backends', async (t) => {
    const shop = card(page, 'shop.example.test');
    await shop.waitFor();
    t.match(await shop.locator('table.routes tbody tr').first().innerText(), /\/\s+Prefix\s+d-shop-80/);
    t.strictSame(
      (await listed(page)).filter((name) => !name.startsWith('Ingress ')),
      ['evil.example.test', 'old.example.test', 'shop.example.test', 'soon.example.test', '_'],
      'the hosts sorted, then the catch-all server',
    );
  });

  t.test('a canary and its weight', async (t) => {
    const row = card(page, 'shop.example.test').locator('tr.canary');
    t.match(await row.innerText(), /canary\s+d-shop-next-80\s+weight 30\/100\s+d\/shop-canary/);
  });

  t.test('certificates about to expire and expired are highlighted', async (t) => {
    const soon = card(page, 'soon.example.test').locator('.cert');
    t.match(await soon.getAttribute('class'), /\bexpiring\b/);
    t.match(
      await soon.innerText(),
      /TLS d\/soon-tls · issuer CN=soon\.example\.test · expires \d{4}-\d\d-\d\d · 5 days left/,
    );
    const old = card(page, 'old.example.test').locator('.cert');
    t.match(await old.getAttribute('class'), /\bexpired\b/);
    t.match(await old.innerText(), /expired 2 days ago/);
    t.equal(await card(page, 'shop.example.test').locator('.cert').innerText(), 'no TLS of its own');
  });

  t.test('diagnostics per object, and the filter for objects with problems', async (t) => {
    const evil = card(page, 'evil.example.test');
    t.equal(await evil.locator('.badge.warning').first().innerText(), '1 warning');
    t.match(await evil.locator('.findings').innerText(), /ANNOTATION_INVALID/);
    await page.locator('#with-problems').check();
    await card(page, 'shop.example.test').waitFor({ state: 'detached' });
    const shown = await listed(page);
    t.strictSame(shown, ['evil.example.test', 'Ingress d/<b>bold</b>'], 'only the objects with findings');
    await page.locator('#with-problems').uncheck();
  });

  t.test('text and badges meet WCAG AA contrast (4.5:1)', async (t) => {
    const selectors = [
      '.host-name',
      'th',
      '.muted',
      '.badge.warning',
      '.badge.error',
      '.cert.none',
      '.cert.expiring',
      '.cert.expiring strong',
      '.cert.expired',
      '.findings .message',
      '.routes .path',
      '#summary',
    ];
    for (const selector of selectors) {
      const [color, background] = (await page.evaluate(`(() => {
        const node = document.querySelector(${JSON.stringify(selector)});
        if (node === null) return [null, null];
        let back = node;
        while (back !== null && getComputedStyle(back).backgroundColor === 'rgba(0, 0, 0, 0)') back = back.parentElement;
        return [getComputedStyle(node).color, back === null ? 'rgb(255, 255, 255)' : getComputedStyle(back).backgroundColor];
      })()`)) as [string | null, string | null];
      if (color === null || background === null) {
        t.fail(`${selector} is on the page`);
        continue;
      }
      const ratio = contrast(color, background);
      t.ok(ratio >= 4.5, `${selector}: ${color} on ${background} is ${ratio.toFixed(2)}:1`);
    }
  });

  t.test('model text is shown as text, never run or parsed as markup', async (t) => {
    const evil = card(page, 'evil.example.test').locator('.findings .message');
    t.match(await evil.innerText(), 'proxy-read-timeout="<img src=x onerror=');
    const bold = page.locator('li.other[data-object="Ingress d/<b>bold</b>"] h2');
    t.equal(await bold.innerText(), 'Ingress d/<b>bold</b>');
    t.equal(
      await page.locator('#hosts img, #hosts b, #hosts script').count(),
      0,
      'no element from model text',
    );
    t.equal(await page.evaluate('typeof window.__pwned'), 'undefined', 'no handler ran');
  });

  t.test('search narrows the list; / focuses it', async (t) => {
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('/');
    t.equal(await focused(page), 'search', '/ moves focus to the search');
    await page.keyboard.type('soon');
    await card(page, 'shop.example.test').waitFor({ state: 'detached' });
    t.strictSame(await listed(page), ['soon.example.test']);
    await page.locator('#search').fill('d/shop-canary');
    await card(page, 'soon.example.test').waitFor({ state: 'detached' });
    t.equal(await page.locator('#hosts > li').count(), 1, 'an Ingress name finds its host');
    await page.locator('#search').fill('not-a-thing-anywhere');
    await page.locator('#summary').filter({ hasText: 'Showing 0 of 0' }).waitFor();
    await page.keyboard.press('Escape');
    await card(page, 'shop.example.test').waitFor();
  });

  t.test('keyboard: tab order, visible focus, expandable rows', async (t) => {
    await page.locator('#search').focus();
    await page.keyboard.press('Tab');
    t.equal(await focused(page), 'with-problems');
    await page.keyboard.press('Tab');
    const toggle = page.locator('button.toggle').first();
    t.equal(
      await page.evaluate("document.activeElement?.closest('li.host')?.dataset.host"),
      'evil.example.test',
      'then the first host',
    );
    t.not(
      await page.evaluate('getComputedStyle(document.activeElement).outlineStyle'),
      'none',
      'a visible focus',
    );
    t.equal(await toggle.getAttribute('aria-expanded'), 'false');
    await page.keyboard.press('Enter');
    t.equal(await toggle.getAttribute('aria-expanded'), 'true');
    const panel = page.locator(`#${await toggle.getAttribute('aria-controls')}`);
    t.equal(await panel.isVisible(), true);
    await page.keyboard.press('Space');
    t.equal(await toggle.getAttribute('aria-expanded'), 'false');
    t.equal(await panel.isVisible(), false);
    await card(page, 'soon.example.test').locator('button.toggle').click();
    t.match(
      await card(page, 'soon.example.test').locator('.endpoints').innerText(),
      /ready 10\.1\.0\.1:8080\s+ready 10\.1\.0\.2:8080/,
    );
  });

  t.test('a manifest change shows without a reload', async (t) => {
    const before = await page.evaluate('performance.getEntriesByType("navigation").length');
    await writeFile(join(site.dir, 'later.yaml'), ingress('later', 'later.example.test', 'web'));
    await card(page, 'later.example.test').waitFor();
    t.equal(await page.evaluate('performance.getEntriesByType("navigation").length'), before, 'no reload');
    t.equal(
      await card(page, 'soon.example.test').locator('button.toggle').getAttribute('aria-expanded'),
      'true',
      'an expanded host stays expanded',
    );
  });

  const noIngresses = model.ingresses === undefined && 'this /debug/model reports no `ingresses`';
  t.test('new fields of /debug/model: annotations in effect', { skip: noIngresses }, async (t) => {
    await card(page, 'shop.example.test').locator('button.toggle').click();
    const notes = card(page, 'shop.example.test').locator('.annotations').first();
    t.match(await notes.innerText(), /nginx\.ingress\.kubernetes\.io\/load-balance\s+ewma/);
    await card(page, 'evil.example.test').locator('button.toggle').click();
    const evil = card(page, 'evil.example.test').locator('.annotations').first();
    t.match(
      await evil.innerText(),
      `nginx.ingress.kubernetes.io/proxy-read-timeout\n${HOSTILE}`,
      'a hostile annotation value shows as text',
    );
    t.equal(await page.locator('#hosts img').count(), 0);
  });

  const web = model.backends.find((b) => b.name === 'd-web-80');
  const noReadiness = web?.notReady === undefined && 'this /debug/model reports no `notReady`';
  t.test('new fields of /debug/model: endpoints not ready', { skip: noReadiness }, async (t) => {
    const endpoints = card(page, 'soon.example.test').locator('.endpoints');
    t.match(await endpoints.innerText(), /not ready 10\.1\.0\.9:8080/);
  });

  const noTraffic = !hasTraffic && 'this controller has no /debug/traffic';
  t.test('new: /debug/traffic figures per route', { skip: noTraffic }, async (t) => {
    for (let i = 0; i < 20; i++) await get(site.controller.http.port, 'shop.example.test', '/');
    const rate = card(page, 'shop.example.test').locator('tbody tr').first().locator('td.num').first();
    await rate.filter({ hasText: /\/s$/ }).waitFor();
    t.match(await rate.innerText(), /^\d+(\.\d+)?\/s$/);
  });

  const noEtag = first.headers.etag === undefined && 'this /debug/model sends no ETag';
  t.test('new: the page polls the model with If-None-Match', { skip: noEtag }, async (t) => {
    const notModified = await page.waitForResponse(
      (r) => r.url().includes('/debug/model') && r.status() === 304,
    );
    t.equal(notModified.status(), 304, 'the page polls with If-None-Match');
  });

  t.test('a screenshot, then the stale state once the status port stops answering', async (t) => {
    const path = join(site.shots, 'routing-page.png');
    await page.screenshot({ path });
    t.comment(`screenshot: ${path}`);
    await site.stop();
    await page.locator('#status.stale').waitFor();
    t.match(await page.locator('#status').innerText(), /^Stale: no answer since \d\d:\d\d:\d\d$/);
    const [color, background] = (await page.evaluate(
      "[getComputedStyle(document.getElementById('status')).color, getComputedStyle(document.getElementById('status')).backgroundColor]",
    )) as [string, string];
    t.ok(contrast(color, background) >= 4.5, 'the stale mark is readable');
    t.equal(await card(page, 'shop.example.test').count(), 1, 'the last model stays on screen');
    t.strictSame(errors, [], 'no script errors in the page');
  });
});

t.test('the page is not there when /debug/model is not', async (t) => {
  const { createHealthz } = await import('../../lib/healthz.ts');
  const healthz = createHealthz(() => true, null, { debugModel: null });
  const { port } = await healthz.listen(0, '127.0.0.1');
  t.teardown(() => healthz.close());
  t.equal((await get(port, 'localhost', '/debug/routing')).status, 404);
  t.equal((await get(port, 'localhost', '/debug/routing/app.js')).status, 404);
});
