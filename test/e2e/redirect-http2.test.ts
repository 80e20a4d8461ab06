// Redirects built from the request's host, over HTTP/2: the host is :authority there, not a Host
// header. ssl-redirect through use-forwarded-headers (X-Forwarded-Proto: http on the HTTPS port),
// app-root and from-to-www-redirect must all name the :authority, never an empty host (`https:///p`,
// and `https:///evil.example/x` is read by browsers as https://evil.example/x).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, type OutgoingHttpHeaders } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { pem } from '../model/helpers.ts';
import { testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml, tlsSecret } from '../support/manifests.ts';
import { TEST_THREADS_ENTRY } from '../support/threads.ts';

const withTls = (yaml: string, host: string) =>
  yaml.replace('  rules:', `  tls: [{ hosts: [${host}], secretName: site-tls }]\n  rules:`);
const on = (name: string, host: string, annotations: Record<string, string>, path = '/') =>
  withTls(ingressYaml({ name, host, path, service: 'web', annotations }), host);

t.test('redirects over HTTP/2 name the :authority', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-redirect-h2-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'all.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('web', []),
      `---\napiVersion: v1\nkind: ConfigMap\nmetadata: { name: ingress-ts, namespace: e2e }\ndata: { ${TEST_THREADS_ENTRY}use-forwarded-headers: "true" }\n`,
      `---\n${tlsSecret('e2e', 'site-tls', pem('a-example'))}`,
      on('site', 'site.test', { 'force-ssl-redirect': 'true' }),
      on('port', 'port.test', { 'force-ssl-redirect': 'true', 'use-port-in-redirects': 'true' }),
      on('root', 'root.test', { 'app-root': '/app1' }, '/app1'),
      on('www', 'a.example.com', { 'from-to-www-redirect': 'true' }),
    ].join(''),
  );
  const controller = await start(testConfig(dir, '--configmap', 'e2e/ingress-ts'), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  const session = connect(`https://127.0.0.1:${controller.https.port}`, { rejectUnauthorized: false });
  t.teardown(() => session.close());
  await new Promise<void>((resolve, reject) => {
    session.once('connect', () => resolve());
    session.once('error', reject);
  });

  const request = (authority: string, path: string, extra: OutgoingHttpHeaders = {}) =>
    new Promise<{ status: number; location: string | undefined }>((resolve, reject) => {
      const stream = session.request({ ':authority': authority, ':path': path, ...extra });
      stream.on('response', (headers) => {
        const location = headers.location;
        resolve({
          status: Number(headers[':status']),
          location: typeof location === 'string' ? location : undefined,
        });
        stream.resume();
      });
      stream.on('error', reject);
      stream.end();
    });

  const http = { 'x-forwarded-proto': 'http' };
  const cases: Array<[string, string, OutgoingHttpHeaders, number, string | undefined, string]> = [
    ['site.test', '/p', http, 308, 'https://site.test/p', 'ssl-redirect: the :authority is the host'],
    [
      'site.test',
      '/evil.example/x',
      http,
      308,
      'https://site.test/evil.example/x',
      'ssl-redirect: a path is never read as the host',
    ],
    [
      'Site.Test:8443',
      '/p',
      http,
      308,
      'https://Site.Test/p',
      'ssl-redirect: $http_host as sent, minus its port',
    ],
    ['port.test', '/p', http, 308, 'https://port.test:443/p', 'use-port-in-redirects'],
    [
      'site.test',
      '/p',
      { ...http, 'x-forwarded-host': 'front.example' },
      308,
      'https://front.example/p',
      'use-forwarded-headers: X-Forwarded-Host wins',
    ],
    ['site.test', '/p', {}, 503, undefined, 'no forwarded proto: HTTPS already, proxied (no endpoints)'],
    ['root.test', '/', {}, 302, 'https://root.test/app1', 'app-root: the :authority'],
    [
      'www.a.example.com',
      '/foo/?x=1',
      {},
      308,
      'https://a.example.com:443/foo/?x=1',
      'from-to-www-redirect: www → host',
    ],
  ];
  for (const [authority, path, extra, status, location, name] of cases) {
    const reply = await request(authority, path, extra);
    t.equal(reply.status, status, `${name}: status`);
    t.equal(reply.location, location, `${name}: Location`);
  }
});
