// rewrite-target as NGINX applies it: `$n` from the path regex, the whole URI replaced, the result
// escaped (NGX_ESCAPE_URI), the query string kept, and the unanchored regex when `^` would change it.
import t from 'tap';
import { applyRewrite, compileRewrite } from '../../lib/dataplane/responses/rewrite.ts';
import { capturesOf, compilePathRegex } from '../../lib/dataplane/routing/router.ts';

/** The rewrite of `path` applied to `uri`, captures taken from the location match as the router does. */
function rewrite(path: string, target: string, url: string, prefix: string | null = null) {
  const compiled = compileRewrite(path, target, prefix);
  if (compiled === null) return null;
  const uri = url.split('?')[0] as string;
  const matcher = compilePathRegex(path).matcher(uri);
  const captures = compiled.reuseCaptures && matcher.find() ? capturesOf(matcher) : null;
  return applyRewrite(compiled, uri, url, captures);
}

t.test('no rewrite without a target or when the target is the path', async (t) => {
  t.equal(compileRewrite('/a', null, '/p'), null);
  t.equal(compileRewrite('/a', '/a', '/p'), null);
});

t.test('targets and captures', async (t) => {
  t.strictSame(rewrite('/api(/|$)(.*)', '/$2', '/api/v1/x?q=1&r'), {
    uri: '/v1/x',
    path: '/v1/x?q=1&r',
    forwardedPrefix: undefined,
  });
  t.strictSame(
    rewrite('/api(/|$)(.*)', '/$2', '/api?'),
    { uri: '/', path: '/', forwardedPrefix: undefined },
    'an empty query is dropped',
  );
  t.equal(
    rewrite('/(a)(b)?', '/$2$1$0-$10', '/a')?.path,
    '/a/a-a0',
    '$2 empty, $0 the whole match, $10 is $1 then 0',
  );
  t.equal(
    rewrite('/x/(.*)', '$1', '/x/y')?.path,
    '/y',
    'a target without a leading slash still gives a path',
  );
  t.equal(rewrite('/x', '/lit$', '/x')?.path, '/lit$', 'a $ not followed by a digit is literal');
  t.strictSame(rewrite('/x/(.*)', '/y/$1', '/x/z', '/pre/$1'), {
    uri: '/y/z',
    path: '/y/z',
    forwardedPrefix: '/pre/z',
  });
});

t.test('the new URI is escaped as NGINX does (space # % ? controls non-ASCII), nothing else', async (t) => {
  t.equal(rewrite('/x/(.*)', '/$1', '/x/a b#c%d')?.path, '/a%20b%23c%25d');
  const decoded = compileRewrite('/x/(.*)', '/$1', null);
  // the request /x/q%3Fr?k=v: $uri is /x/q?r, the query k=v
  t.equal(decoded && applyRewrite(decoded, '/x/q?r', '/x/q%3Fr?k=v', null)?.path, '/q%3Fr?k=v');
  t.equal(rewrite('/x/(.*)', '/$1', '/x/é😀\u0001')?.path, '/%C3%A9%F0%9F%98%80%01');
  t.equal(rewrite('/x/(.*)', '/$1', "/x/a-._~!$&'()*+,;=:@")?.path, "/a-._~!$&'()*+,;=:@");
  const plain = compileRewrite('/x/(.*)', '/$1', null);
  // the request /x/y?k=v#frag: $uri /x/y, $args k=v (NGINX ends both at #)
  t.equal(
    plain && applyRewrite(plain, '/x/y', '/x/y?k=v#frag', null)?.path,
    '/y?k=v',
    'no fragment upstream',
  );
});

t.test('a path with | is matched again unanchored, as `rewrite "(?i)<path>"` is', async (t) => {
  // ^/a(.*)|/b(.*) on /zz/b1: the location matches through the second alternative at 3; the
  // unanchored rewrite regex finds the same place, and its groups decide
  t.equal(rewrite('/a(.*)|/b(.*)', '/r$1-$2', '/zz/b1')?.path, '/r-1');
  const compiled = compileRewrite('/a(.*)|/b(.*)', '/r', null);
  t.equal(compiled?.reuseCaptures, false);
  t.equal(
    compiled === null ? 'x' : applyRewrite(compiled, '/nothing', '/nothing', null),
    null,
    'no match: no rewrite',
  );
});

t.test(
  'a target that is a URL answers 302 with it and the query string (NGINX rewrite semantics)',
  async (t) => {
    const url = compileRewrite('/go/(.*)', 'https://elsewhere.example/$1', null);
    t.equal(url?.redirect, 'url');
    t.equal(
      url && applyRewrite(url, '/go/a b', '/go/a%20b?q=1', null)?.redirect,
      'https://elsewhere.example/a%20b?q=1',
    );
    const scheme = compileRewrite('/go/(.*)', '$scheme://other.example/$1', null);
    t.equal(
      scheme && applyRewrite(scheme, '/go/x', '/go/x', null, true)?.redirect,
      'https://other.example/x',
    );
    t.equal(
      scheme && applyRewrite(scheme, '/go/x', '/go/x', null, false)?.redirect,
      'http://other.example/x',
    );
    t.equal(compileRewrite('/go', '/http://x', null)?.redirect, null, 'only at the start');
  },
);
