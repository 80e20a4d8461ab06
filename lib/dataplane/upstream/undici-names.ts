// undici checks every request header name it is handed: a name found in its table of well-known
// names (headerNameLowerCasedRecord, lib/core/constants.js) is taken as it is; every other one is
// lower-cased, looked up again and matched against the token grammar (a regular expression from 12
// characters on). The proxy's own headers (X-Forwarded-*, X-Real-IP, X-Request-ID...) are not in
// that table, so each request paid that check for ~8 names the proxy itself wrote: about a third of
// the instructions undici spends on a request's head. Adding them to the table, each mapped to
// itself, gives undici the same lower-case name it would have computed, without the work.
//
// The table is undici's internal state, not its API: if a future undici moves or freezes it, this
// does nothing and requests are served exactly as before, only with the check paid again.

import { createRequire } from 'node:module';

/** Header names the proxy writes on every upstream request (or on traced / client-cert routes). */
export const PROXY_HEADER_NAMES: readonly string[] = [
  'x-real-ip',
  'x-forwarded-for',
  'x-forwarded-port',
  'x-forwarded-proto',
  'x-forwarded-scheme',
  'x-scheme',
  'x-request-id',
  'x-original-uri',
  'x-forwarded-host',
  'x-forwarded-prefix',
  'x-original-forwarded-for',
  'x-original-forwarded-host',
  'traceparent',
  'tracestate',
  'ssl-client-verify',
  'ssl-client-subject-dn',
  'ssl-client-issuer-dn',
  'ssl-client-cert',
];

let registered: boolean | null = null;

/**
 * Adds the names above to undici's table of known header names, once per thread (each thread
 * loads its own undici). True when they are in it.
 */
export function registerProxyHeaderNames(): boolean {
  if (registered !== null) return registered;
  registered = false;
  try {
    const require = createRequire(import.meta.url);
    const table = (require('undici/lib/core/constants.js') as { headerNameLowerCasedRecord?: unknown })
      .headerNameLowerCasedRecord;
    if (typeof table !== 'object' || table === null || Object.isFrozen(table)) return false;
    const names = table as Record<string, string | undefined>;
    for (const name of PROXY_HEADER_NAMES) {
      const known = names[name];
      // already there (a newer undici): it must map the name to itself, or the table is not what
      // this expects and is left alone
      if (known !== undefined && known !== name) return false;
    }
    for (const name of PROXY_HEADER_NAMES) names[name] = name;
    registered = true;
  } catch {
    // not found where expected: undici checks the names itself, as without this
  }
  return registered;
}
