// Client certificate authentication (auth-tls-*), per host, on the HTTPS listener.
//
// The handshake. Node's TLS server decides `requestCert` once per server, but asking every client for
// a certificate makes browsers that hold one show a certificate picker on every host. So the server
// requests nothing, and the SNI callback turns the request on for the one connection whose
// servername is a host with auth-tls-secret (`requestClientCertificate`): it sets that socket's
// OpenSSL verify mode (SSL_VERIFY_PEER, never "fail if no certificate": a missing or bad certificate
// is an HTTP 400 like NGINX's, not a handshake failure) before the server's first flight is written,
// and switches to the host's SecureContext, which holds the host's ca.crt. OpenSSL then verifies the
// chain against that store only and advertises only those CA names in the CertificateRequest; hosts
// without mTLS never send a CertificateRequest, so they cost nothing more than before. This uses two
// internals Node's own `renegotiate()` and `requestCert` use (`_handle.setVerifyMode`,
// `_requestCert`/`_rejectUnauthorized`); if they ever disappear, no certificate is requested, and
// hosts with `auth-tls-verify-client: on` answer 400 (closed, never open), which the e2e tests catch.
//
// Binding. The connection remembers the servername and the CA (sha256) it was verified against. A
// request for an mTLS host whose Host differs from the connection's SNI name answers 421 (NGINX does
// the same: the handshake followed the other name's settings); a request for an mTLS host on a
// connection that was not verified against that very CA counts as "no certificate". A resumed TLS session runs no
// SNI callback and OpenSSL's verify result then belongs to the original handshake, whatever host that
// was (TLS 1.3 ties a session to no servername): its certificate is checked again here against the
// host's CA (a leaf verified in a full handshake against the same CA is remembered, since the
// intermediates are not in the session), so resumption neither breaks mTLS clients nor carries a
// certificate from one CA to another.
//
// The request (ngx_http_process_request's order): a certificate that fails verification → 400 "The
// SSL certificate error" (optional_no_ca forgives only the issuer errors); `on` and no certificate →
// 400 "No required SSL certificate was sent"; both → 302 to auth-tls-error-page when set. Then
// auth-tls-match-cn → 403 "client certificate unauthorized". Upstream headers: ssl-client-verify,
// ssl-client-subject-dn, ssl-client-issuer-dn (RFC 2253, as NGINX's $ssl_client_s_dn), and
// ssl-client-cert (URL-escaped PEM) with auth-tls-pass-certificate-to-upstream.

import { X509Certificate } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { RE2JS } from 're2js';
import type { ClientAuth } from '../../model/index.ts';
import { dataplaneError } from '../events.ts';
import { VerifiedLeaves } from './verified-leaves.ts';

/** What the connection's handshake asked for: set by the SNI callback on the TLS socket. */
export interface ConnectionClientAuth {
  /** lower-case SNI name, without a trailing dot */
  servername: string;
  /** sha256 of the CA bundle the certificate was verified against */
  caSha256: string;
  /** the connection's certificate, read at its first request */
  peer?: PeerCertificate;
  /** a resumed TLS session: no SNI callback ran; the certificate is checked here per CA (peerCa) */
  resumed?: boolean;
  peerCa?: string;
}

interface PeerCertificate {
  present: boolean;
  /** Node's verify error code (OpenSSL's X509_V_ERR_* name), or null when the chain verified */
  error: string | null;
  subjectDN: string;
  issuerDN: string;
  /** $ssl_client_escaped_cert */
  escapedPem: string;
}

const CLIENT_AUTH: unique symbol = Symbol('ingress-ts.client-auth');

interface TlsSocketInternals {
  _handle?: { setVerifyMode?: (requestCert: boolean, rejectUnauthorized: boolean) => void } | null;
  _requestCert?: boolean;
  _rejectUnauthorized?: boolean;
  [CLIENT_AUTH]?: ConnectionClientAuth;
}

let warned = false;

/**
 * From the SNI callback (`this` is the TLS socket): ask this connection's client for a certificate,
 * verified against the CA bundle `caSha256` names (the SecureContext handed to the callback holds it).
 */
export function requestClientCertificate(socket: unknown, servername: string, caSha256: string): void {
  const tls = socket as TlsSocketInternals | undefined;
  const setVerifyMode = tls?._handle?.setVerifyMode;
  if (tls === undefined || typeof setVerifyMode !== 'function') {
    if (!warned) {
      warned = true;
      dataplaneError.publish({
        message:
          'this Node.js version offers no per-connection client certificate request; hosts with auth-tls-secret get no certificate',
      });
    }
    return;
  }
  setVerifyMode.call(tls._handle, true, false);
  // Node computes `authorized` / `authorizationError` after the handshake only when it asked itself
  tls._requestCert = true;
  tls._rejectUnauthorized = false;
  tls[CLIENT_AUTH] = { servername, caSha256 };
}

/** The handshake's client-auth binding of a request's connection, if its servername asked for a certificate. */
export function connectionClientAuth(req: IncomingMessage): ConnectionClientAuth | undefined {
  return (req.socket as unknown as TlsSocketInternals)[CLIENT_AUTH];
}

/**
 * A resumed TLS session that carries a client certificate gets a binding of its own (its servername),
 * made at its first request for a host with client-auth settings. TLS 1.2 resumptions know no
 * servername: the connection is then bound to the host of that first request.
 */
function resumedBinding(req: IncomingMessage, hostname: string): ConnectionClientAuth | undefined {
  const socket = req.socket as unknown as TLSSocket & TlsSocketInternals;
  if (typeof socket.isSessionReused !== 'function' || !socket.isSessionReused()) return undefined;
  if (peerX509(socket) === undefined) return undefined;
  let name = typeof socket.servername === 'string' ? socket.servername.toLowerCase() : hostname;
  if (name.endsWith('.')) name = name.slice(0, -1);
  const binding: ConnectionClientAuth = {
    servername: name === '' ? hostname : name,
    caSha256: '',
    resumed: true,
  };
  socket[CLIENT_AUTH] = binding;
  return binding;
}

/** A host's settings, compiled once per runtime. */
export interface CompiledClientAuth {
  /** the Secret cannot be used: every request answers 503 */
  denied: boolean;
  caSha256: string;
  verifyClient: ClientAuth['verifyClient'];
  /** the longest chain accepted, leaf and trust anchor included (ssl_verify_depth + 1) */
  maxChain: number;
  /** the CA bundle, parsed */
  cas: readonly X509Certificate[];
  passCertificate: boolean;
  matchCN: RE2JS | null;
  /** auth-tls-match-cn refuses plain HTTP: NGINX tests it against an empty $ssl_client_s_dn there */
  matchCNRefusesPlainHttp: boolean;
  errorPage: string | null;
  /** the data plane's leaves verified in full handshakes (checked again on resumed sessions) */
  verifiedLeaves: VerifiedLeaves;
}

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function parseBundle(pem: string | null): X509Certificate[] {
  const out: X509Certificate[] = [];
  for (const block of pem?.match(PEM_BLOCK) ?? []) {
    try {
      out.push(new X509Certificate(block));
    } catch {
      // the model checked every block; nothing to add
    }
  }
  return out;
}

/** `verifiedLeaves`: the data plane's, kept across runtimes (default: the host's own). */
export function compileClientAuth(
  auth: ClientAuth | null,
  verifiedLeaves: VerifiedLeaves = new VerifiedLeaves(),
): CompiledClientAuth | null {
  if (auth === null) return null;
  let matchCN: RE2JS | null = null;
  if (auth.matchCN !== null) {
    try {
      matchCN = RE2JS.compile(auth.matchCN);
    } catch {
      // the model validated it; a pattern RE2 refuses matches nothing (403), never everything
      matchCN = RE2JS.compile('[^\\s\\S]');
    }
  }
  return {
    denied: auth.caPem === null,
    caSha256: auth.caSha256,
    verifyClient: auth.verifyClient,
    maxChain: auth.verifyDepth + 1,
    cas: parseBundle(auth.caPem),
    passCertificate: auth.passCertificate,
    matchCN,
    matchCNRefusesPlainHttp: matchCN !== null && !matchCN.test(''),
    errorPage: auth.errorPage,
    verifiedLeaves,
  };
}

/** The server-level outcome for a request to a host with client-auth settings. */
export type ClientAuthOutcome =
  | { kind: 'pass'; headers: string[] }
  /** 400 "No required SSL certificate was sent" (NGINX 496) or "The SSL certificate error" (495) */
  | { kind: 'reject'; status: 495 | 496 | 403 | 421 | 503 }
  | { kind: 'redirect'; location: string };

/** Verify errors optional_no_ca forgives (NGINX's ngx_ssl_verify_error_optional). */
const ISSUER_ERRORS = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
]);

/** OpenSSL's X509_verify_cert_error_string for the usual codes ($ssl_client_verify's FAILED:reason). */
const VERIFY_REASONS: Record<string, string> = {
  UNABLE_TO_GET_ISSUER_CERT: 'unable to get issuer certificate',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'unable to get local issuer certificate',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'unable to verify the first certificate',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'self-signed certificate',
  SELF_SIGNED_CERT_IN_CHAIN: 'self-signed certificate in certificate chain',
  CERT_HAS_EXPIRED: 'certificate has expired',
  CERT_NOT_YET_VALID: 'certificate is not yet valid',
  CERT_SIGNATURE_FAILURE: 'certificate signature failure',
  CERT_CHAIN_TOO_LONG: 'certificate chain too long',
  INVALID_CA: 'invalid CA certificate',
  INVALID_PURPOSE: 'unsupported certificate purpose',
  CERT_REVOKED: 'certificate revoked',
  CERT_UNTRUSTED: 'certificate not trusted',
  CERT_REJECTED: 'certificate rejected',
};

const verifyReason = (code: string): string =>
  VERIFY_REASONS[code] ?? code.toLowerCase().replaceAll('_', ' ');

const NO_CERTIFICATE: PeerCertificate = Object.freeze({
  present: false,
  error: null,
  subjectDN: '',
  issuerDN: '',
  escapedPem: '',
});

/**
 * An X509Certificate subject/issuer (one RDN per line, most significant first, values escaped as
 * RFC 2253 wants) as RFC 2253 writes it: least significant first, comma-separated, bytes above
 * 0x7f as \XX like OpenSSL's XN_FLAG_RFC2253 (NGINX's $ssl_client_s_dn).
 */
export function rfc2253(multiline: string): string {
  if (multiline === '') return '';
  const rdns = multiline.split('\n').reverse();
  let out = rdns.map((rdn) => rdn.replaceAll(' + ', '+')).join(',');
  if (/[^ -~]/.test(out)) {
    // control characters are already escaped by Node (ESC_CTRL); what is left above ASCII becomes \XX
    out = out.replace(/[\u0080-\u{10ffff}]/gu, (ch) =>
      [...Buffer.from(ch, 'utf8')].map((byte) => `\\${byte.toString(16).toUpperCase()}`).join(''),
    );
  }
  return out;
}

/**
 * The length of a verified chain, leaf and trust anchor included. Node gives a server only the leaf
 * (getPeerCertificate(true) has no issuers there), so the chain is rebuilt from the host's CA bundle;
 * an issuer the bundle lacks was sent by the client, and counts as one intermediate below a root.
 */
function chainLength(leaf: X509Certificate, cas: readonly X509Certificate[]): number {
  let length = 1;
  let current = leaf;
  for (let guard = 0; guard < 16; guard++) {
    const issuer = cas.find((ca) => current.checkIssued(ca) && current.verify(ca.publicKey));
    if (issuer === undefined) return length + 2;
    length++;
    if (issuer.checkIssued(issuer)) return length;
    current = issuer;
  }
  return length;
}

const leafKey = (auth: CompiledClientAuth, x509: X509Certificate): string =>
  `${auth.caSha256}|${auth.maxChain}|${x509.fingerprint256}`;

function peerOf(x509: X509Certificate, error: string | null): PeerCertificate {
  return {
    present: true,
    error,
    subjectDN: rfc2253(x509.subject),
    issuerDN: rfc2253(x509.issuer),
    escapedPem: encodeURIComponent(x509.toString()),
  };
}

function peerX509(socket: TLSSocket): X509Certificate | undefined {
  try {
    return socket.getPeerX509Certificate();
  } catch {
    return undefined;
  }
}

/**
 * The certificate of a resumed session, checked against this host's CA: TLS 1.3 resumes a session of
 * any host (OpenSSL ties it to no servername), and Node's `authorized` says nothing then. A leaf that
 * verified against this CA in a full handshake (the client proved its key then) is accepted while it
 * is valid; else it must chain to the CA bundle by itself.
 */
function readResumedPeer(socket: TLSSocket, auth: CompiledClientAuth): PeerCertificate {
  const x509 = peerX509(socket);
  if (x509 === undefined) return NO_CERTIFICATE;
  const now = Date.now();
  let error: string | null = null;
  if (now < Date.parse(x509.validFrom)) error = 'CERT_NOT_YET_VALID';
  else if (now > Date.parse(x509.validTo)) error = 'CERT_HAS_EXPIRED';
  else if (!auth.verifiedLeaves.has(leafKey(auth, x509))) {
    const direct = auth.cas.some((ca) => x509.checkIssued(ca) && x509.verify(ca.publicKey));
    if (!direct)
      error = x509.checkIssued(x509) ? 'DEPTH_ZERO_SELF_SIGNED_CERT' : 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY';
    else if (chainLength(x509, auth.cas) > auth.maxChain) error = 'CERT_CHAIN_TOO_LONG';
  }
  return peerOf(x509, error);
}

function readPeer(socket: TLSSocket, auth: CompiledClientAuth): PeerCertificate {
  const x509 = peerX509(socket);
  if (x509 === undefined) return NO_CERTIFICATE;
  let error: string | null = socket.authorized ? null : String(socket.authorizationError ?? 'CERT_UNTRUSTED');
  if (error === null && chainLength(x509, auth.cas) > auth.maxChain) error = 'CERT_CHAIN_TOO_LONG';
  if (error === null) auth.verifiedLeaves.add(leafKey(auth, x509));
  return peerOf(x509, error);
}

/**
 * The server-level decision for an HTTPS request to a host with client-auth settings. `binding` is the
 * connection's (connectionClientAuth), already checked to belong to this host's name.
 */
export function authorizeClient(
  req: IncomingMessage,
  auth: CompiledClientAuth,
  binding: ConnectionClientAuth | undefined,
): ClientAuthOutcome {
  if (auth.denied) return { kind: 'reject', status: 503 };
  let peer = NO_CERTIFICATE;
  if (auth.verifyClient !== 'off' && binding !== undefined) {
    if (binding.resumed === true) {
      if (binding.peerCa !== auth.caSha256) {
        binding.peer = readResumedPeer(req.socket as TLSSocket, auth);
        binding.peerCa = auth.caSha256;
      }
      peer = binding.peer ?? NO_CERTIFICATE;
    } else if (binding.caSha256 === auth.caSha256) {
      binding.peer ??= readPeer(req.socket as TLSSocket, auth);
      peer = binding.peer;
    }
  }
  let status: 495 | 496 | null = null;
  if (peer.error !== null && !(auth.verifyClient === 'optional_no_ca' && ISSUER_ERRORS.has(peer.error))) {
    status = 495;
  } else if (auth.verifyClient === 'on' && !peer.present) {
    status = 496;
  }
  if (status !== null) {
    return auth.errorPage === null
      ? { kind: 'reject', status }
      : { kind: 'redirect', location: auth.errorPage };
  }
  // `if ($ssl_client_s_dn !~ <match-cn>) { return 403 ... }`
  if (auth.matchCN !== null && !auth.matchCN.test(peer.subjectDN)) return { kind: 'reject', status: 403 };
  const verify = !peer.present
    ? 'NONE'
    : peer.error === null
      ? 'SUCCESS'
      : `FAILED:${verifyReason(peer.error)}`;
  const headers = ['ssl-client-verify', verify];
  // proxy_set_header with an empty value sends nothing
  if (peer.subjectDN !== '') headers.push('ssl-client-subject-dn', peer.subjectDN);
  if (peer.issuerDN !== '') headers.push('ssl-client-issuer-dn', peer.issuerDN);
  if (auth.passCertificate && peer.escapedPem !== '') headers.push('ssl-client-cert', peer.escapedPem);
  return { kind: 'pass', headers };
}

/**
 * The server-level step of a request (after the host is selected) for a host with auth-tls settings:
 * null when nothing applies, else the outcome. A host whose Secret cannot be used answers 503 (HTTP
 * and HTTPS). Plain HTTP carries no certificate, so verification does not apply to it (NGINX checks
 * ssl_verify_client on TLS connections only), but auth-tls-match-cn does: ingress-nginx renders it as
 * a server-level `if ($ssl_client_s_dn !~ ...) { return 403 }`, which NGINX runs for every request to
 * the server, before any location (so before ssl-redirect), with the variable empty on plain HTTP.
 * HTTPS: as NGINX's ngx_http_set_virtual_server, a
 * request for a host that verifies certificates on a connection whose SNI named another host is
 * misdirected (421: the handshake followed the other name's settings); then the certificate.
 */
export function serverClientAuth(
  req: IncomingMessage,
  https: boolean,
  hostname: string,
  auth: CompiledClientAuth | null,
): ClientAuthOutcome | null {
  if (auth === null) return null;
  if (auth.denied) return { kind: 'reject', status: 503 };
  if (!https) return auth.matchCNRefusesPlainHttp ? { kind: 'reject', status: 403 } : null;
  if (auth.verifyClient === 'off') return authorizeClient(req, auth, undefined);
  let binding = connectionClientAuth(req);
  const servername = binding?.servername ?? sniOf(req);
  if (servername !== '' && servername !== hostname) return { kind: 'reject', status: 421 };
  binding ??= resumedBinding(req, hostname);
  return authorizeClient(req, auth, binding);
}

/** The connection's SNI name, lower-case without a trailing dot; '' when none is known. */
function sniOf(req: IncomingMessage): string {
  const name = (req.socket as unknown as TLSSocket).servername;
  if (typeof name !== 'string') return '';
  const lower = name.toLowerCase();
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

/** NGINX's own pages for 495/496 (status 400) and `return 403 "client certificate unauthorized"`. */
function rejection(status: 495 | 496 | 403 | 421): { status: number; phrase: string; body: Buffer } {
  if (status === 403)
    return { status, phrase: 'Forbidden', body: Buffer.from('client certificate unauthorized') };
  if (status === 421) return { status, phrase: 'Misdirected Request', body: page('421 Misdirected Request') };
  const reason = status === 496 ? 'No required SSL certificate was sent' : 'The SSL certificate error';
  return { status: 400, phrase: 'Bad Request', body: page(`400 ${reason}`, '400 Bad Request', reason) };
}

function page(title: string, heading = title, detail?: string): Buffer {
  const extra = detail === undefined ? '' : `<center>${detail}</center>\r\n`;
  return Buffer.from(
    `<html>\r\n<head><title>${title}</title></head>\r\n<body>\r\n<center><h1>${heading}</h1></center>\r\n${extra}</body>\r\n</html>\r\n`,
    'latin1',
  );
}

const REJECTIONS = new Map(([495, 496, 403, 421] as const).map((status) => [status, rejection(status)]));

/**
 * The Content-Type of a rejection: NGINX's own pages are text/html whatever default_type says;
 * `return 403 "text"` (match-cn) takes default_type.
 */
const typeOf = (status: number, defaultType: string): string => (status === 403 ? defaultType : 'text/html');

/**
 * Answers a client-auth rejection (`status` 495/496 become 400 with NGINX's bodies; 403; 421);
 * `defaultType`: the ConfigMap's default-type.
 */
export function sendClientAuthRejection(
  req: IncomingMessage,
  res: ServerResponse,
  status: 495 | 496 | 403 | 421,
  defaultType = 'text/html',
): void {
  const answer = REJECTIONS.get(status)!;
  const headers = { 'content-type': typeOf(status, defaultType), 'content-length': answer.body.length };
  // HTTP/2 has no reason phrase (Node warns when given one)
  if (req.httpVersionMajor === 2) res.writeHead(answer.status, headers);
  else res.writeHead(answer.status, answer.phrase, headers);
  res.end(req.method === 'HEAD' ? undefined : answer.body);
}

/** The same on an upgrade request's raw socket (HTTP/1.1), closing it. */
export function sendSocketClientAuthRejection(
  socket: Duplex,
  status: 495 | 496 | 403 | 421,
  defaultType = 'text/html',
  headLines = '',
): number {
  const answer = REJECTIONS.get(status)!;
  socket.end(
    `HTTP/1.1 ${answer.status} ${answer.phrase}\r\n${headLines}Content-Type: ${typeOf(status, defaultType)}\r\nContent-Length: ${answer.body.length}\r\nConnection: close\r\n\r\n${answer.body.toString('latin1')}`,
  );
  return answer.status;
}
