// The caches a data plane keeps across its runtimes are objects it owns (createRuntimeCaches), never
// module state: two data planes share no entry, one data plane keeps its entries across swaps, and
// its own path regexes are released a generation after no compile uses them.
import bcrypt from 'bcryptjs';
import t from 'tap';
import { type BasicAuthCheck, checkBasicAuth } from '../../lib/dataplane/access/basic-auth.ts';
import { beforeCompile, createRuntimeCaches, type RuntimeCaches } from '../../lib/dataplane/caches.ts';
import { generateDefaultCertificate } from '../../lib/dataplane/listening/sni.ts';
import { compileRuntime, type Runtime } from '../../lib/dataplane/routing/runtime.ts';
import { createEwmaStore } from '../../lib/dataplane/upstream/balancers/ewma.ts';
import { type Model, PathRegexCache } from '../../lib/model/index.ts';
import { build, ingress, path, pem, rule, tlsSecret } from '../model/helpers.ts';
import { caSecret } from '../model/helpers-client-auth.ts';

const generatedDefaultCertificate = await generateDefaultCertificate();
const credentials = `Basic ${Buffer.from('alice:secret').toString('base64')}`;
const htpasswd = `alice:${bcrypt.hashSync('secret', 4)}\n`;
const A = pem('a-example');

/** A regex-mode host with basic auth (bcrypt) and client certificates; `paths` are its regex paths. */
function model(paths: string[]): Model {
  return build({
    ingresses: [
      ingress('site', {
        tls: [{ hosts: ['a.example.com'], secretName: 'a-tls' }],
        nginx: {
          'use-regex': 'true',
          'auth-type': 'basic',
          'auth-secret': 'htpasswd',
          'auth-tls-secret': 'default/client-ca',
        },
        rules: [rule('a.example.com', ...paths.map((p) => path(p, 'web:80')))],
      }),
    ],
    secrets: [
      tlsSecret('a-tls', A),
      caSecret('client-ca', A.crt),
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'htpasswd', namespace: 'default' },
        data: { auth: Buffer.from(htpasswd).toString('base64') },
      },
    ],
  }).model;
}

/** Compile as a DataPlane's swap does: rotate first, then compile with the data plane's caches. */
function compile(next: Model, previous: Runtime | null, caches: RuntimeCaches): Runtime {
  beforeCompile(caches, previous, next);
  return compileRuntime(next, previous, {
    generatedDefaultCertificate,
    balancerEnv: { random: () => 0, now: () => 0 },
    ewmaStore: createEwmaStore(),
    caches,
  });
}

/** The basic-auth check of the route `path` takes on a.example.com. */
function basicOf(runtime: Runtime, path: string): BasicAuthCheck {
  const action = runtime.hosts.lookup('a.example.com').paths.match(path).value;
  const basic = action.type === 'redirect' ? null : (action.auth?.basic ?? null);
  if (basic === null) throw new Error(`${path} has no basic auth`);
  return basic;
}

t.test('two data planes share nothing', async (t) => {
  const one = createRuntimeCaches();
  const two = createRuntimeCaches();
  const first = compile(model(['/api/v[0-9]+']), null, one);
  t.equal(one.pathRegexes.size, 1, 'the regex path is in the cache of the data plane that compiled it');
  t.equal(two.pathRegexes.size, 0, 'and not in the other');

  await checkBasicAuth(basicOf(first, '/api/v1'), credentials);
  t.equal(one.bcrypt.size, 1, "bcrypt's outcome is kept by the data plane that checked it");
  t.equal(two.bcrypt.size, 0);

  const other = compile(model(['/api/v[0-9]+']), null, two);
  t.equal(
    first.hosts.lookup('a.example.com').clientAuth?.verifiedLeaves,
    one.verifiedLeaves,
    "a host's client-certificate check uses its data plane's verified leaves",
  );
  t.not(other.hosts.lookup('a.example.com').clientAuth?.verifiedLeaves, one.verifiedLeaves);
});

t.test("one data plane's caches outlive its runtimes", async (t) => {
  const caches = createRuntimeCaches();
  const first = compile(model(['/api/v[0-9]+']), null, caches);
  const firstAuth = basicOf(first, '/api/v1');
  t.type(checkBasicAuth(firstAuth, credentials), Promise, 'the first check runs bcrypt');
  t.equal(await checkBasicAuth(firstAuth, credentials), true);

  // a full swap: every route is compiled again
  const second = compile(model(['/api/v[0-9]+', '/more']), first, caches);
  t.not(second, first);
  const secondAuth = basicOf(second, '/api/v1');
  t.not(secondAuth, firstAuth, 'compiled again');
  t.equal(checkBasicAuth(secondAuth, credentials), true, "the next runtime knows bcrypt's answer at once");
  t.equal(
    second.hosts.lookup('a.example.com').clientAuth?.verifiedLeaves,
    first.hosts.lookup('a.example.com').clientAuth?.verifiedLeaves,
    'a session resumed after a swap finds the leaves verified before it',
  );

  // a runtime compiled without the data plane's caches has its own
  const alone = compileRuntime(model(['/api/v[0-9]+']), null, {
    generatedDefaultCertificate,
    balancerEnv: { random: () => 0, now: () => 0 },
    ewmaStore: createEwmaStore(),
  });
  const aloneAuth = basicOf(alone, '/api/v1');
  t.type(checkBasicAuth(aloneAuth, credentials), Promise, 'without the caches: bcrypt runs again');
});

t.test("full compiles rotate the data plane's own regexes; endpoints-only ones do not", async (t) => {
  const caches = createRuntimeCaches();
  let runtime = compile(model(['/a[0-9]+', '/b[0-9]+']), null, caches);
  t.equal(caches.pathRegexes.size, 2);
  runtime = compile(model(['/a[0-9]+']), runtime, caches);
  t.equal(caches.pathRegexes.size, 2, '/b is kept for one more generation');
  runtime = compile(model(['/a[0-9]+', '/c']), runtime, caches);
  t.equal(caches.pathRegexes.size, 2, 'released after a full compile that did not use it');

  // same routes, another endpoint set: nothing is compiled, nothing rotates
  const moved = build({
    ingresses: [
      ingress('e', { nginx: { 'use-regex': 'true' }, rules: [rule('e.test', path('/e+', 'web:80'))] }),
    ],
  }).model;
  const shared = new PathRegexCache();
  const sharing = createRuntimeCaches(shared);
  shared.compile('/from-the-build');
  compile(moved, null, sharing);
  compile(moved, null, sharing);
  t.equal(shared.size, 2, "a cache owned by the build is not rotated by the data plane's compiles");
  t.equal(sharing.ownsPathRegexes, false);
});
