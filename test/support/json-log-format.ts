// The `log-format-upstream` value docs/observability.md gives for the JSON line ingress-ts wrote
// before the format was configurable (with `log-format-escape-json: "true"`); tests that read the
// access log as JSON set it (a test checks the docs still give this exact value).
import { JSON_LOG_FORMAT_UPSTREAM } from '../../lib/model/configmap/log-format.ts';

export const JSON_LOG_FORMAT = JSON_LOG_FORMAT_UPSTREAM;

/** The ConfigMap keys that make the access log that JSON line. */
export const JSON_LOG_KEYS: Readonly<Record<string, string>> = {
  'log-format-upstream': JSON_LOG_FORMAT,
  'log-format-escape-json': 'true',
};

/** The same as YAML flow-map entries, each with its trailing comma (`log-format-upstream: "...", `). */
export const JSON_LOG_ENTRIES: string = Object.entries(JSON_LOG_KEYS)
  .map(([key, value]) => `${key}: ${JSON.stringify(value)}, `)
  .join('');
