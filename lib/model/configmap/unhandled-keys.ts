// What a ConfigMap key no parser of ingress-ts reads gets: one diagnostic that tells its case apart.
// - configuration code (`*-snippet`) or a WAF (`enable-modsecurity`, `enable-owasp-modsecurity-crs`)
//   that is set: a warning (CONFIG_KEY_IGNORED), since what it did (headers, rules, blocked requests)
//   is silently gone otherwise;
// - NGINX's own tuning, or what Node's TLS cannot do (ssl-early-data): info (CONFIG_KEY_NOT_APPLICABLE),
//   with the reason where there is a specific one;
// - a key of ingress-nginx that ingress-ts lacks: CONFIG_KEY_UNSUPPORTED;
// - a key ingress-nginx does not know either (a typo, an NGINX directive, an annotation name):
//   CONFIG_KEY_UNKNOWN, saying what it probably is.

import { parseGoBool } from '../annotations/group.ts';
import { INGRESS_NGINX_ANNOTATIONS, INGRESS_NGINX_CONFIG_KEYS } from '../annotations/ingress-nginx-names.ts';
import { SNIPPET_HINTS, snippetHint } from '../annotations/snippet-hints.ts';
import type { DiagnosticsCollector } from '../diagnostics.ts';
import { closestName } from '../edit-distance.ts';
import { isNginxInternalKey, notApplicableReason } from './nginx-internal-keys.ts';
import { TLS_NOT_APPLICABLE_KEYS } from './tls-session-keys.ts';
import { DEFAULT_OPENTELEMETRY_CONFIG } from './tracing-keys.ts';

type Ref = { namespace: string; name: string };

/** Keys that turn on a WAF module: what they block is not blocked by ingress-ts. */
const WAF_KEYS: ReadonlySet<string> = new Set(['enable-modsecurity', 'enable-owasp-modsecurity-crs']);

/** ingress-nginx's snippet keys (`http-snippet`, `server-snippet`, `global-auth-snippet`, ...). */
const SNIPPET_KEYS: ReadonlySet<string> = new Set(
  [...INGRESS_NGINX_CONFIG_KEYS].filter((key) => key.endsWith('-snippet')),
);

/** Prefixes a key is often written with instead of ingress-nginx's (`enable-gzip` for `use-gzip`). */
const SWAPPED_PREFIXES = ['enable-', 'use-', 'disable-'];

export function reportUnhandledKey(
  key: string,
  value: string,
  ref: Ref,
  diagnostics: DiagnosticsCollector,
): void {
  if (key === 'opentelemetry-config') {
    // NGINX's module file: ingress-ts's exporter is set by the otlp-* and otel-* keys alone, so only
    // a file of the user's own (whose settings would be lost) is worth a word
    if (value !== '' && value !== DEFAULT_OPENTELEMETRY_CONFIG) {
      diagnostics.report(
        'ConfigMap',
        ref,
        'CONFIG_KEY_NOT_APPLICABLE',
        `ConfigMap key ${key} names NGINX's OpenTelemetry module file, which ingress-ts does not read; the otlp-* and otel-* keys set its exporter`,
      );
    }
    return;
  }
  const ignored = ignoredBehaviour(key, value);
  const nodeCannot = TLS_NOT_APPLICABLE_KEYS[key];
  if (ignored !== null) {
    diagnostics.report('ConfigMap', ref, 'CONFIG_KEY_IGNORED', `ConfigMap key ${key} ${ignored}`);
  } else if (nodeCannot !== undefined) {
    diagnostics.report(
      'ConfigMap',
      ref,
      'CONFIG_KEY_NOT_APPLICABLE',
      `ConfigMap key ${key} has no effect: ${nodeCannot}`,
    );
  } else if (isNginxInternalKey(key)) {
    const reason = notApplicableReason(key) ?? 'it does not apply to ingress-ts';
    diagnostics.report(
      'ConfigMap',
      ref,
      'CONFIG_KEY_NOT_APPLICABLE',
      `ConfigMap key ${key} tunes NGINX itself; ${reason}; it has no effect`,
    );
  } else if (INGRESS_NGINX_CONFIG_KEYS.has(key)) {
    diagnostics.report(
      'ConfigMap',
      ref,
      'CONFIG_KEY_UNSUPPORTED',
      `ConfigMap key ${key} is not supported by ingress-ts yet and has no effect`,
    );
  } else {
    const hint = unknownKeyHint(key);
    diagnostics.report(
      'ConfigMap',
      ref,
      'CONFIG_KEY_UNKNOWN',
      `ConfigMap key ${key} is not a key of ingress-nginx either: both ignore it${hint === null ? '' : `; ${hint}`}`,
    );
  }
}

/** For a set snippet or WAF key, what is not done; null for any other key (or an empty / off one). */
function ignoredBehaviour(key: string, value: string): string | null {
  if (SNIPPET_KEYS.has(key) && value !== '') {
    const hint = snippetHint(value);
    return `is NGINX configuration code, which ingress-ts never runs: what it did is not done${hint === null ? '' : ` (${hint})`}`;
  }
  if (WAF_KEYS.has(key) && parseGoBool(value) === true) {
    return 'turns on ModSecurity, which ingress-ts does not have: requests its rules would block are served';
  }
  return null;
}

/** What an unknown key probably is: an NGINX directive, an annotation, or a typo of a key. */
export function unknownKeyHint(key: string): string | null {
  const directive = key.replaceAll('-', '_');
  const row = SNIPPET_HINTS.find((hint) => hint.directives.includes(directive));
  if (row !== undefined) {
    const keys = [...(row.configKeys ?? []), ...(row.annotations ?? [])].filter((name) =>
      INGRESS_NGINX_CONFIG_KEYS.has(name),
    );
    if (keys.length > 0) return `it is NGINX's ${directive}; the key ${keys.join(', ')} does its job`;
  }
  if (INGRESS_NGINX_ANNOTATIONS.has(key)) return `${key} is an Ingress annotation, not a ConfigMap key`;
  const spellings = [key];
  for (const prefix of SWAPPED_PREFIXES) {
    if (!key.startsWith(prefix)) continue;
    const rest = key.slice(prefix.length);
    for (const other of SWAPPED_PREFIXES) if (other !== prefix) spellings.push(other + rest);
    spellings.push(rest);
  }
  const limit = key.length < 5 ? 1 : key.length < 12 ? 2 : 3;
  const closest = closestName(spellings, INGRESS_NGINX_CONFIG_KEYS, limit);
  return closest === null ? null : `did you mean ${closest}?`;
}
