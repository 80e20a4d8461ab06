// proxy-ssl-*: TLS to HTTPS and GRPCS backends (NGINX proxy_ssl_*), for every path of the Ingress.
// The parser follows ingress-nginx's proxyssl/main.go: nothing is read without proxy-ssl-secret
// (its parser stops there), and the other values fall back to their defaults when invalid:
// - proxy-ssl-secret: BasicChars (`[-._~a-zA-Z0-9/:]`, spaces removed), else the Ingress is dropped
//   (its validation error propagates); the Secret itself is resolved by the build (proxy-ssl.ts);
// - proxy-ssl-verify, proxy-ssl-server-name: on|off, else off;
// - proxy-ssl-verify-depth: an integer, else (or 0) 1;
// - proxy-ssl-name: ValidateServerName's characters, else none (NGINX's default `$proxy_host`, which
//   is `upstream_balancer` in ingress-nginx); NGINX variables are not expanded here, so a name
//   holding `$` is refused too;
// - proxy-ssl-ciphers: `[A-Za-z0-9+:_\-!]*` and at least one cipher OpenSSL knows, else DEFAULT;
// - proxy-ssl-protocols: TLSv1.2 and/or TLSv1.3 separated by spaces, else TLSv1.2.

import { createSecureContext } from 'node:tls';
import type { AnnotationGroup } from './group.ts';

export type ProxySslProtocol = 'TLSv1.2' | 'TLSv1.3';

export interface ProxySslAnnotations {
  /** `name` or `namespace/name` as written (spaces removed); null: no proxy-ssl configuration */
  secret: string | null;
  /** proxy_ssl_verify: verify the backend's certificate (only with a ca.crt in the Secret) */
  verify: boolean;
  /** proxy_ssl_verify_depth: the most intermediate certificates the backend's chain may use */
  verifyDepth: number;
  /** proxy_ssl_name: the name verified and sent as SNI; null: NGINX's `$proxy_host` (upstream_balancer) */
  name: string | null;
  /** proxy_ssl_server_name: send SNI */
  serverName: boolean;
  /** proxy_ssl_ciphers: an OpenSSL cipher string */
  ciphers: string;
  /** proxy_ssl_protocols, sorted */
  protocols: ProxySslProtocol[];
  /** the Secret's material, filled in by the build; null: not resolved (or no secret) */
  material: ProxySslMaterial | null;
  /** why the location is denied (its paths answer 503), or null */
  denied: string | null;
}

/** What the build found in the proxy-ssl-secret Secret. */
export interface ProxySslMaterial {
  /** `namespace/name` */
  secret: string;
  /** the client certificate presented to the backend (tls.crt), or null */
  certPem: string | null;
  keyPem: string | null;
  /** the CAs the backend's certificate is verified against (ca.crt), or null */
  caPem: string | null;
  /** sha256 of the material: identifies it for pool keys */
  sha256: string;
}

/** `$proxy_host` in ingress-nginx's `proxy_pass https://upstream_balancer;`: NGINX's default proxy_ssl_name. */
export const PROXY_HOST = 'upstream_balancer';

const BASIC_CHARS = /^[/\-._~a-zA-Z0-9:]*$/;
const ON_OFF = /^(on|off)$/;
const INTEGER = /^[+-]?\d+$/;
/** ingress-nginx's IsValidRegex characters (ValidateServerName), without `$` (no variables here) */
const SERVER_NAME = /^[/\-._~a-zA-Z0-9:^[\](){}*+?|&=\\]+$/;
const CIPHERS = /^[A-Za-z0-9+:_\-!]*$/;
const PROTOCOLS = /^(TLSv1\.2|TLSv1\.3| )*$/;

export const PROXY_SSL_DEFAULTS: ProxySslAnnotations = Object.freeze({
  secret: null,
  verify: false,
  verifyDepth: 1,
  name: null,
  serverName: false,
  ciphers: 'DEFAULT',
  protocols: Object.freeze(['TLSv1.2']) as ProxySslProtocol[],
  material: null,
  denied: null,
}) as ProxySslAnnotations;

/** Whether OpenSSL knows at least one cipher of the string (no I/O: a context is built and dropped). */
function knownCiphers(ciphers: string): boolean {
  try {
    createSecureContext({ ciphers });
    return true;
  } catch {
    return false;
  }
}

const OTHERS = [
  'proxy-ssl-verify',
  'proxy-ssl-verify-depth',
  'proxy-ssl-name',
  'proxy-ssl-server-name',
  'proxy-ssl-ciphers',
  'proxy-ssl-protocols',
] as const;

export const proxySsl: AnnotationGroup<ProxySslAnnotations> = {
  scope: 'location',
  annotations: [
    {
      name: 'proxy-ssl-secret',
      default: '',
      doc: 'Secret (`name` or `namespace/name`) for TLS to HTTPS/GRPCS backends: tls.crt and tls.key are the client certificate presented to the backend, ca.crt the CAs its certificate is verified against. Without it the other proxy-ssl-* annotations have no effect; a missing or unusable Secret makes the paths answer 503.',
    },
    {
      name: 'proxy-ssl-verify',
      default: 'off',
      doc: "on: verify the backend's certificate against the Secret's ca.crt (and proxy-ssl-name); without a ca.crt nothing is verified.",
    },
    {
      name: 'proxy-ssl-verify-depth',
      default: '1',
      doc: "Maximum number of intermediate certificates in the backend's chain.",
    },
    {
      name: 'proxy-ssl-name',
      default: '',
      doc: "Name the backend certificate is verified against and sent as SNI; default `upstream_balancer` (NGINX's $proxy_host in ingress-nginx), so verification needs it. No variables.",
    },
    {
      name: 'proxy-ssl-server-name',
      default: 'off',
      doc: 'on: send SNI (proxy-ssl-name) to the backend; off: no SNI.',
    },
    {
      name: 'proxy-ssl-ciphers',
      default: 'DEFAULT',
      doc: 'OpenSSL cipher string for TLS to the backend (only with a ca.crt in the Secret).',
    },
    {
      name: 'proxy-ssl-protocols',
      default: 'TLSv1.2',
      doc: 'TLSv1.2 and/or TLSv1.3, space-separated (only with a ca.crt in the Secret).',
    },
  ],
  defaults: PROXY_SSL_DEFAULTS,
  parse(read) {
    const secret = read.string('proxy-ssl-secret');
    if (secret === undefined) {
      // ingress-nginx's parser stops at the missing secret: say so rather than ignore silently
      for (const name of OTHERS) {
        const value = read.string(name);
        if (value !== undefined)
          read.invalid(name, value, 'it has no effect without proxy-ssl-secret', 'default');
      }
      return PROXY_SSL_DEFAULTS;
    }
    const compact = secret.replaceAll(' ', '');
    if (!BASIC_CHARS.test(compact)) {
      read.invalid('proxy-ssl-secret', secret, 'expected a Secret name or namespace/name', 'drop');
      return PROXY_SSL_DEFAULTS;
    }
    const out: ProxySslAnnotations = { ...PROXY_SSL_DEFAULTS, secret: compact };

    const ciphers = read.string('proxy-ssl-ciphers');
    if (ciphers !== undefined) {
      if (CIPHERS.test(ciphers) && knownCiphers(ciphers)) out.ciphers = ciphers;
      else read.invalid('proxy-ssl-ciphers', ciphers, 'expected an OpenSSL cipher string', 'default');
    }

    const protocols = read.string('proxy-ssl-protocols');
    if (protocols !== undefined) {
      const list = [...new Set(protocols.split(' ').filter((p) => p !== ''))].sort() as ProxySslProtocol[];
      if (PROTOCOLS.test(protocols) && list.length > 0) out.protocols = list;
      else read.invalid('proxy-ssl-protocols', protocols, 'expected TLSv1.2 and/or TLSv1.3', 'default');
    }

    const name = read.string('proxy-ssl-name');
    if (name !== undefined) {
      const trimmed = name.trim();
      if (SERVER_NAME.test(trimmed)) out.name = trimmed;
      else read.invalid('proxy-ssl-name', name, 'expected a server name (no variables)', 'default');
    }

    out.verify = onOff(read, 'proxy-ssl-verify');
    out.serverName = onOff(read, 'proxy-ssl-server-name');

    const depth = read.string('proxy-ssl-verify-depth');
    if (depth !== undefined) {
      const n = INTEGER.test(depth) ? Number(depth) : Number.NaN;
      if (!Number.isSafeInteger(n) || n < 0) {
        read.invalid('proxy-ssl-verify-depth', depth, 'expected a non-negative integer', 'default');
      } else if (n > 0) {
        out.verifyDepth = n;
      }
    }
    return out;
  },
};

function onOff(read: Parameters<AnnotationGroup<unknown>['parse']>[0], name: string): boolean {
  const value = read.string(name);
  if (value === undefined) return false;
  if (ON_OFF.test(value)) return value === 'on';
  read.invalid(name, value, 'expected on or off', 'default');
  return false;
}
