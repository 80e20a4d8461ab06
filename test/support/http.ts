// Shared by the end-to-end tests: one HTTP request with a Host header (`send`, `get`), and the flags
// that start a controller on free loopback ports.
import { type Agent, type IncomingHttpHeaders, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Config, parseFlags } from '../../lib/config/flags.ts';
import { testThreadsFlags } from './threads.ts';

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface SendOptions {
  method?: string;
  headers?: Record<string, string>;
  /** written as is, with a Content-Length */
  body?: string;
  /** written chunk by chunk without a Content-Length (chunked) */
  chunks?: string[];
  /** undefined: Node's global agent; false: a connection of its own */
  agent?: Agent | false;
}

/** One request to 127.0.0.1:`port` with this Host; the request target `path` is sent as is. */
export function send(port: number, host: string, path: string, options: SendOptions = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host, ...options.headers };
    if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(options.body));
    const req = request(
      { port, host: '127.0.0.1', method: options.method ?? 'GET', path, headers, agent: options.agent },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    if (options.chunks !== undefined) for (const chunk of options.chunks) req.write(chunk);
    req.end(options.body);
  });
}

export function get(port: number, host: string, path = '/', agent?: Agent): Promise<Reply> {
  return send(port, host, path, { agent });
}

/** Flags for a controller over `manifests` on free loopback ports, plus `extra`. */
export const LOOPBACK_PORT_0 = [
  '--http-port',
  '0',
  '--https-port',
  '0',
  '--healthz-port',
  '0',
  '--bind-address',
  '127.0.0.1',
];

/** INGRESS_TS_TEST_THREADS adds the suite's worker-processes (test/support/threads.ts). */
export function testConfig(manifests: string, ...extra: string[]): Config {
  const threads = testThreadsFlags(manifests, extra);
  const parsed = parseFlags(['--manifests', manifests, ...LOOPBACK_PORT_0, ...extra, ...threads]);
  if (parsed.kind !== 'run') throw new Error('expected flags that run');
  return parsed.config;
}

/** Listens on a free loopback port; resolves with the port. */
export async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}
