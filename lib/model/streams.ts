// The L4 table: --tcp-services-configmap and --udp-services-configmap as ingress-nginx reads them
// (its controller's getStreamServices). Each entry `"<port>": "<namespace>/<service>:<port>[:PROXY][:PROXY]"`
// opens <port> on the controller and relays every TCP stream or UDP session to the ready endpoints
// of that Service port. The first PROXY decodes a PROXY protocol header from the client, the second
// sends one to the upstream (TCP only, as in ingress-nginx). An entry that cannot be served is left
// out with a diagnostic on its ConfigMap; the other entries are served.

import { endpointsFromSlices, isUsableExternalName, type UpstreamResolver } from './backends.ts';
import type { DiagnosticsCollector } from './diagnostics.ts';
import type { ConfigMap, Service, ServicePort } from './k8s.ts';
import type { Endpoint, ObjectRef } from './types.ts';

export type StreamProtocol = 'TCP' | 'UDP';

export interface StreamService {
  protocol: StreamProtocol;
  /** the port the controller listens on (the entry's key) */
  port: number;
  /** ingress-nginx's upstream name: `tcp-<namespace>-<service>-<port>` (`udp-` for UDP) */
  name: string;
  /** the Service and its port as the entry writes it (a number or a port name) */
  service: { namespace: string; name: string; port: string };
  /** the first PROXY: a PROXY protocol header is read from each client connection */
  decodeProxyProtocol: boolean;
  /** the second PROXY: a PROXY protocol (v1) header is sent to the upstream first */
  encodeProxyProtocol: boolean;
  /** the ready endpoints, sorted; never empty (an entry without any is left out) */
  endpoints: Endpoint[];
}

/** The ports opened for TCP and UDP services, each list sorted by port. */
export interface StreamTable {
  tcp: StreamService[];
  udp: StreamService[];
}

export const EMPTY_STREAM_TABLE: Readonly<StreamTable> = Object.freeze({ tcp: [], udp: [] });

export interface StreamInput {
  /** `namespace/name` of the ConfigMap per protocol (the flags), null when not given */
  configMaps: { TCP: string | null; UDP: string | null };
  /** ports the controller itself listens on (HTTP, HTTPS, status): never a stream's */
  reservedPorts: readonly number[];
  disableSvcExternalName: boolean;
  /** looks a ConfigMap up (and records that the model depends on it) */
  configMap: (namespace: string, name: string) => ConfigMap | undefined;
  resolver: Pick<UpstreamResolver, 'service' | 'slices'>;
  diagnostics: DiagnosticsCollector;
}

export interface StreamResult {
  table: StreamTable;
  /** `namespace/name` of the Services the entries name, so that their changes rebuild */
  services: string[];
}

interface ParsedEntry {
  port: number;
  namespace: string;
  name: string;
  servicePort: string;
  decode: boolean;
  encode: boolean;
}

const isPort = (n: number): boolean => Number.isInteger(n) && n > 0 && n <= 65535;

/**
 * One entry, or why it is invalid. The key is a port number as Go's Atoi reads it (leading zeros
 * allowed); the value is split on ':' as ingress-nginx splits it: parts after the fourth are ignored,
 * a third or fourth part other than PROXY (any case) is no flag.
 */
export function parseStreamEntry(
  key: string,
  value: string,
  protocol: StreamProtocol,
): ParsedEntry | { invalid: string } {
  const port = /^\d{1,5}$/.test(key.trim()) ? Number(key.trim()) : Number.NaN;
  if (!isPort(port)) return { invalid: `key ${JSON.stringify(key)} is not a port number (1-65535)` };
  const parts = String(value).trim().split(':');
  if (parts.length < 2) {
    return { invalid: `port ${port}: ${JSON.stringify(value)} is not <namespace>/<service>:<port>` };
  }
  const [ref = '', servicePort = ''] = parts;
  const slash = ref.indexOf('/');
  const namespace = ref.slice(0, slash);
  const name = ref.slice(slash + 1);
  if (slash <= 0 || name === '' || name.includes('/') || servicePort === '') {
    return { invalid: `port ${port}: ${JSON.stringify(value)} is not <namespace>/<service>:<port>` };
  }
  const proxy = (part: string | undefined) => protocol === 'TCP' && part?.toUpperCase() === 'PROXY';
  return {
    port,
    namespace,
    name,
    servicePort,
    decode: proxy(parts[2]),
    encode: parts.length === 4 && proxy(parts[3]),
  };
}

/** The Service port an entry names: by number (spec.ports[].port) or by name, of the entry's protocol. */
function servicePortOf(service: Service, wanted: string, protocol: StreamProtocol): ServicePort | undefined {
  const ports: unknown = service.spec?.ports;
  if (!Array.isArray(ports)) return undefined;
  const byNumber = /^\d+$/.test(wanted);
  for (const candidate of ports as Array<ServicePort | null>) {
    if (typeof candidate !== 'object' || candidate === null) continue;
    const matches = byNumber ? String(candidate.port) === String(Number(wanted)) : candidate.name === wanted;
    if (matches && (candidate.protocol ?? 'TCP') === protocol) return candidate;
  }
  return undefined;
}

/** The endpoints of an entry's Service port, or why there are none. */
function streamEndpoints(
  entry: ParsedEntry,
  protocol: StreamProtocol,
  input: StreamInput,
): Endpoint[] | { unusable: string } {
  const id = `${entry.namespace}/${entry.name}`;
  const service = input.resolver.service(entry.namespace, entry.name);
  if (service === undefined) return { unusable: `Service ${id} not found` };
  const port = servicePortOf(service, entry.servicePort, protocol);
  if (port === undefined) {
    return { unusable: `Service ${id} has no ${protocol} port ${JSON.stringify(entry.servicePort)}` };
  }
  if (service.spec?.type === 'ExternalName') {
    const externalName = String(service.spec.externalName ?? '');
    if (input.disableSvcExternalName) {
      return { unusable: `Service ${id} is of type ExternalName, which --disable-svc-external-name refuses` };
    }
    // ingress-nginx: the targetPort (Kubernetes defaults it to the port)
    const target = typeof port.targetPort === 'number' ? port.targetPort : port.port;
    if (!isUsableExternalName(externalName) || typeof target !== 'number' || !isPort(target)) {
      return { unusable: `ExternalName Service ${id} names no usable remote host and port` };
    }
    return [{ address: externalName, port: target }];
  }
  const endpoints = endpointsFromSlices(input.resolver.slices(entry.namespace, entry.name), port, protocol);
  if (endpoints.length === 0) {
    return {
      unusable: `Service ${id} ${protocol} port ${JSON.stringify(entry.servicePort)} has no ready endpoints`,
    };
  }
  return endpoints;
}

function splitRef(ref: string): ObjectRef {
  const slash = ref.indexOf('/');
  return { namespace: ref.slice(0, slash), name: ref.slice(slash + 1) };
}

/** One protocol's ConfigMap → its entries, sorted by port. */
function streamsOf(protocol: StreamProtocol, input: StreamInput, services: Set<string>): StreamService[] {
  const flag = input.configMaps[protocol];
  if (flag === null) return [];
  const ref = splitRef(flag);
  const configMap = input.configMap(ref.namespace, ref.name);
  if (configMap === undefined) {
    const flag = protocol === 'TCP' ? '--tcp-services-configmap' : '--udp-services-configmap';
    input.diagnostics.report(
      'ConfigMap',
      ref,
      'CONFIGMAP_NOT_FOUND',
      `${flag} ${ref.namespace}/${ref.name} does not exist; no ${protocol} service port is opened`,
    );
    return [];
  }
  const data: unknown = configMap.data;
  if (data === undefined || data === null || typeof data !== 'object') return [];
  const report = (code: Parameters<DiagnosticsCollector['report']>[2], message: string) =>
    input.diagnostics.report('ConfigMap', ref, code, `${protocol} services: ${message}`);
  const reserved = new Set(input.reservedPorts);
  const taken = new Map<number, string>();
  const out: StreamService[] = [];
  const record = data as Record<string, unknown>;
  for (const key of Object.keys(record).sort()) {
    const entry = parseStreamEntry(key, String(record[key] ?? ''), protocol);
    if ('invalid' in entry) {
      report('STREAM_ENTRY_INVALID', `${entry.invalid}; not opened`);
      continue;
    }
    if (reserved.has(entry.port)) {
      report(
        'STREAM_PORT_CONFLICT',
        `port ${entry.port} is one the controller listens on; not opened for it`,
      );
      continue;
    }
    const earlier = taken.get(entry.port);
    if (earlier !== undefined) {
      report(
        'STREAM_PORT_CONFLICT',
        `key ${JSON.stringify(key)} is port ${entry.port} again (key ${JSON.stringify(earlier)} has it); ignored`,
      );
      continue;
    }
    taken.set(entry.port, key);
    services.add(`${entry.namespace}/${entry.name}`);
    const endpoints = streamEndpoints(entry, protocol, input);
    if (!Array.isArray(endpoints)) {
      report('STREAM_SERVICE_UNUSABLE', `port ${entry.port}: ${endpoints.unusable}; not opened`);
      continue;
    }
    out.push({
      protocol,
      port: entry.port,
      name: `${protocol.toLowerCase()}-${entry.namespace}-${entry.name}-${entry.servicePort}`,
      service: { namespace: entry.namespace, name: entry.name, port: entry.servicePort },
      decodeProxyProtocol: entry.decode,
      encodeProxyProtocol: entry.encode,
      endpoints,
    });
  }
  return out.sort((a, b) => a.port - b.port);
}

/** Both ConfigMaps → the L4 table and the Services it depends on. */
export function buildStreams(input: StreamInput): StreamResult {
  const services = new Set<string>();
  const tcp = streamsOf('TCP', input, services);
  const udp = streamsOf('UDP', input, services);
  return { table: { tcp, udp }, services: [...services] };
}
