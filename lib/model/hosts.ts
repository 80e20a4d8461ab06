// Host names as the Ingress API accepts them: a DNS-1123 subdomain, optionally with a wildcard as
// the whole first label (`*.example.com` matches exactly one more label). Not an IP address.

import { isIP } from 'node:net';

const LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_SUBDOMAIN = new RegExp(`^${LABEL}(\\.${LABEL})*$`);

export function isDNS1123Subdomain(name: string): boolean {
  return name.length <= 253 && DNS1123_SUBDOMAIN.test(name);
}

/** Why `host` (already lower-cased) is not a valid rule host, or null when it is. */
export function hostProblem(host: string): string | null {
  if (host.length > 253) return 'longer than 253 characters';
  const name = host.startsWith('*.') ? host.slice(2) : host;
  if (name.includes('*')) return 'a wildcard must be the whole first label, as in *.example.com';
  if (isIP(name) !== 0) return 'must be a DNS name, not an IP address';
  if (!DNS1123_SUBDOMAIN.test(name)) return 'not a DNS name (letters, digits, "-" and "." only)';
  return null;
}
