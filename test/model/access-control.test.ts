// allowlist/denylist-source-range, the limit-* annotations and their ConfigMap keys in the model:
// lists normalised to `address/prefix`, the primary key winning over its alias, ingress-nginx's
// validators (an invalid list or limit drops the Ingress; an invalid burst multiplier falls back to 5)
// and the ConfigMap's whitelist-source-range, denylist-source-range, block-cidrs and status codes.
import t from 'tap';
import { DEFAULT_GLOBAL_CONFIG } from '../../lib/model/index.ts';
import { ingress, path, rule, runCases } from './helpers.ts';

const site = (name: string, nginx: Record<string, string>) =>
  ingress(name, { nginx, rules: [rule(`${name}.com`, path('/', 'web:80'), path('/api', 'web:80'))] });
const configMap = (data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'ingress-ts', namespace: 'ingress' },
  data,
});
const OPTIONS = { configMap: 'ingress/ingress-ts' };
const NO_LIMITS = {
  rps: 0,
  rpm: 0,
  connections: 0,
  burstMultiplier: 5,
  allowlist: [],
  rate: null,
  rateAfter: null,
};

runCases(t, [
  {
    name: 'source ranges: unset means the ConfigMap decides (null), no limits',
    ingresses: [site('plain', {})],
    check: (t, { model }) => {
      const route = model.servers[0]?.routes[0];
      t.strictSame(route?.annotations.accessControl, { allow: null, deny: null });
      t.strictSame(route?.annotations.rateLimit, NO_LIMITS);
    },
  },
  {
    name: 'source ranges: IPv4 and IPv6 CIDRs, bare addresses as /32 and /128, on every path and the host default',
    ingresses: [
      site('lists', {
        'allowlist-source-range': ' 10.0.0.0/8, 192.168.1.7 ,2001:db8::/32, ::1',
        'denylist-source-range': '10.1.0.0/16',
      }),
    ],
    check: (t, { model }) => {
      const server = model.servers[0];
      const expected = {
        allow: ['10.0.0.0/8', '192.168.1.7/32', '2001:db8::/32', '::1/128'].sort(),
        deny: ['10.1.0.0/16'],
      };
      for (const route of server?.routes ?? []) t.strictSame(route.annotations.accessControl, expected);
      t.strictSame(
        server?.defaultRoute.annotations.accessControl,
        expected,
        'the host default route inherits it',
      );
    },
  },
  {
    name: 'source ranges: the alias whitelist-source-range, and allowlist-source-range winning over it',
    ingresses: [
      site('alias', { 'whitelist-source-range': '10.0.0.1' }),
      site('both', { 'whitelist-source-range': '10.0.0.1', 'allowlist-source-range': '10.0.0.2' }),
    ],
    check: (t, { model }) => {
      const byHost = Object.fromEntries(model.servers.map((s) => [s.hostname, s.routes[0]?.annotations]));
      t.strictSame(byHost['alias.com']?.accessControl.allow, ['10.0.0.1/32']);
      t.strictSame(byHost['both.com']?.accessControl.allow, ['10.0.0.2/32']);
    },
  },
  ...(
    [
      ['allowlist-source-range', '10.0.0.0/8,bad'],
      ['allowlist-source-range', '10.0.0.0/33'],
      ['whitelist-source-range', '10.0.0.0/8,'],
      ['denylist-source-range', '300.1.1.1'],
      ['limit-rps', 'ten'],
      ['limit-rpm', '1.5'],
      ['limit-connections', '2x'],
      ['limit-allowlist', '10.0.0.0/8 10.1.0.0/16'],
      ['limit-whitelist', 'localhost'],
    ] as const
  ).map(([key, value]) => ({
    name: `${key}=${JSON.stringify(value)}: ingress-nginx's validator rejects the whole Ingress`,
    ingresses: [site('bad', { [key]: value, 'limit-rps': key === 'limit-rps' ? value : '1' })],
    routes: [],
    diagnostics: ['ANNOTATION_INVALID bad'],
    messages: [`${key}=`, 'the Ingress is ignored'],
  })),
  {
    name: 'rate limits: the values, the alias limit-whitelist and limit-allowlist winning over it',
    ingresses: [
      site('limits', {
        'limit-rps': '5',
        'limit-rpm': '100',
        'limit-connections': '3',
        'limit-burst-multiplier': '2',
        'limit-whitelist': '10.0.0.0/8',
      }),
      site('both', { 'limit-rps': '1', 'limit-whitelist': '10.0.0.1', 'limit-allowlist': '::1' }),
    ],
    check: (t, { model }) => {
      const byHost = Object.fromEntries(model.servers.map((s) => [s.hostname, s.routes[0]?.annotations]));
      t.strictSame(byHost['limits.com']?.rateLimit, {
        rps: 5,
        rpm: 100,
        connections: 3,
        burstMultiplier: 2,
        allowlist: ['10.0.0.0/8'],
        rate: null,
        rateAfter: null,
      });
      t.strictSame(byHost['both.com']?.rateLimit.allowlist, ['::1/128']);
    },
  },
  {
    name: 'limit-burst-multiplier: invalid → 5, with a warning (the Ingress is kept)',
    ingresses: [site('burst', { 'limit-rps': '2', 'limit-burst-multiplier': 'many' })],
    diagnostics: ['ANNOTATION_INVALID burst'],
    messages: ['the default is used'],
    check: (t, { model }) => t.equal(model.servers[0]?.routes[0]?.annotations.rateLimit.burstMultiplier, 5),
  },
  {
    name: 'rate limits: Go integers (sign, leading zeros); a negative limit is off, as in ingress-nginx',
    ingresses: [site('ints', { 'limit-rps': '+07', 'limit-rpm': '-1' })],
    check: (t, { model }) => {
      const limits = model.servers[0]?.routes[0]?.annotations.rateLimit;
      t.equal(limits?.rps, 7);
      t.equal(limits?.rpm, -1);
    },
  },
  {
    name: 'ConfigMap: whitelist-source-range, denylist-source-range, block-cidrs, limit status codes',
    ingresses: [],
    configMaps: [
      configMap({
        'whitelist-source-range': '10.0.0.0/8, 2001:db8::1',
        'denylist-source-range': '10.9.0.0/16',
        'block-cidrs': '192.0.2.1,198.51.100.0/24',
        'limit-req-status-code': '429',
        'limit-conn-status-code': '503',
      }),
    ],
    options: OPTIONS,
    check: (t, { model }) =>
      t.strictSame(model.config.access, {
        allowlist: ['10.0.0.0/8', '2001:db8::1/128'],
        denylist: ['10.9.0.0/16'],
        blockCidrs: ['192.0.2.1/32', '198.51.100.0/24'],
        limitReqStatus: 429,
        limitConnStatus: 503,
        limitRate: 0,
        limitRateAfter: 0,
        blockUserAgents: [],
        blockReferers: [],
      }),
  },
  {
    name: 'ConfigMap: invalid lists and codes keep the defaults, each reported',
    ingresses: [],
    configMaps: [
      configMap({
        'whitelist-source-range': '10.0.0.0/8, nope',
        'denylist-source-range': '1.2.3.4/40',
        'block-cidrs': 'example.com',
        'limit-req-status-code': '200',
        'limit-conn-status-code': 'busy',
      }),
    ],
    options: OPTIONS,
    diagnostics: Array.from({ length: 5 }, () => 'CONFIG_VALUE_INVALID ConfigMap:ingress/ingress-ts'),
    messages: ['ConfigMap key block-cidrs="example.com" is invalid', 'the default is used'],
    check: (t, { model }) => t.strictSame(model.config.access, DEFAULT_GLOBAL_CONFIG.access),
  },
]);
