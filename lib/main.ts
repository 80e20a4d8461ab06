// Wiring for one process: source → scheduler → buildModel → data plane swap, plus health and logs.
// Standalone mode only for now (--manifests); the Kubernetes source plugs into the same scheduler.

import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { AddressInfo } from 'node:net';
import type { DestinationStream } from 'pino';
import { type AccessLog, createAccessLog } from './access-log.ts';
import type { Config } from './config/flags.ts';
import { DataPlane } from './dataplane/dataplane.ts';
import { dataplaneError, requestLogged } from './dataplane/events.ts';
import type { RequestRecord } from './dataplane/request-record.ts';
import { type CertificatePair, generateDefaultCertificate } from './dataplane/sni.ts';
import { type CertificateCache, describeRuntime } from './debug-model.ts';
import { createHealthz } from './healthz.ts';
import type { Logger } from './log.ts';
import { type ControllerMetrics, createControllerMetrics } from './metrics/controller.ts';
import { excludedSocketMetrics } from './metrics/requests.ts';
import { buildModel, type Diagnostic } from './model/index.ts';
import { createManifestSource } from './source/manifests.ts';
import { createScheduler } from './store/scheduler.ts';

export interface Controller {
  readonly http: AddressInfo;
  readonly https: AddressInfo;
  readonly healthz: AddressInfo;
  readonly dataPlane: DataPlane;
  /** graceful stop: /healthz 500, keep serving for the grace period, then close */
  stop(gracePeriodMs?: number): Promise<void>;
}

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

export async function start(config: Config, log: Logger, options: StartOptions = {}): Promise<Controller> {
  if (config.manifests === null) throw new Error('only standalone mode (--manifests) is available');
  const onDataplaneError = (message: unknown) => log.warn(message as object, 'data plane');
  subscribe(dataplaneError.name, onDataplaneError);

  // The first read of the manifests overlaps the default certificate's key generation (libuv's pool).
  // A change the source sees before the scheduler exists needs nothing: the first build reads all.
  let onSourceChange = () => {};
  const source = createManifestSource({
    dir: config.manifests,
    onChange: () => onSourceChange(),
    onProblem: (problem) => log.error({ file: problem.file, line: problem.line }, problem.message),
  });
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
      dir: config.manifests,
      ingresses: first.ingresses.length,
      services: first.services.length,
      endpointSlices: first.endpointSlices.length,
      secrets: first.secrets.length,
      readMs: Math.round(performance.now() - reading),
    },
    'manifests read',
  );

  const dataPlane = new DataPlane({
    httpPort: config.httpPort,
    httpsPort: config.httpsPort,
    bindAddress: config.bindAddress,
    generatedDefaultCertificate,
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
      })
    : null;
  const unknownExcluded = excludedSocketMetrics(config.requestMetrics.exclude).unknown;
  if (unknownExcluded.length > 0) {
    log.warn(
      { names: unknownExcluded },
      '--exclude-socket-metrics names metrics ingress-ts does not have; ignored',
    );
  }

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
  let subscribed = false;
  /** Records are built only while somebody reads them. */
  const subscribeRequests = (wanted: boolean) => {
    if (wanted === subscribed) return;
    subscribed = wanted;
    if (wanted) subscribe(requestLogged.name, onRequest);
    else unsubscribe(requestLogged.name, onRequest);
  };

  let reported = new Set<string>();
  /** diagnostics of the last applied build, for /debug/model */
  let appliedDiagnostics: readonly Diagnostic[] = [];
  const scheduler = createScheduler({
    run: () => {
      const started = performance.now();
      const { model, diagnostics } = buildModel(source.snapshot(), config.model);
      const built = performance.now();
      const kind = dataPlane.swap(model);
      appliedDiagnostics = diagnostics;
      const swapped = performance.now();
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
      subscribeRequests(metrics !== null || accessLogOn);
      const current = new Set<string>();
      for (const diagnostic of diagnostics) {
        const key = diagnosticKey(diagnostic);
        current.add(key);
        if (reported.has(key)) continue;
        const level =
          diagnostic.severity === 'error' ? 'error' : diagnostic.severity === 'warning' ? 'warn' : 'info';
        log[level](
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

  onSourceChange = () => scheduler.trigger();
  scheduler.trigger();
  await scheduler.idle();
  const addresses = await dataPlane.listen();
  const certificateCache: CertificateCache = new Map();
  const debugModel = () => {
    const runtime = dataPlane.current;
    return runtime === null ? null : describeRuntime(runtime, appliedDiagnostics, certificateCache);
  };
  const healthz = createHealthz(() => dataPlane.current !== null, metrics === null ? null : metrics.scrape, {
    debugModel,
  });
  const healthzAddress = await healthz.listen(config.healthzPort, config.bindAddress);

  let stopping: Promise<void> | null = null;
  return {
    ...addresses,
    healthz: healthzAddress,
    dataPlane,
    stop(gracePeriodMs = config.shutdownGracePeriod * 1000) {
      stopping ??= (async () => {
        healthz.shuttingDown();
        await source.stop();
        scheduler.stop();
        await dataPlane.close(gracePeriodMs);
        await healthz.close();
        subscribeRequests(false);
        await accessLog.close();
        unsubscribe(dataplaneError.name, onDataplaneError);
      })();
      return stopping;
    },
  };
}
