// The build step of authentication: the Secret of auth-secret and the ConfigMap of
// auth-proxy-set-headers are looked up in the snapshot (and recorded as references, so a change to
// them rebuilds). Whatever makes the configuration unusable (a missing Secret or key, another
// namespace without allow-cross-namespace-resources, auth-type digest) denies the location: its
// routes answer 503, never unauthenticated. Each denial is reported (AUTH_UNAVAILABLE).

import type { BasicAuth } from './annotations/auth.ts';
import type { ExternalAuth } from './annotations/external-auth.ts';
import type { LocationAnnotations } from './annotations/index.ts';
import { HEADER_NAME } from './annotations/validators.ts';
import type { DiagnosticsCollector } from './diagnostics.ts';
import { type ConfigMap, type Secret, secretValue } from './k8s.ts';
import type { ObjectRef } from './types.ts';

export interface AuthLookups {
  allowCrossNamespace: boolean;
  secret(namespace: string, name: string): Secret | undefined;
  configMap(namespace: string, name: string): ConfigMap | undefined;
  diagnostics: DiagnosticsCollector;
}

function secretKeys(secret: Secret): string[] {
  return [...new Set([...Object.keys(secret.data ?? {}), ...Object.keys(secret.stringData ?? {})])].sort();
}

/** `name` or `ns/name` in the Ingress namespace; null when another namespace is not allowed. */
function place(written: string, ingress: ObjectRef, allowCross: boolean): ObjectRef | { refused: string } {
  const slash = written.indexOf('/');
  const namespace = slash === -1 ? ingress.namespace : written.slice(0, slash);
  const name = slash === -1 ? written : written.slice(slash + 1);
  if (namespace !== ingress.namespace && !allowCross) {
    return {
      refused: `${namespace}/${name} is in another namespace and allow-cross-namespace-resources is not true`,
    };
  }
  return { namespace, name };
}

/** htpasswd lines (`user:hash`), comments and blank lines skipped. */
export function htpasswdLines(text: string): Array<[string, string]> {
  const users: Array<[string, string]> = [];
  for (const line of text.split(/\r?\n/)) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const colon = trimmed.indexOf(':');
    if (colon <= 0) continue;
    users.push([trimmed.slice(0, colon), trimmed.slice(colon + 1)]);
  }
  return users;
}

function resolveBasic(auth: BasicAuth, ingress: ObjectRef, lookups: AuthLookups): BasicAuth {
  if (auth.denied !== null) return auth;
  if (auth.type === 'digest') {
    return { ...auth, denied: 'auth-type digest is not supported by ingress-ts' };
  }
  const placed = place(auth.secret, ingress, lookups.allowCrossNamespace);
  if ('refused' in placed) return { ...auth, denied: `auth-secret ${placed.refused}` };
  const id = `${placed.namespace}/${placed.name}`;
  const secret = lookups.secret(placed.namespace, placed.name);
  if (secret === undefined) return { ...auth, secret: id, denied: `auth-secret ${id} does not exist` };
  let users: Array<[string, string]>;
  if (auth.secretType === 'auth-file') {
    const text = secretValue(secret, 'auth');
    if (text === undefined) return { ...auth, secret: id, denied: `auth-secret ${id} has no key "auth"` };
    users = htpasswdLines(text);
  } else {
    users = secretKeys(secret).map((user) => [user, (secretValue(secret, user) ?? '').trim()]);
  }
  return { ...auth, secret: id, users, denied: null };
}

function resolveExternal(auth: ExternalAuth, ingress: ObjectRef, lookups: AuthLookups): ExternalAuth {
  if (auth.denied !== null || auth.proxySetHeaders === '') return auth;
  const placed = place(auth.proxySetHeaders, ingress, lookups.allowCrossNamespace);
  if ('refused' in placed) return { ...auth, denied: `auth-proxy-set-headers ${placed.refused}` };
  const id = `${placed.namespace}/${placed.name}`;
  const configMap = lookups.configMap(placed.namespace, placed.name);
  if (configMap === undefined) {
    return { ...auth, proxySetHeaders: id, denied: `auth-proxy-set-headers ConfigMap ${id} does not exist` };
  }
  const proxyHeaders: Array<[string, string]> = [];
  const data = configMap.data ?? {};
  for (const name of Object.keys(data).sort()) {
    const value = String(data[name]);
    if (!HEADER_NAME.test(name) || /[\r\n]/.test(value)) {
      return {
        ...auth,
        proxySetHeaders: id,
        denied: `auth-proxy-set-headers ConfigMap ${id}: ${JSON.stringify(name)} is not a valid header`,
      };
    }
    proxyHeaders.push([name, value]);
  }
  return { ...auth, proxySetHeaders: id, proxyHeaders };
}

/**
 * The location annotations of one Ingress with their auth references resolved (the same object
 * when it has no authentication).
 */
export function resolveAuthReferences(
  annotations: LocationAnnotations,
  ingress: ObjectRef,
  lookups: AuthLookups,
): LocationAnnotations {
  const basic = annotations.basicAuth.auth;
  const external = annotations.externalAuth.auth;
  if (basic === null && external === null) return annotations;
  const out = { ...annotations };
  if (basic !== null) {
    const resolved = resolveBasic(basic, ingress, lookups);
    out.basicAuth = { auth: resolved };
    if (resolved.denied !== null) report(lookups, ingress, resolved.denied);
  }
  if (external !== null) {
    const resolved = resolveExternal(external, ingress, lookups);
    out.externalAuth = { ...annotations.externalAuth, auth: resolved };
    if (resolved.denied !== null) report(lookups, ingress, resolved.denied);
  }
  return out;
}

function report(lookups: AuthLookups, ingress: ObjectRef, reason: string): void {
  lookups.diagnostics.report(
    'Ingress',
    ingress,
    'AUTH_UNAVAILABLE',
    `${reason}; the paths of this Ingress answer 503 (never unauthenticated)`,
  );
}
