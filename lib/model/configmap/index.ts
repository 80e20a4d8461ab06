// The global ConfigMap (--configmap): ingress-nginx's keys with their defaults (global-config.ts).
// One small parser per key, in one table per topic; an invalid value keeps the default and is
// reported on the ConfigMap; a key no parser reads gets one diagnostic saying what it is
// (unhandled-keys.ts), since a ConfigMap often carries NGINX tuning, snippets and typos.

import type { DiagnosticsCollector } from '../diagnostics.ts';
import type { ConfigMap } from '../k8s.ts';
import { redactValue } from '../redact.ts';
import { ACCESS_KEYS } from './access-keys.ts';
import { ACCESS_LOG_KEYS } from './access-log-keys.ts';
import { ANNOTATION_KEYS } from './annotation-keys.ts';
import { CLIENT_KEYS } from './client-keys.ts';
import { COMPRESSION_KEYS } from './compression-keys.ts';
import { FORWARDING_KEYS } from './forwarding-keys.ts';
import { GLOBAL_AUTH_KEYS } from './global-auth-keys.ts';
import { DEFAULT_GLOBAL_CONFIG, type GlobalConfig } from './global-config.ts';
import { HEADER_KEYS } from './header-keys.ts';
import type { ConfigMapLookup, KeyTable } from './key-parser.ts';
import { STREAM_KEYS } from './stream-keys.ts';
import { TLS_KEYS } from './tls-keys.ts';
import { TLS_SESSION_KEYS } from './tls-session-keys.ts';
import { TRACING_KEYS } from './tracing-keys.ts';
import { reportUnhandledKey } from './unhandled-keys.ts';
import { UPSTREAM_KEYS } from './upstream-keys.ts';

/** The key tables, one per topic; no key is in two of them. */
export const CONFIG_KEY_TOPICS: readonly KeyTable[] = [
  UPSTREAM_KEYS,
  TLS_KEYS,
  TLS_SESSION_KEYS,
  ACCESS_LOG_KEYS,
  FORWARDING_KEYS,
  HEADER_KEYS,
  CLIENT_KEYS,
  GLOBAL_AUTH_KEYS,
  ANNOTATION_KEYS,
  ACCESS_KEYS,
  STREAM_KEYS,
  COMPRESSION_KEYS,
  TRACING_KEYS,
];

/** Each key: apply the value to the config, or say why it is invalid. */
const KEYS: KeyTable = Object.fromEntries(CONFIG_KEY_TOPICS.flatMap((topic) => Object.entries(topic)));

export const SUPPORTED_CONFIG_KEYS: readonly string[] = Object.keys(KEYS).sort();

export function parseGlobalConfig(
  configMap: ConfigMap | undefined,
  ref: { namespace: string; name: string },
  diagnostics: DiagnosticsCollector,
  lookup: ConfigMapLookup = () => undefined,
): GlobalConfig {
  const config: GlobalConfig = structuredClone(DEFAULT_GLOBAL_CONFIG) as GlobalConfig;
  const data = configMap?.data;
  if (data === undefined || data === null || typeof data !== 'object') return config;
  for (const key of Object.keys(data).sort()) {
    const raw = data[key];
    const value = typeof raw === 'string' ? raw.trim() : String(raw);
    const parse = KEYS[key];
    if (parse === undefined) {
      reportUnhandledKey(key, value, ref, diagnostics);
      continue;
    }
    if (value === '') continue;
    const dropped = (problem: string): void => {
      diagnostics.report(
        'ConfigMap',
        ref,
        'CONFIG_VALUE_INVALID',
        `ConfigMap key ${key}: ${problem}; the other entries are used`,
      );
    };
    const problem = parse(value, config, lookup, dropped);
    if (problem !== null) {
      diagnostics.report(
        'ConfigMap',
        ref,
        'CONFIG_VALUE_INVALID',
        `ConfigMap key ${key}=${JSON.stringify(redactValue(key, value))} is invalid (${problem}); the default is used`,
      );
    }
  }
  return config;
}
