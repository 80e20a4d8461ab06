// ConfigMap keys no parser reads, told apart: a typo or a name ingress-nginx never had (with what it
// probably is), a key of ingress-nginx that ingress-ts lacks, NGINX's own tuning, and the snippets and
// WAF switches whose loss changes behaviour. A table: ConfigMap in, diagnostics out.
import t from 'tap';
import { buildFromConfigMap as build } from './helpers.ts';

/** The one diagnostic a single key gets: [code, severity, message]. */
function judge(key: string, value: string): [string, string, string] {
  const found = build({ [key]: value }).diagnostics;
  if (found.length !== 1) return ['none', '', JSON.stringify(found)];
  const [d] = found;
  return [d!.code, d!.severity, d!.message];
}

const CASES: ReadonlyArray<{ key: string; value: string; code: string; severity: string; says: string }> = [
  // typos and near misses of ingress-nginx keys
  {
    key: 'use-gzipp',
    value: 'true',
    code: 'CONFIG_KEY_UNKNOWN',
    severity: 'warning',
    says: 'did you mean use-gzip?',
  },
  {
    key: 'enable-gzip',
    value: 'true',
    code: 'CONFIG_KEY_UNKNOWN',
    severity: 'warning',
    says: 'did you mean use-gzip?',
  },
  {
    key: 'use-brotli',
    value: 'true',
    code: 'CONFIG_KEY_UNKNOWN',
    severity: 'warning',
    says: 'did you mean enable-brotli?',
  },
  {
    key: 'proxy-body-sise',
    value: '8m',
    code: 'CONFIG_KEY_UNKNOWN',
    severity: 'warning',
    says: 'did you mean proxy-body-size?',
  },
  {
    key: 'ssl-protocol',
    value: 'TLSv1.3',
    code: 'CONFIG_KEY_UNKNOWN',
    severity: 'warning',
    says: 'did you mean ssl-protocols?',
  },
  {
    key: 'hsts-max-ages',
    value: '1',
    code: 'CONFIG_KEY_UNKNOWN',
    severity: 'warning',
    says: 'did you mean hsts-max-age?',
  },
  // NGINX directives written as keys
  {
    key: 'client-max-body-size',
    value: '8m',
    code: 'CONFIG_KEY_UNKNOWN',
    severity: 'warning',
    says: "it is NGINX's client_max_body_size; the key proxy-body-size does its job",
  },
  {
    key: 'proxy_read_timeout',
    value: '120',
    code: 'CONFIG_KEY_UNKNOWN',
    severity: 'warning',
    says: 'the key proxy-read-timeout does its job',
  },
  // annotation names in the ConfigMap
  {
    key: 'enable-cors',
    value: 'true',
    code: 'CONFIG_KEY_UNKNOWN',
    severity: 'warning',
    says: 'enable-cors is an Ingress annotation, not a ConfigMap key',
  },
  // nothing close: no guess
  { key: 'no-such-key', value: 'x', code: 'CONFIG_KEY_UNKNOWN', severity: 'warning', says: 'both ignore it' },
  { key: '0', value: 'a', code: 'CONFIG_KEY_UNKNOWN', severity: 'warning', says: 'both ignore it' },
  // keys of ingress-nginx that ingress-ts lacks
  {
    key: 'enable-syslog',
    value: 'true',
    code: 'CONFIG_KEY_UNSUPPORTED',
    severity: 'warning',
    says: 'not supported by ingress-ts yet',
  },
  // snippets and the WAF: warnings when set
  {
    key: 'http-snippet',
    value: 'more_set_headers "X-Frame-Options: DENY";',
    code: 'CONFIG_KEY_IGNORED',
    severity: 'warning',
    says: 'is NGINX configuration code, which ingress-ts never runs: what it did is not done (for its more_set_headers X-Frame-Options',
  },
  {
    key: 'server-snippet',
    value: 'return 200;',
    code: 'CONFIG_KEY_IGNORED',
    severity: 'warning',
    says: 'never runs',
  },
  {
    key: 'location-snippet',
    value: 'deny all;',
    code: 'CONFIG_KEY_IGNORED',
    severity: 'warning',
    says: 'denylist-source-range',
  },
  { key: 'main-snippet', value: 'x y;', code: 'CONFIG_KEY_IGNORED', severity: 'warning', says: 'never runs' },
  {
    key: 'stream-snippet',
    value: 'x y;',
    code: 'CONFIG_KEY_IGNORED',
    severity: 'warning',
    says: 'never runs',
  },
  {
    key: 'modsecurity-snippet',
    value: 'SecRuleEngine On',
    code: 'CONFIG_KEY_IGNORED',
    severity: 'warning',
    says: 'never runs',
  },
  {
    key: 'global-auth-snippet',
    value: 'x y;',
    code: 'CONFIG_KEY_IGNORED',
    severity: 'warning',
    says: 'never runs',
  },
  {
    key: 'enable-modsecurity',
    value: 'true',
    code: 'CONFIG_KEY_IGNORED',
    severity: 'warning',
    says: 'requests its rules would block are served',
  },
  {
    key: 'enable-owasp-modsecurity-crs',
    value: 'true',
    code: 'CONFIG_KEY_IGNORED',
    severity: 'warning',
    says: 'ModSecurity',
  },
  // ... and info when empty or off: nothing is lost
  {
    key: 'enable-modsecurity',
    value: 'false',
    code: 'CONFIG_KEY_NOT_APPLICABLE',
    severity: 'info',
    says: 'tunes NGINX itself',
  },
  {
    key: 'http-snippet',
    value: '',
    code: 'CONFIG_KEY_NOT_APPLICABLE',
    severity: 'info',
    says: 'tunes NGINX itself',
  },
  // NGINX tuning, and the HTTP/2 keys NGINX itself ignores
  {
    key: 'worker-cpu-affinity',
    value: 'auto',
    code: 'CONFIG_KEY_NOT_APPLICABLE',
    severity: 'info',
    says: 'does not apply',
  },
  {
    key: 'http2-max-requests',
    value: '500',
    code: 'CONFIG_KEY_NOT_APPLICABLE',
    severity: 'info',
    says: 'NGINX ignores it since 1.19.7 (so ingress-nginx does too); keep-alive-requests bounds the requests of an HTTP/2 connection',
  },
  {
    key: 'forwarded-for-proxy-protocol-header',
    value: 'X-Forwarded-For-Proxy-Protocol',
    code: 'CONFIG_KEY_NOT_APPLICABLE',
    severity: 'info',
    says: 'reads that client from the connection itself',
  },
  {
    key: 'proxy-stream-timeoutt',
    value: '10s',
    code: 'CONFIG_KEY_UNKNOWN',
    severity: 'warning',
    says: 'proxy-stream-timeout',
  },
  {
    key: 'http2-max-field-size',
    value: '8k',
    code: 'CONFIG_KEY_NOT_APPLICABLE',
    severity: 'info',
    says: 'large-client-header-buffers',
  },
  {
    key: 'http2-max-header-size',
    value: '32k',
    code: 'CONFIG_KEY_NOT_APPLICABLE',
    severity: 'info',
    says: 'large-client-header-buffers',
  },
];

t.test('each unhandled key gets one diagnostic that says what it is', async (t) => {
  for (const c of CASES) {
    const [code, severity, message] = judge(c.key, c.value);
    t.equal(code, c.code, `${c.key}: code`);
    t.equal(severity, c.severity, `${c.key}: severity`);
    t.ok(message.includes(c.says), `${c.key}: ${message}`);
  }
});

t.test('a snippet key never quotes its value', async (t) => {
  const [, , message] = judge('server-snippet', 'proxy_set_header Authorization "Bearer s3cr3t";');
  t.notOk(message.includes('s3cr3t'), message);
});

t.test('a supported key gets no diagnostic, an unknown one only its own', async (t) => {
  const { diagnostics } = build({ 'proxy-body-size': '8m', 'enabel-cors': 'x' });
  t.strictSame(
    diagnostics.map((d) => d.code),
    ['CONFIG_KEY_UNKNOWN'],
  );
});
