// auth-tls-*: client certificate authentication (mTLS), per host. The oldest Ingress of the host
// that sets `auth-tls-secret` decides all of it (ingress-nginx renders these at server level). The
// Secret itself is resolved by the build (client-auth.ts); here only the values are validated, with
// ingress-nginx's validators (authtls/main.go) and outcomes:
// - auth-tls-secret: BasicChars (`[-._~a-zA-Z0-9/:]`, spaces removed) else the Ingress is dropped;
// - auth-tls-verify-client: on|off|optional|optional_no_ca, else `on`;
// - auth-tls-verify-depth: an integer, else (or 0) 1;
// - auth-tls-error-page: ingress-nginx's redirect regex, else the Ingress is dropped;
// - auth-tls-pass-certificate-to-upstream: a Go bool, else the Ingress is dropped;
// - auth-tls-match-cn: `CN=` followed by a regex that compiles, else the Ingress is dropped.
// Without auth-tls-secret the other annotations are not read (ingress-nginx stops at the secret).

import { RE2JS } from 're2js';
import type { AnnotationGroup } from './group.ts';

export type VerifyClient = 'on' | 'off' | 'optional' | 'optional_no_ca';

export interface AuthTlsAnnotations {
  /** `name` or `namespace/name` as written; null: no client certificate authentication */
  secret: string | null;
  verifyClient: VerifyClient;
  /** the most intermediate certificates plus one a client chain may use (NGINX ssl_verify_depth) */
  verifyDepth: number;
  /** send the client certificate upstream in `ssl-client-cert` */
  passCertificate: boolean;
  /** `CN=<regex>`: matched (unanchored) against the subject DN; null: every CN */
  matchCN: string | null;
  /** redirect target instead of the 400 error page; null: the error page */
  errorPage: string | null;
}

const BASIC_CHARS = /^[/\-._~a-zA-Z0-9:]*$/;
const VERIFY_CLIENT = new Set<string>(['on', 'off', 'optional', 'optional_no_ca']);
const REDIRECT = /^((https?:\/\/)?[A-Za-z0-9\-.]*(:\d+)?\/[A-Za-z0-9\-.]*)?$/;
const INTEGER = /^[+-]?\d+$/;
const CONTROL = /[\r\n]/;

export const AUTH_TLS_DEFAULTS: AuthTlsAnnotations = Object.freeze({
  secret: null,
  verifyClient: 'on',
  verifyDepth: 1,
  passCertificate: false,
  matchCN: null,
  errorPage: null,
}) as AuthTlsAnnotations;

export const authTls: AnnotationGroup<AuthTlsAnnotations> = {
  scope: 'server',
  annotations: [
    {
      name: 'auth-tls-secret',
      default: '',
      doc: 'Secret (`name` or `namespace/name`) whose ca.crt the client certificates of the host must chain to.',
    },
    {
      name: 'auth-tls-verify-client',
      default: 'on',
      doc: 'on (a verified certificate is required, else 400), optional, optional_no_ca (any certificate, not verified against the CA) or off.',
    },
    {
      name: 'auth-tls-verify-depth',
      default: '1',
      doc: 'Maximum depth of the client certificate chain (1: issued directly by a CA of ca.crt).',
    },
    {
      name: 'auth-tls-pass-certificate-to-upstream',
      default: 'false',
      doc: 'Send the client certificate upstream in the ssl-client-cert header (URL-escaped PEM).',
    },
    {
      name: 'auth-tls-match-cn',
      default: '',
      doc: 'CN=<regex>: answer 403 unless the client certificate subject DN matches.',
    },
    {
      name: 'auth-tls-error-page',
      default: '',
      doc: 'URL to redirect to (302) instead of the 400 page when the client certificate is missing or invalid.',
    },
  ],
  defaults: AUTH_TLS_DEFAULTS,
  parse(read) {
    const secret = read.string('auth-tls-secret');
    if (secret === undefined) return AUTH_TLS_DEFAULTS;
    const compact = secret.replaceAll(' ', '');
    if (!BASIC_CHARS.test(compact)) {
      read.invalid('auth-tls-secret', secret, 'expected a Secret name or namespace/name', 'drop');
      return AUTH_TLS_DEFAULTS;
    }
    const out: AuthTlsAnnotations = { ...AUTH_TLS_DEFAULTS, secret: compact };

    const verify = read.string('auth-tls-verify-client');
    if (verify !== undefined) {
      const v = verify.replaceAll(' ', '');
      if (VERIFY_CLIENT.has(v)) out.verifyClient = v as VerifyClient;
      else
        read.invalid(
          'auth-tls-verify-client',
          verify,
          'expected on, off, optional or optional_no_ca',
          'default',
        );
    }

    const depth = read.string('auth-tls-verify-depth');
    if (depth !== undefined) {
      const n = INTEGER.test(depth) ? Number(depth) : Number.NaN;
      if (!Number.isSafeInteger(n) || n < 0) {
        read.invalid('auth-tls-verify-depth', depth, 'expected a non-negative integer', 'default');
      } else if (n > 0) {
        out.verifyDepth = n;
      }
    }

    const errorPage = read.string('auth-tls-error-page');
    if (errorPage !== undefined) {
      const page = errorPage.replaceAll(' ', '');
      if (!REDIRECT.test(page) || CONTROL.test(page)) {
        read.invalid('auth-tls-error-page', errorPage, 'expected a URL or an absolute path', 'drop');
        return AUTH_TLS_DEFAULTS;
      }
      out.errorPage = page === '' ? null : page;
    }

    out.passCertificate = read.bool('auth-tls-pass-certificate-to-upstream', false, 'drop');

    const matchCN = read.string('auth-tls-match-cn');
    if (matchCN !== undefined) {
      if (!matchCN.startsWith('CN=')) {
        read.invalid('auth-tls-match-cn', matchCN, "expected CN=<regex>: missing prefix 'CN='", 'drop');
        return AUTH_TLS_DEFAULTS;
      }
      try {
        RE2JS.compile(matchCN.slice(3));
        RE2JS.compile(matchCN);
      } catch (error) {
        read.invalid('auth-tls-match-cn', matchCN, `not a valid regex: ${(error as Error).message}`, 'drop');
        return AUTH_TLS_DEFAULTS;
      }
      out.matchCN = matchCN;
    }
    return out;
  },
  isSet: (value) => value.secret !== null,
};
