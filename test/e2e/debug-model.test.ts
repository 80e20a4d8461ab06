// /debug/model on the healthz port: the live configuration as JSON (hosts → routes → backends with
// endpoints, balancers, certificates, diagnostics per object), following real swaps of a standalone
// controller; the manifest source's findings (a document that does not parse, an old apiVersion)
// show there too, with their file and line.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import t from 'tap';
import type { ModelDescription } from '../../lib/debug-model.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { pem } from '../model/helpers.ts';
import { get, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, tlsSecret } from '../support/manifests.ts';
import { nextSwap } from '../support/swaps.ts';

const A = pem('a-example');

const OBJECTS = `${INGRESS_CLASS}---
apiVersion: v1
kind: Service
metadata: { name: web, namespace: d }
spec: { ports: [{ name: http, port: 80, targetPort: 8080 }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: web-1, namespace: d, labels: { kubernetes.io/service-name: web } }
addressType: IPv4
ports: [{ name: http, port: 8080, protocol: TCP }]
endpoints: [{ addresses: [10.1.0.2] }, { addresses: [10.1.0.1] }]
---
apiVersion: v1
kind: Service
metadata: { name: api, namespace: d }
spec: { ports: [{ name: http, port: 80, targetPort: 9090 }] }
---
${tlsSecret('d', 'a-tls', A)}`;

function site(paths: Array<[string, string]>): string {
  return `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: site, namespace: d, annotations: { nginx.ingress.kubernetes.io/load-balance: ewma } }
spec:
  ingressClassName: ingress-ts
  rules:
    - host: site.example.test
      http:
        paths:
${paths.map(([p, svc]) => `          - { path: ${p}, pathType: Prefix, backend: { service: { name: ${svc}, port: { number: 80 } } } }`).join('\n')}
`;
}

const SECURE = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: secure, namespace: d }
spec:
  ingressClassName: ingress-ts
  tls: [{ hosts: [a.example.com], secretName: a-tls }]
  rules:
    - host: a.example.com
      http:
        paths:
          - { path: /, pathType: ImplementationSpecific, backend: { service: { name: web, port: { number: 80 } } } }
`;

const BAD = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: bad, namespace: d }
spec:
  ingressClassName: ingress-ts
  rules:
    - host: bad.example.test
      http:
        paths:
          - { path: /x, pathType: Sometimes, backend: { service: { name: web, port: { number: 80 } } } }
          - { path: /y, pathType: Prefix, backend: { service: { name: missing, port: { number: 80 } } } }
`;

t.test('/debug/model describes the live configuration and follows swaps', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-debug-model-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'objects.yaml'), OBJECTS);
  await writeFile(join(dir, 'site.yaml'), site([['/', 'web']]));
  await writeFile(join(dir, 'secure.yaml'), SECURE);
  await writeFile(join(dir, 'bad.yaml'), BAD);
  // follows changes: each new version described at once, without the floor across versions
  const controller = await start(testConfig(dir), createLogger('silent'), { describeEveryVersion: true });
  t.teardown(() => controller.stop(0));
  const fetchModel = async (): Promise<ModelDescription> => {
    const reply = await get(controller.healthz.port, 'localhost', '/debug/model');
    t.equal(reply.status, 200);
    t.match(reply.headers['content-type'], /^application\/json/);
    return JSON.parse(reply.body) as ModelDescription;
  };

  const first = await fetchModel();
  t.equal(first.hash, (await controller.handle.describe())?.hash, 'the hash of the runtime being served');
  t.strictSame(
    first.hosts.map((h) => h.host),
    ['a.example.com', 'bad.example.test', 'site.example.test', '_'],
    'named hosts sorted, then the catch-all server',
  );
  const host = (model: ModelDescription, name: string) => model.hosts.find((h) => h.host === name);

  t.strictSame(host(first, 'site.example.test'), {
    host: 'site.example.test',
    ingress: 'd/site',
    regex: false,
    tls: null,
    routes: [
      {
        path: '/',
        pathType: 'Prefix',
        ingress: 'd/site',
        backend: 'd-web-80',
        backendProtocol: 'HTTP',
        canary: null,
      },
    ],
    defaultRoute: { ingress: 'd/site', backend: 'default-backend' },
  });

  const secure = host(first, 'a.example.com');
  t.strictSame(secure?.routes, [
    {
      path: '/',
      pathType: 'Prefix',
      pathTypeAsWritten: 'ImplementationSpecific',
      ingress: 'd/secure',
      backend: 'd-web-80',
      backendProtocol: 'HTTP',
      canary: null,
    },
  ]);
  t.match(secure?.tls, {
    secret: 'd/a-tls',
    ingress: 'd/secure',
    certificate: {
      subject: 'CN=a.example.com',
      issuer: 'CN=a.example.com',
      notAfter: '2126-10-29T04:05:09.000Z',
      dnsNames: ['a.example.com', 'www.a.example.com'],
    },
  });

  t.strictSame(first.backends, [
    // sorted by name; a Service no route names (api) is no backend
    {
      name: 'd-missing-80',
      service: 'd/missing:80',
      externalName: false,
      loadBalance: 'round_robin',
      balancer: 'round_robin',
      endpoints: [],
    },
    {
      name: 'd-web-80',
      service: 'd/web:80',
      externalName: false,
      loadBalance: 'ewma',
      balancer: 'ewma',
      endpoints: ['10.1.0.1:8080', '10.1.0.2:8080'],
      // nothing observed yet (no request went to them)
      scores: { '10.1.0.1:8080': 0, '10.1.0.2:8080': 0 },
    },
  ]);
  t.equal(first.defaultBackend, null, 'the built-in 404');
  t.match(first.defaultCertificate, {
    secret: 'generated',
    certificate: { subject: /CN=Ingress-TS Fake Certificate/ },
  });
  t.equal(first.config.loadBalance, 'round_robin');

  // diagnostics of the bad Ingress, under the Ingress
  const bad = first.diagnostics['Ingress d/bad'];
  t.ok(Array.isArray(bad), 'the bad Ingress has diagnostics');
  t.strictSame(
    bad?.map((d) => [d.severity, d.code]),
    [
      ['error', 'PATH_TYPE_INVALID'],
      ['warning', 'SERVICE_NOT_FOUND'],
    ],
  );
  t.match(bad?.[0]?.message, /Sometimes/);
  t.notOk('Ingress d/site' in first.diagnostics, 'a clean Ingress has none');
  t.notOk(/PRIVATE KEY/.test(JSON.stringify(first)), 'no private key');

  // a new path: the next answer shows the route and its backend
  const swapped = nextSwap();
  await writeFile(
    join(dir, 'site.yaml'),
    site([
      ['/', 'web'],
      ['/api', 'api'],
    ]),
  );
  await swapped;
  const second = await fetchModel();
  t.not(second.hash, first.hash);
  t.strictSame(
    host(second, 'site.example.test')?.routes.map((r) => [r.path, r.backend]),
    [
      ['/api', 'd-api-80'],
      ['/', 'd-web-80'],
    ],
  );
  t.strictSame(
    second.backends.map((b) => b.name),
    ['d-api-80', 'd-missing-80', 'd-web-80'],
  );
  t.strictSame(
    second.backends[0],
    {
      name: 'd-api-80',
      service: 'd/api:80',
      externalName: false,
      loadBalance: 'ewma',
      balancer: 'ewma',
      endpoints: [],
      scores: {},
    },
    'the Service a route names now is a backend',
  );
  t.match(second.diagnostics['Ingress d/site'], [{ code: 'ENDPOINTS_NONE' }]);
});

t.test('/debug/model is not served elsewhere than on the healthz port', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-debug-model-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'site.yaml'), `${OBJECTS}---\n${site([['/', 'web']])}`);
  const controller = await start(testConfig(dir), createLogger('silent'));
  t.teardown(() => controller.stop(0));
  t.equal((await get(controller.http.port, 'localhost', '/debug/model')).status, 404, 'the proxy port');
  t.equal((await get(controller.healthz.port, 'localhost', '/debug/model')).status, 200);
});

t.test(
  '/debug/model and the log show the manifest files that ingress-ts cannot read, with file and line',
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-debug-model-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'site.yaml');
    // a valid Ingress, then a document with a duplicate key, then an Ingress of an old apiVersion
    const broken = `${site([['/', 'web']])}---
apiVersion: v1
kind: Service
kind: Service
metadata: { name: dup, namespace: d }
---
apiVersion: extensions/v1beta1
kind: Ingress
metadata: { name: old, namespace: d }
spec: { rules: [{ host: old.example.test }] }
`;
    await writeFile(join(dir, 'objects.yaml'), OBJECTS);
    await writeFile(file, broken);
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const controller = await start(testConfig(dir), createLogger('info', sink), {
      describeEveryVersion: true,
    });
    t.teardown(() => controller.stop(0));
    const fetchModel = async (): Promise<ModelDescription> =>
      JSON.parse((await get(controller.healthz.port, 'localhost', '/debug/model')).body) as ModelDescription;

    const model = await fetchModel();
    t.strictSame(
      model.hosts.map((h) => h.host),
      ['site.example.test', '_'],
      'the valid Ingress before the bad document is served',
    );
    t.strictSame(model.diagnostics[`Manifest ${file}`], [
      {
        severity: 'error',
        code: 'MANIFEST_INVALID',
        message: 'Map keys must be unique: this document is ignored',
        file,
        line: 14,
      },
    ]);
    t.strictSame(model.diagnostics['Ingress d/old'], [
      {
        severity: 'warning',
        code: 'MANIFEST_API_VERSION_IGNORED',
        message:
          'Ingress d/old has apiVersion extensions/v1beta1, only networking.k8s.io/v1 is read: ignored',
        file,
        line: 17,
      },
    ]);
    t.match(
      lines.filter((line) => typeof line.code === 'string' && line.code.startsWith('MANIFEST_')),
      [
        { level: 50, code: 'MANIFEST_INVALID', file, line: 14, object: `Manifest ${file}` },
        { level: 40, code: 'MANIFEST_API_VERSION_IGNORED', file, line: 17, object: 'Ingress d/old' },
      ],
      'logged with their code, file and line',
    );

    // fixed: the diagnostics are gone with the problems
    const swapped = nextSwap();
    await writeFile(file, site([['/', 'web']]).replace('name: site', 'name: site2'));
    await swapped;
    const fixed = await fetchModel();
    t.notOk(`Manifest ${file}` in fixed.diagnostics);
    t.notOk('Ingress d/old' in fixed.diagnostics);
  },
);
