// Service backends → upstreams with their endpoints (ingress-nginx's serviceEndpoints and
// getEndpointsFromSlices). An upstream is resolved once per build and shared by every route that
// names the same Service and port.

import { isIP } from 'node:net';
import { isDNS1123Subdomain } from './hosts.ts';
import { type EndpointSlice, objectKey, SERVICE_NAME_LABEL, type Service, type ServicePort } from './k8s.ts';
import type { Endpoint, Upstream } from './types.ts';

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
  | { code: 'EXTERNAL_NAME_DISABLED'; message: string };

export interface ResolvedUpstream {
  upstream: Upstream;
  problem: UpstreamProblem | null;
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
  return service.spec?.ports?.find(
    (candidate) =>
      String(candidate.port) === port || String(candidate.targetPort) === port || candidate.name === port,
  );
}

/** namespace → name → value: lookups without building `namespace/name` strings (hot at 10k+ objects). */
class ByNamespace<T> {
  readonly #namespaces = new Map<string, Map<string, T>>();

  get(namespace: string, name: string): T | undefined {
    return this.#namespaces.get(namespace)?.get(name);
  }

  set(namespace: string, name: string, value: T): void {
    let names = this.#namespaces.get(namespace);
    if (names === undefined) {
      names = new Map();
      this.#namespaces.set(namespace, names);
    }
    names.set(name, value);
  }
}

export class UpstreamResolver {
  readonly #services = new ByNamespace<Service>();
  readonly #slices = new ByNamespace<EndpointSlice[]>();
  readonly #resolved = new Map<string, ResolvedUpstream>();
  readonly #disableExternalName: boolean;

  constructor(services: readonly Service[], slices: readonly EndpointSlice[], disableExternalName: boolean) {
    this.#disableExternalName = disableExternalName;
    for (const service of services) {
      const { namespace, name } = service.metadata ?? {};
      if (typeof namespace === 'string' && typeof name === 'string')
        this.#services.set(namespace, name, service);
    }
    for (const slice of slices) {
      const namespace = slice.metadata?.namespace;
      const owner = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
      if (typeof namespace !== 'string' || typeof owner !== 'string') continue;
      const list = this.#slices.get(namespace, owner);
      if (list === undefined) this.#slices.set(namespace, owner, [slice]);
      else list.push(slice);
    }
  }

  service(namespace: string, name: string): Service | undefined {
    return this.#services.get(namespace, name);
  }

  /** Resolve (once) the upstream for a backend; `name` overrides the ingress-nginx upstream name. */
  resolve(ref: ServiceBackendRef, name: string = upstreamName(ref)): ResolvedUpstream {
    const cached = this.#resolved.get(name);
    if (cached !== undefined) return cached;
    const resolved = this.#compute(ref, name);
    this.#resolved.set(name, resolved);
    return resolved;
  }

  /** Every upstream resolved so far, keyed by name, in the (deterministic) order they were first used. */
  upstreams(): Record<string, Upstream> {
    const out: Record<string, Upstream> = {};
    for (const [name, resolved] of this.#resolved) out[name] = resolved.upstream;
    return out;
  }

  #compute(ref: ServiceBackendRef, name: string): ResolvedUpstream {
    const upstream: Upstream = {
      name,
      service: { namespace: ref.namespace, name: ref.service, port: ref.port },
      externalName: false,
      endpoints: [],
    };
    const serviceId = (): string => objectKey(ref.namespace, ref.service);
    const service = this.#services.get(ref.namespace, ref.service);
    if (service === undefined) {
      return {
        upstream,
        problem: { code: 'SERVICE_NOT_FOUND', message: `Service ${serviceId()} not found` },
      };
    }
    if (service.spec?.type === 'ExternalName') return this.#externalName(upstream, service, ref);

    const port = findServicePort(service, ref.port);
    if (port === undefined) {
      return {
        upstream,
        problem: {
          code: 'SERVICE_PORT_NOT_FOUND',
          message: `Service ${serviceId()} has no port matching "${ref.port}" (by port, targetPort or name)`,
        },
      };
    }
    upstream.endpoints = endpointsFromSlices(this.#slices.get(ref.namespace, ref.service) ?? [], port);
    if (upstream.endpoints.length === 0) {
      return {
        upstream,
        problem: {
          code: 'ENDPOINTS_NONE',
          message: `Service ${serviceId()} port ${ref.port} has no ready endpoints`,
        },
      };
    }
    return { upstream, problem: null };
  }

  #externalName(upstream: Upstream, service: Service, ref: ServiceBackendRef): ResolvedUpstream {
    const serviceId = objectKey(ref.namespace, ref.service);
    upstream.externalName = true;
    if (this.#disableExternalName) {
      return {
        upstream,
        problem: {
          code: 'EXTERNAL_NAME_DISABLED',
          message: `Service ${serviceId} is of type ExternalName, which --disable-svc-external-name refuses`,
        },
      };
    }
    const externalName = service.spec?.externalName ?? '';
    const ipVersion = isIP(externalName);
    const invalid =
      externalName === 'localhost' ||
      (ipVersion !== 0 && isLoopback(externalName)) ||
      (ipVersion === 0 && !isDNS1123Subdomain(externalName.replace(/\.$/, '')));
    if (invalid) {
      return {
        upstream,
        problem: {
          code: 'EXTERNAL_NAME_INVALID',
          message: `Service ${serviceId} has externalName "${externalName}", which is not a usable remote host`,
        },
      };
    }
    const port = findServicePort(service, ref.port);
    let portNumber: number;
    if (port !== undefined) {
      portNumber =
        typeof port.targetPort === 'number' && port.targetPort > 0 ? port.targetPort : (port.port ?? 0);
    } else {
      // ExternalName Services often declare no ports: the backend's port number is the remote port.
      portNumber = /^\d+$/.test(ref.port) ? Number(ref.port) : 0;
    }
    if (!(portNumber > 0 && portNumber < 65536)) {
      return {
        upstream,
        problem: {
          code: 'SERVICE_PORT_NOT_FOUND',
          message: `ExternalName Service ${serviceId} has no port matching "${ref.port}"`,
        },
      };
    }
    upstream.endpoints = [{ address: externalName, port: portNumber }];
    return { upstream, problem: null };
  }
}

function isLoopback(ip: string): boolean {
  return ip.startsWith('127.') || ip === '::1' || ip === '0:0:0:0:0:0:0:1';
}

/**
 * ingress-nginx's port resolution per slice: an unnamed Service port takes every TCP slice port; a
 * named one takes the slice port of the same name; failing that, an integer targetPort is used.
 * Endpoints whose `ready` condition is false are skipped; duplicates (ip:port) are dropped.
 */
export function endpointsFromSlices(slices: readonly EndpointSlice[], servicePort: ServicePort): Endpoint[] {
  const protocol = servicePort.protocol ?? 'TCP';
  const targetPortNumber = typeof servicePort.targetPort === 'number' ? servicePort.targetPort : null;
  const seen = new Set<string>();
  const out: Endpoint[] = [];
  for (const slice of slices) {
    const ports: number[] = [];
    const slicePorts = slice.ports ?? [];
    if (slicePorts.length === 0) {
      if (targetPortNumber !== null) ports.push(targetPortNumber);
    } else {
      let matchedName = false;
      slicePorts.forEach((slicePort, index) => {
        if ((slicePort.protocol ?? 'TCP') !== protocol) return;
        let port = 0;
        if (!servicePort.name || servicePort.name === slicePort.name) {
          port = slicePort.port ?? 0;
          matchedName = true;
        }
        if (index === slicePorts.length - 1 && !matchedName && targetPortNumber !== null)
          port = targetPortNumber;
        if (port > 0) ports.push(port);
      });
    }
    for (const port of ports) {
      for (const endpoint of slice.endpoints ?? []) {
        if (endpoint.conditions?.ready === false) continue;
        for (const address of endpoint.addresses ?? []) {
          const key = `${address}|${port}`;
          if (seen.has(key)) continue;
          seen.add(key);
          out.push({ address, port });
        }
      }
    }
  }
  return out.sort(compareEndpoints);
}
