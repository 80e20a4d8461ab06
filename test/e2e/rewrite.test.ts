// rewrite-target, use-regex and x-forwarded-prefix through the real proxy, with echo backends that
// report the request target and X-Forwarded-Prefix they received: the ingress-nginx corner cases
// (e2e rewrite.go), captures and the query string, WebSocket upgrades, RE2 paths, and a pathological
// regex that a backtracking engine could not finish.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { get, listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, serviceYaml } from '../support/manifests.ts';

interface PathYaml {
  path: string;
  pathType?: 'Prefix' | 'Exact' | 'ImplementationSpecific';
  service: string;
}

/** An Ingress in namespace e2e with several paths on one host. */
function ingressDoc(
  name: string,
  host: string,
  paths: PathYaml[],
  annotations: Record<string, string> = {},
  created = '2026-01-01T00:00:00Z',
): string {
  const notes = Object.entries(annotations)
    .map(([k, v]) => `nginx.ingress.kubernetes.io/${k}: ${JSON.stringify(v)}`)
    .join(', ');
  const items = paths
    .map(
      (p) =>
        `          - { path: ${JSON.stringify(p.path)}, pathType: ${p.pathType ?? 'ImplementationSpecific'}, backend: { service: { name: ${p.service}, port: { number: 80 } } } }\n`,
    )
    .join('');
  return `---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: ${name}, namespace: e2e, creationTimestamp: "${created}", annotations: { ${notes} } }
spec:
  ingressClassName: ingress-ts
  rules:
    - host: ${host}
      http:
        paths:
${items}`;
}

interface Seen {
  backend: string;
  url: string;
  prefix: string | undefined;
}

/** An echo backend: answers with the request target and X-Forwarded-Prefix it got; upgrades likewise. */
async function echo(name: string): Promise<{ port: number; close: () => void }> {
  const seen = (req: IncomingMessage): Seen => ({
    backend: name,
    url: req.url ?? '',
    prefix: req.headers['x-forwarded-prefix'] as string | undefined,
  });
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(seen(req)));
  });
  server.on('upgrade', (req, socket) => {
    const body = JSON.stringify(seen(req));
    socket.end(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Seen: ${body}\r\n\r\n`,
    );
  });
  const port = await listen(server);
  return {
    port,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

t.test('rewrite-target and regex paths through the proxy', async (t) => {
  const one = await echo('one');
  const two = await echo('two');
  t.teardown(() => {
    one.close();
    two.close();
  });
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-rewrite-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'all.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('one', [one.port]),
      serviceYaml('two', [two.port]),
      // the ingress-nginx documentation example, on the oldest Ingress of the host
      ingressDoc(
        'rw',
        'rw.test',
        [{ path: '/something(/|$)(.*)', service: 'one' }],
        { 'rewrite-target': '/$2', 'x-forwarded-prefix': '/something' },
        '2026-01-01T00:00:00Z',
      ),
      // a newer Ingress on the same host, no annotation: its paths become regexes too
      ingressDoc(
        'other',
        'rw.test',
        [
          { path: '/foo', pathType: 'Prefix', service: 'two' },
          { path: '/exact', pathType: 'Exact', service: 'two' },
          { path: '/foo/bar/[a-z]{3}', service: 'one' },
          { path: '/foo/bar/bar', service: 'two' },
          { path: '/id/[0-9]+', service: 'one' },
          { path: '/id/[0-9]+$', service: 'two' },
        ],
        {},
        '2026-01-01T00:01:00Z',
      ),
      ingressDoc('whole', 'whole.test', [{ path: '/old', pathType: 'Prefix', service: 'one' }], {
        'rewrite-target': '/new/backend',
      }),
      ingressDoc('same', 'same.test', [{ path: '/old', pathType: 'Prefix', service: 'one' }], {
        'rewrite-target': '/old',
        'x-forwarded-prefix': '/p',
      }),
      ingressDoc('np', 'np.test', [{ path: '/np(/x)?/(.*)', service: 'one' }], {
        'rewrite-target': '/r$1/$2',
        'x-forwarded-prefix': '/np$1',
      }),
      ingressDoc('bad', 'bad.test', [{ path: '/a', pathType: 'Prefix', service: 'one' }], {
        'rewrite-target': '/foo bar',
      }),
      ingressDoc('go', 'go.test', [{ path: '/go/(.*)', service: 'one' }], {
        'rewrite-target': 'https://elsewhere.example/$1',
      }),
      ingressDoc(
        're',
        're.test',
        [
          { path: '/(a+)+$', service: 'one' },
          { path: '/ok', service: 'two' },
          { path: '/(x)\\1', service: 'two' },
          { path: '/(?=look)', service: 'two' },
        ],
        { 'use-regex': 'true' },
      ),
    ].join(''),
  );
  const controller = await start(testConfig(dir), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;

  const through = async (host: string, path: string, headers: Record<string, string> = {}) => {
    const reply = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({ port, host: '127.0.0.1', path, headers: { host, ...headers } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });
    if (reply.status !== 200) return reply.status;
    const seen = JSON.parse(reply.body) as Seen;
    return { backend: seen.backend, url: seen.url, prefix: seen.prefix };
  };

  t.test('captures, the query string, the whole URI replaced', async (t) => {
    const cases: Array<[string, string, Seen | number, string]> = [
      ['rw.test', '/something', { backend: 'one', url: '/', prefix: '/something' }, '$2 empty'],
      ['rw.test', '/something/', { backend: 'one', url: '/', prefix: '/something' }, 'trailing slash'],
      [
        'rw.test',
        '/something/new?x=1&y=2',
        { backend: 'one', url: '/new?x=1&y=2', prefix: '/something' },
        'query string kept',
      ],
      [
        'rw.test',
        '/SOMETHING/Deep/Path',
        { backend: 'one', url: '/Deep/Path', prefix: '/something' },
        'case-insensitive, the capture keeps its case',
      ],
      [
        'rw.test',
        '/something/a%20b',
        { backend: 'one', url: '/a%20b', prefix: '/something' },
        'a decoded capture is escaped again',
      ],
      ['rw.test', '/somethingelse', 404, 'no match: the host default (404)'],
      [
        'whole.test',
        '/old/x/y?q=1',
        { backend: 'one', url: '/new/backend?q=1', prefix: undefined },
        'no capture: the whole URI becomes the target; no x-forwarded-prefix set, none sent',
      ],
      [
        'same.test',
        '/old/x?q=1',
        { backend: 'one', url: '/old/x?q=1', prefix: undefined },
        'target == path: no rewrite and no X-Forwarded-Prefix',
      ],
      [
        'same.test',
        '/oldx',
        { backend: 'one', url: '/oldx', prefix: undefined },
        "the host's root placeholder inherits rewrite-target /old (not its path /): the host is in regex mode",
      ],
      [
        'np.test',
        '/np/y',
        { backend: 'one', url: '/r/y', prefix: '/np' },
        'a group that did not participate is empty (target and prefix)',
      ],
      ['np.test', '/np/x/y', { backend: 'one', url: '/r/x/y', prefix: '/np/x' }, 'participating group'],
      [
        'bad.test',
        '/a/b?q=1',
        { backend: 'one', url: '/a/b?q=1', prefix: undefined },
        'an invalid rewrite-target falls back to no rewrite',
      ],
    ];
    for (const [host, path, expected, name] of cases) t.strictSame(await through(host, path), expected, name);
  });

  t.test(
    'x-forwarded-prefix replaces the client header; without a rewrite the client header passes',
    async (t) => {
      t.strictSame(await through('rw.test', '/something/x', { 'x-forwarded-prefix': '/client' }), {
        backend: 'one',
        url: '/x',
        prefix: '/something',
      });
      t.strictSame(await through('rw.test', '/foobar', { 'x-forwarded-prefix': '/client' }), {
        backend: 'two',
        url: '/foobar',
        prefix: '/client',
      });
    },
  );

  t.test(
    'the host is in regex mode: every path is a case-insensitive regex anchored at the start',
    async (t) => {
      const cases: Array<[string, string, string]> = [
        ['/foobar', 'two', 'Prefix /foo of another Ingress matches /foobar'],
        ['/exactly', 'two', 'an Exact path becomes prefix-like'],
        ['/foo/bar/bar', 'one', '/foo/bar/[a-z]{3} (longer) is tried before /foo/bar/bar'],
        ['/id/123a', 'one', '/id/[0-9]+ has no end anchor'],
        ['/id/123', 'two', '/id/[0-9]+$ (longer) matches only digits to the end'],
        ['/FOO/BAR/BAR', 'one', 'case-insensitive'],
      ];
      for (const [path, backend, name] of cases) {
        const seen = await through('rw.test', path);
        t.equal(typeof seen === 'object' ? seen.backend : seen, backend, name);
        t.equal(typeof seen === 'object' ? seen.url : '', path, `${name}: the path is not rewritten`);
      }
    },
  );

  t.test('paths RE2 cannot compile are dropped; the others still served', async (t) => {
    t.equal(await through('re.test', '/xx'), 404, 'the backreference path is not served');
    t.equal(await through('re.test', '/lookahead'), 404, 'the lookahead path is not served');
    t.match(await through('re.test', '/ok'), { backend: 'two' });
    t.match(await through('re.test', '/aaa'), { backend: 'one' });
  });

  t.test('a pathological regex answers in linear time and the event loop stays responsive', async (t) => {
    // `^/(a+)+$` against `/aaaa…ab`: a backtracking engine (JS RegExp, PCRE without limits) tries
    // every split of the a's, 2^n ways, and would never answer (not run here). RE2 is linear. The
    // path stays below the 8 KiB request-line limit (large-client-header-buffers: longer is a 414).
    const evil = `/${'a'.repeat(8_000)}b`;
    const [slow, other] = await Promise.all([through('re.test', evil), through('re.test', '/ok')]);
    t.equal(slow, 404, 'the pathological path completes (no route matches: the host default)');
    t.match(other, { backend: 'two' }, 'another connection is answered meanwhile');
  });

  t.test('a rewrite-target that is a URL answers 302 (NGINX rewrite semantics)', async (t) => {
    const reply = await get(port, 'go.test', '/go/x?q=1');
    t.equal(reply.status, 302);
    t.equal(reply.headers.location, 'https://elsewhere.example/x?q=1');
  });

  t.test('WebSocket upgrades get the same rewrite', async (t) => {
    const seen = await new Promise<Seen>((resolve, reject) => {
      const req = request({
        port,
        host: '127.0.0.1',
        path: '/something/ws?room=1',
        headers: { host: 'rw.test', connection: 'Upgrade', upgrade: 'websocket' },
      });
      req.on('upgrade', (res, socket) => {
        socket.destroy();
        const { backend, url, prefix } = JSON.parse(String(res.headers['x-seen'])) as Seen;
        resolve({ backend, url, prefix });
      });
      req.on('response', (res) => reject(new Error(`no upgrade: ${res.statusCode}`)));
      req.on('error', reject);
      req.end();
    });
    t.strictSame(seen, { backend: 'one', url: '/ws?room=1', prefix: '/something' });
  });

  t.test('/debug/model shows the rewrite settings', async (t) => {
    const reply = await get(controller.healthz.port, 'localhost', '/debug/model');
    const model = JSON.parse(reply.body) as {
      hosts: Array<{ host: string; regex: boolean; routes: Array<Record<string, unknown>> }>;
    };
    const rw = model.hosts.find((h) => h.host === 'rw.test');
    t.equal(rw?.regex, true);
    t.match(
      rw?.routes.find((r) => r.path === '/something(/|$)(.*)'),
      {
        rewriteTarget: '/$2',
        xForwardedPrefix: '/something',
      },
    );
    t.equal(rw?.routes.find((r) => r.path === '/foo')?.rewriteTarget, undefined);
    const same = model.hosts.find((h) => h.host === 'same.test');
    t.equal(same?.routes[0]?.rewriteTarget, undefined, 'target == path: no rewrite shown');
  });
});
