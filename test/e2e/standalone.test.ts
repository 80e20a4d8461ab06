// End to end: a real controller in standalone mode over a temporary manifest folder, echo backends
// on port 0, real HTTP, TLS and WebSocket clients.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, type IncomingHttpHeaders, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import t from 'tap';
import { WebSocket } from 'ws';
import { echoServer } from '../../examples/demo-backends.ts';
import { createLogger } from '../../lib/log.ts';
import { type Controller, start } from '../../lib/main.ts';
import { pem } from '../model/helpers.ts';
import { get, type Reply, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, tlsSecret } from '../support/manifests.ts';
import { nextSwap } from '../support/swaps.ts';
import { TEST_THREAD_COUNT, TEST_THREADS } from '../support/threads.ts';

/** the suite's worker-processes as a line of a ConfigMap's data block */
const THREADS_DATA = `  worker-processes: "${TEST_THREADS}"\n`;

const backendOf = (reply: Reply): string => (JSON.parse(reply.body) as { backend: string }).backend;

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

function service(name: string, port: number | null): string {
  const slice =
    port === null
      ? ''
      : `---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: ${name}-1, namespace: e2e, labels: { kubernetes.io/service-name: ${name} } }
addressType: IPv4
ports: [{ name: http, port: ${port}, protocol: TCP }]
endpoints: [{ addresses: [127.0.0.1] }]
`;
  return `---
apiVersion: v1
kind: Service
metadata: { name: ${name}, namespace: e2e }
spec: { ports: [{ name: http, port: 80, targetPort: http }] }
${slice}`;
}

function ingress(name: string, host: string, paths: Array<[string, string, string]>, extra = ''): string {
  const items = paths
    .map(
      ([path, pathType, svc]) =>
        `          - { path: "${path}", pathType: ${pathType}, backend: { service: { name: ${svc}, port: { number: 80 } } } }`,
    )
    .join('\n');
  return `---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: ${name}, namespace: e2e }
spec:
  ingressClassName: ingress-ts
${extra}  rules:
    - host: "${host}"
      http:
        paths:
${items}
`;
}

const CLASS = INGRESS_CLASS;

const A = pem('a-example');
const TLS_SECRET = `---
${tlsSecret('e2e', 'a-tls', A)}`;

t.test('standalone mode end to end', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-e2e-'));
  const backends = new Map<string, Server>();
  const ports = new Map<string, number>();
  for (const name of ['web', 'api', 'wild', 'secure', 'other']) {
    const server = echoServer(name);
    backends.set(name, server);
    ports.set(name, await listen(server));
  }
  await writeFile(join(dir, 'class.yaml'), CLASS);
  await writeFile(
    join(dir, 'services.yaml'),
    [
      service('web', ports.get('web')!),
      service('api', ports.get('api')!),
      service('wild', ports.get('wild')!),
      service('secure', ports.get('secure')!),
      service('empty', null),
    ].join(''),
  );
  await writeFile(
    join(dir, 'ingresses.yaml'),
    [
      ingress('site', 'site.test', [
        ['/', 'Prefix', 'web'],
        ['/api', 'Prefix', 'api'],
        ['/exact', 'Exact', 'api'],
        ['/empty', 'Prefix', 'empty'],
      ]),
      ingress('wild', '*.wild.test', [['/', 'Prefix', 'wild']]),
      ingress(
        'secure',
        'a.example.com',
        [
          ['/', 'Prefix', 'secure'],
          ['/.well-known/acme-challenge/token', 'Exact', 'secure'],
        ],
        '  tls: [{ hosts: [a.example.com], secretName: a-tls }]\n',
      ),
      TLS_SECRET,
    ].join(''),
  );

  // the suite's worker-processes is read at start, from the ConfigMap: it exists then
  const configMapFile = join(dir, 'configmap.yaml');
  const configMapYaml = (data: string) =>
    `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: ingress-ts, namespace: e2e }\ndata:\n${THREADS_DATA}${data}`;
  await writeFile(configMapFile, configMapYaml(''));
  const config = testConfig(dir, '--log-level', 'silent', '--configmap', 'e2e/ingress-ts');
  // log lines as parsed objects, so tests can await what the controller reports
  const logLines: Array<Record<string, unknown>> = [];
  const logWaiters: Array<() => void> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line !== '') logLines.push(JSON.parse(line));
      for (const wake of logWaiters.splice(0)) wake();
      done();
    },
  });
  const logged = async (predicate: (line: Record<string, unknown>) => boolean, timeoutMs = 3000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = logLines.find(predicate);
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error('expected log line not seen');
      await new Promise<void>((resolve) => {
        logWaiters.push(resolve);
        setTimeout(resolve, deadline - Date.now());
      });
    }
  };
  // about a thousand requests: their access log lines go nowhere (not into the TAP stream)
  const controller: Controller = await start(config, createLogger('info', sink), {
    accessLogStdout: { write() {} },
  });
  t.equal(controller.threads, TEST_THREAD_COUNT, "the suite's data-plane threads");
  const http = controller.http.port;
  const https = controller.https.port;
  t.teardown(async () => {
    await controller.stop(0);
    for (const server of backends.values()) {
      server.closeAllConnections();
      server.close();
    }
    await rm(dir, { recursive: true, force: true });
  });

  t.test('routes by host, path and pathType', async (t) => {
    t.equal(backendOf(await get(http, 'site.test', '/')), 'web');
    t.equal(backendOf(await get(http, 'site.test', '/anything/else')), 'web');
    t.equal(backendOf(await get(http, 'site.test', '/api')), 'api');
    t.equal(backendOf(await get(http, 'site.test', '/api/users?x=1')), 'api');
    t.equal(backendOf(await get(http, 'site.test', '/apiary')), 'web', 'prefix matches by path element');
    t.equal(backendOf(await get(http, 'site.test', '/exact')), 'api');
    t.equal(
      backendOf(await get(http, 'site.test', '/exact/')),
      'web',
      'Exact does not match a trailing slash',
    );
    t.equal(
      backendOf(await get(http, 'SITE.test:8080', '/api')),
      'api',
      'host is case-insensitive, port ignored',
    );
  });

  t.test('wildcard hosts match one label', async (t) => {
    t.equal(backendOf(await get(http, 'pr-1.wild.test', '/')), 'wild');
    t.equal((await get(http, 'a.b.wild.test', '/')).status, 404);
  });

  t.test('unknown host → 404; no endpoints → 503; NGINX-style bodies', async (t) => {
    const miss = await get(http, 'nowhere.test', '/');
    t.equal(miss.status, 404);
    t.match(miss.body, /<center><h1>404 Not Found<\/h1><\/center>/);
    t.notMatch(miss.body, /nginx/);
    const empty = await get(http, 'site.test', '/empty');
    t.equal(empty.status, 503);
    t.match(empty.body, /503 Service Temporarily Unavailable/);
  });

  t.test('a malformed path is refused with 400', async (t) => {
    t.equal((await get(http, 'site.test', '/%zz')).status, 400);
    t.equal((await get(http, 'site.test', '/../etc/passwd')).status, 400);
  });

  t.test('upstream request headers', async (t) => {
    const reply = await get(http, 'site.test', '/headers');
    const seen = (JSON.parse(reply.body) as { headers: IncomingHttpHeaders }).headers;
    t.equal(seen.host, 'site.test');
    t.equal(seen['x-real-ip'], '127.0.0.1');
    t.equal(seen['x-forwarded-for'], '127.0.0.1');
    t.equal(seen['x-forwarded-proto'], 'http');
    t.match(seen['x-request-id'], /^[0-9a-f]{32}$/);
    t.equal(reply.headers.server, undefined, 'upstream Server header removed');
  });

  t.test('TLS: SNI picks the certificate, unknown names get the default', async (t) => {
    const subjectFor = (servername: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = tlsConnect(
          { port: https, host: '127.0.0.1', servername, rejectUnauthorized: false },
          () => {
            const cert = socket.getPeerCertificate();
            socket.end();
            resolve(String(cert.subject?.CN));
          },
        );
        socket.on('error', reject);
      });
    t.equal(await subjectFor('a.example.com'), 'a.example.com');
    t.equal(await subjectFor('unknown.test'), 'Ingress-TS Fake Certificate');
  });

  t.test('TLS: HTTPS is proxied with HSTS; HTTP is redirected with 308 except ACME challenges', async (t) => {
    const secure = await new Promise<Reply>((resolve, reject) => {
      const req = httpsRequest(
        {
          port: https,
          host: '127.0.0.1',
          servername: 'a.example.com',
          path: '/x',
          headers: { host: 'a.example.com' },
          rejectUnauthorized: false,
        },
        (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => {
            body += chunk.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    t.equal(backendOf(secure), 'secure');
    t.equal(secure.headers['strict-transport-security'], 'max-age=31536000; includeSubDomains');
    const seen = (JSON.parse(secure.body) as { headers: IncomingHttpHeaders }).headers;
    t.equal(seen['x-forwarded-proto'], 'https');
    t.equal(seen['x-forwarded-port'], '443');

    const redirect = await get(http, 'a.example.com:8080', '/path/?q=1');
    t.equal(redirect.status, 308);
    t.equal(redirect.headers.location, 'https://a.example.com/path/?q=1');
    const root = await get(http, 'a.example.com', '/');
    t.equal(root.headers.location, 'https://a.example.com', 'one trailing slash removed');
    const acme = await get(http, 'a.example.com', '/.well-known/acme-challenge/token');
    t.equal(acme.status, 200, 'ACME challenge path is not redirected');
    t.equal((await get(http, 'site.test', '/')).status, 200, 'hosts without TLS are not redirected');
  });

  t.test('editing a manifest changes routing within a second', async (t) => {
    const swapped = nextSwap(1000);
    const file = join(dir, 'more.yaml');
    await writeFile(file, ingress('more', 'more.test', [['/', 'Prefix', 'api']]));
    await swapped;
    t.equal(backendOf(await get(http, 'more.test', '/')), 'api');
    const removed = nextSwap(1000);
    await rm(file);
    await removed;
    t.equal((await get(http, 'more.test', '/')).status, 404);
  });

  t.test('a malformed manifest is ignored and the last good objects keep serving', async (t) => {
    const file = join(dir, 'broken.yaml');
    const swapped = nextSwap(1000);
    await writeFile(file, ingress('broken', 'broken.test', [['/', 'Prefix', 'web']]));
    await swapped;
    t.equal(backendOf(await get(http, 'broken.test', '/')), 'web');
    await writeFile(file, 'apiVersion: v1\nkind: [unclosed\n');
    const report = await logged((line) => String(line.file ?? '').endsWith('broken.yaml'));
    t.equal(report.level, 50, 'reported as an error');
    t.equal(report.line, 3, 'with the line where the parser found the unclosed sequence');
    const reply = await get(http, 'broken.test', '/');
    t.equal(backendOf(reply), 'web');
  });

  t.test('/healthz answers 200 while serving', async (t) => {
    const reply = await get(controller.healthz.port, 'localhost', '/healthz');
    t.equal(reply.status, 200);
  });

  t.test('WebSocket upgrades are routed like requests: 404, 503, 308', async (t) => {
    const statusOf = (host: string, path = '/ws') =>
      new Promise<{ status: number; location: string | undefined }>((resolve, reject) => {
        const socket = new WebSocket(`ws://127.0.0.1:${http}${path}`, { headers: { host } });
        socket.once('unexpected-response', (_req, res) => {
          resolve({ status: res.statusCode ?? 0, location: res.headers.location });
          res.resume();
          socket.terminate();
        });
        socket.once('open', () => reject(new Error(`${host} upgraded`)));
        socket.once('error', () => {});
      });
    t.equal((await statusOf('nowhere.test')).status, 404, 'unknown host');
    t.equal((await statusOf('site.test', '/empty')).status, 503, 'no endpoints');
    t.strictSame(
      await statusOf('a.example.com'),
      { status: 308, location: 'https://a.example.com/ws' },
      'ssl-redirect',
    );
  });

  t.test(
    'a WebSocket keeps working across 100 swaps',
    { skip: controller.threads > 1 && 'swaps straight into the main-thread DataPlane (none with threads)' },
    async (t) => {
      const socket = new WebSocket(`ws://127.0.0.1:${http}/ws`, { headers: { host: 'site.test' } });
      await new Promise((resolve, reject) => {
        socket.once('open', resolve);
        socket.once('error', reject);
      });
      const current = controller.dataPlane.current!.model;
      const other = { ...current, hash: `${current.hash}-x`, routesHash: `${current.routesHash}-x` };
      for (let i = 0; i < 100; i++) {
        controller.dataPlane.swap(i % 2 === 0 ? other : current);
        const echoed = new Promise<string>((resolve) =>
          socket.once('message', (data) => resolve(String(data))),
        );
        socket.send(`message ${i}`);
        t.equal(await echoed, `message ${i}`);
      }
      socket.close();
    },
  );

  t.test(
    '1,000 swaps while requests flow: no request fails',
    { skip: controller.threads > 1 && 'swaps straight into the main-thread DataPlane (none with threads)' },
    async (t) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 8 });
      t.teardown(() => agent.destroy());
      const current = controller.dataPlane.current!.model;
      const other = { ...current, hash: `${current.hash}-y`, routesHash: `${current.routesHash}-y` };
      let swaps = 0;
      let running = true;
      const swapper = (async () => {
        while (swaps < 1000) {
          controller.dataPlane.swap(swaps % 2 === 0 ? other : current);
          swaps++;
          await new Promise((resolve) => setImmediate(resolve));
        }
        running = false;
      })();
      let ok = 0;
      let failed = 0;
      const worker = async () => {
        while (running) {
          try {
            const reply = await get(http, 'site.test', '/api/x', agent);
            if (reply.status === 200 && backendOf(reply) === 'api') ok++;
            else failed++;
          } catch {
            failed++;
          }
        }
      };
      await Promise.all([swapper, worker(), worker(), worker(), worker()]);
      t.equal(swaps, 1000);
      t.equal(failed, 0, `${ok} requests succeeded during the swaps`);
      t.ok(ok > 0);
    },
  );

  t.test('the global ConfigMap applies when it appears and changes', async (t) => {
    const write = async (data: string) => {
      const swapped = nextSwap(1000);
      await writeFile(configMapFile, configMapYaml(data));
      await swapped;
    };
    await write('  ssl-redirect: "false"\n');
    t.equal(backendOf(await get(http, 'a.example.com', '/x')), 'secure', 'ssl-redirect off: HTTP is proxied');
    await write('  http-redirect-code: "301"\n');
    const moved = await get(http, 'a.example.com', '/x');
    t.equal(moved.status, 301, 'http-redirect-code');
    t.equal(moved.headers.location, 'https://a.example.com/x');
    await write('  force-ssl-redirect: "true"\n');
    t.equal(
      (await get(http, 'site.test', '/')).status,
      308,
      'force-ssl-redirect applies to hosts without TLS',
    );
    const mark = logLines.length;
    await rm(configMapFile);
    await logged((line) => line.code === 'CONFIGMAP_NOT_FOUND' && logLines.indexOf(line) >= mark);
    t.pass('a --configmap that goes missing is reported');
  });
});
