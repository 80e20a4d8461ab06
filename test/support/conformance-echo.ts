// An HTTP backend that answers like the Gateway API conformance suite's echo-basic image: every
// request gets 200 and a JSON account of what arrived (request target, Host, method, protocol,
// headers) and of who answered (namespace and pod, as the Deployment's downward API gives them).
// The suite's assertions read exactly these fields, so a test that passes against this echo
// predicts what the suite would see from a real cluster.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** What echo-basic writes as its body (RequestAssertions with its inlined Context). */
export interface EchoedRequest {
  path: string;
  host: string;
  method: string;
  proto: string;
  /** Go's http.Header: canonical names, one entry per header line; no Host */
  headers: Record<string, string[]>;
  httpPort: string;
  namespace: string;
  ingress: string;
  service: string;
  pod: string;
}

export interface EchoIdentity {
  /** the Deployment's namespace (NAMESPACE) */
  namespace: string;
  /** the Deployment's name: the pod is named after it, as a ReplicaSet names its pods */
  backend: string;
}

/**
 * `<backend>-<replicaset hash>-<pod suffix>`: the suite's weight test maps a pod to its backend by
 * dropping the last two dash-separated parts, and its other checks ask only for the prefix.
 */
export function podNameOf(backend: string): string {
  const suffix = (bytes: number) => randomBytes(bytes).toString('hex');
  return `${backend}-${suffix(5)}-${suffix(3)}`;
}

/** textproto.CanonicalMIMEHeaderKey: `x-header-add` → `X-Header-Add`. */
export function canonicalHeaderName(name: string): string {
  // Go leaves a name with a character outside the token set as it is.
  if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name)) return name;
  return name
    .toLowerCase()
    .replace(/(^|-)([a-z])/g, (_, dash: string, letter: string) => dash + letter.toUpperCase());
}

function headersOf(req: IncomingMessage): Record<string, string[]> {
  const headers: Record<string, string[]> = {};
  for (const [name, values] of Object.entries(req.headersDistinct)) {
    if (name === 'host' || values === undefined) continue;
    const canonical = canonicalHeaderName(name);
    headers[canonical] = [...(headers[canonical] ?? []), ...values];
  }
  return headers;
}

/** X-Echo-Set-Header: `Name:value,Name2:value2` becomes response headers (a repeated name joins with `,`). */
function echoSetHeaders(req: IncomingMessage, res: ServerResponse): void {
  for (const list of req.headersDistinct['x-echo-set-header'] ?? []) {
    for (const entry of list.split(',')) {
      const trimmed = entry.trim();
      if (trimmed === '') continue;
      const colon = trimmed.indexOf(':');
      const name = colon === -1 ? trimmed : trimmed.slice(0, colon);
      const value = colon === -1 ? '' : trimmed.slice(colon + 1).trim();
      if (name === '') continue;
      const before = res.getHeader(name);
      res.setHeader(name, before === undefined ? value : `${String(before)},${value}`);
    }
  }
}

/** An echo-basic look-alike; `pod` defaults to a fresh pod name of `identity.backend`. */
export function conformanceEcho(identity: EchoIdentity, pod = podNameOf(identity.backend)): Server {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const address = server.address();
      const echoed: EchoedRequest = {
        path: req.url ?? '',
        host: req.headers.host ?? '',
        method: req.method ?? '',
        proto: `HTTP/${req.httpVersion}`,
        headers: headersOf(req),
        httpPort: typeof address === 'object' && address !== null ? String(address.port) : '',
        namespace: identity.namespace,
        ingress: '',
        service: '',
        pod,
      };
      echoSetHeaders(req, res);
      res.setHeader('content-type', 'application/json');
      res.setHeader('x-content-type-options', 'nosniff');
      res.end(JSON.stringify(echoed, null, ' '));
    });
  });
  return server;
}
