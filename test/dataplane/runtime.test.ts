// compileRuntime: host and path actions, balancer reuse across swaps, endpoints-only updates in place.
import t from 'tap';
import { generateDefaultCertificate } from '../../lib/dataplane/listening/sni.ts';
import { type Action, compileRuntime, type Runtime } from '../../lib/dataplane/routing/runtime.ts';
import type { BalancerEnv } from '../../lib/dataplane/upstream/balancer.ts';
import { createEwmaStore } from '../../lib/dataplane/upstream/balancers/ewma.ts';
import { build, ingress, path, rule, service, slice } from '../model/helpers.ts';

const env: BalancerEnv = { random: () => 0, now: () => 0 };
const deps = {
  generatedDefaultCertificate: await generateDefaultCertificate(),
  balancerEnv: env,
  ewmaStore: createEwmaStore(),
};

const world = (addresses: string[], extraPath = false) =>
  build({
    ingresses: [
      ingress('site', {
        rules: [rule('a.com', path('/', 'web:80'), ...(extraPath ? [path('/new', 'web:80')] : []))],
      }),
      ingress('empty', { rules: [rule('b.com', path('/', 'nobody:80'))] }),
    ],
    services: [service('web', [{ port: 80 }]), service('nobody', [{ port: 80 }])],
    slices: [slice('web', [{ addresses }], [{ port: 80 }])],
  }).model;

const actionAt = (runtime: Runtime, host: string, path: string): Action =>
  runtime.hosts.lookup(host).paths.match(path).value;

t.test('actions: proxy with a balancer, 503 while empty, built-in 404 for the default', async (t) => {
  const runtime = compileRuntime(world(['10.0.0.1']), null, deps);
  const web = actionAt(runtime, 'a.com', '/x');
  t.equal(web.type, 'proxy');
  if (web.type === 'proxy') {
    t.strictSame(
      web.target.balancer.peers.map((p) => p.key),
      ['10.0.0.1:80'],
    );
    t.equal(web.target.connectTimeoutMs, 5000);
    t.equal(web.target.tries, 3);
    t.strictSame(web.route, { namespace: 'default', ingress: 'site', service: 'web', servicePort: '80' });
  }
  const empty = actionAt(runtime, 'b.com', '/');
  t.match(empty, { type: 'proxy', whenEmpty: 503 });
  t.match(actionAt(runtime, 'nowhere.com', '/'), { type: 'status', status: 404 });
});

t.test('a route change recompiles but reuses balancers whose peers did not change', async (t) => {
  const first = compileRuntime(world(['10.0.0.1', '10.0.0.2']), null, deps);
  const second = compileRuntime(world(['10.0.0.1', '10.0.0.2'], true), first, deps);
  t.not(second.hosts, first.hosts, 'new host table');
  t.equal(
    second.balancers.get('default-web-80'),
    first.balancers.get('default-web-80'),
    'same balancer object',
  );
});

t.test(
  'an endpoints-only change updates balancers in place and keeps every compiled structure',
  async (t) => {
    const first = compileRuntime(world(['10.0.0.1']), null, deps);
    const balancer = first.balancers.get('default-web-80');
    const second = compileRuntime(world(['10.0.0.1', '10.0.0.9']), first, deps);
    t.equal(second.hosts, first.hosts, 'host table reused');
    t.equal(second.sni, first.sni, 'SNI store reused');
    t.equal(second.balancers.get('default-web-80'), balancer);
    t.strictSame(
      balancer?.peers.map((p) => p.key),
      ['10.0.0.1:80', '10.0.0.9:80'],
      'peers updated in place',
    );
    t.ok(second.peerKeys.has('10.0.0.9:80'));
    t.not(second.hash, first.hash);
  },
);

t.test('per-request lookups do not depend on the number of hosts', async (t) => {
  const many = build({
    ingresses: Array.from({ length: 2000 }, (_, i) =>
      ingress(`i${i}`, { rules: [rule(`h${i}.example.com`, path('/', 'web:80'))] }),
    ),
    services: [service('web', [{ port: 80 }])],
    slices: [slice('web', [{ addresses: ['10.0.0.1'] }], [{ port: 80 }])],
  }).model;
  const runtime = compileRuntime(many, null, deps);
  t.equal(actionAt(runtime, 'h1999.example.com', '/').type, 'proxy', 'the last host is a map lookup away');
});

t.test(
  'the balancer kind follows the upstream load-balance; the TLS policy follows the ConfigMap',
  async (t) => {
    const model = build({
      ingresses: [
        ingress('fast', { nginx: { 'load-balance': 'ewma' }, rules: [rule('a.com', path('/', 'web:80'))] }),
        ingress('plain', { rules: [rule('b.com', path('/', 'api:80'))] }),
      ],
    }).model;
    const runtime = compileRuntime(model, null, deps);
    t.equal(runtime.balancers.get('default-web-80')?.kind, 'ewma');
    t.equal(runtime.balancers.get('default-api-80')?.kind, 'round_robin');
    t.strictSame(runtime.tlsPolicy, {
      sslRedirect: true,
      forceSslRedirect: false,
      redirectCode: 308,
      noRedirect: ['/.well-known/acme-challenge'],
      hsts: 'max-age=31536000; includeSubDomains',
    });
    const tuned = build(
      {
        ingresses: [],
        configMaps: [
          {
            metadata: { name: 'c', namespace: 'n' },
            data: { 'hsts-preload': 'true', 'hsts-max-age': '60', 'http-redirect-code': '301' },
          },
        ],
      },
      { configMap: 'n/c' },
    ).model;
    const policy = compileRuntime(tuned, null, deps).tlsPolicy;
    t.equal(policy.hsts, 'max-age=60; includeSubDomains; preload');
    t.equal(policy.redirectCode, 301);
  },
);

t.test(
  'upstream settings: per route from its annotations over the ConfigMap, shared by its canary',
  async (t) => {
    const { model } = build({
      ingresses: [
        ingress('fast', {
          nginx: {
            'proxy-read-timeout': '2',
            'proxy-next-upstream': 'error http_502 http_503',
            'proxy-next-upstream-timeout': '4',
            'proxy-body-size': '10k',
            'upstream-vhost': 'inner.svc',
            'proxy-cookie-path': '/a /b',
          },
          rules: [rule('a.com', path('/fast', 'web:80'))],
        }),
        ingress('plain', { rules: [rule('a.com', path('/plain', 'web:80'))] }),
        ingress('fast-canary', {
          created: 10,
          nginx: { canary: 'true', 'canary-weight': '50', 'proxy-read-timeout': '30' },
          rules: [rule('a.com', path('/fast', 'web2:80'))],
        }),
      ],
    });
    const runtime = compileRuntime(model, null, deps);
    const fast = actionAt(runtime, 'a.com', '/fast');
    const plain = actionAt(runtime, 'a.com', '/plain');
    if (fast.type !== 'proxy' || plain.type !== 'proxy') throw new Error('expected proxy actions');
    t.match(fast.target, {
      connectTimeoutMs: 5000,
      readTimeoutMs: 2000,
      sendTimeoutMs: 60000,
      tries: 3,
      retryOn: { error: true, timeout: false, nonIdempotent: false, invalidHeader: false },
      nextUpstreamTimeoutMs: 4000,
      maxBodySize: 10 * 1024,
      bufferRequest: true,
      upstreamHost: 'inner.svc',
      upstreamHostOf: null,
      rewrite: { cookieDomain: null, cookiePath: { from: '/a', to: '/b' }, redirect: null },
    });
    t.strictSame([...(fast.target.retryOn.statuses ?? [])], [502, 503]);
    t.match(fast.canary?.target, { readTimeoutMs: 2000, maxBodySize: 10 * 1024 }, "the canary's own ignored");
    t.match(plain.target, {
      readTimeoutMs: 60000,
      maxBodySize: 1024 * 1024,
      upstreamHost: null,
      rewrite: null,
      retryOn: { statuses: null },
    });
  },
);

t.test('ssl-passthrough table: exact and wildcard names, terminated names, endpoints in place', async (t) => {
  const passWorld = (addresses: string[]) =>
    build(
      {
        ingresses: [
          ingress('pass', {
            nginx: { 'ssl-passthrough': 'true', 'server-alias': 'alias.pass.test' },
            rules: [rule('pass.test', path('/', 'tls:443')), rule('*.wild.test', path('/', 'tls:443'))],
          }),
          ingress('web', { rules: [rule('exact.wild.test', path('/', 'web:80'))] }),
          ingress('none', {
            nginx: { 'ssl-passthrough': 'true' },
            rules: [rule('none.test', path('/x', 'web:80'))],
          }),
        ],
        services: [service('tls', [{ port: 443 }]), service('web', [{ port: 80 }])],
        slices: [
          slice('tls', [{ addresses }], [{ port: 443 }]),
          slice('web', [{ addresses: ['10.1.0.1'] }], [{ port: 80 }]),
        ],
      },
      { enableSslPassthrough: true },
    ).model;
  const runtime = compileRuntime(passWorld(['10.0.0.1']), null, deps);
  const table = runtime.passthrough;
  if (table === null) throw new Error('expected a passthrough table');
  const upstreamOf = (name: string) => table.lookup(name)?.upstream ?? null;
  t.equal(upstreamOf('pass.test'), 'default-tls-443');
  t.equal(upstreamOf('a.wild.test'), 'default-tls-443', 'a wildcard host passes through');
  t.equal(upstreamOf('exact.wild.test'), null, 'an exact host without it is not caught by the wildcard');
  t.equal(upstreamOf('alias.pass.test'), null, "a host's alias does not pass through");
  t.equal(upstreamOf('other.test'), null, 'unknown names are terminated');
  t.equal(upstreamOf('a.b.wild.test'), null, 'one label only');
  const none = table.lookup('none.test');
  t.equal(none?.upstream, '', 'no / path and no default backend: no upstream');
  t.equal(none?.balancer, null);
  t.strictSame(
    table.lookup('pass.test')?.balancer?.peers.map((p) => p.key),
    ['10.0.0.1:443'],
  );
  t.equal(table.lookup('pass.test')?.connectTimeoutMs, 5000, "the ConfigMap's proxy-connect-timeout");
  // an endpoints-only change keeps the table and updates its balancer in place
  const next = compileRuntime(passWorld(['10.0.0.1', '10.0.0.2']), runtime, deps);
  t.equal(next.passthrough, table, 'the same table');
  t.strictSame(
    table.lookup('pass.test')?.balancer?.peers.map((p) => p.key),
    ['10.0.0.1:443', '10.0.0.2:443'],
  );
  t.equal(compileRuntime(world(['10.0.0.1']), null, deps).passthrough, null, 'no passthrough host: no table');
});

t.test(
  'routes to one upstream with the same settings share their target; other settings get their own',
  async (t) => {
    const model = build({
      ingresses: [
        ingress('site', { rules: [rule('a.com', path('/', 'web:80'), path('/api', 'web:80'))] }),
        ingress('other-host', { created: 1, rules: [rule('c.com', path('/', 'web:80'))] }),
        ingress('slow', {
          created: 2,
          nginx: { 'proxy-read-timeout': '5' },
          rules: [rule('d.com', path('/', 'web:80'))],
        }),
      ],
      services: [service('web', [{ port: 80 }])],
      slices: [slice('web', [{ addresses: ['10.0.0.1'] }], [{ port: 80 }])],
    }).model;
    const runtime = compileRuntime(model, null, deps);
    const targetAt = (host: string, path: string) => {
      const action = actionAt(runtime, host, path);
      return action.type === 'proxy' ? action.target : null;
    };
    const shared = targetAt('a.com', '/');
    t.ok(shared !== null);
    t.equal(targetAt('a.com', '/api'), shared, 'two paths of one Ingress');
    t.equal(targetAt('c.com', '/'), shared, 'another Ingress with the same settings');
    const slow = targetAt('d.com', '/');
    t.not(slow, shared, 'other settings: a target of its own');
    t.equal(slow?.readTimeoutMs, 5000);
    t.equal(shared?.readTimeoutMs, 60000);
    t.equal(slow?.balancer, shared?.balancer, 'one balancer per upstream still');
  },
);
