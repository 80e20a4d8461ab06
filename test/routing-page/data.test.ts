// The page's pure part (lib/routing-page/assets/data.js), run in Node: certificate days and levels,
// the findings a host collects from the objects it depends on, the search, and traffic summed and
// joined to routes. Tables: input, expected output.
import t from 'tap';

interface Entry {
  errors: number;
  warnings: number;
  text: string;
}
interface DataModule {
  certificateState(tls: unknown, now: number): { days: number | null; level: string } | null;
  buildView(model: unknown): {
    hosts: Array<
      Entry & {
        ingresses: string[];
        findings: Array<{ object: string; code: string }>;
        gatewayObjects: string[];
        backends: Array<{ name: string }>;
      }
    >;
    others: Array<Entry & { object: string }>;
  };
  queryTerms(query: string): string[];
  filterEntries<T extends Entry>(entries: T[], terms: string[], withProblems: boolean): T[];
  indexTraffic(traffic: unknown): Map<string, unknown>;
  routeTraffic(
    index: Map<string, unknown>,
    host: string,
    ingress: string,
    path: string,
    canary: boolean,
  ): unknown;
  gatewayConditions(route: unknown): string[];
  weightedText(backends: unknown[]): string;
  formatRate(rate: number): string;
  formatShare(share: number): string;
  formatSeconds(seconds: number | null): string;
  refreshPeriod(value: string | null): number;
}

// a browser module without types of its own: typed here by what the tests use
const data = (await import(
  new URL('../../lib/routing-page/assets/data.js', import.meta.url).href
)) as DataModule;

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-26T12:00:00Z');

t.test('certificate days left and level', async (t) => {
  const tls = (notAfter: string) => ({
    secret: 'd/s',
    ingress: 'd/i',
    certificate: { issuer: 'CN=ca', notAfter },
  });
  const table: Array<[string, number, string]> = [
    [new Date(NOW + 400 * DAY).toISOString(), 400, 'ok'],
    [new Date(NOW + 14 * DAY).toISOString(), 14, 'ok'],
    [new Date(NOW + 14 * DAY - 1).toISOString(), 13, 'expiring'],
    [new Date(NOW + 5 * DAY + 3_600_000).toISOString(), 5, 'expiring'],
    [new Date(NOW + 1000).toISOString(), 0, 'expiring'],
    [new Date(NOW - 1000).toISOString(), 0, 'expired'],
    [new Date(NOW - 2 * DAY - 3_600_000).toISOString(), -2, 'expired'],
  ];
  for (const [notAfter, days, level] of table) {
    t.match(data.certificateState(tls(notAfter), NOW), { days, level }, notAfter);
  }
  t.equal(data.certificateState(null, NOW), null, 'no TLS of its own');
  t.match(
    data.certificateState({ secret: 'd/s', certificate: { error: 'no PEM' } }, NOW),
    { level: 'error', days: null },
    'an unreadable certificate',
  );
});

const MODEL = {
  hosts: [
    {
      host: 'a.example.test',
      ingress: 'd/a',
      tls: {
        secret: 'd/a-tls',
        ingress: 'd/a',
        certificate: { issuer: 'CN=Let us', notAfter: '2027-01-01T00:00:00Z' },
      },
      routes: [
        {
          path: '/shop',
          pathType: 'Prefix',
          ingress: 'd/a',
          backend: 'd-web-80',
          canary: { ingress: 'd/a-canary', backend: 'd-next-80', weight: 5 },
        },
      ],
      defaultRoute: { ingress: 'd/a', backend: 'default-backend' },
    },
    {
      host: 'b.example.test',
      ingress: 'd/b',
      tls: null,
      routes: [],
      defaultRoute: { ingress: 'd/b', backend: 'd-web-80' },
    },
  ],
  backends: [
    { name: 'd-web-80', service: 'd/web:80', endpoints: ['10.0.0.1:80'], notReady: ['10.0.0.2:80'] },
    { name: 'd-next-80', service: 'd/next:80', endpoints: [] },
  ],
  ingresses: { 'd/a': { annotations: { 'nginx.ingress.kubernetes.io/load-balance': 'EWMA' } } },
  diagnostics: {
    'Ingress d/a-canary': [{ severity: 'warning', code: 'ANNOTATION_INVALID', message: 'x' }],
    'Secret d/a-tls': [{ severity: 'error', code: 'TLS_SECRET_INVALID', message: 'y' }],
    'Service d/next': [{ severity: 'info', code: 'SERVICE_NOTE', message: 'z' }],
    'Ingress d/gone': [{ severity: 'error', code: 'INGRESS_INVALID', message: 'dropped' }],
  },
};

t.test('a host collects the findings of its Ingresses, Secret and Services', async (t) => {
  const view = data.buildView(MODEL);
  const [a, b] = view.hosts;
  t.strictSame(a?.ingresses, ['d/a', 'd/a-canary']);
  t.strictSame(
    a?.findings.map((f) => `${f.object} ${f.code}`),
    [
      'Ingress d/a-canary ANNOTATION_INVALID',
      'Secret d/a-tls TLS_SECRET_INVALID',
      'Service d/next SERVICE_NOTE',
    ],
  );
  t.match(a, { errors: 1, warnings: 1 }, 'info is counted as neither');
  t.match(b, { errors: 0, warnings: 0 });
  t.strictSame(
    view.others.map((o) => o.object),
    ['Ingress d/gone'],
    'objects no host shows',
  );
});

t.test('search: every word, anywhere in what the host shows', async (t) => {
  const view = data.buildView(MODEL);
  const table: Array<[string, boolean, string[]]> = [
    ['', false, ['a.example.test', 'b.example.test']],
    ['B.EXAMPLE', false, ['b.example.test']],
    ['/shop', false, ['a.example.test']],
    ['d/a-canary', false, ['a.example.test']],
    ['load-balance=ewma', false, ['a.example.test']],
    ['10.0.0.2', false, ['a.example.test', 'b.example.test']],
    ['d/web 10.0.0.2   shop', false, ['a.example.test']],
    ['tls_secret_invalid', false, ['a.example.test']],
    ['let us', false, ['a.example.test']],
    ['', true, ['a.example.test']],
    ['nowhere', false, []],
  ];
  for (const [query, withProblems, hosts] of table) {
    const found = data.filterEntries(view.hosts, data.queryTerms(query), withProblems);
    t.strictSame(
      found.map((e) => (e as unknown as { host: { host: string } }).host.host),
      hosts,
      `${JSON.stringify(query)}${withProblems ? ' with problems' : ''}`,
    );
  }
});

const GATEWAY_MODEL = {
  hosts: [
    {
      host: 'gw.example.test',
      ingress: 'd/store',
      ingressKind: 'HTTPRoute',
      tls: { secret: 'infra/gw-cert', ingress: 'infra/gw', kind: 'Gateway', certificate: {} },
      routes: [
        {
          path: '/cart',
          pathType: 'Prefix',
          ingress: 'd/shop',
          backend: 'd-cart-80',
          canary: null,
        },
        {
          path: '/api',
          pathType: 'Prefix',
          ingress: 'd/store',
          kind: 'HTTPRoute',
          backend: 'weighted',
          canary: null,
          backends: [
            { backend: 'd-v1-80', weight: 3, share: 0.75 },
            { backend: null, weight: 1, share: 0.25 },
          ],
          gateway: {
            rule: 2,
            protocols: 'https',
            method: 'POST',
            headers: [{ name: 'x-beta', value: '***' }],
            queryParams: [],
            filters: ['redirect 301: hostname new.example.test'],
          },
        },
      ],
      defaultRoute: { ingress: null, backend: 'default-backend' },
    },
  ],
  backends: [
    { name: 'd-v1-80', service: 'd/v1:80', endpoints: ['10.0.0.9:80'] },
    { name: 'd-cart-80', service: 'd/cart:80', endpoints: [] },
  ],
  diagnostics: {
    'HTTPRoute d/store': [{ severity: 'warning', code: 'ENDPOINTS_NONE', message: 'x' }],
    'Gateway infra/gw': [{ severity: 'error', code: 'SOME_CODE', message: 'y' }],
    'Ingress d/store': [{ severity: 'error', code: 'INGRESS_INVALID', message: 'an Ingress of that name' }],
  },
};

t.test(
  'HTTPRoutes and Gateways where Ingresses are listed: objects, findings, backends, search',
  async (t) => {
    const view = data.buildView(GATEWAY_MODEL);
    const [host] = view.hosts;
    t.strictSame(host?.ingresses, ['d/shop'], 'only Ingresses as Ingresses');
    t.strictSame(host?.gatewayObjects, ['HTTPRoute d/store', 'Gateway infra/gw']);
    t.strictSame(
      host?.findings.map((f) => `${f.object} ${f.code}`),
      ['HTTPRoute d/store ENDPOINTS_NONE', 'Gateway infra/gw SOME_CODE'],
      'not the Ingress of the same name',
    );
    t.strictSame(
      host?.backends.map((b) => b.name),
      ['d-cart-80', 'd-v1-80'],
      'the weighted backends too',
    );
    t.strictSame(
      view.others.map((o) => o.object),
      ['Ingress d/store'],
    );
    for (const query of ['httproute d/store', 'method post', 'x-beta', 'redirect 301', 'https only']) {
      t.equal(data.filterEntries(view.hosts, data.queryTerms(query), false).length, 1, query);
    }
    const route = GATEWAY_MODEL.hosts[0]?.routes[1];
    t.strictSame(data.gatewayConditions(route), [
      'method POST',
      'header x-beta: ***',
      'HTTPS only',
      'redirect 301: hostname new.example.test',
    ]);
    t.strictSame(data.gatewayConditions(GATEWAY_MODEL.hosts[0]?.routes[0]), [], 'an Ingress path: none');
    t.equal(data.weightedText(route?.backends ?? []), 'd-v1-80 75.0% · 500 25.0%');
    t.equal(data.weightedText([]), '500 (no backends)');
  },
);

t.test('traffic summed per route, main and canary apart, joined with or without a host', async (t) => {
  const index = data.indexTraffic({
    routes: [
      { host: 'a', ingress: 'd/a', path: '/', canary: '', requests: 100, rate: 2, errorRate: 0.1, p99: 0.2 },
      { host: 'a', ingress: 'd/a', path: '/', canary: '', requests: 300, rate: 6, errorRate: 0, p99: 0.5 },
      {
        host: 'a',
        ingress: 'd/a',
        path: '/',
        canary: 'd-next-80',
        requests: 10,
        rate: 1,
        errorRate: 1,
        p99: null,
      },
      { ingress: 'd/b', path: '/x', canary: '', requests: 0, rate: 0, errorRate: 0, p99: null },
    ],
  });
  t.strictSame(data.routeTraffic(index, 'a', 'd/a', '/', false), {
    requests: 400,
    rate: 8,
    errorRate: 0.025,
    p99: 0.5,
  });
  t.strictSame(data.routeTraffic(index, 'a', 'd/a', '/', true), {
    requests: 10,
    rate: 1,
    errorRate: 1,
    p99: null,
  });
  t.strictSame(data.routeTraffic(index, 'b', 'd/b', '/x', false), {
    requests: 0,
    rate: 0,
    errorRate: 0,
    p99: null,
  });
  t.equal(data.routeTraffic(index, 'a', 'd/a', '/other', false), undefined);
  t.equal(data.indexTraffic(null).size, 0, 'no traffic answer');
});

t.test('figures as shown', async (t) => {
  const table: Array<[string, string]> = [
    [data.formatRate(0), '0.00/s'],
    [data.formatRate(2.345), '2.35/s'],
    [data.formatRate(12.34), '12.3/s'],
    [data.formatRate(1234.5), '1235/s'],
    [data.formatShare(0), '0.0%'],
    [data.formatShare(0.0012), '0.12%'],
    [data.formatShare(0.25), '25.0%'],
    [data.formatSeconds(null), '–'],
    [data.formatSeconds(0.0123), '12 ms'],
    [data.formatSeconds(2.5), '2.50 s'],
  ];
  for (const [shown, wanted] of table) t.equal(shown, wanted);
});

t.test('?refresh= as a poll period: 1 s to an hour, the default for what is not a number', async (t) => {
  const table: Array<[string | null, number]> = [
    [null, 5000],
    ['', 5000],
    ['  ', 5000],
    ['abc', 5000],
    ['NaN', 5000],
    ['10', 10_000],
    ['2.5', 2500],
    ['1', 1000],
    ['0', 1000],
    ['0.001', 1000],
    ['-5', 1000],
    ['-Infinity', 1000],
    ['3600', 3_600_000],
    ['3601', 3_600_000],
    ['1e10', 3_600_000],
    ['Infinity', 3_600_000],
  ];
  for (const [value, ms] of table) {
    const period = data.refreshPeriod(value);
    t.equal(period, ms, String(value));
    // setTimeout takes a signed 32-bit delay; a longer one fires at once
    t.ok(period <= 2 ** 31 - 1, `${value}: a delay setTimeout keeps`);
  }
});
