// custom-headers: a ConfigMap (`name` in the Ingress's namespace, or `namespace/name`) whose entries
// are response headers set on every response of the Ingress's routes, whatever the status
// (ingress-nginx's more_set_headers). The parser only reads the reference; the build resolves it
// (resolveCustomHeaders), because it needs the ConfigMaps and the global ConfigMap's
// global-allowed-response-headers and allow-cross-namespace-resources. A reference that cannot be
// honoured denies the location, as in ingress-nginx: its paths answer 503. Unlike ingress-nginx, a
// framing or hop-by-hop header (Content-Length, Transfer-Encoding, Connection...) is such a reference
// even when global-allowed-response-headers lists it.

import type { ConfigMap } from '../k8s.ts';
import type { AnnotationGroup } from './group.ts';
import { FRAMING_RESPONSE_HEADERS, SIMPLE_HEADER_NAME } from './validators.ts';

export interface CustomHeadersAnnotations {
  /** the reference as written, or null */
  configMap: string | null;
  /** the resolved headers (name as written in the ConfigMap, value), sorted by name */
  headers: Array<[string, string]>;
  /** why the location is denied (its paths answer 503), or null */
  denied: string | null;
}

/** A ConfigMap name or `namespace/name` (DNS-1123 names). */
const REFERENCE = /^(?:[a-z0-9]([-a-z0-9]*[a-z0-9])?\/)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
/** ingress-nginx's value validator for custom-headers entries (names: SIMPLE_HEADER_NAME). */
const HEADER_VALUE = /^[A-Za-z0-9_ :;.,\\/"'?!(){}[\]@<>=\-+*#$&`|~^%]+$/;

export const customHeaders: AnnotationGroup<CustomHeadersAnnotations> = {
  scope: 'location',
  annotations: [
    {
      name: 'custom-headers',
      default: '',
      doc: 'A ConfigMap (name or namespace/name) of response headers for every response; each key must be listed in the ConfigMap key global-allowed-response-headers.',
    },
  ],
  defaults: { configMap: null, headers: [], denied: null },
  parse(read) {
    const value = read.string('custom-headers');
    if (value === undefined) return { configMap: null, headers: [], denied: null };
    if (!REFERENCE.test(value)) {
      read.invalid('custom-headers', value, 'expected a ConfigMap name or namespace/name', 'default');
      return { configMap: null, headers: [], denied: null };
    }
    return { configMap: value, headers: [], denied: null };
  },
};

export interface CustomHeadersContext {
  /** the Ingress's namespace */
  namespace: string;
  allowCrossNamespace: boolean;
  /** global-allowed-response-headers, as written */
  allowed: readonly string[];
  lookup: (namespace: string, name: string) => ConfigMap | undefined;
}

/** The headers of a custom-headers reference, or why the location is denied. */
export function resolveCustomHeaders(
  value: CustomHeadersAnnotations,
  context: CustomHeadersContext,
): CustomHeadersAnnotations {
  const reference = value.configMap;
  if (reference === null) return value;
  const slash = reference.indexOf('/');
  const namespace = slash === -1 ? context.namespace : reference.slice(0, slash);
  const name = slash === -1 ? reference : reference.slice(slash + 1);
  const denied = (reason: string): CustomHeadersAnnotations => ({
    configMap: reference,
    headers: [],
    denied: reason,
  });
  if (namespace !== context.namespace && !context.allowCrossNamespace) {
    return denied(
      `the ConfigMap ${namespace}/${name} is in another namespace and allow-cross-namespace-resources is false`,
    );
  }
  const configMap = context.lookup(namespace, name);
  if (configMap === undefined) return denied(`the ConfigMap ${namespace}/${name} does not exist`);
  const data = configMap.data;
  const headers: Array<[string, string]> = [];
  if (data !== undefined && data !== null && typeof data === 'object') {
    for (const header of Object.keys(data).sort()) {
      const raw = (data as Record<string, unknown>)[header];
      const text = typeof raw === 'string' ? raw : String(raw);
      if (!SIMPLE_HEADER_NAME.test(header)) return denied(`header ${header} is not a valid header name`);
      if (!HEADER_VALUE.test(text)) return denied(`header ${header} contains an invalid value`);
      // refused even when the admin lists it: a namespace's Transfer-Encoding or Content-Length beside
      // the proxy's own framing would desync the client connection (add-headers and snippets refuse
      // them too)
      if (FRAMING_RESPONSE_HEADERS.has(header.toLowerCase())) {
        return denied(`header ${header} frames the response or belongs to one connection`);
      }
      if (!context.allowed.includes(header)) {
        return denied(
          `header ${header} is not listed in global-allowed-response-headers (${context.allowed.join(',') || 'empty'})`,
        );
      }
      headers.push([header, text]);
    }
  }
  return { configMap: reference, headers, denied: null };
}
