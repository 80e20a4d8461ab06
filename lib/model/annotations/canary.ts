// canary: only recognised for now, so that a canary Ingress never becomes a normal route (in
// ingress-nginx a canary never creates a host or a path). Weight, header and cookie routing are
// parsed and merged by a later parser in this group.

import type { AnnotationGroup } from './group.ts';

export interface CanaryAnnotations {
  enabled: boolean;
}

export const canary: AnnotationGroup<CanaryAnnotations> = {
  scope: 'ingress',
  annotations: [
    {
      name: 'canary',
      default: 'false',
      doc: 'Marks the Ingress as a canary of the main Ingress with the same host, path and pathType.',
    },
  ],
  defaults: { enabled: false },
  parse(read) {
    return { enabled: read.bool('canary', false, 'default') };
  },
};
