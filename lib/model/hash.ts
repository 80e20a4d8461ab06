// Content hashes of a model: `hash` changes with anything, `routesHash` with anything but the
// endpoint lists, so "only endpoints changed" is one string comparison. `contentHashes` names each
// server and each upstream (without its endpoints) by its content alone, so that a compile can keep
// what it made for a server whose hash did not change (lib/dataplane/routing/runtime-hosts.ts).
//
// A plain JSON.stringify of a 10,000-Ingress model is ~30 MB (every route repeats its Ingress's
// annotation objects) and costs ~300 ms. Instead each record is written as one compact line whose
// digest is the record's content hash and stands for it in the model's hashes, and objects that many
// records share (annotations, Ingress refs) are serialised once and then named by a digest of their
// content (not by a number in order of appearance, so that one server's lines do not depend on the
// servers before it). A build's caches keep the digests: a record unchanged since the last build is
// compared, not written again (FingerprintCache). test/model/hash.test.ts changes every leaf of a rich model and requires the hash to
// change, so a field added to a model type but not here fails the tests.

import { createHash, hash as digestOf } from 'node:crypto';
import { sameGatewayMatch } from './gateway/route-match.ts';
import type {
  Backend,
  ContentHashes,
  DefaultRoute,
  Endpoint,
  Model,
  ObjectRef,
  Server,
  ServerTLS,
  Upstream,
} from './types.ts';

type ModelBody = Omit<Model, 'hash' | 'routesHash' | 'contentHashes'>;

/** A record written before: the record and its line's digest. */
interface Printed<T> {
  value: T;
  digest: string;
}

/**
 * What one build's fingerprint keeps for the next (BuildCaches.fingerprints): the digest of each
 * shared object (annotation groups) by identity, and each server's and upstream's line with the
 * record it was written from: a record whose line would read the same (compared field by field, as
 * the line writes them) takes the last line and digest. The build never changes an object once
 * made, which is what makes identity stand for content.
 */
export class FingerprintCache {
  readonly ids = new WeakMap<object, string>();
  servers = new Map<string, Printed<Server>>();
  upstreams = new Map<string, Printed<Upstream>>();
  /** an upstream's endpoints as the endpoints fingerprint writes them, by endpoint list */
  readonly endpoints = new WeakMap<readonly Endpoint[], string>();
}

const sameRef = (a: ObjectRef | null, b: ObjectRef | null): boolean =>
  a === b ||
  (a !== null && b !== null && a.namespace === b.namespace && a.name === b.name && a.kind === b.kind);
const sameBackend = (a: Backend, b: Backend): boolean => {
  if (a === b) return true;
  if (a.type === 'weighted' && b.type === 'weighted') {
    const [x, y] = [a.backends, b.backends];
    return (
      x.length === y.length && x.every((e, i) => e.upstream === y[i]?.upstream && e.weight === y[i]?.weight)
    );
  }
  return backendKey(a) === backendKey(b);
};
/** A backend as one string: `default`, `upstream:<name>`, `weighted:<upstream or ->*<weight>,...`. */
export function backendKey(backend: Backend): string {
  if (backend.type === 'default') return backend.type;
  if (backend.type === 'weighted') {
    return `${backend.type}:${backend.backends.map((b) => `${b.upstream ?? '-'}*${b.weight}`).join(',')}`;
  }
  return `${backend.type}:${backend.upstream}`;
}
/** Values a line writes as JSON (canaries, hash-by, affinity): equal objects or equal JSON. */
const sameJson = (a: object | null, b: object | null): boolean =>
  a === b || (a !== null && b !== null && JSON.stringify(a) === JSON.stringify(b));

/** A short content digest: names a record by what it holds. */
const digest = (text: string): string => digestOf('sha1', text, 'base64');

/** Streams records into a sha256 in 64 KiB chunks; shared objects become `#n`, defined on first use. */
class Fingerprint {
  readonly #hash = createHash('sha256');
  readonly #ids: WeakMap<object, string>;
  readonly #byContent = new Map<string, string>();
  readonly #kept: FingerprintCache | undefined;
  readonly #servers = new Map<string, Printed<Server>>();
  readonly #upstreams = new Map<string, Printed<Upstream>>();
  #buffer = '';

  constructor(kept?: FingerprintCache) {
    this.#kept = kept;
    this.#ids = kept?.ids ?? new WeakMap();
  }

  /** What the next fingerprint may reuse: the records written by this one. */
  keep(): void {
    if (this.#kept === undefined) return;
    this.#kept.servers = this.#servers;
    this.#kept.upstreams = this.#upstreams;
  }

  /** Writes a record's digest; returns it, the last fingerprint's when the line reads the same. */
  #print<T>(
    kept: ReadonlyMap<string, Printed<T>> | undefined,
    next: Map<string, Printed<T>>,
    key: string,
    value: T,
    same: (last: T, value: T) => boolean,
    write: (value: T) => string,
  ): string {
    const last = kept?.get(key);
    let printed: Printed<T>;
    if (last !== undefined && same(last.value, value)) {
      printed = last.value === value ? last : { value, digest: last.digest };
    } else {
      printed = { value, digest: digest(write(value)) };
    }
    if (this.#kept !== undefined) next.set(key, printed);
    // the record's digest stands for its line in the model's hash: a tenth of the bytes to hash
    this.line(printed.digest);
    return printed.digest;
  }

  line(text: string): void {
    this.#buffer += `${text}\n`;
    if (this.#buffer.length > 65536) {
      this.#hash.update(this.#buffer);
      this.#buffer = '';
    }
  }

  digest(): string {
    return this.#hash.update(this.#buffer).digest('hex');
  }

  /**
   * `#<digest>` for an object many records share (annotation groups): serialised once per object.
   * Ids follow content, not identity, so equal models print alike however their objects happen to
   * be shared; the digest stands for the content, so it is not written out.
   */
  shared(value: object | null): string {
    if (value === null) return '-';
    let id = this.#ids.get(value);
    if (id === undefined) {
      const json = JSON.stringify(value);
      id = this.#byContent.get(json);
      if (id === undefined) {
        id = `#${digest(json)}`;
        this.#byContent.set(json, id);
      }
      this.#ids.set(value, id);
    }
    return id;
  }

  /** `ns/name` of an Ingress; `Kind:ns/name` of a Gateway API object (an HTTPRoute may share an Ingress's name) */
  ref(ref: ObjectRef | null): string {
    if (ref === null) return '-';
    return ref.kind === undefined
      ? `${ref.namespace}/${ref.name}`
      : `${ref.kind}:${ref.namespace}/${ref.name}`;
  }

  backend(backend: Backend): string {
    return backendKey(backend);
  }

  tls(tls: ServerTLS | null): string {
    return tls === null
      ? '-'
      : `${tls.certificate ?? 'default'}@${this.ref(tls.ingress)}${tls.gatewayOnly === true ? '+gw' : ''}`;
  }

  defaultRoute(route: DefaultRoute): string {
    return `${this.ref(route.ingress)}\t${this.backend(route.backend)}\t${this.shared(route.annotations)}\t${route.canary === null ? '' : JSON.stringify(route.canary)}`;
  }

  /** Writes the server's lines; returns their digest (the server's content hash). */
  server(server: Server, key: string = server.hostname): string {
    return this.#print(
      this.#kept?.servers,
      this.#servers,
      key,
      server,
      (a, b) => this.#sameServerLine(a, b),
      (s) => this.#serverText(s),
    );
  }

  /** Whether #serverText writes the same for both: every field it writes, compared as it writes it
   * (hash.test.ts changes each leaf after a first fingerprint and requires the hash to change). */
  #sameServerLine(a: Server, b: Server): boolean {
    if (
      a.hostname !== b.hostname ||
      a.regex !== b.regex ||
      a.routes.length !== b.routes.length ||
      !sameRef(a.ingress, b.ingress) ||
      !(
        a.tls === b.tls ||
        (a.tls !== null &&
          b.tls !== null &&
          a.tls.certificate === b.tls.certificate &&
          a.tls.gatewayOnly === b.tls.gatewayOnly &&
          sameRef(a.tls.ingress, b.tls.ingress))
      ) ||
      !this.#sameShared(a.annotations, b.annotations) ||
      !sameRef(a.defaultRoute.ingress, b.defaultRoute.ingress) ||
      !sameBackend(a.defaultRoute.backend, b.defaultRoute.backend) ||
      !this.#sameShared(a.defaultRoute.annotations, b.defaultRoute.annotations) ||
      !sameJson(a.defaultRoute.canary, b.defaultRoute.canary) ||
      !(a.clientAuth === b.clientAuth || clientAuthKey(a.clientAuth) === clientAuthKey(b.clientAuth)) ||
      !(a.passthrough === b.passthrough || passthroughKey(a.passthrough) === passthroughKey(b.passthrough))
    ) {
      return false;
    }
    for (let i = 0; i < a.routes.length; i++) {
      const x = a.routes[i] as Server['routes'][number];
      const y = b.routes[i] as Server['routes'][number];
      if (
        x !== y &&
        (x.path !== y.path ||
          x.pathType !== y.pathType ||
          x.pathTypeAsWritten !== y.pathTypeAsWritten ||
          x.setsAffinityCookie !== y.setsAffinityCookie ||
          !sameRef(x.ingress, y.ingress) ||
          !sameBackend(x.backend, y.backend) ||
          !this.#sameShared(x.annotations, y.annotations) ||
          !sameJson(x.canary, y.canary) ||
          !sameGatewayMatch(x.gateway, y.gateway))
      ) {
        return false;
      }
    }
    return true;
  }

  #sameShared(a: object | null, b: object | null): boolean {
    return a === b || this.shared(a) === this.shared(b);
  }

  #serverText(server: Server): string {
    let text = `S\t${server.hostname}\t${this.ref(server.ingress)}\t${this.tls(server.tls)}\t${server.regex}\t${this.shared(
      server.annotations,
    )}\t${this.defaultRoute(server.defaultRoute)}\t${clientAuthKey(server.clientAuth)}\t${passthroughKey(server.passthrough)}`;
    for (const route of server.routes) {
      text += `\nR\t${JSON.stringify(route.path)}\t${route.pathType}\t${route.pathTypeAsWritten}\t${this.ref(route.ingress)}\t${this.backend(route.backend)}\t${this.shared(route.annotations)}\t${route.canary === null ? '' : JSON.stringify(route.canary)}\t${route.setsAffinityCookie}`;
      // an HTTPRoute rule's conditions, protocols, filters and mirrors (absent: an Ingress path)
      if (route.gateway !== undefined) text += `\t${JSON.stringify(route.gateway)}`;
    }
    return text;
  }

  /** Writes the upstream's line (all but its endpoints); returns its digest. */
  upstream(upstream: Upstream): string {
    return this.#print(
      this.#kept?.upstreams,
      this.#upstreams,
      upstream.name,
      upstream,
      sameUpstreamLine,
      (u) => this.#upstreamText(u),
    );
  }

  #upstreamText(upstream: Upstream): string {
    const { service } = upstream;
    const text = `U\t${upstream.name}\t${service.namespace}/${service.name}:${service.port}\t${upstream.externalName}\t${upstream.loadBalance}\t${upstream.hashBy === null ? '' : JSON.stringify(upstream.hashBy)}\t${upstream.affinity === null ? '' : JSON.stringify(upstream.affinity)}`;
    return text;
  }
}

/** The model's hashes (`hash`, `routesHash`) and the content hash of each server and upstream. */
export function modelFingerprints(
  body: ModelBody,
  kept?: FingerprintCache,
): {
  hash: string;
  routesHash: string;
  contentHashes: ContentHashes;
} {
  const print = new Fingerprint(kept);
  const servers = body.servers.map((server) => print.server(server));
  print.line('catch-all');
  // a key no host can have ('_' is not a valid host name either, but a hand-made model may hold it)
  const catchAll = print.server(body.catchAll, '\u0000catch-all');
  // by name: a built model's record already is (then this sort is one pass), one made by hand may not be
  const upstreams = Object.values(body.upstreams).sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  const upstreamHashes: Record<string, string> = {};
  let upstreamLines = '';
  for (const upstream of upstreams) {
    const hash = print.upstream(upstream);
    upstreamHashes[upstream.name] = hash;
    upstreamLines += `${hash}\n`;
  }
  for (const certificate of Object.values(body.certificates)) {
    print.line(
      `C\t${certificate.id}\t${certificate.sha256}\t${certificate.dnsNames.join(',')}\t${certificate.notAfter}`,
    );
  }
  print.line(`defaults\t${body.defaultCertificate ?? '-'}\t${body.defaultBackend ?? '-'}`);
  print.line(`config\t${JSON.stringify(body.config)}`);
  const streams = [...(body.streams?.tcp ?? []), ...(body.streams?.udp ?? [])];
  for (const { endpoints: _endpoints, ...stream } of streams) print.line(`L4\t${JSON.stringify(stream)}`);
  const routesHash = print.digest();

  print.keep();
  const endpoints = new Fingerprint();
  for (const upstream of upstreams) {
    let written = kept?.endpoints.get(upstream.endpoints);
    if (written === undefined) {
      written = '';
      for (const endpoint of upstream.endpoints) written += `\t${endpoint.address}|${endpoint.port}`;
      kept?.endpoints.set(upstream.endpoints, written);
    }
    endpoints.line(upstream.name + written);
  }
  for (const stream of streams) {
    let line = `${stream.protocol}:${stream.port}`;
    for (const endpoint of stream.endpoints) line += `\t${endpoint.address}|${endpoint.port}`;
    endpoints.line(line);
  }
  const endpointsHash = endpoints.digest();
  const all = new Fingerprint();
  all.line(routesHash);
  all.line(endpointsHash);
  return {
    hash: all.digest(),
    routesHash,
    contentHashes: {
      servers,
      catchAll,
      upstreams: upstreamHashes,
      allUpstreams: digest(upstreamLines),
      endpoints: endpointsHash,
    },
  };
}

export function modelHashes(body: ModelBody): { hash: string; routesHash: string } {
  const { hash, routesHash } = modelFingerprints(body);
  return { hash, routesHash };
}

/** Whether #upstreamText writes the same for both (all but the endpoints). */
function sameUpstreamLine(a: Upstream, b: Upstream): boolean {
  return (
    a.name === b.name &&
    a.service.namespace === b.service.namespace &&
    a.service.name === b.service.name &&
    a.service.port === b.service.port &&
    a.externalName === b.externalName &&
    a.loadBalance === b.loadBalance &&
    sameJson(a.hashBy, b.hashBy) &&
    sameJson(a.affinity, b.affinity)
  );
}

function passthroughKey(passthrough: Server['passthrough']): string {
  if (passthrough === null) return '';
  const { ingress, backendIngress, backend } = passthrough;
  const ref = (r: ObjectRef | null) => (r === null ? '-' : `${r.namespace}/${r.name}`);
  const to = backend.type === 'default' ? 'default' : `upstream:${backend.upstream}`;
  return `passthrough@${ref(ingress)}>${ref(backendIngress)}>${to}`;
}

/** A host's client-auth settings; the CA bundle is named by its sha256. */
function clientAuthKey(auth: Server['clientAuth']): string {
  if (auth === null) return '';
  const { caPem: _pem, ...rest } = auth;
  return JSON.stringify(rest);
}
