// A data plane serving hand-made HTTPRoute routes, for the Gateway data-plane tests: a model built
// from an Ingress on `gw.test` (so the upstreams of Services v1, v2, v3 and `empty`, without
// endpoints, exist, each with an echo backend named after it) whose routes are then replaced by
// the test's. With INGRESS_TS_TEST_THREADS the model crosses to worker threads as in production.
import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Test } from 'tap';
import { DataPlane } from '../../../lib/dataplane/dataplane.ts';
import type { DataPlaneHandle } from '../../../lib/dataplane/handle.ts';
import { generateDefaultCertificate } from '../../../lib/dataplane/listening/sni.ts';
import { DataPlaneThreads } from '../../../lib/dataplane/worker/pool.ts';
import type { Backend, GatewayRouteMatch, Model, Route } from '../../../lib/model/index.ts';
import { build, ingress, path, rule, service, slice } from '../../model/helpers.ts';
import { echoBackend, type Reply, type Seen } from '../../support/echo.ts';
import { listen, type SendOptions } from '../../support/http.ts';
import { TEST_THREAD_COUNT, THREAD_MODE } from '../../support/threads.ts';

export const HOST = 'gw.test';
export const BACKENDS = ['v1', 'v2', 'v3'] as const;

/** A Gateway match with nothing set but what `over` says (served on both ports, listeners 80/443). */
export function gatewayMatch(over: Partial<GatewayRouteMatch> = {}): GatewayRouteMatch {
  return {
    rule: 0,
    protocols: 'both',
    listenerPorts: { http: 80, https: 443 },
    method: null,
    headers: [],
    queryParams: [],
    requestHeaders: null,
    responseHeaders: null,
    redirect: null,
    rewrite: null,
    mirrors: [],
    ...over,
  };
}

/** What a test's routes are made from: the upstream of a Service, and a route shaped by the build. */
export interface RouteKit {
  upstream(serviceName: string): string;
  /** an HTTPRoute route `name` on `path` to `backend` (a Service name, or a Backend) with this match */
  route(
    name: string,
    path: string,
    pathType: 'Exact' | 'Prefix',
    backend: string | Backend,
    match?: Partial<GatewayRouteMatch>,
  ): Route;
  /** the Ingress route the build made for `/ingress-<service>` */
  ingressRoute(serviceName: string): Route;
}

const generatedDefaultCertificate = await generateDefaultCertificate();

function baseModel(ports: Record<string, number>, regex: boolean): Model {
  const names = [...BACKENDS, 'empty'];
  return build({
    ingresses: [
      ingress('site', {
        nginx: regex ? { 'use-regex': 'true' } : {},
        rules: [rule(HOST, ...names.map((name) => path(`/ingress-${name}`, `${name}:80`)))],
      }),
    ],
    services: names.map((name) => service(name, [{ port: 80, targetPort: ports[name] ?? 1 }])),
    slices: BACKENDS.map((name) =>
      slice(name, [{ addresses: ['127.0.0.1'] }], [{ port: ports[name] as number }]),
    ),
  }).model;
}

export interface GatewayPlane {
  http: number;
  https: number;
  handle: DataPlaneHandle;
  /** emits `v1`..`v3` with the request target, Host and headers of each request a backend receives */
  arrivals: EventEmitter;
}

/**
 * Echo backends v1..v3 and a data plane serving `routes(kit)` on gw.test (in place of the Ingress
 * routes; `regex`: the host is in regex mode and keeps its Ingress routes before the test's).
 */
export async function gatewayPlane(
  t: Test,
  routes: (kit: RouteKit) => Route[],
  options: { regex?: boolean } = {},
): Promise<GatewayPlane> {
  const ports: Record<string, number> = {};
  const arrivals = new EventEmitter();
  for (const name of BACKENDS) {
    const backend = echoBackend(name);
    backend.on('request', (req: IncomingMessage) =>
      arrivals.emit(name, req.url, req.headers.host, req.headers),
    );
    ports[name] = await listen(backend);
    t.teardown(() => {
      backend.closeAllConnections();
      backend.close();
    });
  }
  const model = baseModel(ports, options.regex === true);
  const server = model.servers.find((s) => s.hostname === HOST);
  if (server === undefined) throw new Error('no server for gw.test');
  const ingressRoutes = server.routes;
  const upstream = (serviceName: string): string => {
    const found = Object.keys(model.upstreams).find((name) => name === `default-${serviceName}-80`);
    if (found === undefined)
      throw new Error(`no upstream for ${serviceName}: ${Object.keys(model.upstreams)}`);
    return found;
  };
  const ingressRoute = (serviceName: string): Route => {
    const found = ingressRoutes.find((r) => r.path === `/ingress-${serviceName}`);
    if (found === undefined) throw new Error(`no Ingress route for ${serviceName}`);
    return found;
  };
  const template = ingressRoute('v1');
  const kit: RouteKit = {
    upstream,
    ingressRoute,
    route: (name, path, pathType, backend, match = {}) => ({
      ...template,
      path,
      pathType,
      pathTypeAsWritten: pathType,
      ingress: { namespace: 'default', name, kind: 'HTTPRoute' },
      backend: typeof backend === 'string' ? { type: 'upstream', upstream: upstream(backend) } : backend,
      canary: null,
      setsAffinityCookie: false,
      gateway: gatewayMatch(match),
    }),
  };
  // the model's order in regex mode: the Ingress regex routes, then the HTTPRoute routes
  server.routes = options.regex === true ? [...ingressRoutes, ...routes(kit)] : routes(kit);
  const common = { httpPort: 0, httpsPort: 0, bindAddress: '127.0.0.1', generatedDefaultCertificate };
  const handle: DataPlaneHandle = THREAD_MODE
    ? new DataPlaneThreads({ ...common, threads: TEST_THREAD_COUNT })
    : new DataPlane(common);
  t.teardown(() => handle.close());
  await handle.apply(model);
  const { http, https } = await handle.listen();
  return { http: http.port, https: https.port, handle, arrivals };
}

/** One HTTPS request to 127.0.0.1:`port` with SNI and Host gw.test (the default certificate answers). */
export function sendHttps(port: number, path: string, options: SendOptions = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        port,
        host: '127.0.0.1',
        servername: HOST,
        rejectUnauthorized: false,
        method: options.method ?? 'GET',
        path,
        headers: { host: HOST, ...options.headers },
        agent: false,
      },
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
    req.end();
  });
}

/** Which echo backend answered a 200, else `<status>`. */
export function answeredBy(reply: Reply): string {
  if (reply.status !== 200) return String(reply.status);
  return (JSON.parse(reply.body) as Seen).name;
}
