// enable-opentelemetry, opentelemetry-trust-incoming-span, opentelemetry-operation-name: the route's
// tracing against the ConfigMap's (ingress-nginx's opentelemetry parser and the template's
// buildOpentelemetryForLocation). As there, the trust and name annotations are read only when
// enable-opentelemetry is set to true on the same Ingress; an invalid boolean counts as unset; an
// operation name outside [A-Za-z0-9_-] is a validation error, which drops the Ingress.

import { type AnnotationGroup, parseGoBool } from './group.ts';

export interface OpenTelemetryAnnotations {
  /** enable-opentelemetry was set (true or false): it decides instead of the ConfigMap */
  set: boolean;
  enabled: boolean;
  /** opentelemetry-trust-incoming-span was set: it decides instead of the ConfigMap */
  trustSet: boolean;
  trust: boolean;
  /** '' = the ConfigMap's (or the location path) */
  operationName: string;
}

const NAME = /^[A-Za-z0-9_-]*$/;

const UNSET: OpenTelemetryAnnotations = {
  set: false,
  enabled: false,
  trustSet: false,
  trust: false,
  operationName: '',
};

export const openTelemetry: AnnotationGroup<OpenTelemetryAnnotations> = {
  scope: 'location',
  annotations: [
    {
      name: 'enable-opentelemetry',
      default: '',
      doc: 'A span per request on this Ingress\'s paths ("true"), or none ("false"), whatever the ConfigMap\'s enable-opentelemetry.',
    },
    {
      name: 'opentelemetry-trust-incoming-span',
      default: '',
      doc: "With enable-opentelemetry: whether an incoming traceparent becomes the span's parent (default: the ConfigMap's, true).",
    },
    {
      name: 'opentelemetry-operation-name',
      default: '',
      doc: "With enable-opentelemetry: the span name (letters, digits, _ and -); default: the ConfigMap's, else the location path.",
    },
  ],
  defaults: UNSET,
  parse(read) {
    const raw = read.string('enable-opentelemetry');
    if (raw === undefined) return UNSET;
    const enabled = parseGoBool(raw);
    if (enabled === undefined) {
      // ingress-nginx's parser then returns its empty config: not set
      read.invalid('enable-opentelemetry', raw, 'expected "true" or "false"', 'default');
      return UNSET;
    }
    if (!enabled) return { ...UNSET, set: true };
    const out: OpenTelemetryAnnotations = { ...UNSET, set: true, enabled: true };
    const trust = read.string('opentelemetry-trust-incoming-span');
    if (trust !== undefined) {
      const value = parseGoBool(trust);
      if (value === undefined)
        read.invalid('opentelemetry-trust-incoming-span', trust, 'expected "true" or "false"', 'default');
      else {
        out.trustSet = true;
        out.trust = value;
      }
    }
    const name = read.string('opentelemetry-operation-name');
    if (name !== undefined) {
      if (NAME.test(name)) out.operationName = name;
      else
        read.invalid('opentelemetry-operation-name', name, 'expected letters, digits, _ and - only', 'drop');
    }
    return out;
  },
};
