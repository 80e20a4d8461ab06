// mirror-target, mirror-host, mirror-request-body in the model: on every route of the Ingress and the
// host's default route; the Host defaults to the target's host name (port dropped, as ingress-nginx's
// parser); invalid values are ignored with a warning and the Ingress is kept.
import t from 'tap';
import type { MirrorAnnotations } from '../../lib/model/annotations/mirror.ts';
import { type Case, ingress, path, rule, runCases } from './helpers.ts';

const site = (name: string, nginx: Record<string, string>) =>
  ingress(name, { nginx, rules: [rule(`${name}.com`, path('/', 'web:80'), path('/api', 'web:80'))] });

const OFF: MirrorAnnotations = { target: null, host: null, requestBody: true };

/** Every route of the only server, and its default route, carry `expected`. */
const mirrorIs = (expected: MirrorAnnotations): Case['check'] => {
  return (t, { model }) => {
    const server = model.servers[0];
    t.equal(server?.routes.length, 2, 'the Ingress is kept');
    for (const route of server?.routes ?? []) t.strictSame(route.annotations.mirror, expected, route.path);
    t.strictSame(server?.defaultRoute.annotations.mirror, expected, 'default route');
  };
};

const valid: Array<[Record<string, string>, MirrorAnnotations]> = [
  [
    { 'mirror-target': 'https://test.env.com/$request_uri' },
    { target: 'https://test.env.com/$request_uri', host: 'test.env.com', requestBody: true },
  ],
  [
    { 'mirror-target': 'https://test.env.com$request_uri' },
    { target: 'https://test.env.com$request_uri', host: 'test.env.com', requestBody: true },
  ],
  [
    // the port is not part of the default Host (ingress-nginx takes url.Hostname())
    { 'mirror-target': 'https://test.env.com:8080$request_uri' },
    { target: 'https://test.env.com:8080$request_uri', host: 'test.env.com', requestBody: true },
  ],
  [
    { 'mirror-target': 'http://some.test.env.com/$someparam', 'mirror-host': 'test.env.com' },
    { target: 'http://some.test.env.com/$someparam', host: 'test.env.com', requestBody: true },
  ],
  [
    { 'mirror-target': 'http://some.test.env.com:2121/$someparam=1&$someotherparam=2' },
    {
      target: 'http://some.test.env.com:2121/$someparam=1&$someotherparam=2',
      host: 'some.test.env.com',
      requestBody: true,
    },
  ],
  [
    { 'mirror-target': 'http://mirror.svc:8080$request_uri', 'mirror-request-body': 'off' },
    { target: 'http://mirror.svc:8080$request_uri', host: 'mirror.svc', requestBody: false },
  ],
  [
    { 'mirror-target': 'http://mirror.svc$request_uri', 'mirror-request-body': 'on' },
    { target: 'http://mirror.svc$request_uri', host: 'mirror.svc', requestBody: true },
  ],
  [
    // the host only known per request: mirror-host says which Host to send
    { 'mirror-target': 'http://$host:9000$request_uri', 'mirror-host': '$host' },
    { target: 'http://$host:9000$request_uri', host: '$host', requestBody: true },
  ],
];

const invalid: Array<[string, Record<string, string>, MirrorAnnotations, string]> = [
  [
    'a target with characters outside the server-name set',
    { 'mirror-target': 'http://mirror.svc/a b' },
    OFF,
    'requests are not mirrored',
  ],
  [
    'a target with a quote (configuration injection in NGINX)',
    { 'mirror-target': 'http://mirror.svc/";evil' },
    OFF,
    'requests are not mirrored',
  ],
  ['a target that is not a URL', { 'mirror-target': 'IamNotAURL' }, OFF, 'http:// or https://'],
  ['a target of another scheme', { 'mirror-target': 'ftp://mirror.svc/x' }, OFF, 'http:// or https://'],
  [
    'a target whose host is a variable, without mirror-host',
    { 'mirror-target': 'http://$host/x' },
    OFF,
    'mirror-host is not set',
  ],
  [
    "an invalid mirror-host: the target's host is used",
    { 'mirror-target': 'http://some.test.env.com', 'mirror-host': 'someInvalidParm.%^&*()_=!@#\'"' },
    { target: 'http://some.test.env.com', host: 'some.test.env.com', requestBody: true },
    "the target's host is used",
  ],
  [
    'an invalid mirror-request-body: on',
    { 'mirror-target': 'http://m.svc$request_uri', 'mirror-request-body': 'maybe' },
    { target: 'http://m.svc$request_uri', host: 'm.svc', requestBody: true },
    'expected "on" or "off"',
  ],
];

runCases(t, [
  {
    name: 'no mirror annotation: no mirror',
    ingresses: [site('plain', { 'rewrite-target': '/' })],
    check: mirrorIs(OFF),
  },
  {
    name: 'mirror-host or mirror-request-body without a target: no mirror',
    ingresses: [site('half', { 'mirror-host': 'x.com', 'mirror-request-body': 'off' })],
    check: mirrorIs({ ...OFF, requestBody: false }),
  },
  ...valid.map(
    ([nginx, expected]): Case => ({
      name: `${JSON.stringify(nginx)} → host ${expected.host}, body ${expected.requestBody}`,
      ingresses: [site('m', nginx)],
      check: mirrorIs(expected),
    }),
  ),
  ...invalid.map(
    ([name, nginx, expected, message]): Case => ({
      name: `${name}: a warning, the Ingress kept`,
      ingresses: [site('bad', nginx)],
      diagnostics: ['ANNOTATION_INVALID bad'],
      messages: [message, 'the default is used'],
      check: mirrorIs(expected),
    }),
  ),
  {
    name: 'mirror settings are per Ingress: another Ingress on the same host has its own',
    ingresses: [
      ingress('a', {
        created: 0,
        nginx: { 'mirror-target': 'http://m.svc$request_uri' },
        rules: [rule('x.com', path('/a', 'web:80'))],
      }),
      ingress('b', { created: 1, rules: [rule('x.com', path('/b', 'web:80'))] }),
    ],
    check: (t, { model }) => {
      const byPath = Object.fromEntries((model.servers[0]?.routes ?? []).map((r) => [r.path, r]));
      t.equal(byPath['/a']?.annotations.mirror.target, 'http://m.svc$request_uri');
      t.equal(byPath['/b']?.annotations.mirror.target, null);
    },
  },
]);
