// Content hashes of a model: `hash` changes with anything, `routesHash` with anything but the
// endpoint lists, so "only endpoints changed" is one string comparison.

import { createHash } from 'node:crypto';
import type { Model } from './types.ts';

type ModelBody = Omit<Model, 'hash' | 'routesHash'>;

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export function modelHashes(body: ModelBody): { hash: string; routesHash: string } {
  const endpoints: unknown[] = [];
  const routesJson = JSON.stringify(body, (key, value) => {
    if (key === 'endpoints') {
      endpoints.push(value);
      return undefined;
    }
    // certificates are identified by their content hash; no need to hash the PEMs again
    if (key === 'certPem' || key === 'keyPem') return undefined;
    return value;
  });
  const routesHash = sha256(routesJson);
  const hash = sha256(`${routesHash}\n${JSON.stringify(endpoints)}`);
  return { hash, routesHash };
}
