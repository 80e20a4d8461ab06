// The Gateway API conformance suite (GATEWAY-HTTP, core) reproduced against a real ingress-ts: the
// fake API server with the Gateway API kinds served, the suite's base manifests (namespaces, the
// four shared Gateways, the backend Services) with echo-basic look-alikes behind every backend
// Service, its two certificate Secrets, and a controller started in this process on loopback
// ports. What the suite does with a cluster client (apply, patch, delete, wait for a status), a test
// here does through the harness; what the suite sends through its roundtripper, `request` sends to
// ingress-ts's real ports. The upstream manifests are vendored unchanged in manifests/.
import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generate } from 'selfsigned';
import type { Test } from 'tap';
import { parseAllDocuments } from 'yaml';
import { parseFlags } from '../../../lib/config/flags.ts';
import { createLogger } from '../../../lib/log.ts';
import { type Controller, start } from '../../../lib/main.ts';
import { conformanceEcho } from '../../support/conformance-echo.ts';
import {
  type FakeApiServer,
  type FakeApiServerOptions,
  type KubeObject,
  mergePatch,
  type ObjectRef,
  startFakeApiServer,
} from '../../support/fake-apiserver.ts';
import { LOOPBACK_PORT_0, listen } from '../../support/http.ts';
import { testThreadsKube } from '../../support/threads.ts';
import {
  type CapturedResponse,
  Condition,
  type ExpectedResponse,
  expectEventually,
  type RoundTripRequest,
  roundTrip,
  SwapCounter,
} from './roundtrip.ts';
import { gatewayClassMustBeAccepted, namespacesMustBeReady } from './status.ts';
import { type WatchedKind, watchUntil } from './watch.ts';

export const INFRA_NAMESPACE = 'gateway-conformance-infra';
export const APP_BACKEND_NAMESPACE = 'gateway-conformance-app-backend';
export const WEB_BACKEND_NAMESPACE = 'gateway-conformance-web-backend';
export const GATEWAY_CLASS_NAME = 'gateway-conformance';
/** not the default, so that a passing test shows the flag reached the controller */
export const CONTROLLER_NAME = 'ingress-ts.dev/gateway-conformance';
/** --publish-status-address: every Gateway's status.addresses, and the Host a request without one sends */
export const GATEWAY_ADDRESS = '127.0.0.1';

/** The base manifests' Deployments of echo-basic, by namespace and `app` label. */
const ECHO_BACKENDS: ReadonlyArray<readonly [namespace: string, backend: string]> = [
  [INFRA_NAMESPACE, 'infra-backend-v1'],
  [INFRA_NAMESPACE, 'infra-backend-v2'],
  [INFRA_NAMESPACE, 'infra-backend-v3'],
  [APP_BACKEND_NAMESPACE, 'app-backend-v1'],
  [APP_BACKEND_NAMESPACE, 'app-backend-v2'],
  [WEB_BACKEND_NAMESPACE, 'web-backend'],
];

const MANIFESTS = new URL('./manifests/', import.meta.url);

/** A vendored manifest file with the suite's placeholders filled in, one object per document. */
export function readManifests(file: string): KubeObject[] {
  const text = readFileSync(new URL(file, MANIFESTS), 'utf8')
    .replaceAll('{GATEWAY_CLASS_NAME}', GATEWAY_CLASS_NAME)
    .replaceAll('{GATEWAY_CONTROLLER_NAME}', CONTROLLER_NAME);
  return parseAllDocuments(text)
    .map((doc) => doc.toJS() as KubeObject | null)
    .filter((obj): obj is KubeObject => obj !== null && typeof obj === 'object');
}

export interface CertificatePem {
  crt: string;
  key: string;
}

/** MustCreateSelfSignedCertSecret: one self-signed certificate for these DNS names (CN "default"). */
async function selfSigned(hosts: readonly string[]): Promise<CertificatePem> {
  const pems = await generate([{ name: 'commonName', value: 'default' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'subjectAltName', altNames: hosts.map((value) => ({ type: 2, value })) },
    ],
  });
  return { crt: pems.cert, key: pems.private };
}

function tlsSecret(namespace: string, name: string, pem: CertificatePem): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    type: 'kubernetes.io/tls',
    data: {
      'tls.crt': Buffer.from(pem.crt).toString('base64'),
      'tls.key': Buffer.from(pem.key).toString('base64'),
    },
  };
}

// The suite's two programmatic Secrets, made once per test process: every harness serves the same.
let certificates: Promise<{ web: CertificatePem; validity: CertificatePem }> | undefined;
function suiteCertificates(): Promise<{ web: CertificatePem; validity: CertificatePem }> {
  certificates ??= Promise.all([selfSigned(['*']), selfSigned(['*', '*.org', '*.wildcard.org'])]).then(
    ([web, validity]) => ({ web, validity }),
  );
  return certificates;
}

export interface ConformanceOptions {
  /**
   * Serve the Gateway API kinds and load the base Gateways, the GatewayClass and wait for them as
   * the suite's setup does (default true). false: only the namespaces, the backends and the
   * Secrets, for checking the harness with an Ingress.
   */
  gatewayApi?: boolean;
  /** the test's manifest files (in manifests/), applied after the base as the suite applies them */
  manifests?: readonly string[];
  /** more controller flags */
  flags?: readonly string[];
}

export interface Conformance {
  readonly api: FakeApiServer;
  readonly controller: Controller;
  /** the PEM of tls-validity-checks-certificate, which HTTPS requests trust */
  readonly validityCertificate: CertificatePem;
  /** creates or replaces objects; a Service selecting an echo Deployment gets its EndpointSlice */
  apply(objects: readonly KubeObject[]): void;
  /** deletes an object (and the EndpointSlice its Service was given) */
  remove(ref: ObjectRef): void;
  /** a JSON merge patch of the stored object, as `kubectl patch --type merge` */
  patch(ref: ObjectRef, patch: Record<string, unknown>): KubeObject;
  get(ref: ObjectRef): KubeObject | undefined;
  /** resolves once `check` finds no problem in the objects the watch shows (see watch.ts) */
  waitFor(
    kind: WatchedKind,
    where: { namespace?: string; name?: string },
    check: (objects: readonly KubeObject[]) => string[],
    what: string,
    timeoutMs?: number,
  ): Promise<readonly KubeObject[]>;
  /** one request to ingress-ts's HTTP (or HTTPS) port */
  request(request: RoundTripRequest): Promise<CapturedResponse>;
  /**
   * MakeRequestAndExpectEventuallyConsistentResponse: three answers in a row as `expected` says,
   * a wrong one waiting for the next swap (roundtrip.ts, up to `swapWaitMs`); one assertion in `t`.
   */
  expectResponse(
    t: Test,
    expected: ExpectedResponse,
    name?: string,
    swapWaitMs?: number,
  ): Promise<CapturedResponse>;
  /** the echo port behind a backend (the "pod IP and port" of the suite's EndpointSlice patches) */
  echoPort(namespace: string, backend: string): number;
  /**
   * ExpectMirroredRequest: true once the backend's echo was sent a request for `target` (path and
   * query) since the harness started, as the suite finds it in the pod's log; false after `timeoutMs`.
   */
  echoed(namespace: string, backend: string, target: string, timeoutMs: number): Promise<boolean>;
}

/** The request targets each echo was sent, and who waits for one: the echo pods' logs. */
class EchoLog {
  #seen = new Map<string, Set<string>>();
  #recorded = new Condition();
  record(echo: string, target: string): void {
    const targets = this.#seen.get(echo) ?? new Set<string>();
    targets.add(target);
    this.#seen.set(echo, targets);
    this.#recorded.wake();
  }
  seen(echo: string, target: string, timeoutMs: number): Promise<boolean> {
    return this.#recorded.until(() => this.#seen.get(echo)?.has(target) === true, timeoutMs);
  }
}

/** GetTestCaseName: how the suite names a request's subtest (`i` its index in the test's table) */
export function testCaseName(expected: ExpectedResponse, i?: number): string {
  const { host, path, headers } = expected.request;
  const index = i === undefined ? '' : `${i} `;
  const request = `${index}request to '${host ?? ''}${path}'${headers === undefined ? '' : ' with headers'}`;
  return expected.backend
    ? `${request} should go to ${expected.backend}`
    : `${request} should receive one of ${(expected.response?.statusCodes ?? [200]).join(', ')}`;
}

function endpointSliceFor(service: KubeObject, port: number): KubeObject {
  const name = service.metadata?.name ?? '';
  const ports = ((service.spec as { ports?: Array<{ name?: string }> } | undefined)?.ports ?? []).map(
    (p) => ({
      name: p.name ?? '',
      port,
      protocol: 'TCP',
    }),
  );
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: `${name}-echo`,
      namespace: service.metadata?.namespace,
      labels: { 'kubernetes.io/service-name': name },
    },
    addressType: 'IPv4',
    ports,
    endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true, serving: true, terminating: false } }],
  };
}

/**
 * The Service with every targetPort on the echo's port: a pod of the suite listens on each port its
 * Service targets, and ingress-ts (as ingress-nginx) uses the targetPort for the slice ports whose
 * name differs from the Service port asked for, so 3000 would name a port nobody listens on here.
 */
function onEchoPort(service: KubeObject, slice: KubeObject): KubeObject {
  const port = (slice.ports as Array<{ port: number }>)[0]?.port;
  const spec = service.spec as { ports?: Array<Record<string, unknown>> } | undefined;
  const ports = spec?.ports?.map((p) => ({ ...p, targetPort: port }));
  return { ...service, spec: { ...spec, ports } };
}

const GATEWAY_API_KINDS = new Set(['Gateway', 'GatewayClass', 'HTTPRoute', 'ReferenceGrant']);

/** Everything of the base manifests ingress-ts reads; Deployments become the echo servers. */
function baseObjects(gatewayApi: boolean): KubeObject[] {
  return readManifests('base.yaml').flatMap((obj): KubeObject[] => {
    if (obj.kind === 'Namespace') {
      const name = obj.metadata?.name ?? '';
      // the API server's own label, which from: Selector tests select on
      const labels = { ...obj.metadata?.labels, 'kubernetes.io/metadata.name': name };
      return [{ ...obj, metadata: { ...obj.metadata, labels } }];
    }
    if (obj.kind === 'Service') return [obj];
    if (obj.kind === 'Gateway' && gatewayApi) return [obj];
    return [];
  });
}

/**
 * The suite's loop over a test's table: one subtest per expected response, named as the suite
 * names it, each awaiting its eventually consistent answer (the suite runs them in parallel).
 */
export async function expectAll(t: Test, h: Conformance, cases: readonly ExpectedResponse[]): Promise<void> {
  for (const [i, expected] of cases.entries()) {
    const name = testCaseName(expected, i);
    await t.test(name, async (t) => {
      await h.expectResponse(t, expected, name);
    });
  }
}

/** Starts echo servers, the fake API server and ingress-ts; everything stops in `t`'s teardown. */
export async function startConformance(t: Test, options: ConformanceOptions = {}): Promise<Conformance> {
  const gatewayApi = options.gatewayApi ?? true;
  const echoes = new Map<string, number>();
  const echoLog = new EchoLog();
  for (const [namespace, backend] of ECHO_BACKENDS) {
    const server: Server = conformanceEcho({ namespace, backend });
    server.on('request', (req: IncomingMessage) => echoLog.record(`${namespace}/${backend}`, req.url ?? ''));
    echoes.set(`${namespace}/${backend}`, await listen(server));
    t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  }
  const { web, validity } = await suiteCertificates();
  const threads = testThreadsKube([], INFRA_NAMESPACE);
  // The Gateway API kinds and their discovery document are served only when a test asks, as a
  // cluster has them only once the CRDs are installed.
  const apiOptions: FakeApiServerOptions & { gatewayApi?: boolean } = {
    gatewayApi,
    objects: threads.objects,
  };
  const api = await startFakeApiServer(apiOptions);
  t.teardown(() => api.close());

  const echoSlice = (service: KubeObject): KubeObject | undefined => {
    const app = (service.spec as { selector?: Record<string, string> } | undefined)?.selector?.app;
    const port = echoes.get(`${service.metadata?.namespace}/${app}`);
    return app === undefined || port === undefined ? undefined : endpointSliceFor(service, port);
  };
  const apply = (objects: readonly KubeObject[]) => {
    for (const obj of objects) {
      if (!gatewayApi && GATEWAY_API_KINDS.has(obj.kind ?? '')) continue;
      const slice = obj.kind === 'Service' ? echoSlice(obj) : undefined;
      api.apply(slice === undefined ? obj : onEchoPort(obj, slice));
      if (slice !== undefined) api.apply(slice);
    }
  };

  apply(baseObjects(gatewayApi));
  apply([tlsSecret(WEB_BACKEND_NAMESPACE, 'certificate', web)]);
  apply([tlsSecret(INFRA_NAMESPACE, 'tls-validity-checks-certificate', validity)]);
  if (gatewayApi) {
    apply([
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'GatewayClass',
        metadata: { name: GATEWAY_CLASS_NAME },
        spec: { controllerName: CONTROLLER_NAME },
      },
    ]);
  }

  const kubeconfig = await api.writeKubeconfig();
  const parsed = parseFlags([
    '--kubeconfig',
    kubeconfig,
    ...LOOPBACK_PORT_0,
    '--log-level',
    'silent',
    '--disable-leader-election',
    '--publish-status-address',
    GATEWAY_ADDRESS,
    ...(gatewayApi ? ['--gateway-controller-name', CONTROLLER_NAME] : []),
    ...threads.flags,
    ...(options.flags ?? []),
  ]);
  if (parsed.kind !== 'run') throw new Error('expected flags that run');
  const controller = await start(parsed.config, createLogger('silent'));
  t.teardown(() => controller.stop(0));

  const swaps = new SwapCounter();
  t.teardown(() => swaps.close());
  const waitFor: Conformance['waitFor'] = (kind, where, check, what, timeoutMs) =>
    watchUntil(api, kind, where, check, what, timeoutMs);
  const request = (req: RoundTripRequest) =>
    roundTrip(req, {
      http: (controller.http as AddressInfo).port,
      https: (controller.https as AddressInfo).port,
      ca: validity.crt,
      defaultHost: GATEWAY_ADDRESS,
    });
  const harness: Conformance = {
    api,
    controller,
    validityCertificate: validity,
    apply,
    remove(ref) {
      const removed = api.remove(ref);
      if (removed?.kind === 'Service' && echoSlice(removed) !== undefined)
        api.remove({ kind: 'EndpointSlice', namespace: ref.namespace, name: `${ref.name}-echo` });
    },
    patch(ref, patch) {
      const current = api.get(ref);
      if (current === undefined) throw new Error(`patch: no ${ref.kind} ${ref.namespace ?? ''}/${ref.name}`);
      return api.apply(mergePatch(current, patch) as KubeObject);
    },
    get: (ref) => api.get(ref),
    waitFor,
    request,
    async expectResponse(t, expected, name, swapWaitMs) {
      const captured = await expectEventually(request, swaps, expected, swapWaitMs);
      t.pass(name ?? testCaseName(expected));
      return captured;
    },
    echoPort(namespace, backend) {
      const port = echoes.get(`${namespace}/${backend}`);
      if (port === undefined) throw new Error(`no echo backend ${namespace}/${backend}`);
      return port;
    },
    echoed: (namespace, backend, target, timeoutMs) =>
      echoLog.seen(`${namespace}/${backend}`, target, timeoutMs),
  };

  if (gatewayApi) {
    // the suite's setup: the GatewayClass is accepted, then the base Gateways are ready
    await gatewayClassMustBeAccepted(t, harness, GATEWAY_CLASS_NAME, 'True');
    await namespacesMustBeReady(t, harness, [INFRA_NAMESPACE, APP_BACKEND_NAMESPACE, WEB_BACKEND_NAMESPACE]);
  }
  for (const file of options.manifests ?? []) apply(readManifests(file));
  return harness;
}
