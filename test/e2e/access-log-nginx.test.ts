// The access log against NGINX itself: the same request (hostile header bytes, Basic credentials, an
// X-Request-ID, a query) sent to ingress-ts and to an NGINX configured as ingress-nginx configures it
// (its log_format, its `set $namespace ...` per location, its $req_id map), both proxying to one
// backend; the lines must be the same but for what differs per process (the time, durations). Four
// formats: ingress-nginx's default, a custom text one, a JSON one with escape=json, one with
// escape=none; then requests refused before routing, field by field. Skipped when no nginx binary
// is installed.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, watch } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { DEFAULT_LOG_FORMAT_UPSTREAM } from '../../lib/model/configmap/log-format.ts';
import { listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { parseNginxLine } from '../support/nginx-log-line.ts';
import { raw } from '../support/raw-http.ts';
import { nextSwap } from '../support/swaps.ts';
import { withTestThreads } from '../support/threads.ts';

const nginx = (() => {
  try {
    execFileSync('nginx', ['-v'], { stdio: 'ignore' });
    return 'nginx';
  } catch {
    return null;
  }
})();

t.setTimeout(60_000);

const CUSTOM =
  '$remote_addr|$remote_user|"$request"|$status|$body_bytes_sent|"$http_referer"|"$http_user_agent"|' +
  '$request_length|[$proxy_upstream_name]|[$proxy_alternative_upstream_name]|$upstream_addr|' +
  '$upstream_response_length|$upstream_status|$req_id|$request_method|$request_uri|$uri|$args|' +
  '$is_args|$query_string|$arg_page|$arg_none|$cookie_sid|$cookie_none|$http_x_custom|$http_x_none|' +
  '$scheme|$https|$host|$server_protocol|$namespace|$ingress_name|$service_name|$service_port|' +
  '$location_path|$connection_requests|$proxy_add_x_forwarded_for';
const JSON_FORMAT =
  '{"ua":"$http_user_agent","uri":"$request_uri","user":"$remote_user","ref":"$http_referer",' +
  '"none":"$http_x_none","status":$status,"upstream":"$upstream_addr","len":"$upstream_response_length"}';

type Escaping = 'default' | 'json' | 'none';
const FORMATS: Array<{ name: string; format: string; escaping: Escaping }> = [
  { name: 'default', format: DEFAULT_LOG_FORMAT_UPSTREAM, escaping: 'default' },
  { name: 'custom', format: CUSTOM, escaping: 'default' },
  { name: 'json', format: JSON_FORMAT, escaping: 'json' },
  {
    name: 'none',
    format: '"$http_user_agent" "$request" "$http_referer" [$remote_user] [$http_x_none]',
    escaping: 'none',
  },
];

/** What differs between two processes for the same request: the time and the durations. */
function masked(line: string): string {
  return line
    .replace(/\[\d\d\/\w{3}\/\d{4}:\d\d:\d\d:\d\d \+0000\]/, '[TIME]')
    .replace(/ \d+\.\d{3} \[/, ' DURATION [')
    .replace(/ (\d+\.\d{3}) (\d{3} \S*)$/, ' DURATION $2');
}

async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** An NGINX as ingress-nginx renders a location of Ingress e2e/site (path /app, service web:80). */
function nginxConf(prefix: string, backendPort: number, ports: number[]): string {
  const quoted = (format: string) => format.replaceAll("'", "\\'");
  const servers = FORMATS.map(
    ({ name, format, escaping }, i) => `
    log_format ${name} ${escaping === 'default' ? '' : `escape=${escaping} `}'${quoted(format)}';
    server {
      listen 127.0.0.1:${ports[i]};
      server_name site.test;
      access_log ${prefix}/${name}.log ${name};
      set $proxy_upstream_name "-";
      location /app {
        set $namespace      "e2e";
        set $ingress_name   "site";
        set $service_name   "web";
        set $service_port   "80";
        set $location_path  "/app";
        set $proxy_upstream_name "e2e-web-80";
        set $proxy_alternative_upstream_name "";
        proxy_pass http://127.0.0.1:${backendPort};
        proxy_http_version 1.1;
        proxy_set_header X-Request-ID $req_id;
      }
    }`,
  ).join('\n');
  return `daemon off;
master_process off;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 64; }
http {
  client_body_temp_path ${prefix}/client_body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
  map $http_x_request_id $req_id {
    default $http_x_request_id;
    "" $request_id;
  }
${servers}
}
`;
}

const REQUEST =
  'GET /app/a%20b?page=3&x=y HTTP/1.1\r\nHost: site.test\r\n' +
  `Authorization: Basic ${Buffer.from('alice:pw').toString('base64')}\r\n` +
  'User-Agent: ua "quoted" \\back\\ \xe9\r\nReferer: https://r.test/?a="1"\r\n' +
  'X-Request-ID: 0123456789abcdef0123456789abcdef\r\nX-Custom: one\r\nCookie: a=1; sid=s-42\r\n' +
  'X-Forwarded-For: 198.51.100.1\r\nConnection: close\r\n\r\n';

const REFUSED = [
  'GET /bad path HTTP/1.1\r\nHost: site.test\r\n\r\n',
  'GET /nohost HTTP/1.1\r\n\r\n',
  'GET /two HTTP/1.1\r\nHost: site.test\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n',
];

t.test(
  'the same request, the same line as NGINX writes',
  { skip: nginx === null && 'no nginx binary' },
  async (t) => {
    const backend: Server = createServer((req, res) => {
      req.resume();
      res.setHeader('Content-Type', 'text/plain');
      res.end('hello from the backend');
    });
    const backendPort = await listen(backend);
    t.teardown(() => {
      backend.closeAllConnections();
      return new Promise<void>((resolve) => backend.close(() => resolve()));
    });
    const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-log-nginx-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));

    const ports: number[] = [];
    for (const _ of FORMATS) ports.push(await freePort());
    await writeFile(join(dir, 'nginx.conf'), nginxConf(dir, backendPort, ports));
    // NGINX writes its pid file once its sockets listen
    const watcher = watch(dir);
    const proc = spawn(
      nginx as string,
      ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')],
      {
        stdio: 'ignore',
      },
    );
    t.teardown(() => {
      proc.kill('SIGKILL');
    });
    while (!existsSync(join(dir, 'nginx.pid'))) await once(watcher, 'change');
    watcher.close();

    const manifests = join(dir, 'manifests');
    await mkdir(manifests);
    // ingress-ts writes its lines to a file, as bytes, as it writes them to standard output
    const logFile = join(dir, 'ingress-ts.log');
    const configMap = (data: Record<string, string>) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: config, namespace: e2e }\ndata: ${JSON.stringify(
        withTestThreads({ 'access-log-path': logFile, ...data }),
      )}\n`;
    await writeFile(join(manifests, 'config.yaml'), configMap({}));
    await writeFile(
      join(manifests, 'site.yaml'),
      `${INGRESS_CLASS}${serviceYaml('web', [backendPort])}${ingressYaml({ name: 'site', host: 'site.test', path: '/app', service: 'web' })}`,
    );
    const controller = await start(
      testConfig(manifests, '--configmap', 'e2e/config'),
      createLogger('silent'),
      {
        accessLogStdout: new Writable({ write: (_chunk, _encoding, done) => done() }),
      },
    );
    t.teardown(() => controller.stop(0));
    const fileLines = async () =>
      existsSync(logFile) ? (await readFile(logFile, 'latin1')).split('\n').filter(Boolean) : [];
    const logWatch = watch(dir);
    t.teardown(() => logWatch.close());
    /** The line after the first `from` of ingress-ts's file, once written (within its 100 ms batch). */
    const lineAfter = async (from: number) => {
      for (;;) {
        const lines = await fileLines();
        if (lines.length > from) return lines[from] as string;
        await once(logWatch, 'change');
      }
    };

    for (const [i, { name, format, escaping }] of FORMATS.entries()) {
      if (i > 0) {
        // (the first is the default: the ConfigMap as it started)
        const swapped = nextSwap();
        await writeFile(
          join(manifests, 'config.yaml'),
          configMap({
            'log-format-upstream': format,
            'log-format-escape-json': String(escaping === 'json'),
            'log-format-escape-none': String(escaping === 'none'),
          }),
        );
        await swapped;
      }
      const from = (await fileLines()).length;
      const ours = await raw(controller.http.port, Buffer.from(REQUEST, 'latin1'), { end: false });
      const theirs = await raw(ports[i] as number, Buffer.from(REQUEST, 'latin1'), { end: false });
      t.equal(ours.status, 200);
      t.equal(theirs.status, 200);
      const ingressTsLine = await lineAfter(from);
      const nginxLine =
        (await readFile(join(dir, `${name}.log`), 'latin1')).split('\n').filter(Boolean).at(-1) ?? '';
      t.equal(masked(ingressTsLine), masked(nginxLine), `${name}: the line NGINX writes`);
      t.not(ingressTsLine, '', `${name}: a line`);
    }

    // refused before routing, in the default format (back to it)
    const swapped = nextSwap();
    await writeFile(join(manifests, 'config.yaml'), configMap({}));
    await swapped;
    for (const bad of REFUSED) {
      const from = (await fileLines()).length;
      const ours = await raw(controller.http.port, bad, { end: false });
      const theirs = await raw(ports[0] as number, bad, { end: false });
      t.equal(ours.status, theirs.status, `${JSON.stringify(bad)}: the status NGINX answers`);
      const ingressTsLine = await lineAfter(from);
      const nginxLine =
        (await readFile(join(dir, 'default.log'), 'latin1')).split('\n').filter(Boolean).at(-1) ?? '';
      // each generates its own request id; the error page's body and the bytes counted as the
      // request's differ for these (docs/observability.md, "Where ingress-ts differs from NGINX")
      const fields = (line: string) => {
        const { time_local, request_time, req_id, body_bytes_sent, request_length, ...rest } =
          parseNginxLine(line);
        return rest;
      };
      t.same(fields(ingressTsLine), fields(nginxLine), `${JSON.stringify(bad)}: the line NGINX writes`);
    }
  },
);
