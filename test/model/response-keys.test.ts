// The ConfigMap's response keys: allow-backend-server-header, proxy-add-original-uri-header,
// default-type, block-user-agents and block-referers (values in, settings and diagnostics out).
import t from 'tap';
import { parseHeaderBlock } from '../../lib/model/configmap/header-blocks.ts';
import { DEFAULT_GLOBAL_CONFIG } from '../../lib/model/index.ts';
import { runCases } from './helpers.ts';

const configMap = (data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'ingress-ts', namespace: 'ingress' },
  data,
});
const OPTIONS = { configMap: 'ingress/ingress-ts' };
const INVALID = 'CONFIG_VALUE_INVALID ConfigMap:ingress/ingress-ts';

t.test('one block entry as NGINX map reads it', async (t) => {
  const rows: Array<[string, ReturnType<typeof parseHeaderBlock> | RegExp]> = [
    ['curl/7.1', { kind: 'exact', value: 'curl/7.1' }],
    ['BadBot', { kind: 'exact', value: 'badbot' }],
    ['~^curl', { kind: 'regex', value: '^curl' }],
    ['~*bot', { kind: 'iregex', value: 'bot' }],
    ['"~*spider"', { kind: 'iregex', value: 'spider' }],
    ["'Mozilla/5.0 (X11)'", { kind: 'exact', value: 'mozilla/5.0 (x11)' }],
    ['\\~tilde', { kind: 'exact', value: '~tilde' }],
    ['\\default', { kind: 'exact', value: 'default' }],
    ['"a\\"b"', { kind: 'exact', value: 'a"b' }],
    ['default', /parameter of NGINX's map/],
    ['include', /parameter of NGINX's map/],
    ['Mozilla/5.0 (X11)', /not one NGINX token/],
    ['a;b', /not one NGINX token/],
    ['~a{2}', /not one NGINX token/],
    ['"open', /not one NGINX token/],
    ['"a"b"', /not one NGINX token/],
    ['""', /is empty/],
    ['~', /has no regex/],
    ['~*', /has no regex/],
    ['~(a)\\1', /not a regex RE2 accepts/],
    ['~foo(?=bar)', /not a regex RE2 accepts/],
    ['~[', /not a regex RE2 accepts/],
  ];
  for (const [entry, want] of rows) {
    const got = parseHeaderBlock(entry);
    if (want instanceof RegExp) t.match(got, want, entry);
    else t.strictSame(got, want, entry);
  }
});

runCases(t, [
  {
    name: 'response keys: the defaults are ingress-nginx defaults',
    ingresses: [],
    check: (t, { model }) => {
      t.equal(model.config.headers.allowBackendServerHeader, false);
      t.equal(model.config.headers.proxyAddOriginalUriHeader, false);
      t.equal(model.config.headers.defaultType, 'text/html');
      t.strictSame(model.config.access.blockUserAgents, []);
      t.strictSame(model.config.access.blockReferers, []);
    },
  },
  {
    name: 'response keys: each is read',
    ingresses: [],
    configMaps: [
      configMap({
        'allow-backend-server-header': 'true',
        'proxy-add-original-uri-header': 'True',
        'default-type': 'text/plain',
        'block-user-agents': '~*bot, curl/7.68.0,,~^Wget, ~*bot',
        'block-referers': 'http://spam.example, ~*casino',
      }),
    ],
    options: OPTIONS,
    check: (t, { model }) => {
      t.equal(model.config.headers.allowBackendServerHeader, true);
      t.equal(model.config.headers.proxyAddOriginalUriHeader, true);
      t.equal(model.config.headers.defaultType, 'text/plain');
      t.strictSame(model.config.access.blockUserAgents, [
        { kind: 'iregex', value: 'bot' },
        { kind: 'exact', value: 'curl/7.68.0' },
        { kind: 'regex', value: '^Wget' },
      ]);
      t.strictSame(model.config.access.blockReferers, [
        { kind: 'exact', value: 'http://spam.example' },
        { kind: 'iregex', value: 'casino' },
      ]);
    },
  },
  {
    name: 'default-type: a quoted value may carry parameters',
    ingresses: [],
    configMaps: [configMap({ 'default-type': '"text/html; charset=utf-8"' })],
    options: OPTIONS,
    check: (t, { model }) => t.equal(model.config.headers.defaultType, 'text/html; charset=utf-8'),
  },
  {
    name: 'response keys: invalid values keep the defaults, each reported',
    ingresses: [],
    configMaps: [
      configMap({
        'allow-backend-server-header': 'yes',
        'proxy-add-original-uri-header': 'on',
        'default-type': 'text/html; charset=utf-8',
      }),
    ],
    options: OPTIONS,
    diagnostics: [INVALID, INVALID, INVALID],
    messages: ['ConfigMap key default-type="text/html; charset=utf-8" is invalid', 'the default is used'],
    check: (t, { model }) => t.strictSame(model.config.headers, DEFAULT_GLOBAL_CONFIG.headers),
  },
  {
    name: 'block lists: an entry RE2 or NGINX refuses is dropped with a diagnostic, the others kept',
    ingresses: [],
    configMaps: [
      configMap({
        'block-user-agents': '~(a)\\1, ~*bot, default',
        'block-referers': '~foo(?=bar), spam.example',
      }),
    ],
    options: OPTIONS,
    diagnostics: [INVALID, INVALID, INVALID],
    messages: [
      'ConfigMap key block-user-agents: "~(a)\\\\1" is not a regex RE2 accepts',
      'ConfigMap key block-user-agents: "default" is a parameter',
      // the message goes through the redaction of URL-like words, which takes `?=bar` for a query
      'ConfigMap key block-referers: "~foo(?=***)" is not a regex RE2 accepts',
      'the entry is left out; the other entries are used',
    ],
    check: (t, { model }) => {
      t.strictSame(model.config.access.blockUserAgents, [{ kind: 'iregex', value: 'bot' }]);
      t.strictSame(model.config.access.blockReferers, [{ kind: 'exact', value: 'spam.example' }]);
    },
  },
  {
    name: 'block lists: the keys are no longer reported unsupported',
    ingresses: [],
    configMaps: [configMap({ 'block-user-agents': '', 'block-referers': ' , ' })],
    options: OPTIONS,
    diagnostics: [],
    check: (t, { model }) => {
      t.strictSame(model.config.access.blockUserAgents, []);
      t.strictSame(model.config.access.blockReferers, []);
    },
  },
]);
