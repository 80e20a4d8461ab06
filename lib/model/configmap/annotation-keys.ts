// ConfigMap keys that bound what Ingress annotations may do: snippets, references to other
// namespaces, the headers custom-headers may set, and which annotation values or risks skip an
// Ingress whole.

import { parseGoBool } from '../annotations/group.ts';
import { ANNOTATION_RISKS } from '../annotations/risk.ts';
import { bool, type KeyTable } from './key-parser.ts';
import { commaList } from './values.ts';

export const ANNOTATION_KEYS: KeyTable = {
  'allow-snippet-annotations': (value, config) => {
    config.allowSnippetAnnotations = parseGoBool(value) === true;
    return null;
  },
  'allow-cross-namespace-resources': bool((config, value) => {
    config.allowCrossNamespaceResources = value;
  }),
  'global-allowed-response-headers': (value, config) => {
    config.globalAllowedResponseHeaders = commaList(value);
    return null;
  },
  // ingress-nginx reads any other word as Low (refusing nearly every annotation); a misspelling
  // is reported here and the default kept
  'annotations-risk-level': (value, config) => {
    const level = ANNOTATION_RISKS.find((risk) => risk.toLowerCase() === value.toLowerCase());
    if (level === undefined) return `expected ${ANNOTATION_RISKS.join(', ')}`;
    config.annotationsRiskLevel = level;
    return null;
  },
  // ingress-nginx's store splits on commas without trimming each word, and an empty word (a
  // trailing comma) then matches every value, skipping every annotated Ingress; ingress-ts trims
  // each word (as ingress-nginx's admission webhook does) and leaves empty ones out
  'annotation-value-word-blocklist': (value, config) => {
    config.annotationValueWordBlocklist = [...new Set(commaList(value))];
    return null;
  },
};
