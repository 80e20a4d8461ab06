// canary and canary-*: ingress-nginx's annotations/canary parser. A canary Ingress never creates a
// host or a path of its own: the build attaches its backends to the main routes with the same host,
// path and pathType (canaries.ts), where the data plane splits traffic by header, cookie and weight.
//
// Validation as ingress-nginx: header names and values, and cookie names, may only hold
// `A-Za-z0-9 - . _ ~ / :` (spaces are stripped before the check); a header pattern may also hold the
// regex characters `^ $ [ ] ( ) { } * + ? | & = \`; weights are integers. An invalid value falls
// back to that field's default (the Ingress stays a canary). Any canary-* annotation without
// `canary: "true"` is "configured but not enabled": the canary settings are dropped and the Ingress is
// an ordinary one (a CANARY_NOT_ENABLED warning says so).

import type { Canary } from '../types.ts';
import type { AnnotationGroup, AnnotationReader } from './group.ts';

/** The policy fields of `Canary` (types.ts) as this Ingress writes them. */
export interface CanaryAnnotations extends Omit<Canary, 'ingress' | 'upstream'> {
  enabled: boolean;
  /** some canary-* annotation is set although canary is not true */
  configuredButNotEnabled: boolean;
}

const NAME_CHARS = /^[A-Za-z0-9\-._~/:]+$/;
const PATTERN_CHARS = /^[A-Za-z0-9\-._~/:^$[\](){}*+?|&=\\]+$/;
const INTEGER = /^[-+]?\d+$/;

const OPTIONS = [
  'canary-weight',
  'canary-weight-total',
  'canary-by-header',
  'canary-by-header-value',
  'canary-by-header-pattern',
  'canary-by-cookie',
] as const;

function text(read: AnnotationReader, name: string, allowed: RegExp): string | null {
  const value = read.string(name);
  if (value === undefined) return null;
  const stripped = value.replace(/\s/g, '');
  if (stripped !== '' && allowed.test(stripped)) return stripped;
  read.invalid(name, value, 'characters outside those ingress-nginx allows', 'default');
  return null;
}

function integer(read: AnnotationReader, name: string, fallback: number): number {
  const value = read.string(name);
  if (value === undefined) return fallback;
  if (INTEGER.test(value.trim())) return Number.parseInt(value, 10);
  read.invalid(name, value, 'expected an integer', 'default');
  return fallback;
}

export const canary: AnnotationGroup<CanaryAnnotations> = {
  scope: 'ingress',
  annotations: [
    {
      name: 'canary',
      default: 'false',
      doc: 'Marks the Ingress as a canary of the main Ingress with the same host, path and pathType.',
    },
    { name: 'canary-weight', default: '0', doc: 'Requests out of canary-weight-total sent to the canary.' },
    {
      name: 'canary-weight-total',
      default: '100',
      doc: 'The denominator of canary-weight; values under 100 count as 100.',
    },
    {
      name: 'canary-by-header',
      default: '',
      doc: 'A header whose value "always" routes to the canary and "never" to the main backend.',
    },
    {
      name: 'canary-by-header-value',
      default: '',
      doc: 'With canary-by-header: this exact value routes to the canary (always/never lose their meaning).',
    },
    {
      name: 'canary-by-header-pattern',
      default: '',
      doc: 'With canary-by-header: values matching this regular expression route to the canary.',
    },
    {
      name: 'canary-by-cookie',
      default: '',
      doc: 'A cookie whose value "always" routes to the canary and "never" to the main backend.',
    },
  ],
  defaults: {
    enabled: false,
    weight: 0,
    weightTotal: 100,
    header: null,
    headerValue: null,
    headerPattern: null,
    cookie: null,
    configuredButNotEnabled: false,
  },
  parse(read) {
    const enabled = read.bool('canary', false, 'default');
    if (!enabled) {
      const configured = OPTIONS.some((name) => read.string(name) !== undefined);
      return { ...canary.defaults, configuredButNotEnabled: configured };
    }
    const header = text(read, 'canary-by-header', NAME_CHARS);
    return {
      enabled,
      weight: integer(read, 'canary-weight', 0),
      weightTotal: integer(read, 'canary-weight-total', 100),
      header: header === null ? null : header.toLowerCase(),
      headerValue: text(read, 'canary-by-header-value', NAME_CHARS),
      headerPattern: text(read, 'canary-by-header-pattern', PATTERN_CHARS),
      cookie: text(read, 'canary-by-cookie', NAME_CHARS),
      configuredButNotEnabled: false,
    };
  },
};
