// ConfigMap keys of the TLS handshake itself: session resumption (the session cache, session tickets
// and their key), the key exchange (ECDH curves, DH parameters) and the refusal of handshakes for
// names no server has. ingress-nginx renders them into nginx.conf's http block (and the catch-all
// server for ssl-reject-handshake); here they reach the HTTPS listener's own TLS context.

import { createSecureContext } from 'node:tls';
import type { DiagnosticsCollector } from '../diagnostics.ts';
import type { Secret } from '../k8s.ts';
import type { GlobalConfig } from './global-config.ts';
import { bool, type KeyTable } from './key-parser.ts';
import { parseNginxTimeMs } from './values.ts';

/** The handshake settings of the HTTPS listener (GlobalConfig.sslHandshake). */
export interface SslHandshakeConfig {
  /** `ssl-session-cache`: TLS 1.2 session IDs are remembered and resumed */
  sessionCache: boolean;
  /** `ssl-session-cache-size` in bytes (NGINX's shared:SSL zone size) */
  sessionCacheSize: number;
  /** `ssl-session-timeout` in seconds: how long a session (cached or in a ticket) may be resumed */
  sessionTimeout: number;
  /** `ssl-session-tickets`: the server issues and accepts session tickets */
  sessionTickets: boolean;
  /**
   * `ssl-session-ticket-key`: the ticket key in Node's 48-byte layout (name, HMAC key, AES key),
   * base64; '' for keys the data plane generates (one set for all its threads). A credential: never
   * shown (redact.ts).
   */
  sessionTicketKey: string;
  /** `ssl-ecdh-curve`: OpenSSL's group list (`X25519:prime256v1`) or `auto` */
  ecdhCurve: string;
  /** `ssl-dh-param`: the Secret (`namespace/name`) holding dhparam.pem; '' for none */
  dhParamSecret: string;
  /** the PEM of that Secret's dhparam.pem once read and checked; '' for none (no DHE cipher) */
  dhParam: string;
  /** `ssl-reject-handshake`: a ClientHello naming no server (or none) is refused, no certificate sent */
  rejectHandshake: boolean;
}

/** ingress-nginx's defaults (config.go): cache on (10m, 10m), tickets off, curves auto, no DH, no refusal. */
export const DEFAULT_SSL_HANDSHAKE: Readonly<SslHandshakeConfig> = Object.freeze({
  sessionCache: true,
  sessionCacheSize: 10 * 1024 * 1024,
  sessionTimeout: 600,
  sessionTickets: false,
  sessionTicketKey: '',
  ecdhCurve: 'auto',
  dhParamSecret: '',
  dhParam: '',
  rejectHandshake: false,
});

/** NGINX's default ssl_session_timeout, in force when ingress-nginx renders no ssl_session_cache. */
export const NGINX_SESSION_TIMEOUT = 300;

const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, m: 1024 * 1024, g: 1024 * 1024 * 1024 };

/** NGINX's size syntax (`10m`, `512k`, bytes) in bytes, or null. */
export function parseNginxSize(value: string): number | null {
  const m = /^(\d+)([bkmg]?)$/i.exec(value);
  if (m === null) return null;
  const bytes = Number(m[1]) * (SIZE_UNITS[(m[2] ?? '').toLowerCase()] ?? 1);
  return Number.isSafeInteger(bytes) ? bytes : null;
}

/**
 * An NGINX ticket key file's bytes (what ingress-nginx writes to tickets.key from the base64 value)
 * in Node's layout. NGINX reads 48 bytes as name, AES-128 key, HMAC key and 80 bytes as name,
 * 32-byte HMAC key, AES-256 key; Node takes 48 bytes as name, HMAC key, AES-128 key. An 80-byte key
 * keeps its name and the first 16 bytes of each key: Node encrypts tickets with AES-128-CBC only.
 */
export function ticketKeyForNode(nginxKey: Uint8Array): Uint8Array | null {
  const at = (start: number, end: number) => nginxKey.subarray(start, end);
  if (nginxKey.length === 48) return concat([at(0, 16), at(32, 48), at(16, 32)]);
  if (nginxKey.length === 80) return concat([at(0, 16), at(16, 32), at(48, 64)]);
  return null;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(48);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** ECDH group names as OpenSSL spells them: letters, digits, `-`, `_`, joined by `:`. */
const CURVE_LIST = /^[A-Za-z0-9_-]+(?::[A-Za-z0-9_-]+)*$/;

export const TLS_SESSION_KEYS: KeyTable = {
  'ssl-session-cache': bool((config, value) => {
    config.sslHandshake.sessionCache = value;
  }),
  'ssl-session-cache-size': (value, config) => {
    const bytes = parseNginxSize(value);
    if (bytes === null || bytes < 1024) return 'expected a size of at least 1k, such as 10m or 512k';
    config.sslHandshake.sessionCacheSize = bytes;
    return null;
  },
  'ssl-session-timeout': (value, config) => {
    const ms = parseNginxTimeMs(value);
    if (ms === null || ms < 1000) return 'expected an NGINX time of at least 1s, such as 10m or 1h';
    // Node counts a session's lifetime in whole seconds
    config.sslHandshake.sessionTimeout = Math.ceil(ms / 1000);
    return null;
  },
  'ssl-session-tickets': bool((config, value) => {
    config.sslHandshake.sessionTickets = value;
  }),
  'ssl-session-ticket-key': (value, config) => {
    // ingress-nginx decodes the value itself and writes the bytes to the key file NGINX reads
    if (!BASE64.test(value))
      return 'expected the base64 of 48 or 80 bytes (openssl rand 80 | openssl enc -A -base64)';
    const key = ticketKeyForNode(Uint8Array.from(atob(value), (c) => c.charCodeAt(0)));
    if (key === null)
      return 'expected the base64 of 48 or 80 bytes (openssl rand 80 | openssl enc -A -base64)';
    config.sslHandshake.sessionTicketKey = btoa(String.fromCharCode(...key));
    return null;
  },
  'ssl-ecdh-curve': (value, config) => {
    const expected =
      'expected "auto" or curve names OpenSSL knows, separated by ":" (X25519:prime256v1:secp384r1)';
    if (value !== 'auto' && !CURVE_LIST.test(value)) return expected;
    // OpenSSL is the judge of the names, as for ssl-ciphers
    try {
      createSecureContext({ ecdhCurve: value });
    } catch {
      return expected;
    }
    config.sslHandshake.ecdhCurve = value;
    return null;
  },
  'ssl-dh-param': (value, config) => {
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/.test(value))
      return 'expected a Secret as namespace/name';
    config.sslHandshake.dhParamSecret = value;
    return null;
  },
  'ssl-reject-handshake': bool((config, value) => {
    config.sslHandshake.rejectHandshake = value;
  }),
};

/** ssl-* keys Node's TLS server cannot honour, with the reason; accepted and reported, no effect. */
export const TLS_NOT_APPLICABLE_KEYS: Readonly<Record<string, string>> = {
  'ssl-early-data':
    "Node's TLS server does not accept TLS 1.3 early data (0-RTT): every handshake takes its round trip, as with ssl-early-data false",
};

/**
 * ssl-dh-param: the Secret's `dhparam.pem` as ingress-nginx reads it (a PEM block of type DH
 * PARAMETERS), checked to be a DER sequence of a prime of 1024 to 8192 bits and a generator, or the
 * key is reported and no DH parameters are used (NGINX's default: no DHE cipher).
 */
export function resolveDhParam(
  config: GlobalConfig,
  secret: (namespace: string, name: string) => Secret | undefined,
  diagnostics: DiagnosticsCollector,
  ref: { namespace: string; name: string },
): void {
  const id = config.sslHandshake.dhParamSecret;
  if (id === '') return;
  const [namespace = '', name = ''] = id.split('/');
  const found = secret(namespace, name);
  const data = found?.data?.['dhparam.pem'];
  const problem =
    found === undefined
      ? `the Secret ${id} does not exist`
      : typeof data !== 'string'
        ? `the Secret ${id} has no dhparam.pem`
        : dhParamProblem(decodeBase64Text(data));
  if (problem !== null) {
    diagnostics.report(
      'ConfigMap',
      ref,
      'CONFIG_VALUE_INVALID',
      `ConfigMap key ssl-dh-param=${JSON.stringify(id)} is invalid (${problem}); no DH parameters are used`,
    );
    return;
  }
  config.sslHandshake.dhParam = decodeBase64Text(data as string);
}

function decodeBase64Text(value: string): string {
  try {
    return atob(value.replace(/\s+/g, ''));
  } catch {
    return '';
  }
}

const DH_PEM = /-----BEGIN DH PARAMETERS-----([A-Za-z0-9+/=\s]+)-----END DH PARAMETERS-----/;

/** Why a dhparam.pem is unusable, or null. */
export function dhParamProblem(pem: string): string | null {
  const block = DH_PEM.exec(pem);
  if (block === null) return 'dhparam.pem holds no PEM block of type DH PARAMETERS';
  let der: Uint8Array;
  try {
    der = Uint8Array.from(atob((block[1] ?? '').replace(/\s+/g, '')), (c) => c.charCodeAt(0));
  } catch {
    return 'its PEM block is not base64';
  }
  const bits = dhPrimeBits(der);
  if (bits === null) return 'its PEM block is not a DH prime and generator';
  if (bits < 1024 || bits > 8192)
    return `its prime has ${bits} bits, expected 1024 to 8192 (2048 or more advised)`;
  return null;
}

/** The bit length of the prime of a DER `SEQUENCE { INTEGER p, INTEGER g, ... }`, or null. */
function dhPrimeBits(der: Uint8Array): number | null {
  const sequence = readTlv(der, 0, 0x30);
  if (sequence === null || sequence.end !== der.length) return null;
  const prime = readTlv(der, sequence.start, 0x02);
  if (prime === null) return null;
  const generator = readTlv(der, prime.end, 0x02);
  if (generator === null || generator.end > sequence.end) return null;
  let start = prime.start;
  while (start < prime.end && der[start] === 0) start++;
  if (start === prime.end || ((der[prime.end - 1] ?? 0) & 1) === 0) return null;
  return (prime.end - start - 1) * 8 + Math.floor(Math.log2(der[start] ?? 1)) + 1;
}

/** One DER element of `tag` at `offset`: where its content starts and ends. */
function readTlv(der: Uint8Array, offset: number, tag: number): { start: number; end: number } | null {
  if (der[offset] !== tag) return null;
  let length = der[offset + 1] ?? 0;
  let start = offset + 2;
  if (length & 0x80) {
    const octets = length & 0x7f;
    if (octets === 0 || octets > 3) return null;
    length = 0;
    for (let i = 0; i < octets; i++) length = length * 256 + (der[start + i] ?? 0);
    start += octets;
  }
  const end = start + length;
  return end <= der.length ? { start, end } : null;
}
