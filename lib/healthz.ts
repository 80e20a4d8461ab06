// The health listener (--healthz-port):
// - GET /healthz (readiness; the path is --health-check-path): 200 while serving, 500 once shutting
//   down (ingress-nginx: load balancers stop sending before the listeners close).
// - GET /livez (liveness): 200 whenever the event loop runs, also while draining after SIGTERM. It is
//   answered by the same event loop as the proxy, so a stuck loop (a runaway computation, a
//   synchronous stall) leaves it unanswered and the kubelet's probe times out: the only failure.
// - GET /metrics: the Prometheus exposition when metrics are enabled.
// - GET /debug/model: the live configuration as JSON (debug-model.ts) when a source is given; the
//   source may answer later (a Promise: the data plane describes its runtime through its handle).

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRoutingPage } from './routing-page/serve.ts';

// /debug/routing: the page over /debug/model, there exactly when /debug/model is
const routingPage = createRoutingPage();

export interface Healthz {
  readonly server: Server;
  /** from now on /healthz answers 500 */
  shuttingDown(): void;
  listen(port: number, host: string): Promise<AddressInfo>;
  close(): Promise<void>;
}

/** Produces the /metrics answer. */
export type MetricsSource = () => Promise<{ contentType: string; body: string }>;

/** Produces the /debug/model answer: a JSON-serializable value (or its Promise), null before the first model. */
export type DebugModelSource = () => unknown;

export interface HealthzOptions {
  debugModel?: DebugModelSource | null;
  /** the readiness path; default /healthz */
  readinessPath?: string;
}

const JSON_TYPE = 'application/json; charset=utf-8';

export function createHealthz(
  ready: () => boolean,
  metrics: MetricsSource | null = null,
  options: HealthzOptions = {},
): Healthz {
  const debugModel = options.debugModel ?? null;
  const readinessPath = options.readinessPath ?? '/healthz';
  let stopping = false;
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (debugModel !== null && routingPage(path ?? '', req, res)) return;
    if (path === '/debug/model' && debugModel !== null) {
      const answer = (status: number, body: string) =>
        res.writeHead(status, { 'Content-Type': JSON_TYPE, 'Cache-Control': 'no-store' }).end(`${body}\n`);
      new Promise<unknown>((resolve) => resolve(debugModel()))
        .then((model) =>
          model === null || model === undefined
            ? ([503, JSON.stringify({ error: 'no configuration has been applied yet' })] as const)
            : ([200, JSON.stringify(model, null, 2)] as const),
        )
        .then(
          ([status, body]) => answer(status, body),
          (error: unknown) =>
            answer(500, JSON.stringify({ error: `describing the model failed: ${String(error)}` })),
        );
      return;
    }
    if (path === '/metrics' && metrics !== null) {
      metrics().then(
        ({ contentType, body }) => res.writeHead(200, { 'Content-Type': contentType }).end(body),
        (error: unknown) =>
          res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`metrics failed: ${String(error)}\n`),
      );
      return;
    }
    if (path === '/livez') {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok\n');
      return;
    }
    if (path !== readinessPath) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
      return;
    }
    const ok = !stopping && ready();
    res.writeHead(ok ? 200 : 500, { 'Content-Type': 'text/plain' }).end(ok ? 'ok\n' : 'not ready\n');
  });
  return {
    server,
    shuttingDown() {
      stopping = true;
    },
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen({ port, host: host === '' ? undefined : host }, () => {
          server.off('error', reject);
          resolve(server.address() as AddressInfo);
        });
      });
    },
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
