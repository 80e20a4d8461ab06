// Wiring for one process: source → scheduler → buildModel → data plane swap, plus health and logs.
// The source is a manifests folder (--manifests, standalone) or the Kubernetes API; both feed the
// same scheduler.

import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import type { DestinationStream } from 'pino';
import { type AccessLog, createAccessLog } from './access-log.ts';
import type { Config } from './config/flags.ts';
import { DataPlane } from './dataplane/dataplane.ts';
import {
  dataplaneError,
  type RequestFailure,
  requestFailed,
  requestLogged,
  requestRefused,
} from './dataplane/events.ts';
import type { RequestRecord } from './dataplane/request-record.ts';
import { type CertificatePair, generateDefaultCertificate } from './dataplane/sni.ts';
import { type CertificateCache, describeRuntime } from './debug-model.ts';
import { createHealthz } from './healthz.ts';
import type { Logger } from './log.ts';
import { type ControllerMetrics, createControllerMetrics } from './metrics/controller.ts';
import { excludedSocketMetrics } from './metrics/requests.ts';
import {
  buildModel,
  DEFAULT_GLOBAL_CONFIG,
  type Diagnostic,
  type ModelReferences,
  redactText,
  type Snapshot,
} from './model/index.ts';
import { createManifestSource } from './source/manifests/source.ts';
import { createScheduler } from './store/scheduler.ts';

export interface Controller {
  readonly http: AddressInfo;
  readonly https: AddressInfo;
  readonly healthz: AddressInfo;
  readonly dataPlane: DataPlane;
  /**
   * Graceful stop: /healthz 500 at once, keep serving (and accepting) for the grace period, then stop
   * accepting and let the requests in flight finish for up to the drain timeout, WebSockets closed last.
   * Without arguments: --shutdown-grace-period and ConfigMap worker-shutdown-timeout. A grace period
   * given without a drain timeout drains for 0 ms (tests: stop(0) cuts everything at once).
   */
  stop(gracePeriodMs?: number, drainTimeoutMs?: number): Promise<void>;
}

/** The string fields of a data-plane event, URL-looking words redacted. */
function redactFields(message: unknown): object {
  if (typeof message !== 'object' || message === null) return { message: redactText(String(message)) };
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(message)) {
    out[key] = typeof value === 'string' ? redactText(value) : value;
  }
  return out;
}

const levelOf = (d: Diagnostic) =>
  d.severity === 'error' ? 'error' : d.severity === 'warning' ? 'warn' : 'info';

const diagnosticKey = (d: Diagnostic) => `${d.kind}/${d.namespace}/${d.name}/${d.code}/${d.message}`;

export interface StartOptions {
  /** the package version, for build_info */
  version?: string;
  /** POD_NAMESPACE / POD_NAME (default: process.env) */
  env?: NodeJS.ProcessEnv;
  /** where access log lines go when the ConfigMap says stdout (tests); default: fd 1, asynchronously */
  accessLogStdout?: DestinationStream;
  /** pretty-print access log lines (a terminal) */
  prettyLogs?: boolean;
}

/** Where objects come from: a manifests folder or the Kubernetes API. */
interface Source {
  start(): Promise<void>;
  stop(): Promise<void>;
  snapshot(): Snapshot;
  setReferences?(references: ModelReferences): void;
  /** standalone mode: the findings about the manifest files (bad documents, ignored objects) */
  problems?(): readonly Diagnostic[];
  /** Kubernetes mode: each watched kind's restarts after errors */
  informers?(): ReadonlyArray<{ kind: string; restarts: number }>;
  /** log fields saying where from, and the message once the first read is complete */
  where: Record<string, unknown>;
  readMessage: string;
  /** Kubernetes mode: how to reach the API server, and the (lazily loaded) modules */
  kube?: { kubeConfig: KubeConfig; modules: KubeModules };
}

type KubeModules = typeof import('./source/kube/index.ts');

async function createSource(config: Config, log: Logger, onChange: () => void): Promise<Source> {
  if (config.manifests !== null) {
    const manifests = createManifestSource({
      dir: config.manifests,
      model: config.model,
      onChange,
      onProblem: (problem) =>
        log[levelOf(problem)](
          {
            file: problem.file,
            line: problem.line,
            object: `${problem.kind} ${problem.namespace === '' ? problem.name : `${problem.namespace}/${problem.name}`}`,
            code: problem.code,
          },
          problem.message,
        ),
    });
    return { ...manifests, where: { dir: config.manifests }, readMessage: 'manifests read' };
  }
  const modules: KubeModules = await import('./source/kube/index.ts');
  const { loadKubeConfig, createKubeSource } = modules;
  const { kubeconfig, apiserverHost, certificateAuthority } = config.kube;
  const kubeConfig = loadKubeConfig(
    kubeconfig,
    process.env,
    apiserverHost === null ? null : { server: apiserverHost, caFile: certificateAuthority },
  );
  const server = kubeConfig.getCurrentCluster()?.server;
  const kube = createKubeSource({
    kubeConfig,
    watchNamespace: config.kube.watchNamespace,
    namespaceSelector: config.kube.namespaceSelector,
    model: config.model,
    // its address goes into Ingress status: a change must reach the status writer
    watchedServices: config.kube.publishService === null ? [] : [config.kube.publishService],
    onChange,
    onWatchError: (kind, error, retryInMs) =>
      log.warn({ kind, err: error, retryInMs }, `watching ${kind} objects failed; retrying`),
  });
  return { ...kube, where: { server }, readMessage: 'cluster objects listed', kube: { kubeConfig, modules } };
}

export async function start(config: Config, log: Logger, options: StartOptions = {}): Promise<Controller> {
  // Data-plane errors quote URLs (a mirror target, an auth URL as requested): never their credentials.
  const onDataplaneError = (message: unknown) => log.warn(redactFields(message), 'data plane');
  subscribe(dataplaneError.name, onDataplaneError);

  // The first read (or list) overlaps the default certificate's key generation (libuv's pool).
  // A change the source sees before the scheduler exists needs nothing: the first build reads all.
  let onSourceChange = () => {};
  const source = await createSource(config, log, () => onSourceChange());
  const reading = performance.now();
  let generatedDefaultCertificate: CertificatePair;
  try {
    [generatedDefaultCertificate] = await Promise.all([generateDefaultCertificate(), source.start()]);
  } catch (error) {
    await source.stop();
    throw error;
  }
  const first = source.snapshot();
  log.info(
    {
      ...source.where,
      ingresses: first.ingresses.length,
      services: first.services.length,
      endpointSlices: first.endpointSlices.length,
      secrets: first.secrets.length,
      readMs: Math.round(performance.now() - reading),
    },
    source.readMessage,
  );

  const dataPlane = new DataPlane({
    httpPort: config.httpPort,
    httpsPort: config.httpsPort,
    bindAddress: config.bindAddress,
    generatedDefaultCertificate,
    sslPassthrough: config.model.enableSslPassthrough,
  });

  const env = options.env ?? process.env;
  const metrics: ControllerMetrics | null = config.enableMetrics
    ? createControllerMetrics({
        controllerClass: config.model.controllerClass,
        podNamespace: env.POD_NAMESPACE || 'default',
        podName: env.POD_NAME ?? '',
        version: options.version ?? 'unknown',
        dataPlaneStats: () => dataPlane.stats,
        requests: config.requestMetrics,
        electionId: source.kube !== undefined && config.kube.leaderElection ? config.kube.electionId : null,
        informers: source.informers,
      })
    : null;
  const unknownExcluded = excludedSocketMetrics(config.requestMetrics.exclude).unknown;
  if (unknownExcluded.length > 0) {
    log.warn(
      { names: unknownExcluded },
      '--exclude-socket-metrics names metrics ingress-ts does not have; ignored',
    );
  }

  // the data plane's error boundary: an error log line with the request id, and the counter
  const onRequestFailed = (message: unknown) => {
    const failure = message as RequestFailure;
    metrics?.requestFailed(failure.where);
    log.error(
      {
        where: failure.where,
        req_id: failure.requestId,
        // an exception's text may quote a URL it was handed (a mirror target, an auth URL)
        err: { message: redactText(failure.message), stack: redactText(failure.stack) },
      },
      'data plane: unexpected exception while serving (contained: answered 500 or closed)',
    );
  };
  subscribe(requestFailed.name, onRequestFailed);

  // one subscriber for every finished request: metrics, then the access log line
  const accessLog: AccessLog = createAccessLog({
    log,
    stdout: options.accessLogStdout,
    pretty: options.prettyLogs,
  });
  let accessLogOn = false;
  const onRequest = (message: unknown) => {
    const record = message as RequestRecord;
    metrics?.observe(record);
    if (accessLogOn) accessLog.write(record);
  };
  /** requests refused before routing: an access log line, no metrics (as NGINX) */
  const onRefused = (message: unknown) => accessLog.write(message as RequestRecord);
  let subscribed = false;
  let refusalsSubscribed = false;
  /** Records are built only while somebody reads them. */
  const subscribeRequests = (wanted: boolean, refusals: boolean) => {
    if (wanted !== subscribed) {
      subscribed = wanted;
      if (wanted) subscribe(requestLogged.name, onRequest);
      else unsubscribe(requestLogged.name, onRequest);
    }
    if (refusals !== refusalsSubscribed) {
      refusalsSubscribed = refusals;
      if (refusals) subscribe(requestRefused.name, onRefused);
      else unsubscribe(requestRefused.name, onRefused);
    }
  };

  let reported = new Set<string>();
  /** diagnostics of the last applied build, for /debug/model */
  let appliedDiagnostics: readonly Diagnostic[] = [];
  /** the objects of the last build */
  let latestSnapshot = source.snapshot();
  const scheduler = createScheduler({
    run: () => {
      const started = performance.now();
      const snapshot = source.snapshot();
      const { model, diagnostics, references } = buildModel(snapshot, config.model);
      source.setReferences?.(references);
      const built = performance.now();
      const kind = dataPlane.swap(model);
      const swapped = performance.now();
      appliedDiagnostics = diagnostics;
      latestSnapshot = snapshot;
      reporting?.afterBuild(snapshot, diagnostics);
      metrics?.applied({
        routesHash: model.routesHash,
        kind,
        buildSeconds: (built - started) / 1000,
        swapSeconds: (swapped - built) / 1000,
        diagnostics,
        model,
      });
      accessLog.configure(model.config.accessLog);
      accessLogOn = !model.config.accessLog.disabled;
      subscribeRequests(metrics !== null || accessLogOn, accessLogOn);
      const current = new Set<string>();
      for (const diagnostic of diagnostics) {
        const key = diagnosticKey(diagnostic);
        current.add(key);
        if (reported.has(key)) continue;
        log[levelOf(diagnostic)](
          { object: `${diagnostic.kind} ${diagnostic.namespace}/${diagnostic.name}`, code: diagnostic.code },
          diagnostic.message,
        );
      }
      reported = current;
      if (kind !== 'unchanged') {
        log.info(
          {
            swap: kind,
            hosts: model.servers.length,
            upstreams: Object.keys(model.upstreams).length,
            buildMs: Math.round(built - started),
            swapMs: Math.round(swapped - built),
          },
          'configuration applied',
        );
      }
    },
    onError: (error: unknown) => {
      metrics?.failed();
      log.error({ err: error }, 'building the configuration failed; the previous one keeps serving');
    },
  });

  // Kubernetes mode: the elected leader writes Ingress status and Events
  const reporting =
    source.kube === undefined
      ? null
      : source.kube.modules.createReporting({
          kubeConfig: source.kube.kubeConfig,
          flags: config.kube,
          classes: config.model,
          identity: env.POD_NAME || hostname(),
          namespace: env.POD_NAMESPACE || 'default',
          log,
          onLeader: (leader) => metrics?.setLeader(leader),
          latest: () => ({ snapshot: latestSnapshot, diagnostics: appliedDiagnostics }),
        });
  if (reporting !== null && !reporting.leader) metrics?.setLeader(false);

  onSourceChange = () => scheduler.trigger();
  scheduler.trigger();
  await scheduler.idle();
  reporting?.start();
  const addresses = await dataPlane.listen();
  const certificateCache: CertificateCache = new Map();
  const debugModel = () => {
    const runtime = dataPlane.current;
    if (runtime === null) return null;
    // the source's findings (a manifest document that does not parse) first: no build sees them
    const problems = source.problems?.() ?? [];
    const diagnostics = problems.length === 0 ? appliedDiagnostics : [...problems, ...appliedDiagnostics];
    return describeRuntime(runtime, diagnostics, certificateCache);
  };
  const healthz = createHealthz(() => dataPlane.current !== null, metrics === null ? null : metrics.scrape, {
    debugModel,
    readinessPath: config.healthCheckPath,
  });
  const healthzAddress = await healthz.listen(
    config.healthzPort,
    config.healthzHost === '' ? config.bindAddress : config.healthzHost,
  );

  let stopping: Promise<void> | null = null;
  return {
    ...addresses,
    healthz: healthzAddress,
    dataPlane,
    stop(gracePeriodMs, drainTimeoutMs) {
      const graceMs = gracePeriodMs ?? config.shutdownGracePeriod * 1000;
      stopping ??= (async () => {
        healthz.shuttingDown();
        // ingress-nginx sleeps the grace period before `nginx -s quit`: still serving, still syncing
        if (graceMs > 0) await new Promise((resolve) => setTimeout(resolve, graceMs));
        const configured =
          dataPlane.current?.model.config.workerShutdownTimeoutMs ??
          DEFAULT_GLOBAL_CONFIG.workerShutdownTimeoutMs;
        const drainMs = drainTimeoutMs ?? (gracePeriodMs === undefined ? configured : 0);
        await reporting?.stop(); // releases the Lease: a successor need not wait for the TTL
        await source.stop();
        scheduler.stop();
        await dataPlane.close(drainMs);
        await healthz.close();
        subscribeRequests(false, false);
        await accessLog.close();
        unsubscribe(dataplaneError.name, onDataplaneError);
        unsubscribe(requestFailed.name, onRequestFailed);
      })();
      return stopping;
    },
  };
}
