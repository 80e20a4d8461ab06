// NGINX processes for the benchmarks: the fixed upstream (the thing every proxy forwards to) and the
// configuration checked with `nginx -t` before start.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fail, pinned, run, type Started, startProcess } from './harness.ts';

/** the upstream's small body: 1,023 bytes plus the "\n" written in upstreamConf = 1 KiB */
const BODY_1K = 'x'.repeat(1023);
export const ONE_MIB = 1024 * 1024;

/** The main context; `workers` is `worker_processes` (the scaling benchmark raises it). */
export function nginxCommon(prefix: string, workers = 1): string {
  return `worker_processes ${workers};
daemon off;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 4096; }
`;
}

export function httpCommon(prefix: string): string {
  return `  access_log off;
  client_body_temp_path ${prefix}/client_body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_timeout 75s;
`;
}

/** The keep-alive pool of a proxying NGINX to the upstream on `port`, as ingress-nginx renders one. */
export function benchUpstream(port: number): string {
  return `  upstream bench {
    server 127.0.0.1:${port};
    keepalive 64;
    keepalive_requests 10000;
    keepalive_timeout 60s;
  }
`;
}

/**
 * The body of a proxying NGINX's `location /` as ingress-nginx renders it: HTTP/1.1 to the keep-alive
 * pool, no buffering, the forwarded headers (the set ingress-ts sends too).
 */
export const PROXY_LOCATION = `      proxy_pass http://bench;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Request-ID $request_id;
      proxy_set_header X-Real-IP $remote_addr;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Forwarded-Host $host;
      proxy_set_header X-Forwarded-Port $server_port;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Scheme $scheme;
      proxy_set_header X-Scheme $scheme;
      proxy_buffering off;
      proxy_connect_timeout 5s;
`;

/**
 * The upstream: one worker, `return 200` with 1 KiB on `/`, a 1 MiB file on `/1m` (`<dir>/1m.bin`,
 * written by `writeOneMiB`), on every port in `ports`.
 */
export function upstreamConf(prefix: string, dir: string, ports: number[]): string {
  // keepalive_requests is raised so that neither the proxies' pooled connections nor wrk's are closed
  // every 1,000 requests by the upstream (ingress-nginx's own upstream-keepalive-requests is 10,000).
  return `${nginxCommon(prefix)}
http {
${httpCommon(prefix)}  keepalive_requests 1000000;
  default_type application/octet-stream;
  server {
${ports.map((port) => `    listen 127.0.0.1:${port} backlog=4096;\n`).join('')}    location = /1m { alias ${dir}/1m.bin; }
    location / { return 200 "${BODY_1K}\\n"; }
  }
}
`;
}

export function writeOneMiB(dir: string): void {
  writeFileSync(join(dir, '1m.bin'), Buffer.alloc(ONE_MIB, 'y'), { mode: 0o644 });
}

/** Writes `conf` under `prefix`, checks it with `nginx -t`, starts NGINX pinned to `core` (or a list). */
export async function startNginx(prefix: string, conf: string, core: number | string): Promise<Started> {
  mkdirSync(prefix, { recursive: true });
  const confPath = join(prefix, 'nginx.conf');
  writeFileSync(confPath, conf);
  const test = await run(
    ['nginx', '-t', '-q', '-p', prefix, '-c', confPath, '-e', join(prefix, 'error.log')],
    10000,
  );
  if (test.code !== 0) fail(1, `nginx -t failed for ${confPath}:\n${test.out}`);
  return startProcess(pinned(core, ['nginx', '-p', prefix, '-c', confPath, '-e', join(prefix, 'error.log')]));
}

/** `nginx -s reload` for the instance under `prefix`. */
export async function reloadNginx(prefix: string): Promise<boolean> {
  const reload = await run(
    [
      'nginx',
      '-p',
      prefix,
      '-c',
      join(prefix, 'nginx.conf'),
      '-e',
      join(prefix, 'error.log'),
      '-s',
      'reload',
    ],
    5000,
  );
  return reload.code === 0;
}
