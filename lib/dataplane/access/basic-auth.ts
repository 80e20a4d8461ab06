// auth-type: basic. The Secret's users are compiled once per runtime into a Map of verifiers (one per
// htpasswd format); a request's `Authorization: Basic` credentials are checked against it. Formats:
// bcrypt ($2y$/$2a$/$2b$, bcryptjs), apr1 MD5 ($apr1$, apache-md5), {SHA}, {SSHA}, {PLAIN}
// (node:crypto) and traditional DES crypt (13 characters, apache-crypt). Any other hash never matches.
//
// NGINX verifies every request. bcrypt is deliberately slow (tens of milliseconds at cost 10, over a
// second at cost 14), so its results are cached by the data plane across its runtimes (BcryptResults,
// one per data plane): an LRU keyed by a SHA-256 of the stored hash and the password as sent (the
// password itself is never kept). The other formats are fast and checked every time.

import { createHash, timingSafeEqual } from 'node:crypto';
import crypt from 'apache-crypt';
import aprMd5Module from 'apache-md5';
import bcrypt from 'bcryptjs';
import { LRUCache } from 'lru-cache';
import type { BasicAuth } from '../../model/annotations/auth.ts';

// apache-md5 is CommonJS (`module.exports = fn`) but its types declare an ES default export: the
// default import is the function itself
const aprMd5 = aprMd5Module as unknown as (password: string, salt?: string) => string;

type Verifier = (password: string) => boolean | Promise<boolean>;

export interface BasicAuthCheck {
  /** the WWW-Authenticate challenge */
  challenge: string;
  /** user → verifier (the first line of a user wins, as NGINX reads the file top down) */
  users: ReadonlyMap<string, Verifier>;
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** bcrypt results of one data plane, shared by the routes of its runtimes: sha256(hash \0 password) → matched. */
export class BcryptResults {
  readonly #results = new LRUCache<string, boolean>({ max: 4096, ttl: 10 * 60_000 });

  get(key: string): boolean | undefined {
    return this.#results.get(key);
  }

  set(key: string, matched: boolean): void {
    this.#results.set(key, matched);
  }

  get size(): number {
    return this.#results.size;
  }
}

/** The verifier of one stored hash; bcrypt outcomes are remembered in `results`. */
export function verifierOf(hash: string, results: BcryptResults): Verifier {
  if (/^\$2[aby]\$\d\d\$/.test(hash)) {
    return (password) => {
      const key = createHash('sha256').update(hash).update('\0').update(password).digest('base64');
      const known = results.get(key);
      if (known !== undefined) return known;
      return bcrypt.compare(password, hash).then(
        (ok) => {
          results.set(key, ok);
          return ok;
        },
        () => false,
      );
    };
  }
  if (hash.startsWith('$apr1$')) return (password) => same(aprMd5(password, hash), hash);
  if (hash.startsWith('{SHA}')) {
    const digest = hash.slice(5);
    return (password) => same(createHash('sha1').update(password).digest('base64'), digest);
  }
  if (hash.startsWith('{SSHA}')) {
    const decoded = Buffer.from(hash.slice(6), 'base64');
    if (decoded.length <= 20) return () => false;
    const digest = decoded.subarray(0, 20);
    const salt = decoded.subarray(20);
    return (password) => {
      const computed = createHash('sha1').update(password).update(salt).digest();
      return timingSafeEqual(computed, digest);
    };
  }
  if (hash.startsWith('{PLAIN}')) {
    const plain = hash.slice(7);
    return (password) => same(password, plain);
  }
  if (/^[./0-9A-Za-z]{13}$/.test(hash)) return (password) => same(crypt(password, hash), hash);
  return () => false;
}

/** `results` (default: this route's alone) is the data plane's, so a swap keeps what bcrypt decided. */
export function compileBasicAuth(
  auth: BasicAuth,
  results: BcryptResults = new BcryptResults(),
): BasicAuthCheck {
  const users = new Map<string, Verifier>();
  for (const [user, hash] of auth.users) if (!users.has(user)) users.set(user, verifierOf(hash, results));
  return { challenge: `Basic realm="${auth.realm}"`, users };
}

/** Whether the Authorization header carries credentials the check accepts. */
export function checkBasicAuth(
  check: BasicAuthCheck,
  authorization: string | undefined,
): boolean | Promise<boolean> {
  if (authorization === undefined) return false;
  const m = /^basic[ \t]+([A-Za-z0-9+/=]+)[ \t]*$/i.exec(authorization);
  if (m === null) return false;
  const decoded = Buffer.from(m[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return false;
  const verify = check.users.get(decoded.slice(0, colon));
  if (verify === undefined) return false;
  return verify(decoded.slice(colon + 1));
}
