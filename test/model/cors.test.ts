// CORS annotations in the model: ingress-nginx's defaults, every value copied onto each route of the
// Ingress (and its host's default route), invalid values falling back to their defaults with a
// warning (ingress-nginx's CORS parser never rejects an Ingress), and invalid origins skipped.
import t from 'tap';
import { DEFAULT_CORS_HEADERS, DEFAULT_CORS_METHODS } from '../../lib/model/annotations/cors.ts';
import type { BuildResult } from '../../lib/model/index.ts';
import { ingress, path, rule, runCases } from './helpers.ts';

const site = (nginx: Record<string, string>) =>
  ingress('site', { nginx, rules: [rule('a.com', path('/api', 'web:80'), path('/app', 'web:80'))] });
const corsOf = (result: BuildResult, index = 0) => result.model.servers[0]?.routes[index]?.annotations.cors;

runCases(t, [
  {
    name: 'cors: off by default, with ingress-nginx defaults',
    ingresses: [site({})],
    check: (t, result) =>
      t.strictSame(corsOf(result), {
        enabled: false,
        allowOrigin: ['*'],
        allowMethods: DEFAULT_CORS_METHODS,
        allowHeaders: DEFAULT_CORS_HEADERS,
        exposeHeaders: '',
        allowCredentials: true,
        maxAge: 1728000,
      }),
  },
  {
    name: 'cors: every annotation, on every route of the Ingress and its default route',
    ingresses: [
      site({
        'enable-cors': 'true',
        'cors-allow-origin': 'https://a.example, http://*.b.example:8080 ,null',
        'cors-allow-methods': 'GET,POST',
        'cors-allow-headers': 'X-One, X_Two',
        'cors-expose-headers': '*, X-Total',
        'cors-allow-credentials': 'false',
        'cors-max-age': '60',
      }),
    ],
    check: (t, result) => {
      const expected = {
        enabled: true,
        allowOrigin: ['https://a.example', 'http://*.b.example:8080', 'null'],
        allowMethods: 'GET,POST',
        allowHeaders: 'X-One, X_Two',
        exposeHeaders: '*, X-Total',
        allowCredentials: false,
        maxAge: 60,
      };
      t.strictSame(corsOf(result, 0), expected);
      t.strictSame(corsOf(result, 1), expected);
      t.strictSame(result.model.servers[0]?.defaultRoute.annotations.cors, expected);
    },
  },
  {
    name: 'cors: * anywhere in the list allows every origin',
    ingresses: [site({ 'enable-cors': 'true', 'cors-allow-origin': 'https://a.example, *' })],
    check: (t, result) => t.strictSame(corsOf(result)?.allowOrigin, ['*']),
  },
  {
    name: 'cors: invalid values fall back to the defaults; invalid origins are skipped',
    ingresses: [
      site({
        'enable-cors': 'yes',
        'cors-allow-origin': 'https://ok.example, a.example, https://a.example/path, https://*.*.c.example',
        'cors-allow-methods': 'GET; DROP',
        'cors-allow-headers': 'X-One: 1',
        'cors-expose-headers': '$upstream_addr',
        'cors-allow-credentials': 'maybe',
        'cors-max-age': '-1',
      }),
    ],
    diagnostics: Array.from({ length: 9 }, () => 'ANNOTATION_INVALID site'),
    messages: ['cors-allow-origin="a.example" is invalid', 'the default is used'],
    check: (t, result) =>
      t.strictSame(corsOf(result), {
        enabled: false,
        allowOrigin: ['https://ok.example'],
        allowMethods: DEFAULT_CORS_METHODS,
        allowHeaders: DEFAULT_CORS_HEADERS,
        exposeHeaders: '',
        allowCredentials: true,
        maxAge: 1728000,
      }),
  },
  {
    name: 'cors: a list with no valid origin matches nothing (never widened to *)',
    ingresses: [site({ 'enable-cors': 'true', 'cors-allow-origin': 'a.example' })],
    diagnostics: ['ANNOTATION_INVALID site'],
    check: (t, result) => t.strictSame(corsOf(result)?.allowOrigin, []),
  },
]);
