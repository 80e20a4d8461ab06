// What a build reuses from earlier builds comes from the caches its caller passes (BuildCaches), not
// from module state: builds given the same caches reuse parsed certificates and compiled regex paths,
// builds given other caches (or none) share nothing with them, and each build rotates its regex cache.
import t from 'tap';
import { buildModel, createBuildCaches, type Snapshot } from '../../lib/model/index.ts';
import { ingress, path, pem, rule, snapshotOf, tlsSecret } from './helpers.ts';

const A = pem('a-example');

const snapshot = (paths: string[]): Snapshot =>
  snapshotOf({
    ingresses: [
      ingress('site', {
        tls: [{ hosts: ['a.example.com'], secretName: 'a-tls' }],
        nginx: { 'use-regex': 'true' },
        rules: [rule('a.example.com', ...paths.map((p) => path(p, 'web:80')))],
      }),
    ],
    secrets: [tlsSecret('a-tls', A)],
  });

t.test('parsed certificates: reused by builds sharing caches, never across caches', async (t) => {
  const mine = createBuildCaches();
  const theirs = createBuildCaches();
  const first = buildModel(snapshot(['/a+']), {}, mine).model.certificates['default/a-tls'];
  t.ok(first, 'the Secret is served');
  t.equal(mine.certificates.size, 1, 'parsed into the cache its caller passed');
  t.equal(theirs.certificates.size, 0, 'and no other');
  t.equal(
    buildModel(snapshot(['/b+']), {}, mine).model.certificates['default/a-tls'],
    first,
    'the next build with the same caches reuses the parse',
  );
  t.not(
    buildModel(snapshot(['/a+']), {}, theirs).model.certificates['default/a-tls'],
    first,
    'another cache parses again',
  );
  t.not(
    buildModel(snapshot(['/a+'])).model.certificates['default/a-tls'],
    first,
    'a build without caches keeps nothing',
  );
});

t.test('regex paths: each build rotates its cache, what it no longer uses goes', async (t) => {
  const caches = createBuildCaches();
  buildModel(snapshot(['/a+', '/b+']), {}, caches);
  t.equal(caches.pathRegexes.size, 2, 'every regex-mode path compiled once');
  buildModel(snapshot(['/a+']), {}, caches);
  t.equal(caches.pathRegexes.size, 2, '/b+ kept for one more build');
  buildModel(snapshot(['/a+']), {}, caches);
  t.equal(caches.pathRegexes.size, 1, 'released by the build after');
  const other = createBuildCaches();
  buildModel(snapshot(['/c+']), {}, other);
  t.equal(caches.pathRegexes.size, 1, "another caller's builds leave this cache alone");
});

t.test('invalid RE2 stays a diagnostic whichever cache the build uses', async (t) => {
  const caches = createBuildCaches();
  for (const round of [1, 2]) {
    const { diagnostics, model } = buildModel(snapshot(['/ok+', '/(a)\\1']), {}, caches);
    t.ok(
      diagnostics.some((d) => d.code === 'PATH_REGEX_INVALID'),
      `build ${round}: the refused path is reported`,
    );
    t.strictSame(
      model.servers[0]?.routes.map((r) => r.path),
      ['/ok+'],
      `build ${round}: and not served`,
    );
  }
});
