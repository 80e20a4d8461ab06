// Wiring for one process: flags → source → scheduler → controller (apply: build → data plane swap;
// report: status, metrics, logs) → health and debug endpoints, and the graceful stop. The source is
// a manifests folder (--manifests, standalone) or the Kubernetes API; both feed the same scheduler.

import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import type { DestinationStream } from 'pino';
import { createAccessLog } from './access-log.ts';
import { type AdmissionReviewed, admissionReviewed } from './admission/events.ts';
import { type AdmissionServer, startWebhook, type Webhook } from './admission/webhook.ts';
import type { Config } from './config/flags.ts';
import { type Applier, createApplier } from './controller/apply.ts';
import { createReporter, levelOf } from './controller/report.ts';
import { logDataPlaneErrors, observeTraffic, type Traffic } from './controller/traffic.ts';
import { DataPlane } from './dataplane/dataplane.ts';
import type { DataPlaneHandle } from './dataplane/handle.ts';
import { type CertificatePair, generateDefaultCertificate } from './dataplane/listening/sni.ts';
import { DataPlaneThreads } from './dataplane/worker/pool.ts';
import { resolveWorkerCount } from './dataplane/worker/worker-count.ts';
import { debugModelSource } from './debug-model.ts';
import { createHealthz, type Healthz } from './healthz.ts';
import type { Logger } from './log.ts';
import { type ControllerMetrics, createControllerMetrics } from './metrics/controller.ts';
import { excludedSocketMetrics } from './metrics/requests.ts';
import { createTrafficWindow } from './metrics/traffic.ts';
import {
  type BuildCaches,
  createBuildCaches,
  DEFAULT_GLOBAL_CONFIG,
  type Diagnostic,
  globalConfigOf,
  type ModelReferences,
  type Snapshot,
  type WorkerProcesses,
} from './model/index.ts';
import type { Reporting } from './source/kube/reporting.ts';
import type { WebhookCertificateRelay } from './source/kube/webhook-certificate.ts';
import { createManifestSource } from './source/manifests/source.ts';
import { startStartupCollection } from './startup-gc.ts';
import { createScheduler, type Scheduler } from './store/scheduler.ts';

export interface Controller {
  readonly http: AddressInfo;
  readonly https: AddressInfo;
  readonly healthz: AddressInfo;
  /**
   * The data plane of this process, for tests that look inside it; the controller itself reaches it
   * only through its DataPlaneHandle. Throws when the data plane runs in worker threads
   * (`worker-processes` > 1): nothing of it lives on this thread then.
   */
  readonly dataPlane: DataPlane;
  /** what the controller drives: the DataPlane, or the pool of data-plane threads */
  readonly handle: DataPlaneHandle;
  /** data-plane threads: 1 is the DataPlane on the main thread */
  readonly threads: number;
  /** the validating admission webhook (--validating-webhook), or null */
  readonly webhook: AdmissionServer | null;
  /**
   * Graceful stop: /healthz 500 at once, keep serving (and accepting) for the grace period, then stop
   * accepting and let the requests in flight finish for up to the drain timeout, WebSockets closed last.
   * Without arguments: --shutdown-grace-period and ConfigMap worker-shutdown-timeout. A grace period
   * given without a drain timeout drains for 0 ms (tests: stop(0) cuts everything at once).
   */
  stop(gracePeriodMs?: number, drainTimeoutMs?: number): Promise<void>;
}

export interface StartOptions {
  /** the package version, for build_info */
  version?: string;
  /** POD_NAMESPACE / POD_NAME (default: process.env) */
  env?: NodeJS.ProcessEnv;
  /** where access log lines go when the ConfigMap says stdout (tests); default: fd 1, asynchronously */
  accessLogStdout?: DestinationStream;
  /** pretty-print access log lines (a terminal) */
  prettyLogs?: boolean;
  /** tests that follow changes: /debug/model describes each new version at once (debug-routes.ts) */
  describeEveryVersion?: boolean;
  /** tests: the informers' retry backoff (default 500 ms doubling up to 30 s) */
  kubeBackoff?: { initialMs: number; maxMs: number };
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

async function createSource(config: Config, log: Logger, onChange: () => void, options: StartOptions) {
  if (config.manifests !== null) {
    const manifests = createManifestSource({
      dir: config.manifests,
      model: config.model,
      gatewayApi: config.gatewayApi,
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
    gatewayApi: config.gatewayApi,
    onGatewayApi: (state) => modules.logGatewayApiState(log, state),
    onChange,
    backoff: options.kubeBackoff,
    onWatchError: (kind, error, retryInMs) =>
      log.warn({ kind, err: error, retryInMs }, `watching ${kind} objects failed; retrying`),
  });
  return { ...kube, where: { server }, readMessage: 'cluster objects listed', kube: { kubeConfig, modules } };
}

/**
 * One thread: the DataPlane on the main thread, whose compile reuses the regexes the build compiled.
 * More: a pool of data-plane worker threads, each compiling the models it is posted.
 */
function createDataPlane(
  config: Config,
  threads: number,
  generatedDefaultCertificate: CertificatePair,
  buildCaches: BuildCaches,
): { handle: DataPlaneHandle; dataPlane: DataPlane | null } {
  const options = {
    httpPort: config.httpPort,
    httpsPort: config.httpsPort,
    bindAddress: config.bindAddress,
    generatedDefaultCertificate,
    sslPassthrough: config.model.enableSslPassthrough,
  };
  if (threads > 1) {
    // without metrics nobody reads the measures: the threads do not send them
    const handle = new DataPlaneThreads({ ...options, threads, measures: config.enableMetrics });
    return { handle, dataPlane: null };
  }
  const dataPlane = new DataPlane({ ...options, pathRegexes: buildCaches.pathRegexes });
  return { handle: dataPlane, dataPlane };
}

/** Reads the source for the first time while the default certificate's key is generated (libuv's pool). */
async function readFirst(source: Source, log: Logger): Promise<CertificatePair> {
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
  return generatedDefaultCertificate;
}

function createMetrics(
  config: Config,
  options: StartOptions,
  source: Source,
  handle: DataPlaneHandle,
  log: Logger,
): ControllerMetrics | null {
  const env = options.env ?? process.env;
  const metrics: ControllerMetrics | null = config.enableMetrics
    ? createControllerMetrics({
        controllerClass: config.model.controllerClass,
        podNamespace: env.POD_NAMESPACE || 'default',
        podName: env.POD_NAME ?? '',
        version: options.version ?? 'unknown',
        dataPlaneStats: () => handle.statsSnapshot(),
        requests: config.requestMetrics,
        electionId: source.kube !== undefined && config.kube.leaderElection ? config.kube.electionId : null,
        informers: source.informers,
        admission: config.webhook !== null,
      })
    : null;
  const unknownExcluded = excludedSocketMetrics(config.requestMetrics.exclude).unknown;
  if (unknownExcluded.length > 0) {
    log.warn(
      { names: unknownExcluded },
      '--exclude-socket-metrics names metrics ingress-ts does not have; ignored',
    );
  }
  return metrics;
}

/** Kubernetes mode: the elected leader writes Ingress status and Events. */
function createKubeReporting(
  config: Config,
  env: NodeJS.ProcessEnv,
  source: Source,
  log: Logger,
  metrics: ControllerMetrics | null,
  latest: () => ReturnType<Applier['latest']>,
  onLeader: (leader: boolean) => void,
): Reporting | null {
  if (source.kube === undefined) return null;
  const reporting = source.kube.modules.createReporting({
    kubeConfig: source.kube.kubeConfig,
    flags: config.kube,
    classes: config.model,
    identity: env.POD_NAME || hostname(),
    namespace: env.POD_NAMESPACE || 'default',
    log,
    onLeader: (leader) => {
      metrics?.setLeader(leader);
      onLeader(leader);
    },
    latest,
  });
  if (!reporting.leader) metrics?.setLeader(false);
  else onLeader(true); // without leader election this replica leads from the start
  return reporting;
}

/** --validating-webhook-secret: every replica watches the Secret; the leader writes it and the caBundle. */
function startWebhookCertificate(
  config: Config,
  source: Source,
  log: Logger,
): WebhookCertificateRelay | null {
  const flags = config.kube.webhookCertificate;
  if (flags === null || source.kube === undefined) return null;
  return source.kube.modules.startWebhookCertificate({ ...flags, kubeConfig: source.kube.kubeConfig, log });
}

/** The provisioner hands over only pairs that load; should one not, the pair in use stays. */
function serveCertificate(webhook: AdmissionServer, cert: string, key: string, log: Logger): void {
  try {
    webhook.setCertificate(cert, key);
  } catch (error) {
    // the message is OpenSSL's reason, never key material
    log.error(
      { reason: (error as Error).message },
      'the certificate of the webhook Secret does not load; the one in use stays',
    );
  }
}

/** The status port: readiness from the handle, /metrics, and with --enable-debug-pages /debug/model
 * and /debug/traffic (its window samples the request metrics until the stop closes it). */
async function serveHealthz(
  config: Config,
  handle: DataPlaneHandle,
  metrics: ControllerMetrics | null,
  source: Source,
  applier: Applier,
  traffic: Traffic,
  options: StartOptions,
): Promise<{ healthz: Healthz; address: AddressInfo }> {
  // a scrape first collects what was counted and not yet handed over (threads' batches, records waiting)
  const scrape =
    metrics === null
      ? null
      : async () => {
          await traffic.collected();
          return metrics.scrape();
        };
  const trafficWindow = config.enableDebugPages ? createTrafficWindow(metrics?.traffic ?? null) : null;
  const healthz = createHealthz(() => handle.ready(), scrape, {
    debugModel: config.enableDebugPages
      ? debugModelSource(handle, applier, () => source.problems?.() ?? null, config.model)
      : null,
    // closed with the port
    debugTraffic: trafficWindow && {
      version: () => trafficWindow.version(),
      describe: async () => {
        await traffic.collected();
        return trafficWindow.describe();
      },
      close: () => trafficWindow.close(),
    },
    readinessPath: config.healthCheckPath,
    describeEveryVersion: options.describeEveryVersion === true,
  });
  const address = await healthz.listen(
    config.healthzPort,
    config.healthzHost === '' ? config.bindAddress : config.healthzHost,
  );
  return { healthz, address };
}

/** --validating-webhook: the webhook on this (the controller's) thread, reviewing against the source. */
async function startAdmissionWebhook(config: Config, source: Source, log: Logger): Promise<Webhook | null> {
  if (config.webhook === null) return null;
  try {
    return await startWebhook({
      ...config.webhook,
      snapshot: () => source.snapshot(),
      model: config.model,
      watchNamespace: config.kube.watchNamespace,
      log,
    });
  } catch (error) {
    await source.stop();
    throw error;
  }
}

/** What the graceful stop closes, in order. */
interface Running {
  config: Config;
  healthz: Healthz;
  handle: DataPlaneHandle;
  applier: Applier;
  reporting: Reporting | null;
  source: Source;
  scheduler: Scheduler;
  traffic: Traffic;
  webhookCertificate: WebhookCertificateRelay | null;
  webhook: AdmissionServer | null;
  stopLoggingErrors: () => void;
}

async function stopGracefully(
  running: Running,
  gracePeriodMs: number | undefined,
  drainTimeoutMs: number | undefined,
): Promise<void> {
  const { config, healthz, handle, applier, reporting, source, scheduler, traffic } = running;
  const graceMs = gracePeriodMs ?? config.shutdownGracePeriod * 1000;
  healthz.shuttingDown();
  // ingress-nginx sleeps the grace period before `nginx -s quit`: still serving, still syncing
  if (graceMs > 0) await new Promise((resolve) => setTimeout(resolve, graceMs));
  const configured =
    applier.latest().model?.config.workerShutdownTimeoutMs ?? DEFAULT_GLOBAL_CONFIG.workerShutdownTimeoutMs;
  const drainMs = drainTimeoutMs ?? (gracePeriodMs === undefined ? configured : 0);
  // after the grace period, as the data plane: the API server may still ask while endpoints drain
  await running.webhook?.close();
  await reporting?.stop(); // releases the Lease: a successor need not wait for the TTL
  await running.webhookCertificate?.provisioner.stop();
  await source.stop();
  scheduler.stop();
  await handle.close(drainMs);
  await healthz.close();
  await traffic.close();
  running.stopLoggingErrors();
}

export async function start(config: Config, log: Logger, options: StartOptions = {}): Promise<Controller> {
  const stopLoggingErrors = logDataPlaneErrors(log);
  // A change the source sees before the scheduler exists needs nothing: the first build reads all.
  let onSourceChange = () => {};
  const source = await createSource(config, log, () => onSourceChange(), options);
  // before the first full list: a review meanwhile builds against what the source has so far
  const webhook = await startAdmissionWebhook(config, source, log);
  // before the first full list too: the webhook can answer handshakes as soon as the Secret is read
  const webhookCertificate = startWebhookCertificate(config, source, log);
  if (webhook !== null) webhookCertificate?.connect((cert, key) => serveCertificate(webhook, cert, key, log));
  let generatedDefaultCertificate: CertificatePair;
  try {
    generatedDefaultCertificate = await readFirst(source, log);
  } catch (error) {
    await webhook?.close();
    await webhookCertificate?.provisioner.stop();
    throw error;
  }

  const buildCaches = createBuildCaches();
  const workerProcesses = globalConfigOf(source.snapshot(), config.model).workerProcesses;
  const threads = resolveWorkerCount(workerProcesses);
  const { handle, dataPlane } = createDataPlane(config, threads, generatedDefaultCertificate, buildCaches);
  log.info(
    { workerProcesses, threads },
    threads === 1 ? 'data plane on the main thread' : 'data plane in worker threads',
  );

  const metrics = createMetrics(config, options, source, handle, log);
  const countReviews = (event: unknown) => metrics?.admissionReviewed(event as AdmissionReviewed);
  if (webhook !== null) subscribe(admissionReviewed.name, countReviews);
  const accessLog = createAccessLog({ log, stdout: options.accessLogStdout, pretty: options.prettyLogs });
  const traffic = observeTraffic(log, metrics, accessLog, { threadsFlushed: () => handle.flushed?.() });
  const env = options.env ?? process.env;
  const reporting = createKubeReporting(
    config,
    env,
    source,
    log,
    metrics,
    () => applier.latest(),
    (leader) => webhookCertificate?.provisioner.setLeader(leader),
  );
  const reporter = createReporter({ log, metrics, traffic, reporting });
  // the thread count is fixed for the life of the process: a changed value waits for a restart
  let warnedFor: WorkerProcesses = workerProcesses;
  const warnOnWorkerChange = (value: WorkerProcesses) => {
    if (value === warnedFor) return;
    warnedFor = value;
    if (value === workerProcesses) return;
    log.warn(
      { workerProcesses: value, running: workerProcesses, threads },
      'worker-processes changed; restart to apply it (the threads running keep serving)',
    );
  };
  const applier = createApplier({
    handle,
    modelOptions: config.model,
    caches: buildCaches,
    snapshot: () => source.snapshot(),
    setReferences: (references) => source.setReferences?.(references),
    onApplied: (change) => {
      reporter.applied(change);
      warnOnWorkerChange(change.model.config.workerProcesses);
    },
  });
  const scheduler = createScheduler({ run: applier.run, onError: reporter.failed });

  onSourceChange = () => scheduler.trigger();
  scheduler.trigger();
  await scheduler.idle();
  webhook?.prepare();
  // before the listeners open: the collection's pause keeps no request waiting
  const startedAt = performance.now();
  const heapBytes = startStartupCollection();
  if (heapBytes !== null) {
    const ms = Math.round(performance.now() - startedAt);
    log.info({ heapMiB: Math.round(heapBytes / 2 ** 20), ms }, 'heap collected after the first build');
  }
  reporting?.start();
  const addresses = await handle.listen();
  const { healthz, address } = await serveHealthz(config, handle, metrics, source, applier, traffic, options);

  const running: Running = {
    config,
    healthz,
    handle,
    applier,
    reporting,
    source,
    scheduler,
    traffic,
    webhookCertificate,
    webhook,
    stopLoggingErrors: () => {
      stopLoggingErrors();
      unsubscribe(admissionReviewed.name, countReviews);
    },
  };
  let stopping: Promise<void> | null = null;
  return {
    ...addresses,
    healthz: address,
    get dataPlane(): DataPlane {
      if (dataPlane === null) throw new Error('the data plane runs in worker threads (worker-processes > 1)');
      return dataPlane;
    },
    handle,
    threads,
    webhook,
    stop(gracePeriodMs, drainTimeoutMs) {
      stopping ??= stopGracefully(running, gracePeriodMs, drainTimeoutMs);
      return stopping;
    },
  };
}
