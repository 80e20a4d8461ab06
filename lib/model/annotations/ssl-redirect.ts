// ssl-redirect, force-ssl-redirect, preserve-trailing-slash, use-port-in-redirects: per route, whether
// a plain-HTTP request is redirected to HTTPS (ingress-nginx's lua_ingress redirect_to_https) and how
// its Location looks.
// Unset values follow the ConfigMap (ssl-redirect, force-ssl-redirect); an invalid value falls back
// to that default (ingress-nginx's rewrite parser only warns). The catch-all server's own default
// route never redirects (ingress-nginx renders it with a zero rewrite config).

import { type AnnotationGroup, type AnnotationReader, parseGoBool } from './group.ts';

export interface SslRedirectAnnotations {
  /** `ssl-redirect`: redirect when the host has TLS settings; null: the ConfigMap's ssl-redirect */
  sslRedirect: boolean | null;
  /** `force-ssl-redirect`: redirect even without TLS settings; null: the ConfigMap's force-ssl-redirect */
  forceSslRedirect: boolean | null;
  /** `preserve-trailing-slash`: the Location keeps the request's trailing slash */
  preserveTrailingSlash: boolean;
  /** `use-port-in-redirects`: the Location names the HTTPS port (`https://host:443/...`) */
  usePortInRedirects: boolean;
}

export const sslRedirect: AnnotationGroup<SslRedirectAnnotations> = {
  scope: 'location',
  annotations: [
    {
      name: 'ssl-redirect',
      default: 'true',
      doc: 'Redirect plain-HTTP requests to HTTPS when the host has TLS (default: ConfigMap ssl-redirect).',
    },
    {
      name: 'force-ssl-redirect',
      default: 'false',
      doc: 'Redirect plain-HTTP requests to HTTPS even without TLS (default: ConfigMap force-ssl-redirect).',
    },
    {
      name: 'preserve-trailing-slash',
      default: 'false',
      doc: 'Keep the trailing slash of the request URI in the HTTPS redirect Location.',
    },
    {
      name: 'use-port-in-redirects',
      default: 'false',
      doc: 'Name the HTTPS port in the HTTPS redirect Location (https://host:443/...).',
    },
  ],
  defaults: {
    sslRedirect: null,
    forceSslRedirect: null,
    preserveTrailingSlash: false,
    usePortInRedirects: false,
  },
  parse(read) {
    return {
      sslRedirect: optionalBool(read, 'ssl-redirect'),
      forceSslRedirect: optionalBool(read, 'force-ssl-redirect'),
      preserveTrailingSlash: read.bool('preserve-trailing-slash', false, 'default'),
      usePortInRedirects: read.bool('use-port-in-redirects', false, 'default'),
    };
  },
};

/** null when unset or invalid (then reported): the ConfigMap decides. */
function optionalBool(read: AnnotationReader, name: string): boolean | null {
  const value = read.string(name);
  if (value === undefined) return null;
  const parsed = parseGoBool(value);
  if (parsed === undefined) read.invalid(name, value, 'expected "true" or "false"', 'default');
  return parsed ?? null;
}
