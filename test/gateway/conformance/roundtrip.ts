// The suite's roundtripper and its response checks (conformance/utils/http/http.go): a request as
// MakeRequest builds it, CompareRoundTrip's rules for what a response must show, and
// MakeRequestAndExpectEventuallyConsistentResponse's "three matching answers in a row". Where the
// suite sleeps a second between attempts, a mismatch here waits for the data plane's next swap:
// until the model changes, the same request gets the same answer.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import type { PeerCertificate } from 'node:tls';
import { runtimeSwapped } from '../../../lib/dataplane/events.ts';
import type { EchoedRequest } from '../../support/conformance-echo.ts';

export interface RoundTripRequest {
  /** the Host header; default: the Gateway's address */
  host?: string;
  /** the request target, query included */
  path: string;
  method?: string;
  /** one value each */
  headers?: Record<string, string>;
  /** to ingress-ts's HTTPS port, trusting the suite's certificate */
  https?: boolean;
  /** TLS server name; default: the Host without its port (none for an IP address) */
  sni?: string;
  /** BackendSetResponseHeaders: the headers the echo answers with (sent as X-Echo-Set-Header) */
  backendSetResponseHeaders?: Record<string, string>;
}

export interface CapturedResponse {
  status: number;
  /** lower-case names, one entry per header line */
  headers: Record<string, string[]>;
  body: string;
  /** the echo's account, when the answer is `application/json` (the only case the suite parses) */
  echoed?: EchoedRequest;
}

export interface Ports {
  http: number;
  https: number;
  ca: string;
  defaultHost: string;
}

/**
 * Go's VerifyHostname for DNS names (crypto/x509 matchHostnames): a `*` label matches one label,
 * leftmost only, and `*.org` is allowed. Node's own check refuses a wildcard right above the top
 * level, and the suite's certificate is exactly that (`*`, `*.org`, `*.wildcard.org`), so the
 * suite's client accepts names Node's would not.
 */
export function goVerifyHostname(host: string, cert: PeerCertificate): Error | undefined {
  const wanted = host.toLowerCase().replace(/\.$/, '').split('.');
  const names = (cert.subjectaltname ?? '')
    .split(', ')
    .filter((entry) => entry.startsWith('DNS:'))
    .map((entry) => entry.slice(4).toLowerCase());
  const matches = (pattern: string) => {
    const labels = pattern.replace(/\.$/, '').split('.');
    return (
      labels.length === wanted.length &&
      labels.every((label, i) => label === wanted[i] || (i === 0 && label === '*' && wanted[i] !== ''))
    );
  };
  return names.some(matches)
    ? undefined
    : new Error(`x509: certificate is not valid for ${host}: ${names.join(', ')}`);
}

/** One request on a connection of its own, as the suite's roundtripper sends it. */
export function roundTrip(request: RoundTripRequest, ports: Ports): Promise<CapturedResponse> {
  const host = request.host ?? ports.defaultHost;
  // MakeRequest always sends X-Echo-Set-Header, empty when the test wants no backend headers
  const echoSet = Object.entries(request.backendSetResponseHeaders ?? {}).map(
    ([name, value]) => `${name}:${value}`,
  );
  const headers = { ...request.headers, host, 'x-echo-set-header': echoSet.join(',') };
  const bareHost = host.replace(/:\d+$/, '');
  const servername = request.sni ?? (isIP(bareHost) === 0 ? bareHost : undefined);
  return new Promise((resolve, reject) => {
    const onResponse = (res: IncomingMessage) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => {
        const captured: CapturedResponse = { status: res.statusCode ?? 0, headers: {}, body };
        for (const [name, values] of Object.entries(res.headersDistinct))
          if (values !== undefined) captured.headers[name] = values;
        if (res.headers['content-type'] === 'application/json') {
          try {
            captured.echoed = JSON.parse(body) as EchoedRequest;
          } catch {
            // not the echo's JSON: the checks below report what is missing
          }
        }
        resolve(captured);
      });
    };
    const common = {
      host: '127.0.0.1',
      method: request.method ?? 'GET',
      path: request.path,
      headers,
      agent: false,
    };
    const req = request.https
      ? httpsRequest(
          { ...common, port: ports.https, ca: ports.ca, servername, checkServerIdentity: goVerifyHostname },
          onResponse,
        )
      : httpRequest({ ...common, port: ports.http }, onResponse);
    req.on('error', reject);
    req.end();
  });
}

export interface ExpectedResponse {
  request: RoundTripRequest;
  /** what the backend must see; default: `request` (its path, method and headers) */
  expectedRequest?: {
    host?: string;
    path?: string;
    method?: string;
    headers?: Record<string, string>;
    absentHeaders?: string[];
  };
  /** a 3xx's Location: unset parts default as setRedirectRequestDefaults does */
  redirectRequest?: { scheme?: string; host?: string; port?: string; path?: string };
  response?: { statusCodes?: number[]; headers?: Record<string, string>; absentHeaders?: string[] };
  /** the pod name's prefix: the backend that must answer */
  backend?: string;
  namespace?: string;
}

const isRedirect = (status: number) => [300, 301, 302, 303, 304, 307, 308].includes(status);
const isTimeout = (status: number) => status === 408 || status === 504;
const joined = (values: readonly string[] | undefined) => values?.join(',');

function lowerCased(headers: Record<string, string[]>): Record<string, string[]> {
  const result: Record<string, string[]> = {};
  for (const [name, values] of Object.entries(headers)) result[name.toLowerCase()] = values;
  return result;
}

function compareEchoed(expected: ExpectedResponse, captured: CapturedResponse): string | undefined {
  const echoed = captured.echoed;
  if (echoed === undefined)
    return `no echoed request in the ${captured.status} answer: ${captured.body.slice(0, 200)}`;
  const want = expected.expectedRequest ?? {
    path: expected.request.path,
    method: expected.request.method,
    headers: expected.request.headers,
  };
  const method = want.method ?? 'GET';
  if (want.host !== undefined && want.host !== echoed.host)
    return `expected host to be ${want.host}, got ${echoed.host}`;
  if ((want.path ?? '') !== echoed.path) return `expected path to be ${want.path ?? ''}, got ${echoed.path}`;
  if (method !== echoed.method) return `expected method to be ${method}, got ${echoed.method}`;
  if ((expected.namespace ?? '') !== echoed.namespace)
    return `expected namespace to be ${expected.namespace ?? ''}, got ${echoed.namespace}`;
  const seen = lowerCased(echoed.headers);
  for (const [name, value] of Object.entries(want.headers ?? {})) {
    const actual = joined(seen[name.toLowerCase()]);
    if (actual === undefined)
      return `expected ${name} header to be set, actual headers: ${JSON.stringify(seen)}`;
    if (actual !== value) return `expected ${name} header to be set to ${value}, got ${actual}`;
  }
  const answered = lowerCased(captured.headers);
  for (const [name, value] of Object.entries(expected.response?.headers ?? {})) {
    const actual = joined(answered[name.toLowerCase()]);
    if (actual !== value) return `expected response header ${name} to be ${value}, got ${actual}`;
  }
  for (const name of expected.response?.absentHeaders ?? [])
    if (answered[name.toLowerCase()] !== undefined) return `expected response header ${name} to not be set`;
  for (const name of want.absentHeaders ?? [])
    if (seen[name.toLowerCase()] !== undefined)
      return `expected ${name} header to not be set, got ${joined(seen[name.toLowerCase()])}`;
  if (!echoed.pod.startsWith(expected.backend ?? ''))
    return `expected pod name to start with ${expected.backend}, got ${echoed.pod}`;
  return undefined;
}

function compareRedirect(expected: ExpectedResponse, captured: CapturedResponse): string | undefined {
  const want = expected.redirectRequest;
  if (want === undefined) return undefined;
  const location = captured.headers.location?.[0];
  if (location === undefined) return `a ${captured.status} without a Location`;
  const requestScheme = expected.request.https ? 'https' : 'http';
  let url: URL;
  try {
    url = new URL(location, `${requestScheme}://${expected.request.host ?? 'gateway'}`);
  } catch {
    return `an unparsable Location: ${location}`;
  }
  const got = { scheme: url.protocol.slice(0, -1), host: url.hostname, port: url.port, path: url.pathname };
  // URL drops a port that is the scheme's default; the suite accepts it written or not
  const host = want.host ?? got.host;
  const scheme = want.scheme ?? requestScheme;
  const path = want.path ?? expected.request.path.split('?')[0];
  if (host !== got.host) return `expected redirected hostname to be "${host}", got "${got.host}"`;
  if (want.port === undefined) {
    if (got.port !== '')
      return `for ${got.scheme} scheme, expected redirected port to be the default, got "${got.port}"`;
  } else if (want.port !== got.port)
    return `expected redirected port to be "${want.port}", got "${got.port}"`;
  if (scheme !== got.scheme) return `expected redirected scheme to be "${scheme}", got "${got.scheme}"`;
  if (path !== got.path) return `expected redirected path to be "${path}", got "${got.path}"`;
  return undefined;
}

/** CompareRoundTrip: undefined when the answer is what `expected` describes, else why not. */
export function compareRoundTrip(expected: ExpectedResponse, captured: CapturedResponse): string | undefined {
  const statusCodes = expected.response?.statusCodes ?? [200];
  if (isTimeout(captured.status) && statusCodes.some(isTimeout)) return undefined;
  if (!statusCodes.includes(captured.status))
    return `expected status code to be one of ${statusCodes.join(', ')}, got ${captured.status}`;
  if (captured.status === 200 || captured.status === 204) return compareEchoed(expected, captured);
  if (isRedirect(captured.status)) return compareRedirect(expected, captured);
  return undefined;
}

/** Counts the data plane's swaps, so that a retry waits for a change rather than for time. */
/** Waiting for a state that changes: `until` resolves once `ready()` holds after a `wake()`. */
export class Condition {
  #waiters = new Set<() => void>();
  /** the state may have changed: the waiters look again */
  wake(): void {
    for (const waiter of [...this.#waiters]) waiter();
  }
  /** true once `ready()` holds, false when it did not within `timeoutMs` */
  until(ready: () => boolean, timeoutMs: number): Promise<boolean> {
    if (ready()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = () => {
        if (!ready()) return;
        clearTimeout(timer);
        this.#waiters.delete(waiter);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        resolve(false);
      }, timeoutMs);
      this.#waiters.add(waiter);
    });
  }
}

export class SwapCounter {
  count = 0;
  #swapped = new Condition();
  #onSwap = () => {
    this.count += 1;
    this.#swapped.wake();
  };
  constructor() {
    subscribe(runtimeSwapped.name, this.#onSwap);
  }
  /** true once a swap after `seen` happened, false when none came within `timeoutMs` */
  after(seen: number, timeoutMs: number): Promise<boolean> {
    return this.#swapped.until(() => this.count > seen, timeoutMs);
  }
  close(): void {
    unsubscribe(runtimeSwapped.name, this.#onSwap);
  }
}

/** The suite's RequiredConsecutiveSuccesses. */
export const REQUIRED_CONSECUTIVE_SUCCESSES = 3;
/** How long a wrong answer may wait for the next swap before the expectation fails. */
export const SWAP_WAIT_MS = 10_000;

/**
 * MakeRequestAndExpectEventuallyConsistentResponse: resolves after three matching answers in a
 * row; a wrong one (or a failed request) resets the count and waits for the next swap, and fails
 * when none comes. Returns the last answer.
 */
export async function expectEventually(
  send: (request: RoundTripRequest) => Promise<CapturedResponse>,
  swaps: SwapCounter,
  expected: ExpectedResponse,
  swapWaitMs = SWAP_WAIT_MS,
): Promise<CapturedResponse> {
  let successes = 0;
  for (;;) {
    const seen = swaps.count;
    let problem: string | undefined;
    let captured: CapturedResponse | undefined;
    try {
      captured = await send(expected.request);
      problem = compareRoundTrip(expected, captured);
    } catch (err) {
      problem = `the request failed: ${(err as Error).message}`;
    }
    if (problem === undefined && captured !== undefined) {
      successes += 1;
      if (successes >= REQUIRED_CONSECUTIVE_SUCCESSES) return captured;
      continue;
    }
    successes = 0;
    if (!(await swaps.after(seen, swapWaitMs))) {
      const { host, path, method } = expected.request;
      throw new Error(
        `${method ?? 'GET'} ${host ?? ''}${path}: ${problem} (and no swap within ${swapWaitMs} ms)`,
      );
    }
  }
}

/** extractBackendName: a pod name without its last two dash-separated parts. */
export function backendOfPod(pod: string): string {
  const parts = pod.split('-');
  return parts.length < 3 ? pod : parts.slice(0, -2).join('-');
}

/** TestWeightedDistribution's figures: 500 requests, 10 at a time, each share within ±5 points. */
export const WEIGHT_REQUESTS = 500;
export const WEIGHT_CONCURRENCY = 10;
export const WEIGHT_TOLERANCE = 0.05;
/** MaxTestRetries */
export const WEIGHT_ATTEMPTS = 10;

/**
 * TestWeightedDistribution: sends the requests through `send` (which resolves with the answering
 * pod, or rejects) and returns what is wrong with the shares seen: a backend outside `weights`,
 * a weight-0 backend that got traffic, a share off by more than the tolerance.
 */
export async function weightedDistributionProblems(
  send: () => Promise<string>,
  weights: Readonly<Record<string, number>>,
): Promise<string[]> {
  const seen = new Map<string, number>();
  let next = 0;
  const worker = async () => {
    while (next < WEIGHT_REQUESTS) {
      next += 1;
      const pod = await send();
      const backend = backendOfPod(pod);
      if (!(backend in weights)) throw new Error(`request was handled by an unexpected pod "${pod}"`);
      seen.set(backend, (seen.get(backend) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: WEIGHT_CONCURRENCY }, worker));
  const problems: string[] = [];
  const active = Object.values(weights).filter((w) => w > 0).length;
  if (seen.size !== active)
    problems.push(`expected ${active} backends to receive traffic, but got ${seen.size}`);
  for (const [backend, want] of Object.entries(weights)) {
    const count = seen.get(backend);
    if (count === undefined && want !== 0) {
      problems.push(`expect traffic to hit backend "${backend}" - but none was received`);
      continue;
    }
    const got = (count ?? 0) / WEIGHT_REQUESTS;
    if (Math.abs(got - want) > WEIGHT_TOLERANCE)
      problems.push(
        `backend "${backend}" weighted traffic of ${got} not within tolerance ${want} (+/-${WEIGHT_TOLERANCE})`,
      );
  }
  return problems.sort();
}
