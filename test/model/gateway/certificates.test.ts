// Listener certificates on the hosts they claim (decision 3): a listener's hostname, a wildcard
// listener or one without a hostname a route reached the host through (never a host an Ingress
// names); the older object between a Gateway and an Ingress's spec.tls wins; the oldest listener without a hostname is the default
// certificate unless --default-ssl-certificate is set.
import t, { type Test } from 'tap';
import type { BuildResult, ListenerCertificate, ModelOptions, RoutePlan } from '../../../lib/model/index.ts';
import { diagnosticLines, ingress, path, pem, rule, tlsSecret } from '../helpers.ts';
import { buildWithGraph, type GatewayWorld, gateway, graphOf, listenerCertificate, plan } from './helpers.ts';

const secrets = [
  tlsSecret('a-cert', pem('a-example'), 'infra'),
  tlsSecret('wild-cert', pem('wildcard-example'), 'infra'),
  tlsSecret('other-cert', pem('other'), 'infra'),
  tlsSecret('ing-cert', pem('a-example')),
  tlsSecret('flag-cert', pem('other'), 'infra'),
];

const https = (hostnames: string[], name = 'https', gw = 'gw') => ({
  protocol: 'HTTPS' as const,
  hostnames,
  name,
  gateway: gw,
});

interface Case extends GatewayWorld {
  name: string;
  plans: RoutePlan[];
  certificates: ListenerCertificate[];
  options?: Partial<ModelOptions>;
  /** `host certificate-id@who` of each server with tls */
  tls: string[];
  defaultCertificate: string | null;
  diagnostics?: string[];
  check?: (t: Test, result: BuildResult) => void;
}

const tlsLines = ({ model }: BuildResult): string[] =>
  model.servers.flatMap((s) =>
    s.tls === null
      ? []
      : [`${s.hostname} ${s.tls.certificate}@${s.tls.ingress.kind ?? 'Ingress'}:${s.tls.ingress.name}`],
  );

const cases: Case[] = [
  {
    name: "a listener's hostname: the host's certificate, also with no route attached through it",
    ingresses: [ingress('ing', { created: 5, rules: [rule('b.example.com', path('/', 'app:80'))] })],
    plans: [plan('r', { listeners: [https(['a.example.com'], 'a')] })],
    certificates: [
      listenerCertificate('a-cert', 'a.example.com', 'gw', 'a'),
      listenerCertificate('wild-cert', 'b.example.com', 'gw', 'b'),
      listenerCertificate('other-cert', 'nobody.example.com', 'gw', 'c'),
    ],
    tls: ['a.example.com infra/a-cert@Gateway:gw', 'b.example.com infra/wild-cert@Gateway:gw'],
    defaultCertificate: null,
    check: (t, { model }) => {
      t.strictSame(Object.keys(model.certificates), ['infra/a-cert', 'infra/wild-cert'], 'only used ones');
      t.equal(model.servers.length, 2, 'a listener hostname no route reaches makes no server');
    },
  },
  {
    name: 'a host reached through a wildcard listener and one without a hostname: the wildcard is more specific',
    ingresses: [],
    plans: [
      plan('r', {
        listeners: [
          https(['x.example.com'], 'wild'),
          https(['x.example.com', 'y.example.com'], 'any', 'gw0'),
        ],
      }),
    ],
    certificates: [
      listenerCertificate('other-cert', null, 'gw0', 'any'),
      listenerCertificate('wild-cert', '*.example.com', 'gw', 'wild'),
    ],
    tls: ['x.example.com infra/wild-cert@Gateway:gw', 'y.example.com infra/other-cert@Gateway:gw0'],
    defaultCertificate: 'infra/other-cert',
  },
  {
    name: 'the oldest listener without a hostname is the default certificate',
    ingresses: [],
    plans: [],
    certificates: [
      listenerCertificate('a-cert', null, 'old'),
      listenerCertificate('other-cert', null, 'new'),
    ],
    tls: [],
    defaultCertificate: 'infra/a-cert',
    check: (t, { model }) => t.strictSame(Object.keys(model.certificates), ['infra/a-cert']),
  },
  {
    name: '--default-ssl-certificate wins over a listener without a hostname',
    options: { defaultSSLCertificate: 'infra/flag-cert' },
    ingresses: [],
    plans: [],
    certificates: [listenerCertificate('a-cert', null)],
    tls: [],
    defaultCertificate: 'infra/flag-cert',
  },
  {
    name: "an older Ingress's spec.tls keeps its host",
    ingresses: [
      ingress('ing', {
        created: 1,
        tls: [{ hosts: ['a.example.com'], secretName: 'ing-cert' }],
        rules: [rule('a.example.com', path('/', 'app:80'))],
      }),
    ],
    gateways: [gateway('gw', 2)],
    plans: [],
    certificates: [listenerCertificate('a-cert', 'a.example.com')],
    tls: ['a.example.com default/ing-cert@Ingress:ing'],
    defaultCertificate: null,
  },
  {
    name: "a newer Ingress's spec.tls loses to the older Gateway's listener (TLS_CONFLICT), the host still TLS-configured",
    ingresses: [
      ingress('ing', {
        created: 3,
        tls: [{ hosts: ['a.example.com'], secretName: 'ing-cert' }],
        rules: [rule('a.example.com', path('/', 'app:80'))],
      }),
    ],
    gateways: [gateway('gw', 2)],
    plans: [],
    certificates: [listenerCertificate('a-cert', 'a.example.com')],
    tls: ['a.example.com infra/a-cert@Gateway:gw'],
    defaultCertificate: null,
    diagnostics: ['TLS_CONFLICT ing'],
    // the host stays TLS-configured for its Ingress paths' redirects
    check: (t, { model }) => t.equal(model.servers[0]?.tls?.gatewayOnly, undefined),
  },
  {
    name: "review repro 1: a newer HTTPRoute through a listener without a hostname never takes an Ingress host's tls",
    ingresses: [
      ingress('site', {
        created: 50,
        tls: [{ hosts: ['a.example.com'], secretName: 'ing-cert' }],
        rules: [rule('a.example.com', path('/', 'app:80'))],
      }),
    ],
    gateways: [gateway('gw', 0)],
    plans: [
      plan('steal', {
        created: 100,
        listeners: [https(['a.example.com'], 'any')],
        rules: [{ matches: [{ path: '/', method: 'GET' }] }],
      }),
    ],
    certificates: [listenerCertificate('other-cert', null, 'gw', 'any')],
    tls: ['a.example.com default/ing-cert@Ingress:site'],
    defaultCertificate: 'infra/other-cert',
    // and its GET / behind the older Ingress's / is left out (routes.test.ts)
    diagnostics: ['HTTPROUTE_PATH_TAKEN HTTPRoute:default/steal'],
  },
  {
    name: 'review repro 2: a listener without a hostname never adds tls to a plain Ingress host',
    ingresses: [ingress('site', { created: 50, rules: [rule('a.example.com', path('/', 'app:80'))] })],
    gateways: [gateway('gw', 0)],
    plans: [
      plan('innocent', {
        created: 100,
        listeners: [https(['a.example.com'], 'any')],
        rules: [{ matches: [{ path: '/nothing-to-see', exact: true }] }],
      }),
    ],
    certificates: [listenerCertificate('other-cert', null, 'gw', 'any')],
    tls: [],
    defaultCertificate: 'infra/other-cert',
  },
  {
    name: 'a listener without a hostname still serves the hosts only HTTPRoutes name',
    ingresses: [ingress('site', { created: 50, rules: [rule('a.example.com', path('/', 'app:80'))] })],
    gateways: [gateway('gw', 0)],
    plans: [
      plan('r', {
        created: 100,
        listeners: [https(['a.example.com', 'b.example.com'], 'any')],
        rules: [{ matches: [{ path: '/r' }] }],
      }),
    ],
    certificates: [listenerCertificate('other-cert', null, 'gw', 'any')],
    tls: ['b.example.com infra/other-cert@Gateway:gw'],
    defaultCertificate: 'infra/other-cert',
    check: (t, { model }) =>
      t.equal(model.servers.find((s) => s.hostname === 'b.example.com')?.tls?.gatewayOnly, true),
  },
  {
    name: "a listener naming a plain Ingress host gives it a certificate, marked as the Gateway's only (no ssl-redirect)",
    ingresses: [ingress('site', { created: 1, rules: [rule('a.example.com', path('/', 'app:80'))] })],
    gateways: [gateway('gw', 2)],
    plans: [],
    certificates: [listenerCertificate('a-cert', 'a.example.com')],
    tls: ['a.example.com infra/a-cert@Gateway:gw'],
    defaultCertificate: null,
    check: (t, { model }) => t.equal(model.servers[0]?.tls?.gatewayOnly, true),
  },
  {
    name: 'an HTTP-only route reaches no certificate; the catch-all never gets one',
    ingresses: [],
    plans: [plan('r', { listeners: [{ hostnames: ['h.example.com'] }, https([], 'any')] })],
    certificates: [listenerCertificate('other-cert', null, 'gw', 'any')],
    tls: [],
    defaultCertificate: 'infra/other-cert',
  },
];

for (const c of cases) {
  t.test(c.name, async (t) => {
    const result = buildWithGraph({ ...c, secrets }, graphOf(c.plans, c.certificates), c.options);
    t.strictSame(tlsLines(result), c.tls, 'hosts with tls');
    t.equal(result.model.defaultCertificate, c.defaultCertificate, 'default certificate');
    t.strictSame(diagnosticLines(result), [...(c.diagnostics ?? [])].sort(), 'diagnostics');
    c.check?.(t, result);
  });
}
