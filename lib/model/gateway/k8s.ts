// Plain shapes of the Gateway API objects the model reads (gateway.networking.k8s.io/v1, standard
// channel). As in ../k8s.ts every field is optional or loosely typed: standalone manifests are not
// validated by an API server, and the fake API server applies no CRD defaults, so the build applies
// the CRDs' defaults itself (parentRef group/kind, allowedRoutes Same, weight 1, redirect 302,
// tls.mode Terminate) and reports what is wrong.

import type { KubeObject } from '../k8s.ts';

export const GATEWAY_GROUP = 'gateway.networking.k8s.io';

/** metav1.LabelSelector */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}

export interface GatewayClass extends KubeObject {
  spec?: {
    controllerName?: string;
    parametersRef?: { group?: string; kind?: string; name?: string; namespace?: string };
    description?: string;
  };
}

export interface SecretObjectReference {
  group?: string;
  kind?: string;
  name?: string;
  namespace?: string;
}

export interface RouteGroupKind {
  group?: string;
  kind?: string;
}

export interface Listener {
  name?: string;
  hostname?: string;
  port?: number;
  protocol?: string;
  tls?: {
    mode?: string;
    certificateRefs?: SecretObjectReference[];
    options?: Record<string, string>;
  };
  allowedRoutes?: {
    namespaces?: { from?: string; selector?: LabelSelector };
    kinds?: RouteGroupKind[];
  };
}

export interface Gateway extends KubeObject {
  spec?: {
    gatewayClassName?: string;
    listeners?: Listener[];
    addresses?: Array<{ type?: string; value?: string }>;
    infrastructure?: {
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
      parametersRef?: { group?: string; kind?: string; name?: string };
    };
  };
}

export interface ParentReference {
  group?: string;
  kind?: string;
  namespace?: string;
  name?: string;
  sectionName?: string;
  port?: number;
}

export interface BackendObjectReference {
  group?: string;
  kind?: string;
  name?: string;
  namespace?: string;
  port?: number;
}

export interface HTTPPathMatch {
  /** Exact, PathPrefix (default) or RegularExpression */
  type?: string;
  /** default `/` */
  value?: string;
}

export interface HTTPHeaderMatch {
  /** Exact (default) or RegularExpression */
  type?: string;
  name?: string;
  value?: string;
}

export interface HTTPRouteMatch {
  path?: HTTPPathMatch;
  headers?: HTTPHeaderMatch[];
  queryParams?: HTTPHeaderMatch[];
  method?: string;
}

export interface HTTPHeader {
  name?: string;
  value?: string;
}

export interface HTTPHeaderFilter {
  set?: HTTPHeader[];
  add?: HTTPHeader[];
  remove?: string[];
}

export interface HTTPPathModifier {
  /** ReplaceFullPath or ReplacePrefixMatch */
  type?: string;
  replaceFullPath?: string;
  replacePrefixMatch?: string;
}

export interface HTTPRouteFilter {
  /** RequestHeaderModifier, ResponseHeaderModifier, RequestRedirect, URLRewrite, RequestMirror, ExtensionRef, ... */
  type?: string;
  requestHeaderModifier?: HTTPHeaderFilter;
  responseHeaderModifier?: HTTPHeaderFilter;
  requestRedirect?: {
    scheme?: string;
    hostname?: string;
    path?: HTTPPathModifier;
    port?: number;
    statusCode?: number;
  };
  urlRewrite?: { hostname?: string; path?: HTTPPathModifier };
  requestMirror?: {
    backendRef?: BackendObjectReference;
    percent?: number;
    fraction?: { numerator?: number; denominator?: number };
  };
  extensionRef?: { group?: string; kind?: string; name?: string };
}

export interface HTTPBackendRef extends BackendObjectReference {
  /** default 1; 0 sends nothing to this entry */
  weight?: number;
  filters?: HTTPRouteFilter[];
}

export interface HTTPRouteRule {
  name?: string;
  matches?: HTTPRouteMatch[];
  filters?: HTTPRouteFilter[];
  backendRefs?: HTTPBackendRef[];
}

export interface HTTPRoute extends KubeObject {
  spec?: {
    parentRefs?: ParentReference[];
    hostnames?: string[];
    rules?: HTTPRouteRule[];
  };
}

export interface ReferenceGrant extends KubeObject {
  spec?: {
    from?: Array<{ group?: string; kind?: string; namespace?: string }>;
    to?: Array<{ group?: string; kind?: string; name?: string }>;
  };
}

/** Only its labels matter (allowedRoutes `from: Selector`); the API server sets `kubernetes.io/metadata.name`. */
export type Namespace = KubeObject;

/** The Gateway API objects of a snapshot; all absent (or empty) when the CRDs are not installed. */
export interface GatewaySnapshot {
  gatewayClasses?: readonly GatewayClass[];
  gateways?: readonly Gateway[];
  httpRoutes?: readonly HTTPRoute[];
  referenceGrants?: readonly ReferenceGrant[];
  /** every Namespace (Selector needs their labels); a namespace with no object here has only its name label */
  namespaces?: readonly Namespace[];
}
