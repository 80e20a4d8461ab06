// The routing page against the documented JSON contract, served by a small status server of the
// test's own (the page's real files, canned /debug/model and /debug/traffic answers): endpoint
// readiness and EWMA scores, the annotations in effect, traffic figures joined to their routes (with
// and without a host label), polling with If-None-Match where an unchanged model is not re-rendered,
// and a changed model that is. The same checks against a running controller are in
// test/e2e/routing-page.test.ts. Skips, saying why, where no Chromium is installed.

import { createServer } from 'node:http';
import type { Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { createRoutingPage } from '../../lib/routing-page/serve.ts';
import { findBrowser, launchBrowser } from '../support/browser.ts';
import { listen } from '../support/http.ts';

const HOSTILE = '<script>window.__pwned = 1</script>';

/** A host of /debug/model's answer, as loosely as the page reads it. */
type HostJson = { host: string; routes: unknown[] } & Record<string, unknown>;

function model(extraHost: string | null) {
  const hosts: HostJson[] = [
    {
      host: 'app.example.test',
      ingress: 'd/app',
      regex: false,
      tls: null,
      routes: [
        {
          path: '/',
          pathType: 'Prefix',
          ingress: 'd/app',
          backend: 'd-app-80',
          backendProtocol: 'HTTP',
          canary: {
            ingress: 'd/app-canary',
            backend: 'd-app-next-80',
            weight: 10,
            weightTotal: 100,
            header: 'x-canary',
            headerValue: '***',
            headerPattern: null,
            cookie: null,
          },
        },
        {
          path: '/api',
          pathType: 'Exact',
          ingress: 'd/api',
          backend: 'd-api-80',
          backendProtocol: 'HTTP',
          canary: null,
        },
      ],
      defaultRoute: { ingress: 'd/app', backend: 'default-backend' },
    },
    // a host only an HTTPRoute names, as /debug/model describes it
    {
      host: 'gw.example.test',
      ingress: 'd/store',
      ingressKind: 'HTTPRoute',
      regex: false,
      tls: null,
      routes: [
        {
          path: '/api',
          pathType: 'Prefix',
          ingress: 'd/store',
          kind: 'HTTPRoute',
          backend: 'weighted',
          backendProtocol: 'HTTP',
          canary: null,
          backends: [
            { backend: 'd-api-80', weight: 3, share: 0.75 },
            { backend: null, weight: 1, share: 0.25 },
          ],
          gateway: {
            rule: 1,
            protocols: 'both',
            listenerPorts: { http: 80, https: 443 },
            method: 'GET',
            headers: [{ name: 'x-beta', value: '***' }],
            queryParams: [],
            filters: ['request headers: set x-team'],
          },
        },
      ],
      defaultRoute: { ingress: null, backend: 'default-backend' },
    },
  ];
  if (extraHost !== null) {
    hosts.push({ ...hosts[0]!, host: extraHost, routes: [hosts[0]!.routes[1]!] });
  }
  return {
    hash: 'h1',
    routesHash: 'r1',
    hosts,
    backends: [
      {
        name: 'd-app-80',
        service: 'd/app:80',
        externalName: false,
        loadBalance: 'ewma',
        balancer: 'ewma',
        endpoints: ['10.0.0.1:80', '10.0.0.2:80'],
        notReady: ['10.0.0.3:80'],
        scores: { '10.0.0.1:80': 1.5, '10.0.0.2:80': 12.25 },
      },
      {
        name: 'd-app-next-80',
        service: 'd/app-next:80',
        externalName: false,
        loadBalance: 'round_robin',
        balancer: 'round_robin',
        endpoints: ['10.0.1.1:80'],
      },
      {
        name: 'd-api-80',
        service: 'd/api:80',
        externalName: false,
        loadBalance: 'round_robin',
        balancer: 'round_robin',
        endpoints: [],
        notReady: [],
      },
    ],
    ingresses: {
      'd/app': {
        annotations: {
          'nginx.ingress.kubernetes.io/load-balance': 'ewma',
          'nginx.ingress.kubernetes.io/x': HOSTILE,
        },
        created: '2026-01-01T00:00:00Z',
        class: 'ingress-ts',
      },
      'd/app-canary': {
        annotations: { 'nginx.ingress.kubernetes.io/canary': 'true' },
        created: '2026-01-02T00:00:00Z',
        class: 'ingress-ts',
      },
      'd/api': { annotations: {}, created: '2026-01-03T00:00:00Z', class: null },
    },
    defaultBackend: null,
    diagnostics: {},
  };
}

interface Served {
  model: ReturnType<typeof model>;
  etag: string;
  traffic: unknown;
  /** If-None-Match of each /debug/model request */
  conditional: Array<string | undefined>;
}

async function statusServer(t: Test, served: Served): Promise<number> {
  const page = createRoutingPage();
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '';
    if (page(path, req, res)) return;
    if (path === '/debug/model') {
      served.conditional.push(req.headers['if-none-match']);
      if (req.headers['if-none-match'] === served.etag) {
        res.writeHead(304, { ETag: served.etag }).end();
        return;
      }
      res
        .writeHead(200, { 'Content-Type': 'application/json', ETag: served.etag })
        .end(JSON.stringify(served.model));
      return;
    }
    if (path === '/debug/traffic') {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(served.traffic));
      return;
    }
    res.writeHead(404).end();
  });
  const port = await listen(server);
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return port;
}

function traffic(rate: number) {
  return {
    windowSeconds: 60,
    sampledAt: '2026-11-26T22:00:00.000Z',
    routes: [
      {
        host: 'app.example.test',
        ingress: 'd/app',
        path: '/',
        service: 'app',
        canary: '',
        requests: rate * 60,
        rate,
        errorRate: 0.25,
        p99: 0.0123,
      },
      {
        host: 'app.example.test',
        ingress: 'd/app',
        path: '/',
        service: 'app-next',
        canary: 'd-app-next-80',
        requests: 60,
        rate: 1,
        errorRate: 0,
        p99: 1.5,
      },
      // without --metrics-per-host: no host; joined by Ingress and path
      {
        host: '',
        ingress: 'd/api',
        path: '/api',
        service: 'api',
        canary: '',
        requests: 0,
        rate: 0,
        errorRate: 0,
        p99: null,
      },
    ],
  };
}

const cells = (page: Page, host: string, row: number): Promise<string[]> =>
  page.evaluate(
    `[...document.querySelectorAll('li.host[data-host="${host}"] tbody tr')[${row}].querySelectorAll('td.num')].map((c) => c.textContent)`,
  );

// a browser starts in 1-2 s alone; beside the rest of the suite on 2 cores, several times that
t.setTimeout(120_000);

const browser = findBrowser();
const skip = 'missing' in browser ? `no browser to run the page in: ${browser.missing}` : false;

t.test('the page renders the documented contract', { skip }, async (t) => {
  if ('missing' in browser) return;
  const served: Served = { model: model(null), etag: '"one"', traffic: traffic(2), conditional: [] };
  const port = await statusServer(t, served);
  const chromium = await launchBrowser(browser.path);
  t.teardown(() => chromium.close());
  const page = await chromium.newPage({ viewport: { width: 1200, height: 800 } });
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  await page.goto(`http://127.0.0.1:${port}/debug/routing?refresh=1`);
  const app = page.locator('li.host[data-host="app.example.test"]');
  await app.waitFor();

  t.test('traffic per route, canary apart, joined with or without the host', async (t) => {
    t.strictSame(await cells(page, 'app.example.test', 0), ['2.00/s', '25.0%', '12 ms']);
    t.strictSame(await cells(page, 'app.example.test', 1), ['1.00/s', '0.0%', '1.50 s'], 'the canary row');
    t.strictSame(await cells(page, 'app.example.test', 2), ['0.00/s', '0.0%', '–'], 'no host label, no p99');
    t.match(await page.locator('#traffic-note').innerText(), /last 60 s/);
    t.match(await app.locator('tr.canary').innerText(), /header x-canary: \*\*\* · weight 10\/100/);
  });

  t.test('endpoints ready and not, EWMA scores, annotations in effect', async (t) => {
    await app.locator('button.toggle').click();
    const endpoints = await app.locator('.backend').first().innerText();
    t.match(endpoints, /d-app-80 → d\/app:80 · balancer ewma/);
    t.match(
      endpoints,
      /ready 10\.0\.0\.1:80 EWMA 1\.50\s+ready 10\.0\.0\.2:80 EWMA 12\.3\s+not ready 10\.0\.0\.3:80/,
    );
    t.match(await app.locator('.backend').nth(2).innerText(), /no endpoints: requests get 503/);
    const notes = await app.locator('.annotations').first().innerText();
    t.match(notes, /nginx\.ingress\.kubernetes\.io\/load-balance\s+ewma/);
    t.match(notes, HOSTILE, 'a hostile value as text');
    t.equal(await page.locator('#hosts script').count(), 0);
    t.equal(await page.evaluate('typeof window.__pwned'), 'undefined');
    t.match(
      await app.locator('.details').innerText(),
      /Ingress d\/api\s+· created 2026-01-03T00:00:00Z\s+none/,
    );
  });

  t.test('an HTTPRoute where an Ingress would be: its rule, shares, conditions and filters', async (t) => {
    const gw = page.locator('li.host[data-host="gw.example.test"]');
    const first = await gw.locator('tbody tr').first().innerText();
    t.match(first, /d-api-80 75\.0% · 500 25\.0%/);
    t.match(first, /HTTPRoute d\/store · rule 1/);
    t.match(
      await gw.locator('tr.conditions').innerText(),
      /method GET · header x-beta: \*\*\* · request headers: set x-team/,
    );
    await gw.locator('button.toggle').click();
    t.match(await gw.locator('.details').innerText(), /HTTPRoute d\/store\s+none: the ConfigMap's settings/);
    await page.locator('#search').fill('httproute x-beta');
    await page.locator('#summary').filter({ hasText: 'Showing 1 of 1 matching' }).waitFor();
    await page.locator('#search').fill('');
    await gw.locator('button.toggle').click();
  });

  t.test('an unchanged model is a 304 and is not rendered again; traffic refreshes in place', async (t) => {
    await page.evaluate('document.querySelector("li.host").dataset.marker = "kept"');
    served.traffic = traffic(7);
    await app.locator('td.num').first().filter({ hasText: '7.00/s' }).waitFor();
    t.ok(served.conditional.includes('"one"'), 'polled with If-None-Match');
    t.equal(await page.evaluate('document.querySelector("li.host").dataset.marker'), 'kept', 'same nodes');
    t.equal(await app.locator('button.toggle').getAttribute('aria-expanded'), 'true');
  });

  t.test('a changed model is rendered', async (t) => {
    served.model = model('extra.example.test');
    served.etag = '"two"';
    await page.locator('li.host[data-host="extra.example.test"]').waitFor();
    t.equal(await page.evaluate('document.querySelector("li.host").dataset.marker'), undefined, 'new nodes');
    t.equal(await app.locator('button.toggle').getAttribute('aria-expanded'), 'true', 'still expanded');
  });

  t.test('many hosts: 50 at a time, the next ones on request, focus on the first new one', async (t) => {
    const many = model(null);
    many.hosts = Array.from({ length: 120 }, (_, i) => ({
      ...many.hosts[0]!,
      host: `h${String(i).padStart(3, '0')}.example.test`,
    }));
    served.model = many;
    served.etag = '"three"';
    const summary = page.locator('#summary');
    await summary.filter({ hasText: 'Showing 50 of 120 matching' }).waitFor();
    t.equal(await page.locator('#hosts > li').count(), 50);
    await page.locator('#more').focus();
    await page.keyboard.press('Enter');
    await summary.filter({ hasText: 'Showing 100 of 120 matching' }).waitFor();
    t.equal(await page.locator('#hosts > li').count(), 100);
    t.equal(
      await page.evaluate("document.activeElement?.closest('li.host')?.dataset.host"),
      'h050.example.test',
      'focus moves to the first host added',
    );
    t.equal(await page.locator('#more').innerText(), 'Show 20 more (20 not shown)');
    await page.locator('#search').fill('h11');
    await summary.filter({ hasText: 'Showing 10 of 10 matching' }).waitFor();
    t.equal(await page.locator('#more').isHidden(), true, 'no button when all are shown');
    t.strictSame(errors, []);
  });
});
