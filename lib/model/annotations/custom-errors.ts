// custom-http-errors and default-backend (location scope): the upstream statuses a route answers
// from an error backend instead (X-Code, X-Format, X-Original-URI, X-Namespace, X-Ingress-Name,
// X-Service-Name, X-Service-Port, X-Request-ID to it; its own status and body to the client), and
// the Service of the Ingress's namespace that backend is (else --default-backend-service). A route
// whose Service has no endpoints is served by its default-backend Service, if any, with X-Code 503.
// Invalid values drop the Ingress (ingress-nginx's validators reject it). disable-proxy-intercept-errors
// (NGINX's proxy_intercept_errors off) leaves the upstream's own error responses alone: only the
// proxy's own 502/503/504 then go to the error backend.

import { parseStatusList } from '../configmap/values.ts';
import type { AnnotationGroup } from './group.ts';

export interface CustomErrorsAnnotations {
  /** sorted status codes 400-599; null: the ConfigMap's custom-http-errors apply */
  codes: number[] | null;
  /** a Service name in the Ingress's namespace (its first port), or null */
  backend: string | null;
  /** `disable-proxy-intercept-errors`: the upstream's responses pass through whatever their status */
  disableIntercept: boolean;
}

/** A Service name (DNS-1035 label). */
const SERVICE_NAME = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The upstream name of a default-backend Service (ingress-nginx: custom-default-backend-<ns>-<svc>). */
export function customDefaultBackendName(namespace: string, service: string): string {
  return `custom-default-backend-${namespace}-${service}`;
}

export const customErrors: AnnotationGroup<CustomErrorsAnnotations> = {
  scope: 'location',
  annotations: [
    {
      name: 'custom-http-errors',
      default: '',
      doc: 'Comma-separated status codes (400-599) of upstream or proxy errors answered by the default backend.',
    },
    {
      name: 'default-backend',
      default: '',
      doc: 'A Service in the Ingress namespace (first port): the error backend, and the backend when the Service has no endpoints.',
    },
    {
      name: 'disable-proxy-intercept-errors',
      default: 'false',
      doc: "With custom-http-errors: the upstream's responses pass through whatever their status; only the proxy's own errors go to the error backend.",
    },
  ],
  defaults: { codes: null, backend: null, disableIntercept: false },
  parse(read) {
    let codes: number[] | null = null;
    const list = read.string('custom-http-errors');
    if (list !== undefined) {
      codes = parseStatusList(list);
      if (codes === null) read.invalid('custom-http-errors', list, 'expected status codes 400-599', 'drop');
    }
    let backend: string | null = null;
    const name = read.string('default-backend');
    if (name !== undefined) {
      if (SERVICE_NAME.test(name)) backend = name;
      else read.invalid('default-backend', name, 'expected a Service name', 'drop');
    }
    const disableIntercept = read.bool('disable-proxy-intercept-errors', false, 'default');
    return { codes, backend, disableIntercept };
  },
};
