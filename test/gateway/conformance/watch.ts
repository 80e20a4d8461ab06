// Waiting for a status the controller writes: a watch on the fake API server, as any client of a
// cluster would open one, and a check run on every event. Where the suite polls every second, this
// sees each write as it lands, and a failure says what the last state still lacked.
import { request } from 'node:http';
import type { FakeApiServer, KubeObject } from '../../support/fake-apiserver.ts';

const GATEWAY_API = 'gateway.networking.k8s.io/v1';
const KINDS = {
  GatewayClass: { apiVersion: GATEWAY_API, plural: 'gatewayclasses', namespaced: false },
  Gateway: { apiVersion: GATEWAY_API, plural: 'gateways', namespaced: true },
  HTTPRoute: { apiVersion: GATEWAY_API, plural: 'httproutes', namespaced: true },
  Ingress: { apiVersion: 'networking.k8s.io/v1', plural: 'ingresses', namespaced: true },
} as const;

export type WatchedKind = keyof typeof KINDS;

/** A status wait longer than any build plus write on a loaded machine; the suite allows 60 s. */
export const STATUS_TIMEOUT_MS = 20_000;

function watchPath(kind: WatchedKind, where: { namespace?: string; name?: string }, since: string): string {
  const { apiVersion, plural, namespaced } = KINDS[kind];
  const scope = namespaced && where.namespace !== undefined ? `namespaces/${where.namespace}/` : '';
  const query = new URLSearchParams({ watch: 'true', resourceVersion: since });
  if (where.name !== undefined) query.set('fieldSelector', `metadata.name=${where.name}`);
  return `/apis/${apiVersion}/${scope}${plural}?${query}`;
}

const keyOf = (obj: KubeObject) => `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;

/**
 * Resolves with the objects of the watch (those of `where`: one name, one namespace, or all) once
 * `check` returns no problem for them; rejects after `timeoutMs` with the last problems seen.
 * The current objects are checked first (a state reached before the call counts), then every
 * change from that resourceVersion on.
 */
export function watchUntil(
  api: FakeApiServer,
  kind: WatchedKind,
  where: { namespace?: string; name?: string },
  check: (objects: readonly KubeObject[]) => string[],
  what: string,
  timeoutMs = STATUS_TIMEOUT_MS,
): Promise<readonly KubeObject[]> {
  const objects = new Map<string, KubeObject>();
  const since = api.resourceVersion;
  const current = api.list({ kind, apiVersion: KINDS[kind].apiVersion }, where.namespace);
  for (const obj of current)
    if (where.name === undefined || obj.metadata?.name === where.name) objects.set(keyOf(obj), obj);
  const first = check([...objects.values()]);
  if (first.length === 0) return Promise.resolve([...objects.values()]);
  return new Promise((resolve, reject) => {
    let problems = first;
    let settled = false;
    const finish = (error?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      if (error === undefined) resolve([...objects.values()]);
      else reject(error);
    };
    const evaluate = () => {
      problems = check([...objects.values()]);
      if (problems.length === 0) finish();
    };
    const timer = setTimeout(
      () => finish(new Error(`not within ${timeoutMs} ms: ${what}; last seen: ${problems.join('; ')}`)),
      timeoutMs,
    );
    const req = request(
      `${api.url}${watchPath(kind, where, since)}`,
      { headers: { authorization: 'Bearer fake-token' }, agent: false },
      (res) => {
        if (res.statusCode !== 200) {
          finish(new Error(`${what}: the watch of ${kind} answered ${res.statusCode}`));
          res.resume();
          return;
        }
        let buffered = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffered += chunk;
          let newline = buffered.indexOf('\n');
          while (newline !== -1 && !settled) {
            const line = buffered.slice(0, newline);
            buffered = buffered.slice(newline + 1);
            newline = buffered.indexOf('\n');
            if (line.trim() === '') continue;
            const event = JSON.parse(line) as { type: string; object: KubeObject };
            if (event.type === 'DELETED') objects.delete(keyOf(event.object));
            else if (event.type === 'ADDED' || event.type === 'MODIFIED')
              objects.set(keyOf(event.object), event.object);
            evaluate();
          }
        });
        res.on('error', () => {});
      },
    );
    req.on('error', (err) => finish(new Error(`${what}: the watch failed: ${err.message}`)));
    req.end();
  });
}
