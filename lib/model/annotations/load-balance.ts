// load-balance: the algorithm of the upstreams this Ingress is the first to use (ingress-nginx
// keeps the first Ingress's choice per upstream). An invalid value drops the Ingress, as there.

import { LOAD_BALANCE_NAMES } from '../configmap/global-config.ts';
import type { AnnotationGroup } from './group.ts';

export interface LoadBalanceAnnotations {
  /** null: the ConfigMap's load-balance */
  algorithm: string | null;
}

export const loadBalance: AnnotationGroup<LoadBalanceAnnotations> = {
  scope: 'ingress',
  annotations: [
    {
      name: 'load-balance',
      default: '',
      doc: 'Load-balancing algorithm of the upstreams this Ingress creates: round_robin or ewma (default: the ConfigMap).',
    },
  ],
  defaults: { algorithm: null },
  parse(read) {
    const written = read.string('load-balance');
    if (written === undefined) return { algorithm: null };
    const value = written.trim();
    if (!(LOAD_BALANCE_NAMES as readonly string[]).includes(value)) {
      read.invalid('load-balance', written, `expected one of ${LOAD_BALANCE_NAMES.join(', ')}`, 'drop');
      return { algorithm: null };
    }
    return { algorithm: value };
  },
};
