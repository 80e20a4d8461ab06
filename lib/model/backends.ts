// Service backends → upstreams with their endpoints (ingress-nginx's serviceEndpoints and
// getEndpointsFromSlices). An upstream is resolved once per build and shared by every route that
// names the same Service and port.

import { BlockList, isIP } from 'node:net';
import { type BackendIndex, ByNamespace } from './backend-index.ts';
import { isDNS1123Subdomain } from './hosts.ts';
import { type EndpointSlice, objectKey, type Service, type ServicePort } from './k8s.ts';
import { sortSmall } from './sort.ts';
import type { Endpoint, HashBy, Upstream } from './types.ts';
import { UpstreamCache } from './upstream-cache.ts';

export interface ServiceBackendRef {
  namespace: string;
  service: string;
  /** the port number as a string, or the port name */
  port: string;
}

export type UpstreamProblem =
  | { code: 'SERVICE_NOT_FOUND'; message: string }
  | { code: 'SERVICE_PORT_NOT_FOUND'; message: string }
  | { code: 'ENDPOINTS_NONE'; message: string }
  | { code: 'EXTERNAL_NAME_INVALID'; message: string }
  | { code: 'EXTERNAL_NAME_DISABLED'; message: string }
  | { code: 'SERVICE_UPSTREAM_NO_CLUSTER_IP'; message: string };

/** What resolving a backend found, before it becomes an Upstream (kept across builds). */
export interface FoundUpstream {
  externalName: boolean;
  endpoints: Endpoint[];
  problem: UpstreamProblem | null;
}

export interface ResolvedUpstream {
  upstream: Upstream;
  problem: UpstreamProblem | null;
  /** one Backend object per upstream, shared by every route that uses it */
  backend: { type: 'upstream'; upstream: string };
}

export function upstreamName(ref: ServiceBackendRef): string {
  return `${ref.namespace}-${ref.service}-${ref.port}`;
}

function compareEndpoints(a: Endpoint, b: Endpoint): number {
  if (a.address !== b.address) return a.address < b.address ? -1 : 1;
  return a.port - b.port;
}

/** The first Service port whose port, targetPort or name equals `port` (ingress-nginx's rule). */
export function findServicePort(service: Service, port: string): ServicePort | undefined {
  // standalone manifests are not validated: ports may be anything, entries may be null
  const ports: unknown = service.spec?.ports;
  if (!Array.isArray(ports)) return undefined;
  return (ports as Array<ServicePort | null>).find(
    (candidate): candidate is ServicePort =>
      typeof candidate === 'object' &&
      candidate !== null &&
      (String(candidate.port) === port || String(candidate.targetPort) === port || candidate.name === port),
  );
}

const listOf = <T>(value: T[] | undefined): Array<T | null> => (Array.isArray(value) ? value : []);
const isPortNumber = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value > 0 && value <= 65535;

export class UpstreamResolver {
  readonly #services: ByNamespace<Service>;
  readonly #slices: ByNamespace<EndpointSlice[]>;
  /** namespace → service → its resolved upstreams (a Service is named with one or two ports) */
  readonly #byService = new ByNamespace<ResolvedUpstream[]>();
  /** every resolved upstream in resolve order (deterministic: the build walks Ingresses in order) */
  readonly #resolved: ResolvedUpstream[] = [];
  /** `namespace/name` of the Services resolved, in first-use order */
  readonly #referencedServices: string[] = [];
  readonly #disableExternalName: boolean;
  readonly #kept: UpstreamCache;
  /** upstreams(), while nothing more was resolved */
  #record: { size: number; upstreams: Record<string, Upstream> } | null = null;

  /** `kept`: what earlier builds resolved (default: nothing, a cache of this build only). */
  constructor(index: BackendIndex, disableExternalName: boolean, kept: UpstreamCache = new UpstreamCache()) {
    this.#disableExternalName = disableExternalName;
    this.#services = index.services;
    this.#slices = index.slices;
    this.#kept = kept;
  }

  service(namespace: string, name: string): Service | undefined {
    return this.#services.get(namespace, name);
  }

  /**
   * A Service looked up without resolving an upstream (whether a Gateway API backendRef is valid):
   * recorded as referenced all the same, so creating it later rebuilds.
   */
  findService(namespace: string, name: string): Service | undefined {
    this.#referencedServices.push(objectKey(namespace, name));
    return this.#services.get(namespace, name);
  }

  /** The EndpointSlices of a Service (by their service-name label). */
  slices(namespace: string, name: string): readonly EndpointSlice[] {
    return this.#slices.get(namespace, name) ?? [];
  }

  /**
   * The upstream of a backend, resolved once per build and shared by every route naming it;
   * `loadBalance` applies when this call creates it (the first Ingress to use an upstream decides).
   */
  resolve(
    ref: ServiceBackendRef,
    loadBalance: string,
    hashBy: HashBy | null = null,
    serviceUpstream = false,
  ): ResolvedUpstream {
    let known = this.#byService.get(ref.namespace, ref.service);
    if (known === undefined) {
      known = [];
      this.#byService.set(ref.namespace, ref.service, known);
      this.#referencedServices.push(objectKey(ref.namespace, ref.service));
    }
    for (const resolved of known) if (resolved.upstream.service.port === ref.port) return resolved;
    const resolved = this.#compute(ref, upstreamName(ref), loadBalance, hashBy, serviceUpstream);
    known.push(resolved);
    this.#resolved.push(resolved);
    return resolved;
  }

  /** An upstream with a name of its own (the controller's default backend); not shared with routes. */
  resolveAs(ref: ServiceBackendRef, name: string, loadBalance: string): ResolvedUpstream {
    this.#referencedServices.push(objectKey(ref.namespace, ref.service));
    const resolved = this.#compute(ref, name, loadBalance, null, false);
    this.#resolved.push(resolved);
    return resolved;
  }

  /**
   * Every upstream resolved, keyed by name, keys sorted (as ingress-nginx sorts its backends). Not in
   * first-use order: pointing one path at another Service would reshuffle that order, and a
   * data-plane thread would rebuild the whole record for it (tens of thousands of keys).
   */
  upstreams(): Record<string, Upstream> {
    if (this.#record?.size === this.#resolved.length) return this.#record.upstreams;
    // of two upstreams with one name the later resolved wins, as it always has
    const byName = new Map<string, Upstream>();
    for (const { upstream } of this.#resolved) byName.set(upstream.name, upstream);
    const upstreams: Record<string, Upstream> = {};
    for (const name of this.#kept.order(byName)) upstreams[name] = byName.get(name) as Upstream;
    this.#record = { size: this.#resolved.length, upstreams };
    return upstreams;
  }

  referencedServices(): string[] {
    return [...new Set(this.#referencedServices)];
  }

  /** The upstream of `ref` named `name`: what an earlier build found for the same Service object
   * and slices, or found now. The Upstream itself is new (the build sets its affinity later). */
  #compute(
    ref: ServiceBackendRef,
    name: string,
    loadBalance: string,
    hashBy: HashBy | null,
    serviceUpstream: boolean,
  ): ResolvedUpstream {
    const service = this.#services.get(ref.namespace, ref.service);
    const slices = this.#slices.get(ref.namespace, ref.service);
    const found = this.#kept.found(name, ref, service, slices, serviceUpstream, () =>
      this.#find(ref, service, serviceUpstream),
    );
    const upstream: Upstream = {
      name,
      service: { namespace: ref.namespace, name: ref.service, port: ref.port },
      externalName: found.externalName,
      loadBalance,
      hashBy,
      affinity: null,
      endpoints: found.endpoints,
    };
    return { upstream, backend: { type: 'upstream', upstream: name }, problem: found.problem };
  }

  /** What the Service and its slices give `ref`: endpoints, or the problem that left it without. */
  #find(ref: ServiceBackendRef, service: Service | undefined, serviceUpstream: boolean): FoundUpstream {
    const serviceId = (): string => objectKey(ref.namespace, ref.service);
    const problem = (code: UpstreamProblem['code'], message: string): FoundUpstream => ({
      externalName: false,
      endpoints: [],
      problem: { code, message } as UpstreamProblem,
    });
    if (service === undefined) return problem('SERVICE_NOT_FOUND', `Service ${serviceId()} not found`);
    const noClusterIp = (): UpstreamProblem => ({
      code: 'SERVICE_UPSTREAM_NO_CLUSTER_IP',
      message: `Service ${serviceId()} has no ClusterIP for service-upstream; its endpoints are used`,
    });
    if (service.spec?.type === 'ExternalName') {
      const found = this.#externalName(service, ref);
      return serviceUpstream && found.problem === null ? { ...found, problem: noClusterIp() } : found;
    }

    const port = findServicePort(service, ref.port);
    if (port === undefined) {
      return problem(
        'SERVICE_PORT_NOT_FOUND',
        `Service ${serviceId()} has no port matching "${ref.port}" (by port, targetPort or name)`,
      );
    }
    // service-upstream: the one peer is the ClusterIP and the Service port (kube-proxy balances)
    const clusterIP: unknown = service.spec?.clusterIP ?? '';
    if (
      serviceUpstream &&
      typeof clusterIP === 'string' &&
      isIP(clusterIP) !== 0 &&
      isPortNumber(port.port)
    ) {
      return { externalName: false, endpoints: [{ address: clusterIP, port: port.port }], problem: null };
    }
    const endpoints = endpointsFromSlices(this.#slices.get(ref.namespace, ref.service) ?? [], port);
    if (serviceUpstream && endpoints.length > 0) {
      return { externalName: false, endpoints, problem: noClusterIp() };
    }
    if (endpoints.length === 0) {
      return problem('ENDPOINTS_NONE', `Service ${serviceId()} port ${ref.port} has no ready endpoints`);
    }
    return { externalName: false, endpoints, problem: null };
  }

  #externalName(service: Service, ref: ServiceBackendRef): FoundUpstream {
    const serviceId = objectKey(ref.namespace, ref.service);
    const problem = (code: UpstreamProblem['code'], message: string): FoundUpstream => ({
      externalName: true,
      endpoints: [],
      problem: { code, message } as UpstreamProblem,
    });
    if (this.#disableExternalName) {
      return problem(
        'EXTERNAL_NAME_DISABLED',
        `Service ${serviceId} is of type ExternalName, which --disable-svc-external-name refuses`,
      );
    }
    const rawName: unknown = service.spec?.externalName ?? '';
    const externalName = typeof rawName === 'string' ? rawName : JSON.stringify(rawName);
    if (!isUsableExternalName(externalName)) {
      return problem(
        'EXTERNAL_NAME_INVALID',
        `Service ${serviceId} has externalName "${externalName}", which is not a usable remote host`,
      );
    }
    const port = findServicePort(service, ref.port);
    let portNumber: number;
    if (port !== undefined) {
      portNumber = isPortNumber(port.targetPort) ? port.targetPort : isPortNumber(port.port) ? port.port : 0;
    } else {
      // ExternalName Services often declare no ports: the backend's port number is the remote port.
      portNumber = /^\d+$/.test(ref.port) ? Number(ref.port) : 0;
    }
    if (!(portNumber > 0 && portNumber < 65536)) {
      return problem(
        'SERVICE_PORT_NOT_FOUND',
        `ExternalName Service ${serviceId} has no port matching "${ref.port}"`,
      );
    }
    return { externalName: true, endpoints: [{ address: externalName, port: portNumber }], problem: null };
  }
}

// Addresses that reach the controller itself: loopback (ingress-nginx refuses these) and the
// unspecified address, which Linux also routes to the local host. IPv4-mapped IPv6 forms match too.
const LOCAL_ADDRESSES = new BlockList();
LOCAL_ADDRESSES.addSubnet('127.0.0.0', 8, 'ipv4');
LOCAL_ADDRESSES.addAddress('0.0.0.0', 'ipv4');
LOCAL_ADDRESSES.addAddress('::1', 'ipv6');
LOCAL_ADDRESSES.addAddress('::', 'ipv6');

/**
 * An ExternalName must be a remote host: an IP that is not local, or a DNS name that is not
 * `localhost` or below it (RFC 6761 names resolve to loopback). ingress-nginx only refuses the exact
 * name `localhost` and loopback IPs; the rest is the same rule applied to every spelling.
 */
export function isUsableExternalName(name: string): boolean {
  const version = isIP(name);
  if (version !== 0) return !LOCAL_ADDRESSES.check(name, version === 6 ? 'ipv6' : 'ipv4');
  // upper-case names are not DNS-1123 and are refused below anyway
  const host = name.replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return false;
  return isDNS1123Subdomain(name.replace(/\.$/, ''));
}

/**
 * ingress-nginx's port resolution per slice (it always asks for TCP): a slice without ports uses an
 * integer targetPort; otherwise each TCP slice port is taken when the Service port is unnamed or has
 * the same name, and else replaced by an integer targetPort. Endpoints whose `ready` condition is
 * false are skipped; duplicates (the same ip:port) are dropped. UDP services (--udp-services-configmap)
 * ask for UDP slice ports instead. `notReady`: the skipped ones instead (what /debug/model lists as
 * not served; the caller removes those served from another slice).
 */
export function endpointsFromSlices(
  slices: readonly EndpointSlice[],
  servicePort: ServicePort,
  protocol: 'TCP' | 'UDP' = 'TCP',
  notReady = false,
): Endpoint[] {
  const targetPortNumber = isPortNumber(servicePort.targetPort) ? servicePort.targetPort : null;
  const out: Endpoint[] = [];
  for (const slice of slices) {
    const ports: number[] = [];
    // unvalidated manifests: non-list fields, null entries, ports outside 1-65535 and addresses that
    // are not IPs are skipped rather than trusted (a crash here would stop every route)
    const slicePorts = listOf(slice.ports);
    if (slicePorts.length === 0) {
      if (targetPortNumber !== null) ports.push(targetPortNumber);
    } else {
      for (const slicePort of slicePorts) {
        if (typeof slicePort !== 'object' || slicePort === null) continue;
        if ((slicePort.protocol ?? 'TCP') !== protocol) continue;
        let port: unknown = 0;
        if (!servicePort.name || servicePort.name === slicePort.name) port = slicePort.port ?? 0;
        else if (targetPortNumber !== null) port = targetPortNumber;
        if (isPortNumber(port)) ports.push(port);
      }
    }
    for (const port of ports) {
      for (const endpoint of listOf(slice.endpoints)) {
        if (typeof endpoint !== 'object' || endpoint === null) continue;
        if ((endpoint.conditions?.ready === false) !== notReady) continue;
        for (const address of listOf(endpoint.addresses)) {
          if (typeof address === 'string' && isIP(address) !== 0) out.push({ address, port });
        }
      }
    }
  }
  // sorted, duplicates (the same ip:port in several slices or ports) are neighbours
  sortSmall(out, compareEndpoints);
  let kept = 0;
  for (let i = 0; i < out.length; i++) {
    if (i === 0 || compareEndpoints(out[kept - 1]!, out[i]!) !== 0) out[kept++] = out[i]!;
  }
  out.length = kept;
  return out;
}
