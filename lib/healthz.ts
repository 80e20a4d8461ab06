// The health listener (--healthz-port):
// - GET /healthz (readiness; the path is --health-check-path): 200 while serving, 500 once shutting
//   down (ingress-nginx: load balancers stop sending before the listeners close).
// - GET /livez (liveness): 200 whenever the event loop runs, also while draining after SIGTERM. It is
//   answered by the same event loop as the proxy, so a stuck loop (a runaway computation, a
//   synchronous stall) leaves it unanswered and the kubelet's probe times out: the only failure.
// - GET /metrics: the Prometheus exposition when metrics are enabled.
// - GET /debug/model and /debug/traffic: the live configuration and each route's traffic as JSON
//   (debug-routes.ts) when their sources are given; --enable-debug-pages=false gives none and both
//   answer 404 like any other path.
// - GET /debug/routing: the routing page over those two (routing-page/), served exactly when
//   /debug/model is.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createDebugModelRoute,
  createDebugTrafficRoute,
  type DebugModelSource,
  type DebugTrafficSource,
} from './debug-routes.ts';
import { createRoutingPage } from './routing-page/serve.ts';

export type { DebugModelSource, DebugTrafficSource } from './debug-routes.ts';

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

export interface HealthzOptions {
  /** /debug/model; null: not served */
  debugModel?: DebugModelSource | null;
  /** /debug/traffic; null: not served */
  debugTraffic?: DebugTrafficSource | null;
  /** the readiness path; default /healthz */
  readinessPath?: string;
  /** /debug/model describes each new version at once (tests); default: at most once per floor */
  describeEveryVersion?: boolean;
}

export function createHealthz(
  ready: () => boolean,
  metrics: MetricsSource | null = null,
  options: HealthzOptions = {},
): Healthz {
  const debugModel = options.debugModel ?? null;
  const serveModel =
    debugModel === null
      ? null
      : createDebugModelRoute(debugModel, { everyVersion: options.describeEveryVersion === true });
  const debugTraffic = options.debugTraffic ?? null;
  const serveTraffic = debugTraffic === null ? null : createDebugTrafficRoute(debugTraffic);
  const readinessPath = options.readinessPath ?? '/healthz';
  let stopping = false;
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (debugModel !== null && routingPage(path ?? '', req, res)) return;
    if (path === '/debug/model' && serveModel !== null) {
      serveModel(req, res);
      return;
    }
    if (path === '/debug/traffic' && serveTraffic !== null) {
      serveTraffic(req, res);
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
      debugTraffic?.close?.();
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
