// The request metrics' histogram buckets, as ingress-nginx's flags name them (flags.ts lists them
// among the others; parsed by flag-values.ts `buckets`).

import { DEFAULT_LENGTH_BUCKETS, DEFAULT_SIZE_BUCKETS, DEFAULT_TIME_BUCKETS } from '../metrics/requests.ts';

export const BUCKET_FLAGS = {
  'time-buckets': {
    type: 'string',
    default: DEFAULT_TIME_BUCKETS.join(','),
    help: 'buckets (seconds) of the request, response, header and connect duration histograms',
  },
  'length-buckets': {
    type: 'string',
    default: DEFAULT_LENGTH_BUCKETS.join(','),
    help: 'buckets (bytes) of the request_size and response_size histograms',
  },
  'size-buckets': {
    type: 'string',
    default: DEFAULT_SIZE_BUCKETS.join(','),
    help: 'buckets (bytes) of the bytes_sent histogram',
  },
} as const;
