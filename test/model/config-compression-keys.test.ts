// The compression keys of the global ConfigMap (use-gzip, gzip-*, enable-brotli, brotli-*): ingress-nginx's
// defaults, each key's valid values, and the invalid ones that keep the default with a diagnostic.
// A table: ConfigMap data in, the compression config and the diagnostics out.
import t from 'tap';
import type { CompressionConfig } from '../../lib/model/configmap/compression-keys.ts';
import { buildFromConfigMap, type KeyCase, runKeyCases } from './helpers.ts';

function build(data: Record<string, string>) {
  const { model, diagnostics } = buildFromConfigMap(data);
  return { config: model.config.compression, diagnostics };
}

// ingress-nginx v1.15 config.go, word for word
const GZIP_TYPES =
  'application/atom+xml application/javascript application/x-javascript application/json application/rss+xml application/vnd.ms-fontobject application/x-font-ttf application/x-web-app-manifest+json application/xhtml+xml application/xml font/opentype image/svg+xml image/x-icon text/css text/javascript text/plain text/x-component';
const BROTLI_TYPES =
  'application/xml+rss application/atom+xml application/javascript application/x-javascript application/json application/rss+xml application/vnd.ms-fontobject application/x-font-ttf application/x-web-app-manifest+json application/xhtml+xml application/xml font/opentype image/svg+xml image/x-icon text/css text/javascript text/plain text/x-component';

t.test('defaults: both off, ingress-nginx levels, lengths and type lists', async (t) => {
  const { config, diagnostics } = build({});
  t.strictSame(diagnostics, []);
  t.strictSame(config, {
    gzip: { enabled: false, level: 1, minLength: 256, types: GZIP_TYPES.split(' '), disable: '' },
    brotli: { enabled: false, level: 4, minLength: 20, types: BROTLI_TYPES.split(' ') },
  });
});

const CASES: readonly KeyCase<CompressionConfig>[] = [
  { key: 'use-gzip', value: 'true', read: (c) => c.gzip.enabled, want: true },
  { key: 'use-gzip', value: 'false', read: (c) => c.gzip.enabled, want: false },
  { key: 'use-gzip', value: 'yes', says: 'expected "true" or "false"' },
  { key: 'enable-brotli', value: 'True', read: (c) => c.brotli.enabled, want: true },
  { key: 'enable-brotli', value: 'on', says: 'expected "true" or "false"' },
  { key: 'gzip-level', value: '5', read: (c) => c.gzip.level, want: 5 },
  { key: 'gzip-level', value: '9', read: (c) => c.gzip.level, want: 9 },
  { key: 'gzip-level', value: '0', says: 'expected an integer from 1 to 9' },
  { key: 'gzip-level', value: '10', says: 'expected an integer from 1 to 9' },
  { key: 'gzip-level', value: 'fast', says: 'expected an integer from 1 to 9' },
  { key: 'brotli-level', value: '0', read: (c) => c.brotli.level, want: 0 },
  { key: 'brotli-level', value: '11', read: (c) => c.brotli.level, want: 11 },
  { key: 'brotli-level', value: '12', says: 'expected an integer from 0 to 11' },
  { key: 'gzip-min-length', value: '0', read: (c) => c.gzip.minLength, want: 0 },
  { key: 'gzip-min-length', value: '1000', read: (c) => c.gzip.minLength, want: 1000 },
  { key: 'gzip-min-length', value: '1k', says: 'expected an integer from 0 to' },
  { key: 'gzip-min-length', value: '-1', says: 'expected an integer from 0 to' },
  { key: 'brotli-min-length', value: '512', read: (c) => c.brotli.minLength, want: 512 },
  { key: 'brotli-min-length', value: '1.5', says: 'expected an integer from 0 to' },
  {
    key: 'gzip-types',
    value: 'application/json  Text/CSS\n text/css image/svg+xml',
    read: (c) => c.gzip.types,
    want: ['application/json', 'text/css', 'image/svg+xml'],
  },
  { key: 'gzip-types', value: '*', read: (c) => c.gzip.types, want: ['*'] },
  { key: 'brotli-types', value: 'application/wasm', read: (c) => c.brotli.types, want: ['application/wasm'] },
  { key: 'gzip-types', value: 'text/css, application/json', says: '"text/css," is not a MIME type' },
  { key: 'brotli-types', value: 'json', says: '"json" is not a MIME type' },
  { key: 'gzip-types', value: 'image/*', says: 'only a lone * matches every type' },
  { key: 'gzip-disable', value: 'msie6', read: (c) => c.gzip.disable, want: 'msie6' },
  { key: 'gzip-disable', value: 'curl/7\\.[0-9]+', read: (c) => c.gzip.disable, want: 'curl/7\\.[0-9]+' },
  { key: 'gzip-disable', value: 'MSIE [1-6]\\.(?!.*SV1)', says: 'not a regular expression RE2 accepts' },
  { key: 'gzip-disable', value: 'bad(', says: 'not a regular expression RE2 accepts' },
];

runKeyCases(t, CASES, (model) => model.config.compression);

t.test('every compression key is read: none is reported as unsupported', async (t) => {
  const { config, diagnostics } = build({
    'use-gzip': 'true',
    'gzip-level': '6',
    'gzip-min-length': '100',
    'gzip-types': 'application/json',
    'gzip-disable': 'msie6',
    'enable-brotli': 'true',
    'brotli-level': '5',
    'brotli-min-length': '50',
    'brotli-types': 'text/css',
  });
  t.strictSame(diagnostics, []);
  t.strictSame(config, {
    gzip: { enabled: true, level: 6, minLength: 100, types: ['application/json'], disable: 'msie6' },
    brotli: { enabled: true, level: 5, minLength: 50, types: ['text/css'] },
  });
});
