// What /debug/model adds from the objects the model was built from, on the controller's thread:
// the Ingresses with the annotations they set, and the endpoints of each backend's Service that are
// not ready. The data plane never holds either (it serves ready endpoints only, and routes, not
// objects), so both are read from the snapshot of the last build, when the answer is made: nothing
// of it costs a request or a build.
//
// Annotation values are shown as they are written, except what may carry a credential: a snippet is
// configuration text (a header value, a token in a URL), so it is hidden whole; URL values lose their
// userinfo and query values; a name that says it holds a credential hides its value; and every other
// value has its URL-looking words redacted.

import {
  endpointsFromSlices,
  findServicePort,
  type Ingress,
  isOurIngress,
  LEGACY_CLASS_ANNOTATION,
  type Model,
  type ModelOptions,
  ownedClassNames,
  REDACTED,
  SERVICE_NAME_LABEL,
  type Snapshot,
} from './model/index.ts';
import { redactValue } from './model/redact.ts';

/** One Ingress of this controller: its annotations of --annotations-prefix, when it was created, its class. */
export interface IngressDescription {
  /** full annotation name → value, redacted where it may carry a credential */
  annotations: Record<string, string>;
  /** metadata.creationTimestamp as written ('' when absent) */
  created: string;
  /** spec.ingressClassName, else the kubernetes.io/ingress.class annotation, else null */
  class: string | null;
}

/** Names whose value is a credential whatever it looks like (an unknown annotation can be anything). */
const CREDENTIAL_NAME = /(?:^|-)(?:token|password|passwd|credentials?|api-?key|secret-value)(?:-|$)/;

/** An annotation value as /debug/model shows it; `name` is without the prefix. */
export function redactAnnotation(name: string, value: string): string {
  if (value === '') return value;
  if (name.endsWith('-snippet') || CREDENTIAL_NAME.test(name)) return REDACTED;
  return redactValue(name, value);
}

const text = (value: unknown): string => (typeof value === 'string' ? value : '');

function classOf(ingress: Ingress): string | null {
  const name = ingress.spec?.ingressClassName;
  if (typeof name === 'string') return name;
  const legacy = ingress.metadata?.annotations?.[LEGACY_CLASS_ANNOTATION];
  return typeof legacy === 'string' ? legacy : null;
}

/** Every Ingress of this controller's classes in `snapshot`, keyed `namespace/name`, keys sorted. */
export function describeIngresses(
  snapshot: Snapshot,
  options: ModelOptions,
): Record<string, IngressDescription> {
  const owned = ownedClassNames(snapshot.ingressClasses, options);
  const prefix = `${options.annotationsPrefix}/`;
  const found = new Map<string, IngressDescription>();
  for (const ingress of snapshot.ingresses) {
    if (!isOurIngress(ingress, owned, options)) continue;
    const key = `${text(ingress.metadata?.namespace)}/${text(ingress.metadata?.name)}`;
    const annotations: Record<string, string> = {};
    const written = ingress.metadata?.annotations;
    if (typeof written === 'object' && written !== null) {
      for (const name of Object.keys(written).sort()) {
        const value: unknown = written[name];
        if (!name.startsWith(prefix) || typeof value !== 'string') continue;
        annotations[name] = redactAnnotation(name.slice(prefix.length), value);
      }
    }
    found.set(key, {
      annotations,
      created: text(ingress.metadata?.creationTimestamp),
      class: classOf(ingress),
    });
  }
  const out: Record<string, IngressDescription> = {};
  for (const key of [...found.keys()].sort()) out[key] = found.get(key) as IngressDescription;
  return out;
}

/** `ip:port`, IPv6 bracketed: how the data plane names an endpoint (its peer key). */
const endpointKey = (address: string, port: number): string =>
  address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;

type Slice = Snapshot['endpointSlices'][number];

/** Some endpoint of `slice` is not ready. */
function holdsNotReady(slice: Slice): boolean {
  const endpoints: unknown = slice.endpoints;
  if (!Array.isArray(endpoints)) return false;
  for (const endpoint of endpoints as Array<{ conditions?: { ready?: unknown } } | null>) {
    if (endpoint?.conditions?.ready === false) return true;
  }
  return false;
}

/**
 * Per upstream of `model` whose Service has endpoints that are not ready: their `ip:port`, sorted.
 * The same Service port and slice port resolution as the endpoints served (endpointsFromSlices);
 * an address ready in one slice and not in another is served, so it is not listed. Only the slices
 * holding a not-ready endpoint are read further (in a cluster, a few): the rest costs one pass.
 */
export function notReadyEndpoints(snapshot: Snapshot, model: Model): Map<string, string[]> {
  const slices = new Map<string, Slice[]>();
  for (const slice of snapshot.endpointSlices) {
    const owner = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
    if (typeof owner !== 'string' || !holdsNotReady(slice)) continue;
    const key = `${text(slice.metadata?.namespace)}/${owner}`;
    const list = slices.get(key);
    if (list === undefined) slices.set(key, [slice]);
    else list.push(slice);
  }
  const out = new Map<string, string[]>();
  if (slices.size === 0) return out;
  const services = new Map<string, Snapshot['services'][number]>();
  for (const service of snapshot.services) {
    const key = `${text(service.metadata?.namespace)}/${text(service.metadata?.name)}`;
    if (slices.has(key)) services.set(key, service);
  }
  for (const upstream of Object.values(model.upstreams)) {
    if (upstream.externalName) continue;
    const key = `${upstream.service.namespace}/${upstream.service.name}`;
    const service = services.get(key);
    const ownSlices = slices.get(key);
    if (service === undefined || ownSlices === undefined) continue;
    const port = findServicePort(service, upstream.service.port);
    if (port === undefined) continue;
    const served = new Set(upstream.endpoints.map((e) => endpointKey(e.address, e.port)));
    const keys = endpointsFromSlices(ownSlices, port, 'TCP', true)
      .map((e) => endpointKey(e.address, e.port))
      .filter((k) => !served.has(k));
    if (keys.length > 0) out.set(upstream.name, keys);
  }
  return out;
}
