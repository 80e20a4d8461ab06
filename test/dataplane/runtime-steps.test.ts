// The steps of compileRuntime, each on its own: balancers taken over by kind and endpoint set, the
// route state's caches shared by routes with the same annotation values, and the host table's order.
import t from 'tap';
import { generateDefaultCertificate } from '../../lib/dataplane/listening/sni.ts';
import { UpstreamBalancers } from '../../lib/dataplane/routing/runtime-balancers.ts';
import { compileHostTable } from '../../lib/dataplane/routing/runtime-hosts.ts';
import { createRouteCompileState, routedAction } from '../../lib/dataplane/routing/runtime-routes.ts';
import type { BalancerEnv } from '../../lib/dataplane/upstream/balancer.ts';
import { createEwmaStore } from '../../lib/dataplane/upstream/balancers/ewma.ts';
import type { Model } from '../../lib/model/index.ts';
import { build, ingress, path, rule, service, slice } from '../model/helpers.ts';

const env: BalancerEnv = { random: () => 0, now: () => 0 };
const deps = {
  generatedDefaultCertificate: await generateDefaultCertificate(),
  balancerEnv: env,
  ewmaStore: createEwmaStore(),
};

/** One Ingress to Service web (port 80) with these annotations and endpoints. */
const webModel = (nginx: Record<string, string>, addresses = ['10.0.0.1']): Model =>
  build({
    ingresses: [
      ingress('site', { nginx, rules: [rule('a.com', path('/', 'web:80'), path('/b', 'web:80'))] }),
    ],
    services: [service('web', [{ port: 80 }])],
    slices: [slice('web', [{ addresses }], [{ port: 80 }])],
  }).model;
const WEB = 'default-web-80';

t.test('UpstreamBalancers: which balancer of the previous compile is taken over', async (t) => {
  const cases: Array<{
    name: string;
    before: Record<string, string>;
    after: Record<string, string>;
    addresses?: string[];
    reused: boolean;
  }> = [
    { name: 'same kind, same endpoints', before: {}, after: {}, reused: true },
    {
      name: 'same kind, other endpoints (updated in place)',
      before: {},
      after: {},
      addresses: ['10.0.0.1', '10.0.0.2'],
      reused: true,
    },
    { name: 'another load-balance', before: {}, after: { 'load-balance': 'ewma' }, reused: false },
    {
      name: 'the same chash subset size',
      before: { 'upstream-hash-by': '$uri', 'upstream-hash-by-subset': 'true' },
      after: { 'upstream-hash-by': '$uri', 'upstream-hash-by-subset': 'true' },
      reused: true,
    },
    {
      name: 'another chash subset size',
      before: { 'upstream-hash-by': '$uri', 'upstream-hash-by-subset': 'true' },
      after: {
        'upstream-hash-by': '$uri',
        'upstream-hash-by-subset': 'true',
        'upstream-hash-by-subset-size': '5',
      },
      reused: false,
    },
  ];
  for (const c of cases) {
    const first = new UpstreamBalancers(webModel(c.before), undefined, deps);
    const old = first.balancerFor(WEB);
    const addresses = c.addresses ?? ['10.0.0.1'];
    const second = new UpstreamBalancers(webModel(c.after, addresses), first.balancers, deps);
    const balancer = second.balancerFor(WEB);
    t.equal(balancer === old, c.reused, `${c.name}: ${c.reused ? 'taken over' : 'a new balancer'}`);
    t.strictSame(
      balancer?.peers.map((p) => p.key),
      addresses.map((a) => `${a}:80`),
      `${c.name}: the current endpoints`,
    );
    t.strictSame(
      [...second.peerKeys.keys()],
      addresses.map((a) => `${a}:80`),
      `${c.name}: peer keys`,
    );
  }
});

t.test('UpstreamBalancers: one balancer and one hash key per upstream; none for unknown names', async (t) => {
  const upstreams = new UpstreamBalancers(webModel({ 'upstream-hash-by': '$request_uri' }), undefined, deps);
  t.equal(upstreams.balancerFor(WEB), upstreams.balancerFor(WEB), 'the same balancer on each use');
  t.not(upstreams.hashKeyOf(WEB), null);
  t.equal(upstreams.hashKeyOf(WEB), upstreams.hashKeyOf(WEB), 'the hash key is compiled once');
  t.equal(upstreams.balancerFor('default-nobody-80'), null);
  t.strictSame([...upstreams.balancers.keys()], [WEB], 'only upstreams in use');
});

t.test('route state: routes with the same annotation values share what was compiled for them', async (t) => {
  const model = webModel({ 'proxy-read-timeout': '7', 'mirror-target': 'http://mirror.test/copy' });
  const state = createRouteCompileState(model, new UpstreamBalancers(model, undefined, deps), undefined);
  const server = model.servers[0];
  if (server === undefined) throw new Error('expected a server');
  const [root, b] = server.routes.map((route) => routedAction(state, server, route, route.path));
  if (root?.type !== 'proxy' || b?.type !== 'proxy') throw new Error('expected proxy actions');
  t.equal(root.target.readTimeoutMs, 7000);
  t.equal(root.target.retryOn, b.target.retryOn, 'one TargetSettings for both routes');
  t.not(root.mirror, null);
  t.equal(root.mirror, b.mirror, 'one compiled mirror for both routes');
  t.equal(root.target.balancer, b.target.balancer, 'one balancer');
  t.strictSame(
    [...state.settings.values()].map((byVhost) => byVhost.size),
    [1],
    'settings compiled once',
  );
});

t.test(
  'host table: hosts, then aliases, then from-to-www names; the first name registered wins',
  async (t) => {
    const { model: built } = build({
      ingresses: [
        ingress('www', { rules: [rule('www.a.com', path('/', 'web:80'))] }),
        ingress('other', { created: 1, rules: [rule('other.com', path('/', 'web:80'))] }),
        ingress('bare', { created: 2, rules: [rule('a.com', path('/', 'web:80'))] }),
        ingress('b', { created: 3, rules: [rule('b.com', path('/', 'web:80'))] }),
      ],
    });
    // names the build itself would refuse (an alias that is a host, a www name that is a host or an
    // alias), so that the table's own order decides
    const names: Record<string, { aliases: string[]; from: string | null }> = {
      'www.a.com': { aliases: ['b.com'], from: 'a.com' },
      'other.com': { aliases: ['www.other.com'], from: null },
      'b.com': { aliases: [], from: 'www.other.com' },
    };
    const model: Model = {
      ...built,
      servers: built.servers.map((server) => {
        const set = names[server.hostname];
        if (set === undefined) return server;
        const annotations = {
          ...server.annotations,
          alias: { aliases: set.aliases },
          fromToWww: { enabled: set.from !== null, from: set.from },
        };
        return { ...server, annotations };
      }),
    };
    const hosts = compileHostTable(
      createRouteCompileState(model, new UpstreamBalancers(model, undefined, deps), undefined),
    );
    t.equal(hosts.lookup('b.com').hostname, 'b.com', 'a host wins over an alias of that name');
    t.equal(hosts.lookup('a.com').hostname, 'a.com', 'a host wins over a from-to-www name');
    t.equal(hosts.lookup('a.com').redirectTo, null);
    t.equal(
      hosts.lookup('www.other.com'),
      hosts.lookup('other.com'),
      'an alias serves the very entry of its host',
    );
    t.equal(hosts.lookup('www.other.com').redirectTo, null, 'an alias wins over a from-to-www name');
    t.equal(hosts.lookup('nowhere.com').hostname, model.catchAll.hostname, 'unknown names: the catch-all');

    const { model: lone } = build({
      ingresses: [
        ingress('www', {
          nginx: { 'from-to-www-redirect': 'true' },
          rules: [rule('www.a.com', path('/', 'web:80'))],
        }),
      ],
    });
    const redirect = compileHostTable(
      createRouteCompileState(lone, new UpstreamBalancers(lone, undefined, deps), undefined),
    ).lookup('a.com');
    t.match(redirect, { hostname: 'a.com', redirectTo: 'www.a.com', appRoot: null, clientAuth: null });
  },
);
