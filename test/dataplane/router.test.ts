// Host and path matching, and request path/host normalisation, as tables.
import t from 'tap';
import {
  absoluteForm,
  compilePathRegex,
  createPathMatcher,
  HostTable,
  literalPrefix,
  normalizeHost,
  normalizePath,
  type PathRule,
  validAuthority,
  validHost,
} from '../../lib/dataplane/routing/router.ts';

const rules: PathRule<string>[] = [
  { path: '/foo', pathType: 'Prefix', value: 'foo' },
  { path: '/foo/bar/', pathType: 'Prefix', value: 'foo-bar' },
  { path: '/x', pathType: 'Exact', value: 'x-exact' },
  { path: '/x', pathType: 'Prefix', value: 'x-prefix' },
  { path: '/', pathType: 'Prefix', value: 'root' },
];
const plain = createPathMatcher(rules, 'default', false, () => {});
const noRoot = createPathMatcher(rules.slice(0, 4), 'default', false, () => {});

t.test('element matching (Kubernetes Prefix and Exact)', async (t) => {
  const table: Array<[string, string, string]> = [
    ['/foo', 'foo', '/foo'],
    ['/foo/', 'foo', '/foo'],
    ['/foo/baz', 'foo', '/foo'],
    ['/foobar', 'root', '/'],
    ['/foo/bar', 'foo-bar', '/foo/bar/'],
    ['/foo/bar/baz/qux', 'foo-bar', '/foo/bar/'],
    ['/x', 'x-exact', '/x'],
    ['/x/', 'x-prefix', '/x'],
    ['/x/y', 'x-prefix', '/x'],
    ['/', 'root', '/'],
    ['/nothing', 'root', '/'],
  ];
  for (const [path, value, location] of table) {
    const match = plain.match(path);
    t.equal(match.value, value, `${path} → ${value}`);
    t.equal(match.locationPath, location, `${path} location ${location}`);
  }
  t.equal(noRoot.match('/nothing').value, 'default', 'no route: the host default');
  t.equal(noRoot.match('/').value, 'default');
});

t.test('regex mode: case-insensitive, anchored at the start only, first match in order', async (t) => {
  const regex = createPathMatcher(
    [
      { path: '/foo/bar/[a-z]{3}', pathType: 'Prefix', value: 'long' },
      { path: '/foo/bar/bar', pathType: 'Prefix', value: 'literal' },
      { path: '/id/[0-9]+$', pathType: 'Prefix', value: 'id' },
      { path: '/api(/|$)(.*)', pathType: 'Prefix', value: 'api', captures: true },
      { path: '/exact', pathType: 'Exact', value: 'exact' },
    ],
    'default',
    true,
    () => {},
  );
  t.equal(regex.match('/foo/bar/bar').value, 'long', 'the first regex in order wins');
  t.equal(regex.match('/FOO/BAR/abc').value, 'long', 'case-insensitive');
  t.equal(regex.match('/id/123').value, 'id');
  t.equal(regex.match('/id/123a').value, 'default', '$ anchors the end');
  t.equal(regex.match('/exactly').value, 'exact', 'Exact paths become prefix-like regexes');
  const api = regex.match('/api/users/1');
  t.equal(api.value, 'api');
  t.equal(api.captures?.[2], 'users/1', 'captures are kept for rewrite-target');
  t.equal(regex.match('/x/api').value, 'default', 'anchored at the start');
  const invalid: string[] = [];
  createPathMatcher([{ path: '/(unclosed', pathType: 'Prefix', value: 'bad' }], 'default', true, (path) =>
    invalid.push(path),
  );
  t.strictSame(invalid, ['/(unclosed'], 'an invalid regex is reported, not thrown');
});

t.test('host table: exact, then single-label wildcard, then catch-all', async (t) => {
  const hosts = new HostTable<string>('catch-all');
  hosts.add('a.example.com', 'exact');
  hosts.add('*.example.com', 'wildcard');
  hosts.add('a.example.com', 'later');
  t.equal(hosts.lookup('a.example.com'), 'exact', 'exact first, first registration wins');
  t.equal(hosts.lookup('b.example.com'), 'wildcard');
  t.equal(hosts.lookup('x.b.example.com'), 'catch-all', 'a wildcard covers one label');
  t.equal(hosts.lookup('example.com'), 'catch-all');
  t.equal(hosts.lookup(''), 'catch-all');
});

t.test('normalizeHost', async (t) => {
  const table: Array<[string | undefined, string]> = [
    ['Example.COM', 'example.com'],
    ['example.com:8080', 'example.com'],
    ['example.com.', 'example.com'],
    ['[::1]:80', '[::1]'],
    [undefined, ''],
    ['a..test', ''],
  ];
  for (const [input, expected] of table) t.equal(normalizeHost(input), expected, String(input));
});

t.test('validHost: the Host as NGINX 1.27 judges it (ngx_http_validate_host)', async (t) => {
  const table: Array<[string, string | null, string]> = [
    ['a.test', 'a.test', 'a plain name'],
    ['A.Test', 'a.test', 'lower-cased'],
    ['a.test:8080', 'a.test', 'the port dropped'],
    ['a.test.', 'a.test', 'one trailing dot dropped'],
    ['a.test.:80', 'a.test', 'a trailing dot before the port'],
    ['a.test..', null, 'two trailing dots'],
    ['a..test', null, 'two dots in a row'],
    ['..', null, 'two dots'],
    ['.', null, 'a lone dot leaves no name'],
    ['.a.test', '.a.test', 'a leading dot is kept'],
    ['a.test:80..1', null, 'two dots in the port part too'],
    ['', null, 'empty'],
    [':80', null, 'a port and no name'],
    ['a.test/x', null, 'a slash'],
    ['a.test/../b', null, 'a path'],
    ['a test', null, 'a space'],
    ['a.test\tb', null, 'a tab'],
    ['a.test\0', null, 'NUL'],
    ['a.test\x7f', null, 'DEL'],
    ['a.test\x01', null, 'a control character'],
    ['a\\b.test', 'a\\b.test', 'a backslash: only / separates paths on Unix (1.29.4 refuses it)'],
    ['a.test:abc', 'a.test', 'the port is not read (1.29.4 refuses it)'],
    ['a.test:1:2', 'a.test', 'the first colon ends the name'],
    ['[::1]', '[::1]', 'an IP literal'],
    ['[::1]:443', '[::1]', 'an IP literal and its port'],
    ['[::1', '[::1', 'an unterminated literal is kept whole (1.29.4 refuses it)'],
    ['[::1]x', '[::1]', 'after the literal, the rest is its port part'],
    ['[::1]]..', null, 'two dots after the literal'],
    ['a[b]:1', 'a[b]', 'a bracket after the start is a character like any'],
    ['xn--bcher-kva.test', 'xn--bcher-kva.test', 'punycode'],
    ['a_b.test', 'a_b.test', 'an underscore'],
    ['\u00e9.test', '\u00e9.test', 'a byte over 0x7f'],
  ];
  for (const [input, expected, why] of table)
    t.equal(validHost(input), expected, `${JSON.stringify(input)}: ${why}`);
  const same = 'a.test';
  t.equal(validHost(same), same, 'a name in its normal form is returned as it is');
});

t.test('validAuthority: an absolute-form authority as NGINX parses the request line', async (t) => {
  const table: Array<[string, boolean]> = [
    ['a.test', true],
    ['A.test:8080', true],
    ['a.test:', true],
    ['[::1]:80', true],
    ['[::1]', true],
    ['a_b.test', false],
    ['a.test:8o', false],
    ['a..test', false],
    ['a.test.', true],
    ['[::1', false],
    ['[::1]x', false],
    ['a%41.test', false],
  ];
  for (const [authority, expected] of table) t.equal(validAuthority(authority), expected, authority);
});

t.test('normalizePath ($uri: decoded, merged slashes, dot segments resolved)', async (t) => {
  const table: Array<[string, string | null]> = [
    ['/a/b', '/a/b'],
    ['/a/b?x=1', '/a/b'],
    ['/a//b', '/a/b'],
    ['/a/./b', '/a/b'],
    ['/a/../b', '/b'],
    ['/a/b/..', '/a/'],
    ['/a%2Fb', '/a/b'],
    ['/a/%2e%2e/c', '/c'],
    ['/%7Euser', '/~user'],
    ['/..', null],
    ['/%zz', null],
    ['/a%00b', null],
    ['*', null],
    ['?x', null],
    ['/a#b', '/a'],
    ['http://example.com/', null],
  ];
  for (const [input, expected] of table) t.equal(normalizePath(input), expected, input);
});

t.test('regex mode: the literal-prefix shortcut never changes which route matches', async (t) => {
  const patterns = [
    '/api/v1/users(/|$)(.*)',
    '/foo/bar/[a-z]{3}',
    '/id/[0-9]+$',
    '/static',
    '/a|/b',
    '/ab?c',
    '/ab+x',
    '/x\\.y',
    '/[|]x',
    '/(s|t)omething',
    '/something',
    '/kelvin',
  ];
  const paths = [
    '/API/V1/users/1',
    '/api/v1/usersX',
    '/foo/bar/baz',
    '/id/12',
    '/STATIC/x',
    '/zz/b',
    '/ac',
    '/abbbx',
    '/x.y',
    '/|x',
    '/ſomething', // U+017F folds to s under RE2's case folding
    '/\u212Aelvin', // KELVIN SIGN folds to k
    '/',
    '',
  ];
  for (const pattern of patterns) {
    const matcher = createPathMatcher(
      [{ path: pattern, pathType: 'Prefix', value: 'hit' }],
      'miss',
      true,
      () => {},
    );
    const regex = compilePathRegex(pattern);
    for (const path of paths) {
      const expected = regex.matcher(path).find() ? 'hit' : 'miss';
      t.equal(matcher.match(path).value, expected, `${pattern} on ${path}`);
    }
  }
  t.equal(literalPrefix('/api/v1(/|$)(.*)'), '/api/v1');
  t.equal(literalPrefix('/a|/b'), '', 'a top-level alternation has no common prefix');
  t.equal(literalPrefix('/ab?c'), '/a', 'an optional character is left out');
  t.equal(literalPrefix('/Foo'), '/foo');
});

t.test('absoluteForm: absolute-form request targets', async (t) => {
  const table: Array<[string, { authority: string; target: string } | null]> = [
    ['http://a.test/p?q=1', { authority: 'a.test', target: '/p?q=1' }],
    ['HTTPS://A.test:8443/', { authority: 'A.test:8443', target: '/' }],
    ['http://a.test', { authority: 'a.test', target: '/' }],
    ['http://a.test?x', { authority: 'a.test', target: '/?x' }],
    ['http://[::1]:80/p', { authority: '[::1]:80', target: '/p' }],
    ['/p', null],
    ['*', null],
    ['a.test:443', null],
    ['ftp://a.test/p', null],
    ['http://user:pw@a.test/p', null],
    ['http:///p', null],
    ['http://a.test/p#frag', null],
    ['http://a b/p', null],
  ];
  for (const [target, expected] of table) t.strictSame(absoluteForm(target), expected, target);
});
