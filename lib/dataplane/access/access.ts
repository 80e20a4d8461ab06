// The access phase of a route, compiled once per runtime, in NGINX's order:
// preaccess (limit-connections, limit-rpm, limit-rps: limit-conn-status-code / limit-req-status-code,
// 503 by default), then access (denylist before allowlist: NGINX's `deny …; allow …; deny all;`,
// 403). The CIDR lists are native `net.BlockList`s (IPv4, IPv6 and IPv4-mapped peers); a request
// does one lookup per list and, for rate limits, one lookup per zone in the zone's shared table.

import { BlockList } from 'node:net';
import type { LocationAnnotations, ObjectRef } from '../../model/index.ts';
import { ConnectionZone, RequestZone, takeRequest, type Zone } from './rate-limit.ts';
import { type ZoneMemory, zoneKeysOf } from './zone-memory.ts';

/**
 * A CIDR list split by family: a BlockList matches IPv4 addresses against IPv6 rules through their
 * mapped form (127.0.0.1 is in ::/64), which NGINX never does.
 */
export interface CidrSet {
  v4: BlockList | null;
  v6: BlockList | null;
}

export interface RateLimits {
  /** limit-allowlist: addresses never limited, or null */
  exempt: CidrSet | null;
  connections: ConnectionZone | null;
  rpm: RequestZone | null;
  rps: RequestZone | null;
  reqStatus: number;
  connStatus: number;
}

export interface AccessPolicy {
  /** denylist-source-range (else the ConfigMap's), or null */
  deny: CidrSet | null;
  /** allowlist-source-range (else the ConfigMap's whitelist-source-range), or null: everyone */
  allow: CidrSet | null;
  limits: RateLimits | null;
}

/** `admit` let the request in and it holds a connection slot: call `leave` when its response ends. */
export const ADMITTED_WITH_SLOT = 1;
/** with `satisfy any`: the allowlist let the client in, authentication is skipped (a flag, with ADMITTED_WITH_SLOT) */
export const ALLOWLISTED = 2;

/**
 * An IPv4-mapped IPv6 address (a dual-stack listener's IPv4 peer, `::ffff:10.1.2.3`) as the IPv4
 * address it is: NGINX matches such peers against IPv4 rules only, and they share one rate-limit state.
 */
export function unmapped(address: string): string {
  return address.length > 7 && address.startsWith('::ffff:') && address.includes('.')
    ? address.slice(7)
    : address;
}

/**
 * The client address of a connection as NGINX reports it ($remote_addr): an IPv4 peer of a
 * dual-stack listener as its IPv4 address. Every reader of the peer (X-Forwarded-For, X-Real-IP, the
 * access log, allow/deny lists, rate-limit keys, auth and hash variables) takes it from here, so none
 * sees `::ffff:10.1.2.3` while another sees `10.1.2.3`.
 */
export function peerOf(socket: ClientSocket): string {
  const proxied = socket[PROXY_CLIENT];
  if (proxied !== undefined) return proxied;
  const address = socket.remoteAddress;
  return address === undefined ? '' : unmapped(address);
}

/**
 * Set on a connection whose PROXY header (use-proxy-protocol) named a client from a trusted peer:
 * that client's address, unmapped. peerOf returns it, so every reader above sees the balancer's
 * client as the connection's peer ($remote_addr once NGINX's real_ip_header proxy_protocol ran).
 */
export const PROXY_CLIENT: unique symbol = Symbol('PROXY protocol client');
/** Set with a PROXY header's addresses: the port the client connected to ($proxy_protocol_server_port). */
export const PROXY_SERVER_PORT: unique symbol = Symbol('PROXY protocol server port');

/** A socket as the readers of its peer see it (net.Socket, TLSSocket, an HTTP/2 session's socket proxy). */
export interface ClientSocket {
  remoteAddress?: string | undefined;
  [PROXY_CLIENT]?: string;
  [PROXY_SERVER_PORT]?: number;
}

/** The port a PROXY header says the client connected to; undefined without one (the listener's port stands). */
export function proxiedServerPort(socket: ClientSocket): number | undefined {
  return socket[PROXY_SERVER_PORT];
}

/** Whether `list` contains `address` (unmapped); an address BlockList cannot parse is in no list. */
export function listed(set: CidrSet, address: string): boolean {
  const v6 = address.includes(':');
  const list = v6 ? set.v6 : set.v4;
  if (list === null) return false;
  try {
    return list.check(address, v6 ? 'ipv6' : 'ipv4');
  } catch {
    return false;
  }
}

/**
 * The access phase for one request from `address`: 0 (go on), ADMITTED_WITH_SLOT (go on, then
 * `leave`), or the status to answer. `now`: zoneNow() ms (the clock every thread agrees on).
 *
 * `satisfyAny` (a route with authentication and `satisfy any`): the lists never answer 403, as NGINX
 * then asks the next access module; a client the allowlist names (and the denylist does not) comes
 * back with the ALLOWLISTED flag, so authentication is skipped. Without an allowlist, or for a client
 * the lists reject, authentication decides (its denial is the answer: 401, or 403).
 */
export function admit(policy: AccessPolicy, peer: string, now: number, satisfyAny = false): number {
  const address = unmapped(peer);
  const limits = policy.limits;
  let slot = false;
  if (limits !== null && (limits.exempt === null || !listed(limits.exempt, address))) {
    const { connections, rpm, rps } = limits;
    if (connections !== null) {
      if (!connections.acquire(address)) return limits.connStatus;
      slot = true;
    }
    if ((rpm !== null || rps !== null) && !takeRequest(rpm, rps, address, now)) {
      if (slot) connections?.release(address);
      return limits.reqStatus;
    }
  }
  // a client the access lists reject was still counted by the rate limits (preaccess comes first)
  const denied =
    (policy.deny !== null && listed(policy.deny, address)) ||
    (policy.allow !== null && !listed(policy.allow, address));
  if (satisfyAny)
    return (slot ? ADMITTED_WITH_SLOT : 0) | (denied || policy.allow === null ? 0 : ALLOWLISTED);
  if (denied) {
    if (slot) limits?.connections?.release(address);
    return 403;
  }
  return slot ? ADMITTED_WITH_SLOT : 0;
}

/** The end of a request `admit` gave a slot. */
export function leave(policy: AccessPolicy, address: string): void {
  policy.limits?.connections?.release(unmapped(address));
}

/** The set of `address/prefix` entries, or null for none. */
export function cidrSetOf(cidrs: readonly string[]): CidrSet | null {
  if (cidrs.length === 0) return null;
  const set: CidrSet = { v4: null, v6: null };
  for (const cidr of cidrs) {
    const slash = cidr.indexOf('/');
    const address = cidr.slice(0, slash);
    const prefix = Number(cidr.slice(slash + 1));
    const v6 = address.includes(':');
    const list = (v6 ? set.v6 : set.v4) ?? new BlockList();
    list.addSubnet(address, prefix, v6 ? 'ipv6' : 'ipv4');
    if (v6) set.v6 = list;
    else set.v4 = list;
  }
  return set;
}

export interface AccessGlobals {
  allowlist: readonly string[];
  denylist: readonly string[];
  limitReqStatus: number;
  limitConnStatus: number;
}

/**
 * Compiles access policies for one runtime: BlockLists shared between equal lists, rate-limit zones
 * built over the buffers of `memory` (zone-memory.ts), and taken over from the previous runtime when
 * the Ingress's limits are unchanged (state survives a reconfiguration, as NGINX keeps its zones
 * across reloads).
 */
export class AccessCompiler {
  readonly zones = new Map<string, Zone>();
  readonly #previous: ReadonlyMap<string, Zone>;
  readonly #memory: ZoneMemory;
  readonly #globals: AccessGlobals;
  readonly #lists = new Map<string, CidrSet | null>();
  readonly #policies = new Map<string, AccessPolicy | null>();
  /** the zones (by key) each cached policy counts in */
  readonly #policyZones = new Map<string, Array<[string, Zone]>>();
  /** where the zones of the policies asked for go (the compile of one server), or null */
  #recording: Map<string, Zone> | null = null;

  constructor(globals: AccessGlobals, previous: ReadonlyMap<string, Zone> | undefined, memory: ZoneMemory) {
    this.#globals = globals;
    this.#previous = previous ?? new Map();
    this.#memory = memory;
  }

  #list(cidrs: readonly string[]): CidrSet | null {
    const key = cidrs.join(',');
    let list = this.#lists.get(key);
    if (list === undefined) {
      list = cidrSetOf(cidrs);
      this.#lists.set(key, list);
    }
    return list;
  }

  #zone<Z extends Zone>(
    key: string,
    create: (buffer: SharedArrayBuffer) => Z,
    same: (zone: Zone) => zone is Z,
    used: Array<[string, Zone]>,
  ): Z {
    let zone = this.zones.get(key);
    if (zone === undefined) {
      const reused = this.#previous.get(key);
      const buffer = this.#memory.bufferOf(key, reused?.table.buffer);
      zone = reused !== undefined && same(reused) && reused.table.buffer === buffer ? reused : create(buffer);
      this.zones.set(key, zone);
    }
    used.push([key, zone]);
    return zone as Z;
  }

  /** From now on, the zones of the policies asked for are also added to `into` (null: stop). */
  record(into: Map<string, Zone> | null): void {
    this.#recording = into;
  }

  /**
   * A compiled policy kept from the previous runtime counts in these zones: they stay in use. false
   * when a key is already taken by another zone (the kept policy would not share its counts).
   */
  adopt(zones: ReadonlyMap<string, Zone>): boolean {
    for (const [key, zone] of zones) {
      const current = this.zones.get(key);
      if (current !== undefined && current !== zone) return false;
    }
    for (const [key, zone] of zones) this.zones.set(key, zone);
    return true;
  }

  #recorded(cacheKey: string, policy: AccessPolicy | null): AccessPolicy | null {
    const recording = this.#recording;
    if (recording !== null)
      for (const [key, zone] of this.#policyZones.get(cacheKey) ?? []) recording.set(key, zone);
    return policy;
  }

  /** The policy of a route of `ingress` (null: a route no Ingress defines), or null when it has none. */
  policyOf(annotations: LocationAnnotations, ingress: ObjectRef | null): AccessPolicy | null {
    if (ingress === null) return null;
    const { accessControl, rateLimit } = annotations;
    const cacheKey = JSON.stringify([ingress.namespace, ingress.name, accessControl, rateLimit]);
    const cached = this.#policies.get(cacheKey);
    if (cached !== undefined) return this.#recorded(cacheKey, cached);
    const used: Array<[string, Zone]> = [];
    const deny = this.#list(accessControl.deny ?? this.#globals.denylist);
    const allow = this.#list(accessControl.allow ?? this.#globals.allowlist);
    const { rps, rpm, connections, burstMultiplier, allowlist } = rateLimit;
    let limits: RateLimits | null = null;
    if (rps > 0 || rpm > 0 || connections > 0) {
      const keys = zoneKeysOf(ingress, rateLimit);
      const requests = (key: string | null, limit: number, perMinute: boolean): RequestZone | null =>
        key === null
          ? null
          : this.#zone(
              key,
              (buffer) => new RequestZone(limit, limit * burstMultiplier, perMinute, buffer),
              (z): z is RequestZone => z instanceof RequestZone,
              used,
            );
      limits = {
        exempt: this.#list(allowlist),
        connections:
          keys.connections === null
            ? null
            : this.#zone(
                keys.connections,
                (buffer) => new ConnectionZone(connections, buffer),
                (z): z is ConnectionZone => z instanceof ConnectionZone,
                used,
              ),
        rpm: requests(keys.rpm, rpm, true),
        rps: requests(keys.rps, rps, false),
        reqStatus: this.#globals.limitReqStatus,
        connStatus: this.#globals.limitConnStatus,
      };
    }
    const policy = deny === null && allow === null && limits === null ? null : { deny, allow, limits };
    this.#policies.set(cacheKey, policy);
    this.#policyZones.set(cacheKey, used);
    return this.#recorded(cacheKey, policy);
  }
}
