// enable-access-log: whether requests on the Ingress's paths get an access log line (ingress-nginx
// `access_log off` per location). Metrics count them either way. An invalid value keeps the default
// (on), as ingress-nginx's log parser does.

import type { AnnotationGroup } from './group.ts';

export interface AccessLogAnnotations {
  enabled: boolean;
}

export const accessLog: AnnotationGroup<AccessLogAnnotations> = {
  scope: 'location',
  annotations: [
    {
      name: 'enable-access-log',
      default: 'true',
      doc: 'Write an access log line for requests on this Ingress\'s paths ("false" turns it off; metrics still count them).',
    },
  ],
  defaults: { enabled: true },
  parse(read) {
    return { enabled: read.bool('enable-access-log', true, 'default') };
  },
};
