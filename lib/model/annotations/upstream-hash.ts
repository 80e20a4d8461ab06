// upstream-hash-by, -subset, -subset-size: consistent hashing of the upstreams this Ingress is the
// first to use (like load-balance, the first Ingress decides per upstream), taking precedence over
// load-balance (ingress-nginx get_implementation: affinity > hash-by > load-balance). The key is
// NGINX variable text: `$request_uri`, `${host}-x`... (ingress-nginx's validator admits only
// `A-Za-z0-9 - _ $ { }`; an invalid key drops the Ingress, as there).

import type { HashBy } from '../types.ts';
import type { AnnotationGroup } from './group.ts';
import { isGoInt } from './validators.ts';

export interface UpstreamHashAnnotations {
  hashBy: HashBy | null;
}

const KEY = /^[A-Za-z0-9\-_${}]+$/;
const SIZE = /^\d+$/;

export const upstreamHash: AnnotationGroup<UpstreamHashAnnotations> = {
  scope: 'ingress',
  annotations: [
    {
      name: 'upstream-hash-by',
      default: '',
      doc: 'Consistent hashing on this key (NGINX variables such as $request_uri, $remote_addr, $http_x, $cookie_x, $arg_x); wins over load-balance.',
    },
    {
      name: 'upstream-hash-by-subset',
      default: 'false',
      doc: 'Hash to a subset of the endpoints, then pick one of them at random.',
    },
    {
      name: 'upstream-hash-by-subset-size',
      default: '3',
      doc: 'Endpoints per subset with upstream-hash-by-subset.',
    },
  ],
  defaults: { hashBy: null },
  parse(read) {
    // ingress-nginx reads all three, with or without a key, and any validator error skips the Ingress
    const key = read.string('upstream-hash-by');
    if (key !== undefined && !KEY.test(key.replaceAll(' ', ''))) {
      read.invalid('upstream-hash-by', key, 'only letters, digits, -, _, $, { and } are allowed', 'drop');
      return { hashBy: null };
    }
    const subset = read.bool('upstream-hash-by-subset', false, 'drop');
    let subsetSize = 3;
    const size = read.string('upstream-hash-by-subset-size');
    if (size !== undefined) {
      if (!isGoInt(size)) {
        read.invalid('upstream-hash-by-subset-size', size, 'expected an integer', 'drop');
        return { hashBy: null };
      }
      // a negative size would make an empty subset: ingress-ts keeps the default
      if (SIZE.test(size) && Number(size) > 0) subsetSize = Number(size);
      else read.invalid('upstream-hash-by-subset-size', size, 'expected a positive integer', 'default');
    }
    if (key === undefined) return { hashBy: null };
    return { hashBy: { key: key.trim(), subset, subsetSize } };
  },
};
