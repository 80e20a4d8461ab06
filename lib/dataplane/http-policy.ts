// The global ConfigMap's request/response settings compiled once per runtime: who
// the client is (real IP, trusted proxies), which X-Forwarded-* to believe, the headers added upstream
// and downstream, the Server header, the client and upstream connection settings. Requests only read
// the result: a CIDR check is one native BlockList lookup, header tables are plain lookups.

import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { DEFAULT_GLOBAL_CONFIG, type GlobalConfig } from '../model/configmap/global-config.ts';
import { type Compression, compileCompression } from './responses/compression.ts';

/** What ingress-ts calls itself in `Server` when server-tokens is on (NGINX would say nginx/<version>). */
export const SERVER_TOKEN = 'ingress-ts';

/**
 * Response headers never passed on: hop-by-hop, and what NGINX's proxy module hides by default
 * (proxy_hide_header: the upstream's Date, replaced by the proxy's own, X-Pad and the X-Accel-*
 * instructions meant for NGINX itself). The upstream's Server is dropped unless
 * allow-backend-server-header passes it.
 */
const RESPONSE_DROP: readonly string[] = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'date',
  'x-pad',
  'x-accel-redirect',
  'x-accel-expires',
  'x-accel-limit-rate',
  'x-accel-buffering',
  'x-accel-charset',
];

export interface HttpPolicy {
  /** the client address from the socket peer and the forwarded-for header (real_ip_recursive) */
  readonly clientAddress: ((peer: string, chain: string | undefined) => string) | null;
  /** use-proxy-protocol: the header every connection must start with, and how long it may take; null: off */
  readonly proxyProtocol: { readonly headerTimeoutMs: number } | null;
  /** proxy-real-ip-cidr: whether a socket peer may name the client (in a PROXY header or forwarded-for) */
  readonly trustedPeer: (address: string) => boolean;
  /** forwarded-for-header, lower-case: the header `clientAddress` reads */
  readonly realIpHeader: string;
  /** use-forwarded-headers: X-Forwarded-Proto/-Host/-Port of the request are believed */
  readonly useForwardedHeaders: boolean;
  /** compute-full-forwarded-for: X-Forwarded-For = incoming X-Forwarded-For + socket peer */
  readonly computeFullForwardedFor: boolean;
  readonly generateRequestId: boolean;
  /** proxy-set-headers as a flat [name, value, ...] list for every upstream request */
  readonly upstreamHeaders: readonly string[];
  /** lower-case names of upstreamHeaders: the client's headers of those names are replaced */
  readonly upstreamHeaderNames: Readonly<Record<string, true>> | null;
  /**
   * an HTTPRoute's RequestHeaderModifier `add` as a flat [lower-case name, value, ...] list: the
   * client's lines of the name (also in upstreamHeaderNames) joined with `,`, then `,value`
   */
  readonly upstreamHeaderAppends?: readonly string[] | null;
  /** response headers of the upstream never passed on (hop-by-hop, Server, hide-headers, and the
   * add-headers names, which replace the upstream's); a Set: every name of every response is looked
   * up in it, and a dictionary object read with many keys is a megamorphic read each time */
  readonly responseDrop: ReadonlySet<string>;
  /** add-headers and Server (server-tokens) as a flat list, for every response to the client */
  readonly responseHeaders: readonly string[];
  /**
   * allow-backend-server-header with server-tokens: the upstream's Server is passed on, and this
   * one is sent when it has none (NGINX adds its own only then); null: the upstream's is dropped
   */
  readonly serverFallback: string | null;
  /** proxy-add-original-uri-header: X-Original-URI (the request URI as the client sent it) upstream */
  readonly originalUriHeader: boolean;
  /** default-type: the Content-Type of the proxy's own text answers that name none */
  readonly defaultType: string;
  /** a snippet's add_header without `always`: appended only to a status of ADD_HEADER_STATUS */
  readonly statusHeaders: readonly string[];
  /** a snippet's more_clear_headers with a trailing `*`: upstream headers starting so (lower-case) are dropped */
  readonly responseDropPrefixes: readonly string[] | null;
  /** client-body-timeout in ms: the longest a request body may stay idle (then 408) */
  readonly clientBodyTimeoutMs: number;
  /** use-gzip / enable-brotli and their keys (responses/compression.ts); null: both off */
  readonly compression: Compression | null;
}

/** NGINX set_real_ip_from: whether an address is in one of the CIDRs. */
export function createTrustedPeer(cidrs: readonly string[]): (address: string) => boolean {
  const trusted = new BlockList();
  for (const cidr of cidrs) {
    const slash = cidr.indexOf('/');
    const address = cidr.slice(0, slash);
    const prefix = Number(cidr.slice(slash + 1));
    if (isIPv4(address)) trusted.addSubnet(address, prefix, 'ipv4');
    else if (isIPv6(address)) trusted.addSubnet(address, prefix, 'ipv6');
  }
  return (address) => trusted.check(address, address.includes(':') ? 'ipv6' : 'ipv4');
}

/** Real-IP: the rightmost address of the chain that is not a trusted proxy (NGINX real_ip_recursive on). */
export function createClientAddress(
  cidrs: readonly string[],
  isTrusted: (address: string) => boolean = createTrustedPeer(cidrs),
): (peer: string, chain: string | undefined) => string {
  return (peer, chain) => {
    if (chain === undefined || chain === '' || !isTrusted(peer)) return peer;
    let address = peer;
    let end = chain.length;
    while (end > 0) {
      const comma = chain.lastIndexOf(',', end - 1);
      const entry = chain.slice(comma + 1, end).trim();
      end = comma === -1 ? 0 : comma;
      if (entry === '') continue;
      // an entry that is not an address ends the walk (NGINX keeps what it found so far)
      if (!isIPv4(entry) && !isIPv6(entry)) break;
      address = entry;
      if (!isTrusted(entry)) break;
    }
    return address;
  };
}

export function compileHttpPolicy(config: GlobalConfig): HttpPolicy {
  const { forwarding, headers } = config;
  // nginx.tmpl: with use-proxy-protocol the real_ip_header is proxy_protocol (the listener's work, see
  // listening/proxy-front.ts), so enable-real-ip alone no longer reads forwarded-for;
  // use-forwarded-headers still does, past a trusted PROXY address
  const realIp = forwarding.useForwardedHeaders || (forwarding.enableRealIp && !forwarding.useProxyProtocol);
  const trustedPeer = createTrustedPeer(forwarding.realIpCidrs);
  const upstreamHeaders: string[] = [];
  let upstreamHeaderNames: Record<string, true> | null = null;
  for (const [name, value] of headers.proxySetHeaders.headers) {
    upstreamHeaders.push(name, value);
    upstreamHeaderNames ??= Object.create(null) as Record<string, true>;
    upstreamHeaderNames[name.toLowerCase()] = true;
  }
  // the client's own X-Original-URI must not reach the upstream as if the proxy had set it
  if (headers.proxyAddOriginalUriHeader) {
    upstreamHeaderNames ??= Object.create(null) as Record<string, true>;
    upstreamHeaderNames['x-original-uri'] = true;
  }
  const responseDrop = new Set<string>(RESPONSE_DROP);
  for (const name of headers.hideHeaders) responseDrop.add(name);
  const responseHeaders: string[] = [];
  for (const [name, value] of headers.addHeaders.headers) {
    responseDrop.add(name.toLowerCase());
    responseHeaders.push(name, value);
  }
  // ingress-nginx: `proxy_pass_header Server` only with allow-backend-server-header, and with
  // server-tokens off `more_clear_headers Server` removes every Server, the upstream's too
  const passServer = headers.allowBackendServerHeader && headers.serverTokens;
  if (!passServer) responseDrop.add('server');
  if (headers.serverTokens && !passServer) responseHeaders.push('server', SERVER_TOKEN);
  return {
    clientAddress: realIp ? createClientAddress(forwarding.realIpCidrs, trustedPeer) : null,
    proxyProtocol: forwarding.useProxyProtocol
      ? { headerTimeoutMs: forwarding.proxyProtocolHeaderTimeoutMs }
      : null,
    trustedPeer,
    realIpHeader: forwarding.forwardedForHeader,
    useForwardedHeaders: forwarding.useForwardedHeaders,
    computeFullForwardedFor: forwarding.computeFullForwardedFor,
    generateRequestId: headers.generateRequestId,
    upstreamHeaders,
    upstreamHeaderNames,
    responseDrop,
    responseHeaders,
    serverFallback: passServer ? SERVER_TOKEN : null,
    originalUriHeader: headers.proxyAddOriginalUriHeader,
    defaultType: headers.defaultType,
    statusHeaders: [],
    responseDropPrefixes: null,
    clientBodyTimeoutMs: config.client.bodyTimeout * 1000,
    compression: compileCompression(config.compression),
  };
}

/** NGINX's add_header statuses (ngx_http_headers_module) for a header without `always`. */
export const ADD_HEADER_STATUS: readonly boolean[] = (() => {
  const table: boolean[] = [];
  for (const status of [200, 201, 204, 206, 301, 302, 303, 304, 307, 308]) table[status] = true;
  return table;
})();

/** The default policy (no runtime yet). */
export const DEFAULT_HTTP_POLICY: HttpPolicy = compileHttpPolicy(DEFAULT_GLOBAL_CONFIG);
