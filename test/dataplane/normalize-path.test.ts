// normalizePath against NGINX's ngx_http_parse_complex_uri: escapes decoded before
// `.`/`..` and slash merging (so %2F and %2E take part in them), a backslash is an ordinary
// character (NGINX on Unix), %00 and malformed escapes are 400 (null), `..` above the root is 400,
// and decoded bytes that are not UTF-8 are routed rather than refused.
import t from 'tap';
import { normalizePath } from '../../lib/dataplane/routing/router.ts';

t.test('normalizePath follows ngx_http_parse_complex_uri', async (t) => {
  const table: Array<[string, string | null, string]> = [
    ['/admin%2F..%2Fpublic', '/public', '%2F is a separator once decoded'],
    ['/%2e%2e/admin', null, 'an encoded .. above the root'],
    ['/a/%2E%2e/admin', '/admin', 'an encoded .. segment, any case'],
    ['/%2Fadmin', '/admin', 'an encoded slash merges with the previous one'],
    ['/admin\\..\\x', '/admin\\..\\x', 'backslashes are ordinary characters'],
    ['/admin%00', null, '%00'],
    ['/admin%0', null, 'a truncated escape'],
    ['/admin%g0', null, 'a malformed escape'],
    ['/admin%25', '/admin%', '%25 is a literal %'],
    ['/admin%252e%252e', '/admin%2e%2e', 'decoded once only'],
    ['/admin%FF', '/admin\uFFFD', 'a byte that is not UTF-8: routed, not refused'],
    ['/%FF/../admin', '/admin', 'and it still takes part in dot segments'],
    ['/caf%C3%A9', '/café', 'UTF-8 escapes'],
    ['/admin;x', '/admin;x', '; is not special'],
    ['/admin/..', '/', 'a trailing ..'],
    ['/admin/.?x=/../', '/admin/', 'the query is not part of the path'],
    ['/admin#', '/admin', '# ends the path (a fragment)'],
    ['/admin#x', '/admin', 'and what follows it is not part of it'],
    ['/admin#/../public', '/admin', 'not even dot segments after it'],
    ['/a/..#x', '/', 'dot segments before it are resolved'],
    ['/admin?q#x', '/admin', 'a # in the query'],
    ['/admin%23x', '/admin#x', 'an encoded # is an ordinary character of the path'],
    ['#/admin', null, 'a target that starts with # is not a path'],
    ['*', null, 'asterisk-form is not a path (NGINX: 400)'],
    ['example.com:443', null, 'authority-form is not a path (NGINX: 400)'],
  ];
  for (const [input, expected, why] of table) t.equal(normalizePath(input), expected, `${input}: ${why}`);
});
