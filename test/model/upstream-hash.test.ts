// upstream-hash-by in the model: carried on the upstream the Ingress is the first to use; an invalid
// key drops the Ingress (ingress-nginx's validator); subset settings with their defaults.
import t from 'tap';
import { ingress, path, rule, runCases } from './helpers.ts';

const site = (name: string, nginx: Record<string, string>, host = 'a.com', created = 0) =>
  ingress(name, { created, nginx, rules: [rule(host, path('/', 'web:80'))] });

runCases(t, [
  {
    name: 'upstream-hash-by: the key and subset settings reach the upstream',
    ingresses: [
      site('h', { 'upstream-hash-by': '$request_uri' }),
      ingress('s', {
        nginx: {
          // biome-ignore lint/suspicious/noTemplateCurlyInString: NGINX variable syntax, not a JS template
          'upstream-hash-by': '${host}-$cookie_user',
          'upstream-hash-by-subset': 'true',
          'upstream-hash-by-subset-size': '2',
        },
        rules: [rule('b.com', path('/', 'api:80'))],
      }),
    ],
    check: (t, { model }) => {
      t.strictSame(model.upstreams['default-web-80']?.hashBy, {
        key: '$request_uri',
        subset: false,
        subsetSize: 3,
      });
      t.strictSame(model.upstreams['default-api-80']?.hashBy, {
        // biome-ignore lint/suspicious/noTemplateCurlyInString: NGINX variable syntax, not a JS template
        key: '${host}-$cookie_user',
        subset: true,
        subsetSize: 2,
      });
    },
  },
  {
    name: 'upstream-hash-by: the first Ingress to use an upstream decides',
    ingresses: [
      site('older', {}, 'a.com', 0),
      site('newer', { 'upstream-hash-by': '$remote_addr' }, 'b.com', 10),
    ],
    check: (t, { model }) => t.equal(model.upstreams['default-web-80']?.hashBy, null),
  },
  {
    name: 'upstream-hash-by: a key with other characters drops the Ingress',
    ingresses: [site('bad', { 'upstream-hash-by': '$request_uri;drop' })],
    routes: [],
    diagnostics: ['ANNOTATION_INVALID bad'],
    messages: ['the Ingress is ignored'],
  },
  {
    name: 'upstream-hash-by-subset-size: invalid → 3, with a warning',
    ingresses: [
      site('z', {
        'upstream-hash-by': '$uri',
        'upstream-hash-by-subset': 'true',
        'upstream-hash-by-subset-size': '0',
      }),
    ],
    diagnostics: ['ANNOTATION_INVALID z'],
    check: (t, { model }) => t.equal(model.upstreams['default-web-80']?.hashBy?.subsetSize, 3),
  },
]);
