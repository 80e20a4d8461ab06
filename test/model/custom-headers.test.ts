// custom-headers in the model: the referenced ConfigMap (name in the Ingress's namespace, or
// namespace/name) resolved into headers on every route of the Ingress; a key not listed in
// global-allowed-response-headers, an invalid header, a missing ConfigMap or one of another namespace
// without allow-cross-namespace-resources deny the location (CUSTOM_HEADERS_DENIED; 503 in the data
// plane); the ConfigMaps become model references, so the store reacts to their changes.
import t, { type Test } from 'tap';
import type { BuildResult } from '../../lib/model/index.ts';
import { ingress, path, rule, runCases } from './helpers.ts';

const configMap = (namespace: string, name: string, data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data,
});
const global = (data: Record<string, string>) => configMap('ingress', 'ingress-ts', data);
const ALLOWED = global({ 'global-allowed-response-headers': 'X-Frame-Options, X-Team' });
const site = (reference: string, namespace = 'default') =>
  ingress('site', {
    namespace,
    nginx: { 'custom-headers': reference },
    rules: [rule('a.com', path('/', 'web:80'), path('/x', 'web:80'))],
  });
const OPTIONS = { configMap: 'ingress/ingress-ts' };
const headersOf = (result: BuildResult, index = 0) =>
  result.model.servers[0]?.routes[index]?.annotations.customHeaders;

runCases(t, [
  {
    name: 'custom-headers: the ConfigMap of the Ingress namespace, on every route',
    ingresses: [site('hdrs')],
    configMaps: [ALLOWED, configMap('default', 'hdrs', { 'X-Team': 'edge', 'X-Frame-Options': 'DENY' })],
    options: OPTIONS,
    check: (t, result) => {
      const expected = {
        configMap: 'hdrs',
        headers: [
          ['X-Frame-Options', 'DENY'],
          ['X-Team', 'edge'],
        ],
        denied: null,
      };
      t.strictSame(headersOf(result, 0), expected);
      t.strictSame(headersOf(result, 1), expected);
      t.ok(result.references.configMaps?.includes('default/hdrs'), 'a model reference');
    },
  },
  {
    name: 'custom-headers: namespace/name of the same namespace',
    ingresses: [site('default/hdrs')],
    configMaps: [ALLOWED, configMap('default', 'hdrs', { 'X-Team': 'edge' })],
    options: OPTIONS,
    check: (t, result) => t.strictSame(headersOf(result)?.headers, [['X-Team', 'edge']]),
  },
  {
    name: 'custom-headers: a key not in global-allowed-response-headers denies the location',
    ingresses: [site('hdrs')],
    configMaps: [ALLOWED, configMap('default', 'hdrs', { 'X-Team': 'edge', 'X-Other': 'no' })],
    options: OPTIONS,
    diagnostics: ['CUSTOM_HEADERS_DENIED site'],
    messages: ['header X-Other is not listed in global-allowed-response-headers', 'answer 503'],
    check: (t, result) => t.match(headersOf(result), { headers: [], denied: /X-Other/ }),
  },
  {
    name: 'custom-headers: nothing is allowed by default',
    ingresses: [site('hdrs')],
    configMaps: [configMap('default', 'hdrs', { 'X-Team': 'edge' })],
    diagnostics: ['CUSTOM_HEADERS_DENIED site'],
    check: (t, result) => t.match(headersOf(result), { denied: /X-Team/ }),
  },
  {
    name: 'custom-headers: the allow list is case-sensitive, as ingress-nginx compares it',
    ingresses: [site('hdrs')],
    configMaps: [ALLOWED, configMap('default', 'hdrs', { 'x-team': 'edge' })],
    options: OPTIONS,
    diagnostics: ['CUSTOM_HEADERS_DENIED site'],
  },
  ...['Transfer-Encoding', 'Content-Length', 'connection', 'Upgrade', 'TE', 'Trailer', 'Keep-Alive'].map(
    (name) => ({
      name: `custom-headers: ${name} denies the location even when global-allowed-response-headers lists it`,
      ingresses: [site('hdrs')],
      configMaps: [
        global({ 'global-allowed-response-headers': `X-Team, ${name}` }),
        configMap('default', 'hdrs', { 'X-Team': 'edge', [name]: 'chunked' }),
      ],
      options: OPTIONS,
      diagnostics: ['CUSTOM_HEADERS_DENIED site'],
      messages: [`header ${name} frames the response`, 'answer 503'],
      check: (t: Test, result: BuildResult) => t.match(headersOf(result), { headers: [], denied: name }),
    }),
  ),
  {
    name: 'custom-headers: an invalid header value denies the location',
    ingresses: [site('hdrs')],
    configMaps: [ALLOWED, configMap('default', 'hdrs', { 'X-Team': 'a\nb' })],
    options: OPTIONS,
    diagnostics: ['CUSTOM_HEADERS_DENIED site'],
    messages: ['contains an invalid value'],
  },
  {
    name: 'custom-headers: a missing ConfigMap denies the location, and is still a reference',
    ingresses: [site('nope')],
    configMaps: [ALLOWED],
    options: OPTIONS,
    diagnostics: ['CUSTOM_HEADERS_DENIED site'],
    messages: ['the ConfigMap default/nope does not exist'],
    check: (t, result) => t.ok(result.references.configMaps?.includes('default/nope')),
  },
  {
    name: 'custom-headers: another namespace needs allow-cross-namespace-resources',
    ingresses: [site('shared/hdrs')],
    configMaps: [ALLOWED, configMap('shared', 'hdrs', { 'X-Team': 'edge' })],
    options: OPTIONS,
    diagnostics: ['CUSTOM_HEADERS_DENIED site'],
    messages: ['allow-cross-namespace-resources is false'],
  },
  {
    name: 'custom-headers: another namespace with allow-cross-namespace-resources',
    ingresses: [site('shared/hdrs')],
    configMaps: [
      global({ 'global-allowed-response-headers': 'X-Team', 'allow-cross-namespace-resources': 'true' }),
      configMap('shared', 'hdrs', { 'X-Team': 'edge' }),
    ],
    options: OPTIONS,
    check: (t, result) => t.strictSame(headersOf(result)?.headers, [['X-Team', 'edge']]),
  },
  {
    name: 'custom-headers: a reference that is not a ConfigMap name is ignored with a warning',
    ingresses: [site('a/b/c')],
    configMaps: [ALLOWED],
    options: OPTIONS,
    diagnostics: ['ANNOTATION_INVALID site'],
    check: (t, result) => t.strictSame(headersOf(result), { configMap: null, headers: [], denied: null }),
  },
]);
