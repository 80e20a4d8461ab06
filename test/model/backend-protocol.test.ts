// backend-protocol in the model: case-insensitive, on every route of the Ingress (and the default
// route its spec.defaultBackend makes); an invalid value falls back to HTTP with a warning (the
// Ingress is kept, as ingress-nginx's parser swallows the error); FCGI is reported as unsupported.
import t from 'tap';
import { ingress, path, rule, runCases } from './helpers.ts';

const site = (name: string, nginx: Record<string, string>, host = `${name}.com`) =>
  ingress(name, { nginx, rules: [rule(host, path('/', 'web:80'), path('/b', 'api:80'))] });

runCases(t, [
  {
    name: 'backend-protocol: HTTP unless set; the value reaches every route of its Ingress',
    ingresses: [site('plain', {}), site('g', { 'backend-protocol': 'GRPC' })],
    diagnostics: [],
    check: (t, { model }) => {
      const protocols = (host: string) =>
        model.servers
          .find((s) => s.hostname === host)
          ?.routes.map((r) => r.annotations.backendProtocol.protocol);
      t.strictSame(protocols('plain.com'), ['HTTP', 'HTTP']);
      t.strictSame(protocols('g.com'), ['GRPC', 'GRPC']);
    },
  },
  {
    name: 'backend-protocol: case-insensitive, every value of ingress-nginx',
    ingresses: [
      site('a', { 'backend-protocol': 'https' }),
      site('b', { 'backend-protocol': 'Grpcs' }),
      site('c', { 'backend-protocol': 'auto_http' }),
      site('d', { 'backend-protocol': 'grpc' }),
    ],
    diagnostics: [],
    check: (t, { model }) => {
      const first = (host: string) =>
        model.servers.find((s) => s.hostname === host)?.routes[0]?.annotations.backendProtocol.protocol;
      t.equal(first('a.com'), 'HTTPS');
      t.equal(first('b.com'), 'GRPCS');
      t.equal(first('c.com'), 'AUTO_HTTP');
      t.equal(first('d.com'), 'GRPC');
    },
  },
  {
    name: 'backend-protocol: an invalid value is HTTP, with a warning; the Ingress is kept',
    ingresses: [site('bad', { 'backend-protocol': 'h2c' })],
    diagnostics: ['ANNOTATION_INVALID bad'],
    messages: ['backend-protocol="h2c" is invalid', 'the default is used'],
    check: (t, { model, diagnostics }) => {
      t.equal(diagnostics[0]?.severity, 'warning');
      t.equal(model.servers[0]?.routes.length, 2, 'the Ingress is used');
      t.equal(model.servers[0]?.routes[0]?.annotations.backendProtocol.protocol, 'HTTP');
    },
  },
  {
    name: 'backend-protocol: FCGI is kept in the model and reported as unsupported',
    ingresses: [site('php', { 'backend-protocol': 'FCGI' })],
    diagnostics: ['BACKEND_PROTOCOL_UNSUPPORTED php'],
    messages: ['does not speak FastCGI'],
    check: (t, { model }) =>
      t.equal(model.servers[0]?.routes[0]?.annotations.backendProtocol.protocol, 'FCGI'),
  },
  {
    name: 'backend-protocol: a spec.defaultBackend route carries it too',
    ingresses: [ingress('catch', { nginx: { 'backend-protocol': 'GRPCS' }, defaultBackend: 'web:80' })],
    check: (t, { model }) =>
      t.equal(model.catchAll.defaultRoute.annotations.backendProtocol.protocol, 'GRPCS'),
  },
]);
