// proxy-ssl-*: the TLS a route's HTTPS/GRPCS backend connections use, compiled once per swap (a
// SecureContext with the client certificate, the CAs, ciphers and protocols; the verification
// function) and used by the pools created for it. Pools are keyed by `id`, so two routes to the same
// endpoints with different settings never share a connection, and a swap that keeps the settings
// keeps the pools and their connections.
//
// What applies follows ingress-nginx's template: the client certificate when the Secret has
// tls.crt/tls.key; ca.crt, proxy_ssl_verify, _verify_depth, _ciphers and _protocols only when the
// Secret has a ca.crt (otherwise Node's defaults, verification off); proxy_ssl_name and
// proxy_ssl_server_name always (SNI off unless on; the name defaults to `upstream_balancer`).

import { createHash } from 'node:crypto';
import {
  type ConnectionOptions,
  checkServerIdentity,
  createSecureContext,
  type PeerCertificate,
} from 'node:tls';
import { PROXY_HOST, type ProxySslAnnotations } from '../../model/annotations/proxy-ssl.ts';

export interface BackendTls {
  /** identifies the settings (content hash): pools are keyed by it */
  id: string;
  /** the SNI sent, or null for none */
  servername: string | null;
  /**
   * the servername every request through these settings carries: undici reconnects when a request's
   * servername differs from its connection's (by default the Host), so it must be constant
   */
  requestServername: string;
  /** given to tls.connect (through undici's connector) */
  options: ConnectionOptions;
}

/** Intermediate certificates between the leaf and the self-signed root of a verified chain. */
export function intermediatesOf(cert: PeerCertificate): number {
  let count = 0;
  let current = cert as PeerCertificate & { issuerCertificate?: PeerCertificate };
  // the root's issuerCertificate is itself; a chain is short, but never loop forever
  for (let i = 0; i < 64; i++) {
    const issuer = (current as { issuerCertificate?: PeerCertificate }).issuerCertificate;
    if (issuer === undefined || issuer === current || issuer.fingerprint256 === current.fingerprint256) break;
    count++;
    current = issuer;
  }
  // count is now the number of issuers above the leaf: the last one is the trust anchor
  return Math.max(0, count - 1);
}

/** The compiled TLS of proxy-ssl annotations, or null when they set none (no usable Secret). */
export function compileBackendTls(value: ProxySslAnnotations): BackendTls | null {
  const material = value.material;
  if (material === null || value.denied !== null) return null;
  const withCa = material.caPem !== null;
  const verify = withCa && value.verify;
  const name = value.name ?? PROXY_HOST;
  const servername = value.serverName ? name : null;
  const contextOptions: Parameters<typeof createSecureContext>[0] = {};
  if (material.certPem !== null && material.keyPem !== null) {
    contextOptions.cert = material.certPem;
    contextOptions.key = material.keyPem;
  }
  if (withCa) {
    contextOptions.ca = material.caPem ?? undefined;
    contextOptions.ciphers = value.ciphers;
    contextOptions.minVersion = value.protocols[0] ?? 'TLSv1.2';
    contextOptions.maxVersion = value.protocols.at(-1) ?? 'TLSv1.2';
  }
  const options: ConnectionOptions = {
    secureContext: createSecureContext(contextOptions),
    rejectUnauthorized: verify,
  };
  if (verify) {
    const depth = value.verifyDepth;
    options.checkServerIdentity = (_host, cert) => {
      const intermediates = intermediatesOf(cert);
      if (intermediates > depth) {
        return Object.assign(
          new Error(
            `certificate chain too long: ${intermediates} intermediates, proxy-ssl-verify-depth ${depth}`,
          ),
          { code: 'CERT_CHAIN_TOO_LONG' },
        );
      }
      return checkServerIdentity(name, cert);
    };
  }
  const id = createHash('sha256')
    .update(
      JSON.stringify([
        material.sha256,
        verify,
        value.verifyDepth,
        name,
        servername,
        withCa ? value.ciphers : '',
        withCa ? value.protocols : [],
      ]),
    )
    .digest('hex')
    .slice(0, 32);
  return { id, servername, requestServername: servername ?? `${id}.invalid`, options };
}
