// configuration-snippet and server-snippet, where ingress-nginx itself would accept them
// (allow-snippet-annotations "true" and annotations-risk-level Critical): read as data by
// snippets/read.ts, never run. The groups only hold the result; parseAnnotations reads the
// annotations itself, since whether they may be read at all is the ConfigMap's policy.

import type { SnippetRules } from '../snippets/read.ts';
import type { AnnotationGroup } from './group.ts';

/** The rules of an accepted snippet; null: none. */
export interface SnippetAnnotations {
  rules: SnippetRules | null;
}

const NO_SNIPPET: SnippetAnnotations = { rules: null };

/** configuration-snippet: on every route of its Ingress. */
export const configurationSnippet: AnnotationGroup<SnippetAnnotations> = {
  scope: 'location',
  annotations: [
    {
      name: 'configuration-snippet',
      default: '',
      doc: 'Header and return directives read as data (never run), with allow-snippet-annotations "true" and annotations-risk-level Critical; anything else drops the Ingress.',
    },
  ],
  defaults: NO_SNIPPET,
  parse: () => NO_SNIPPET,
};

/** server-snippet: on the whole host, from the oldest Ingress of the host that has one. */
export const serverSnippet: AnnotationGroup<SnippetAnnotations> = {
  scope: 'server',
  annotations: [
    {
      name: 'server-snippet',
      default: '',
      doc: 'Header directives read as data for the whole host, as configuration-snippet (without return); the oldest Ingress of the host wins.',
    },
  ],
  defaults: NO_SNIPPET,
  parse: () => NO_SNIPPET,
  isSet: (value) => value.rules !== null,
};
