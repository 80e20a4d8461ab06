// The annotation registry and the policies every Ingress goes through:
// - ingress-nginx's `*-snippet` annotations are configuration code: the Ingress is dropped (never
//   executed), and the diagnostic names what does the snippet's job where it can tell;
// - any other ingress-nginx annotation that no group owns gets one "not supported yet" warning;
// - a name ingress-nginx does not have either is ignored by both, with a warning saying so.
// Adding an annotation means adding a group (or a field to one) below, never a new mechanism.

import { SUPPORTED_CONFIG_KEYS } from '../configmap/index.ts';
import { isNginxInternalKey } from '../configmap/nginx-internal-keys.ts';
import type { DiagnosticsCollector } from '../diagnostics.ts';
import { editDistance } from '../edit-distance.ts';
import { redactValue } from '../redact.ts';
import { describeRefusal, readSnippet, type SnippetRules, type SnippetScope } from '../snippets/read.ts';
import type { ObjectRef } from '../types.ts';
import { accessControl } from './access-control.ts';
import { accessLog } from './access-log.ts';
import { affinity } from './affinity.ts';
import { appRoot } from './app-root.ts';
import { basicAuth } from './auth.ts';
import { authTls } from './auth-tls.ts';
import { backendProtocol } from './backend-protocol.ts';
import { canary } from './canary.ts';
import { cors } from './cors.ts';
import { customErrors } from './custom-errors.ts';
import { customHeaders } from './custom-headers.ts';
import { externalAuth } from './external-auth.ts';
import { fromToWww } from './from-to-www.ts';
import {
  type AnnotationDoc,
  type AnnotationGroup,
  type AnnotationReader,
  type InvalidOutcome,
  parseGoBool,
} from './group.ts';
import {
  INGRESS_NGINX_ANNOTATIONS,
  INGRESS_NGINX_CONFIG_KEYS,
  RETIRED_ANNOTATIONS,
} from './ingress-nginx-names.ts';
import { loadBalance } from './load-balance.ts';
import { mirror } from './mirror.ts';
import { checkNotApplicable } from './not-applicable.ts';
import { openTelemetry } from './opentelemetry.ts';
import { proxy, serviceUpstream, upstreamVhost } from './proxy.ts';
import { proxySsl } from './proxy-ssl.ts';
import { rateLimit } from './rate-limit.ts';
import { redirect } from './redirect.ts';
import { rewrite } from './rewrite.ts';
import { satisfy } from './satisfy.ts';
import { serverAlias } from './server-alias.ts';
import { snippetHint } from './snippet-hints.ts';
import { configurationSnippet, type SnippetAnnotations, serverSnippet } from './snippets.ts';
import { sslPassthrough } from './ssl-passthrough.ts';
import { type SslRedirectAnnotations, sslRedirect } from './ssl-redirect.ts';
import { upstreamHash } from './upstream-hash.ts';

export { customDefaultBackendName } from './custom-errors.ts';
export { resolveCustomHeaders } from './custom-headers.ts';

const locationGroups = {
  rewrite,
  accessLog,
  redirect,
  sslRedirect,
  customErrors,
  backendProtocol,
  accessControl,
  rateLimit,
  proxy,
  upstreamVhost,
  proxySsl,
  basicAuth,
  externalAuth,
  satisfy,
  cors,
  customHeaders,
  mirror,
  openTelemetry,
  snippet: configurationSnippet,
} as const;
const serverGroups = { alias: serverAlias, appRoot, fromToWww, authTls, snippet: serverSnippet } as const;
const ingressGroups = {
  affinity,
  canary,
  loadBalance,
  upstreamHash,
  serviceUpstream,
  sslPassthrough,
} as const;

type ValueOf<G> = G extends AnnotationGroup<infer T> ? T : never;
export type LocationAnnotations = { [K in keyof typeof locationGroups]: ValueOf<(typeof locationGroups)[K]> };
export type ServerAnnotations = { [K in keyof typeof serverGroups]: ValueOf<(typeof serverGroups)[K]> };
export type IngressAnnotations = { [K in keyof typeof ingressGroups]: ValueOf<(typeof ingressGroups)[K]> };

export interface ParsedAnnotations {
  location: LocationAnnotations;
  server: ServerAnnotations;
  ingress: IngressAnnotations;
  /** an annotation made ingress-nginx skip the whole Ingress */
  dropped: boolean;
}

type AnyGroup = AnnotationGroup<unknown>;
const allGroups: ReadonlyArray<readonly [string, AnyGroup]> = [
  ...Object.entries(locationGroups),
  ...Object.entries(serverGroups),
  ...Object.entries(ingressGroups),
] as ReadonlyArray<readonly [string, AnyGroup]>;

const KNOWN = new Set(allGroups.flatMap(([, group]) => group.annotations.map((a) => a.name)));

/**
 * Annotations that tune NGINX itself (buffers, temp files, its debug logs, HTTP/2 push): they mean
 * nothing here, so they are accepted with an info diagnostic saying why, not an "unsupported" warning.
 */
export const NOT_APPLICABLE_ANNOTATIONS: Readonly<Record<string, string>> = {
  'proxy-buffers-number': 'NGINX buffer tuning: ingress-ts streams responses',
  'proxy-busy-buffers-size': 'NGINX buffer tuning: ingress-ts streams responses',
  'proxy-max-temp-file-size': 'NGINX temp-file tuning: ingress-ts never spools responses to disk',
  'client-body-buffer-size': 'NGINX buffer tuning: ingress-ts never spools request bodies to disk',
  'http2-push-preload': 'HTTP/2 server push is obsolete (browsers removed it)',
  'enable-rewrite-log': "NGINX's rewrite debug log does not exist in ingress-ts",
  'auth-keepalive':
    'connections to auth-url hosts are always kept alive and reused (an undici pool per host, 60 s idle)',
  'auth-keepalive-requests':
    'connections to auth-url hosts are always kept alive and reused (an undici pool per host, 60 s idle)',
  'auth-keepalive-timeout':
    'connections to auth-url hosts are always kept alive and reused (an undici pool per host, 60 s idle)',
  'auth-keepalive-share-vars': 'NGINX variables do not exist in ingress-ts',
  'relative-redirects':
    "every redirect ingress-ts sends is the absolute URL ingress-nginx's configuration gives; NGINX's absolute_redirect only changes redirects NGINX makes from a relative URI",
};

/** ingress-nginx's snippet annotations; a `*-snippet` name it does not have is no code to anyone. */
const SNIPPET_ANNOTATIONS: ReadonlySet<string> = new Set(
  [...INGRESS_NGINX_ANNOTATIONS].filter((name) => name.endsWith('-snippet')),
);

/** The snippets ingress-ts reads as data (allow-snippet-annotations and risk level Critical), by scope. */
const READABLE_SNIPPETS: Readonly<Record<string, SnippetScope>> = {
  'configuration-snippet': 'location',
  'server-snippet': 'server',
};

/**
 * A readable snippet's rules (reported as read), or null when one of its statements refuses it all
 * (reported as SNIPPET_REFUSED, naming the directive, never a value). An empty snippet is none.
 */
function readSnippetAnnotation(
  annotation: string,
  value: string,
  scope: SnippetScope,
  ref: ObjectRef,
  diagnostics: DiagnosticsCollector,
): SnippetAnnotations | null {
  if (value.trim() === '') return { rules: null };
  const read = readSnippet(value, scope);
  if (!read.ok) {
    const hint = snippetHint(value);
    diagnostics.report(
      'Ingress',
      ref,
      'SNIPPET_REFUSED',
      `annotation ${annotation} is read as data, and ${describeRefusal(read)}: the whole snippet is refused (nothing is ever run), so the Ingress is ignored${
        hint === null ? '' : `; ${hint}`
      }`,
    );
    return null;
  }
  const { noEffect } = read.rules;
  diagnostics.report(
    'Ingress',
    ref,
    'SNIPPET_READ',
    `annotation ${annotation} is read as data (${snippetSummary(read.rules)})${
      noEffect.length === 0
        ? ''
        : `; ${noEffect.join(', ')} ${noEffect.length === 1 ? 'has' : 'have'} no effect (ingress-ts already does what ${noEffect.length === 1 ? 'it says' : 'they say'}, or ingress-nginx would not apply ${noEffect.length === 1 ? 'it' : 'them'} there)`
    }`,
    'info',
  );
  return { rules: read.rules };
}

/** What a snippet does, by kind of directive, without any value. */
function snippetSummary(rules: SnippetRules): string {
  const parts: string[] = [];
  const count = (n: number, what: string) => {
    if (n > 0) parts.push(`${n} ${what}`);
  };
  count(rules.responseOps.length, 'response header set or cleared');
  count(rules.addHeaders.length, 'add_header');
  count(rules.hideHeaders.length, 'proxy_hide_header');
  count(rules.requestOps.length, 'request header set or cleared');
  if (rules.return !== null) parts.push(`return ${rules.return.code}`);
  return parts.length === 0 ? 'nothing to apply' : parts.join(', ');
}

/**
 * Why a name is not an annotation, when it can be told: a removed one, a ConfigMap key written as
 * an annotation, or a typo of an annotation ingress-nginx has.
 */
export function unknownAnnotationHint(name: string, lead: string): string | null {
  const retired = RETIRED_ANNOTATIONS[name];
  if (retired !== undefined) return retired;
  if (INGRESS_NGINX_CONFIG_KEYS.has(name)) {
    const where = `${name} is a key of the global ConfigMap (--configmap)`;
    if (SUPPORTED_CONFIG_KEYS.includes(name)) return `${where}, where ingress-ts applies it to every Ingress`;
    if (isNginxInternalKey(name)) return `${where} that tunes NGINX itself, which ingress-ts ignores too`;
    return `${where}, which ingress-ts does not support yet`;
  }
  let closest: string | null = null;
  let distance = 3;
  for (const known of INGRESS_NGINX_ANNOTATIONS) {
    const d = editDistance(name, known, distance - 1);
    if (d < distance) {
      distance = d;
      closest = known;
    }
  }
  return closest === null ? null : `did you mean ${lead}${closest}?`;
}

/** Every supported annotation with its default and meaning, for documentation and tests. */
export const SUPPORTED_ANNOTATIONS: readonly AnnotationDoc[] = allGroups
  .flatMap(([, group]) => group.annotations)
  .sort((a, b) => (a.name < b.name ? -1 : 1));

export function serverGroupIsSet<K extends keyof ServerAnnotations>(
  key: K,
  value: ServerAnnotations[K],
): boolean {
  const group = serverGroups[key] as AnnotationGroup<ServerAnnotations[K]>;
  return group.isSet?.(value) ?? false;
}

export const serverGroupKeys = Object.keys(serverGroups) as Array<keyof ServerAnnotations>;

function defaultsOf<T extends Record<string, AnyGroup>>(groups: T): { [K in keyof T]: ValueOf<T[K]> } {
  const out: Record<string, unknown> = {};
  for (const [key, group] of Object.entries(groups)) out[key] = group.defaults;
  return out as { [K in keyof T]: ValueOf<T[K]> };
}

export const DEFAULT_LOCATION_ANNOTATIONS: LocationAnnotations = defaultsOf(locationGroups);
export const DEFAULT_SERVER_ANNOTATIONS: ServerAnnotations = defaultsOf(serverGroups);
const DEFAULT_INGRESS_ANNOTATIONS: IngressAnnotations = defaultsOf(ingressGroups);

/** Fast path: most Ingresses carry no annotation under the prefix. */
const NONE: ParsedAnnotations = {
  location: DEFAULT_LOCATION_ANNOTATIONS,
  server: DEFAULT_SERVER_ANNOTATIONS,
  ingress: DEFAULT_INGRESS_ANNOTATIONS,
  dropped: false,
};

/**
 * Parse the annotations of one Ingress. Findings are reported on the Ingress; `dropped` says that
 * ingress-nginx would skip it (a snippet, or a validator whose error propagates).
 */
export function parseAnnotations(
  annotations: Readonly<Record<string, unknown>> | undefined,
  prefix: string,
  ref: ObjectRef,
  diagnostics: DiagnosticsCollector,
  allowSnippets = false,
): ParsedAnnotations {
  if (annotations === undefined) return NONE;
  const lead = `${prefix}/`;
  const own = new Map<string, string>();
  for (const [key, value] of Object.entries(annotations)) {
    if (!key.startsWith(lead)) continue;
    own.set(key.slice(lead.length), typeof value === 'string' ? value : String(value));
  }
  if (own.size === 0) return NONE;

  let dropped = false;
  const snippets: Partial<Record<SnippetScope, SnippetAnnotations>> = {};
  for (const [name, value] of own) {
    const scope = READABLE_SNIPPETS[name];
    if (allowSnippets && scope !== undefined) {
      const read = readSnippetAnnotation(`${lead}${name}`, value, scope, ref, diagnostics);
      if (read === null) dropped = true;
      else snippets[scope] = read;
    } else if (SNIPPET_ANNOTATIONS.has(name)) {
      dropped = true;
      const hint = snippetHint(value);
      diagnostics.report(
        'Ingress',
        ref,
        'SNIPPET_REFUSED',
        `annotation ${lead}${name} is configuration code; ingress-ts never runs snippets, so the Ingress is ignored${
          hint === null ? '' : `; ${hint}`
        }`,
      );
    } else if (name in NOT_APPLICABLE_ANNOTATIONS) {
      diagnostics.report(
        'Ingress',
        ref,
        'ANNOTATION_NOT_APPLICABLE',
        `annotation ${lead}${name} has no effect: ${NOT_APPLICABLE_ANNOTATIONS[name]}`,
      );
    } else if (KNOWN.has(name)) {
      // parsed below
    } else if (INGRESS_NGINX_ANNOTATIONS.has(name)) {
      diagnostics.report(
        'Ingress',
        ref,
        'ANNOTATION_UNSUPPORTED',
        `annotation ${lead}${name} is not supported by ingress-ts yet and has no effect`,
      );
    } else {
      const hint = unknownAnnotationHint(name, lead);
      diagnostics.report(
        'Ingress',
        ref,
        'ANNOTATION_UNKNOWN',
        `annotation ${lead}${name} is not an ingress-nginx annotation: ingress-nginx ignores it, and so does ingress-ts${
          hint === null ? '' : `; ${hint}`
        }`,
      );
    }
  }

  const reader: AnnotationReader = {
    string(name) {
      const value = own.get(name);
      return value === undefined || value === '' ? undefined : value;
    },
    bool(name, fallback, onInvalid) {
      const value = reader.string(name);
      if (value === undefined) return fallback;
      const parsed = parseGoBool(value);
      if (parsed !== undefined) return parsed;
      reader.invalid(name, value, 'expected "true" or "false"', onInvalid);
      return fallback;
    },
    invalid(name, value, reason, onInvalid: InvalidOutcome) {
      const drop = onInvalid === 'drop';
      if (drop) dropped = true;
      diagnostics.report(
        'Ingress',
        ref,
        'ANNOTATION_INVALID',
        `annotation ${lead}${name}=${JSON.stringify(redactValue(name, value))} is invalid (${reason}); ${
          drop ? 'the Ingress is ignored' : 'the default is used'
        }`,
        drop ? 'error' : 'warning',
      );
    },
  };

  checkNotApplicable(reader);

  const parseAll = <T extends Record<string, AnyGroup>>(groups: T) => {
    const out: Record<string, unknown> = {};
    for (const [key, group] of Object.entries(groups)) {
      out[key] = group.annotations.some((a) => own.has(a.name)) ? group.parse(reader) : group.defaults;
    }
    return out as { [K in keyof T]: ValueOf<T[K]> };
  };
  const parsedLocation = parseAll(locationGroups);
  const location =
    snippets.location === undefined ? parsedLocation : { ...parsedLocation, snippet: snippets.location };
  if (location.backendProtocol.protocol === 'FCGI') {
    diagnostics.report(
      'Ingress',
      ref,
      'BACKEND_PROTOCOL_UNSUPPORTED',
      `annotation ${lead}backend-protocol=FCGI: ingress-ts does not speak FastCGI; the paths of this Ingress answer 502`,
    );
  }
  const parsedServer = parseAll(serverGroups);
  const server = snippets.server === undefined ? parsedServer : { ...parsedServer, snippet: snippets.server };
  const ingress = parseAll(ingressGroups);
  return { location, server, ingress, dropped };
}

/**
 * Location groups the catch-all server does not inherit from a catch-all Ingress (ingress-nginx
 * restores its root location's redirect and rewrite configs, the latter with ssl-redirect).
 */
const NOT_INHERITED_BY_CATCH_ALL: ReadonlyArray<keyof LocationAnnotations> = ['rewrite', 'redirect'];

/** The catch-all's own root location has a zero rewrite config: it never redirects to HTTPS. */
const CATCH_ALL_SSL_REDIRECT: SslRedirectAnnotations = {
  sslRedirect: false,
  forceSslRedirect: false,
  preserveTrailingSlash: false,
  usePortInRedirects: false,
};

export function catchAllAnnotations(annotations: LocationAnnotations): LocationAnnotations {
  const out = { ...annotations, sslRedirect: CATCH_ALL_SSL_REDIRECT };
  for (const key of NOT_INHERITED_BY_CATCH_ALL) {
    (out as Record<string, unknown>)[key] = DEFAULT_LOCATION_ANNOTATIONS[key];
  }
  return out;
}

/** Whether a route switches its host to regex matching (use-regex, or a rewrite-target other than its path). */
export function usesRegex(annotations: LocationAnnotations, path: string): boolean {
  const { useRegex, target } = annotations.rewrite;
  return useRegex || (target !== null && target !== path);
}
