// The redaction helpers: URLs keep what tells them apart (scheme, host, port, path, parameter names),
// never userinfo or parameter values; free text has its URL-looking words redacted; all idempotent.
import t from 'tap';
import { DEFAULT_GLOBAL_CONFIG, type GlobalConfig } from '../../lib/model/configmap/global-config.ts';
import { redactConfig, redactHeaders, redactText, redactUrl } from '../../lib/model/redact.ts';

const urls: Array<[string, string]> = [
  ['http://auth.example.com/verify', 'http://auth.example.com/verify'],
  ['https://user:pass@auth.example.com:8443/verify', 'https://***@auth.example.com:8443/verify'],
  ['https://token@github.com/x', 'https://***@github.com/x'],
  ['https://a:b@c@host/x', 'https://***@host/x'],
  ['http://auth/v?token=abc&mode=x', 'http://auth/v?token=***&mode=***'],
  ['http://auth/v?flag&empty=', 'http://auth/v?***&empty='],
  // biome-ignore lint/suspicious/noTemplateCurlyInString: NGINX's ${name} spelling of a variable
  ['http://auth/v?h=${host}', 'http://auth/v?h=${host}'],
  ['http://auth/v?rd=$escaped_request_uri', 'http://auth/v?rd=$escaped_request_uri'],
  ['http://auth/v?x=1#access_token=abc', 'http://auth/v?x=***#access_token=***'],
  ['http://auth/v#frag', 'http://auth/v#***'],
  ['https://u:p@mirror.local/$request_uri?k=v', 'https://***@mirror.local/$request_uri?k=***'],
  // an `@` before the query or fragment may end a userinfo: everything up to it is hidden, a path's too
  ['http://$host/users/@me', 'http://***@me'],
  ['https://a@b/c@d', 'https://***@d'],
  ['https://h/p?email=a@b.example', 'https://***?email=***'],
  // what URL parsers drop around a value and inside it does not hide a userinfo
  [' https://user:pass@auth.example/x', 'https://***@auth.example/x'],
  ['\thttps://user:pass@auth.example/x', 'https://***@auth.example/x'],
  ['\n\u0000https://user:pass@auth.example/x?t=1 \r\n', 'https://***@auth.example/x?t=***'],
  ['ht\ttps://us\ner:pass@auth.example/x', 'https://***@auth.example/x'],
  ['https:\t//user:pa?ss@auth.example/x', 'https://***?***'],
  // a raw `/`, `?` or `#` in a password
  ['https://user:pa/ss@auth.example/x', 'https://***@auth.example/x'],
  ['https://user:pa?ss@auth.example/x', 'https://***?***'],
  ['https://user:pa#ss@auth.example/x', 'https://***#***'],
  ['https://user:p/a?ss@auth.example/x', 'https://***?***'],
  ['https://user:p/a#ss@auth.example/x', 'https://***#***'],
  ['https://user:pa\\ss@auth.example/x', 'https://***@auth.example/x'],
  ['https:user:pass@auth.example/x', '***@auth.example/x'],
  // not URLs, written where one belongs (what a diagnostic about a rejected value shows)
  ['user:pass@auth.example.com/verify', '***@auth.example.com/verify'],
  ['ftp://u:p@h/?t=1', 'ftp://***@h/?t=***'],
  ['//u:p@h/x', '//***@h/x'],
  ['http://u:p ss@h/x', 'http://***@h/x'],
  ['/relative?key=v', '/relative?key=***'],
  ['', ''],
  ['off', 'off'],
];

t.test('redactUrl', async (t) => {
  for (const [input, expected] of urls) {
    t.equal(redactUrl(input), expected, input);
    t.equal(redactUrl(expected), expected, `idempotent: ${expected}`);
  }
});

const texts: Array<[string, string]> = [
  ['no URL here (a variable?) and a=b', 'no URL here (a variable?) and a=b'],
  [
    'annotation nginx.ingress.kubernetes.io/mirror-target="https://u:p@m.local/x?tok=1" is invalid (expected...)',
    'annotation nginx.ingress.kubernetes.io/mirror-target="https://***@m.local/x?tok=***" is invalid (expected...)',
  ],
  ['key=https://u:p@h/x?t=1 was refused', 'key=https://***@h/x?t=*** was refused'],
  ['auth-url "user:pw@h/x" is not an http or https URL', 'auth-url "***@h/x" is not an http or https URL'],
  ['(see http://h/x?a=1).', '(see http://h/x?a=***).'],
  ['last: http://u:p@h: connect ECONNREFUSED', 'last: http://***@h: connect ECONNREFUSED'],
  ['a header name x-api-key and https://h/path', 'a header name x-api-key and https://h/path'],
];

t.test('redactText', async (t) => {
  for (const [input, expected] of texts) {
    t.equal(redactText(input), expected, input);
    t.equal(redactText(expected), expected, `idempotent: ${expected}`);
  }
});

t.test('redactHeaders keeps the names, hides every value', async (t) => {
  t.strictSame(
    redactHeaders([
      ['x-api-key', 'k-123'],
      ['x-b', ''],
    ]),
    [
      ['x-api-key', '***'],
      ['x-b', '***'],
    ],
  );
});

t.test('redactConfig: global auth URLs, proxy-redirect and ConfigMap header values', async (t) => {
  const config = structuredClone(DEFAULT_GLOBAL_CONFIG) as GlobalConfig;
  config.globalAuth.url = 'https://u:p@auth/v?k=1';
  config.globalAuth.signin = 'https://login/?client_secret=s';
  config.globalAuth.requestRedirect = 'https://x/?t=2';
  config.proxy.redirectFrom = 'http://u:p@backend/';
  config.headers.proxySetHeaders = { source: 'ns/up', headers: [['x-api-key', 'secret-1']] };
  config.headers.addHeaders = { source: 'ns/down', headers: [['x-frame-options', 'DENY']] };
  const before = JSON.stringify(config);
  const out = redactConfig(config);
  t.equal(JSON.stringify(config), before, 'the model is not touched');
  t.equal(out.globalAuth.url, 'https://***@auth/v?k=***');
  t.equal(out.globalAuth.signin, 'https://login/?client_secret=***');
  t.equal(out.globalAuth.requestRedirect, 'https://x/?t=***');
  t.equal(out.proxy.redirectFrom, 'http://***@backend/');
  t.strictSame(out.headers.proxySetHeaders, { source: 'ns/up', headers: [['x-api-key', '***']] });
  t.strictSame(out.headers.addHeaders.headers, [['x-frame-options', '***']]);
  t.equal(redactConfig(DEFAULT_GLOBAL_CONFIG).globalAuth.signin, null);
});

t.test('redactConfig: block-referers entries that are URLs', async (t) => {
  const config = structuredClone(DEFAULT_GLOBAL_CONFIG) as GlobalConfig;
  config.access.blockReferers = [
    { kind: 'exact', value: 'http://user:pass@spam.example/?token=abc' },
    { kind: 'iregex', value: 'casino' },
  ];
  const out = redactConfig(config);
  t.strictSame(out.access.blockReferers, [
    { kind: 'exact', value: 'http://***@spam.example/?token=***' },
    { kind: 'iregex', value: 'casino' },
  ]);
  t.equal(
    config.access.blockReferers[0]?.value,
    'http://user:pass@spam.example/?token=abc',
    'the model is not touched',
  );
});
