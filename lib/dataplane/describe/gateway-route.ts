// How /debug/model shows a route made from an HTTPRoute rule: the object's kind, the weighted
// backends with each one's share (a refused backendRef as null: its share answers 500), and the
// rule's conditions and filters in words. Header and query match values are `***` (like a canary's
// header value, they can be a shared secret) and header edits show names only (a value can be a
// token), as for the ConfigMap's headers.

import type { GatewayRouteMatch, HeaderEdits, PathModifier, Route } from '../../model/index.ts';
import { REDACTED } from '../../model/redact.ts';
import type { GatewayRouteDescription, RouteDescription } from './types.ts';

/** `backend` of a route whose requests are drawn among weighted backends (see `backends`). */
export const WEIGHTED_BACKEND = 'weighted';

function editsInWords(what: string, edits: HeaderEdits | null): string[] {
  if (edits === null) return [];
  const parts = [
    ...edits.set.map((header) => `set ${header.name}`),
    ...edits.add.map((header) => `add ${header.name}`),
    ...edits.remove.map((name) => `remove ${name}`),
  ];
  return parts.length === 0 ? [] : [`${what} headers: ${parts.join(', ')}`];
}

function pathInWords(path: PathModifier | null): string[] {
  if (path === null) return [];
  return [`${path.type === 'ReplaceFullPath' ? 'path' : 'matched prefix'} replaced by ${path.value}`];
}

/** The rule's filters as a person reads them, in the order they apply. */
export function filtersInWords(match: GatewayRouteMatch): string[] {
  const words = [...editsInWords('request', match.requestHeaders)];
  const { redirect, rewrite } = match;
  if (redirect !== null) {
    const parts = [
      ...(redirect.scheme === null ? [] : [`scheme ${redirect.scheme}`]),
      ...(redirect.hostname === null ? [] : [`hostname ${redirect.hostname}`]),
      ...(redirect.port === null ? [] : [`port ${redirect.port}`]),
      ...pathInWords(redirect.path),
    ];
    words.push(`redirect ${redirect.statusCode}${parts.length === 0 ? '' : `: ${parts.join(', ')}`}`);
  }
  if (rewrite !== null) {
    const parts = [
      ...(rewrite.hostname === null ? [] : [`hostname ${rewrite.hostname}`]),
      ...pathInWords(rewrite.path),
    ];
    words.push(`rewrite: ${parts.length === 0 ? 'nothing' : parts.join(', ')}`);
  }
  for (const mirror of match.mirrors) words.push(`mirror ${mirror.percent}% to ${mirror.upstream}`);
  words.push(...editsInWords('response', match.responseHeaders));
  return words;
}

const redacted = (list: ReadonlyArray<{ name: string }>) =>
  list.map(({ name }) => ({ name, value: REDACTED }));

/** What an HTTPRoute's route adds to its description; nothing for an Ingress path. */
export function gatewayRouteOf(
  route: Route,
): Pick<RouteDescription, 'kind' | 'backends' | 'gateway'> | Record<string, never> {
  const match = route.gateway;
  if (match === undefined) return {};
  const out: Pick<RouteDescription, 'kind' | 'backends' | 'gateway'> = { kind: 'HTTPRoute' };
  if (route.backend.type === 'weighted') {
    const entries = route.backend.backends;
    let total = 0;
    for (const entry of entries) total += entry.weight;
    out.backends = entries.map((entry) => ({
      backend: entry.upstream,
      weight: entry.weight,
      share: total === 0 ? 0 : entry.weight / total,
    }));
  }
  const gateway: GatewayRouteDescription = {
    rule: match.rule,
    protocols: match.protocols,
    listenerPorts: { ...match.listenerPorts },
    method: match.method,
    headers: redacted(match.headers),
    queryParams: redacted(match.queryParams),
    filters: filtersInWords(match),
  };
  out.gateway = gateway;
  return out;
}
