// The validating admission webhook as the process runs it: the server, its certificate files
// watched, and the review against the source's current snapshot (whatever it holds: while the
// controller is still listing, the webhook builds against what it has). Runs on the controller's
// thread whatever the number of data-plane threads: the build is the controller's work.

import type { Logger } from '../log.ts';
import { createBuildCaches, type ModelOptions, type Snapshot } from '../model/index.ts';
import type { AdmissionRequest } from './admission-review.ts';
import { type CertificateWatch, readPair, watchCertificateFiles } from './certificate-files.ts';
import type { RelatedIndex } from './related.ts';
import { relatedIndexFor, reviewIngress, type Verdict } from './review.ts';
import { createScopeIndexes } from './scope.ts';
import { type AdmissionServer, startAdmissionServer } from './server.ts';

export type { AdmissionServer } from './server.ts';

export interface WebhookOptions {
  host: string;
  port: number;
  /** the certificate and key files, or null: no certificate until setCertificate gives one */
  files: { cert: string; key: string } | null;
  snapshot: () => Snapshot;
  model: ModelOptions;
  /** --watch-namespace, or null */
  watchNamespace: string | null;
  log: Logger;
}

export interface Reviewer {
  review(request: AdmissionRequest): Verdict;
  /** indexes the snapshot of the moment, so the first review does not pay for reading every Ingress */
  prepare(): void;
}

/** The review against the snapshot of the moment, with the index and build caches kept across calls. */
export function createReviewer(
  snapshot: () => Snapshot,
  model: ModelOptions,
  watchNamespace: string | null = null,
): Reviewer {
  // its own caches: a build rotates the path-regex generations, the controller's must not see that
  const caches = createBuildCaches();
  const scope = createScopeIndexes();
  let index: RelatedIndex | null = null;
  const prepare = (): { current: Snapshot; index: RelatedIndex } => {
    const current = snapshot();
    index = relatedIndexFor(current, model, index);
    return { current, index };
  };
  return {
    prepare: () => void prepare(),
    review: (request) => {
      const { current, index } = prepare();
      return reviewIngress(request, {
        snapshot: current,
        options: model,
        index,
        caches,
        scope,
        now: new Date().toISOString(),
        clock: () => performance.now(),
        watchNamespace,
      });
    },
  };
}

/** The server's handle, plus what the process does with the webhook it started. */
export interface Webhook extends AdmissionServer {
  /** after the first build: index the cluster now, while nothing is served yet */
  prepare(): void;
}

export async function startWebhook(options: WebhookOptions): Promise<Webhook> {
  const { log, files } = options;
  const reviewer = createReviewer(options.snapshot, options.model, options.watchNamespace);
  let served: { cert: string; key: string } | null = null;
  if (files !== null) {
    try {
      served = await readPair(files);
    } catch (error) {
      log.warn(
        { err: error },
        'cannot read the webhook certificate files; handshakes fail until they appear',
      );
    }
  }
  const start = (certificate: { cert: string; key: string } | null) =>
    startAdmissionServer(
      {
        review: (request) => {
          const verdict = reviewer.review(request);
          logVerdict(log, request, verdict);
          return verdict;
        },
        onError: (error, request) =>
          log.error(
            { err: error, ingress: `${request?.namespace}/${request?.name}` },
            'admission review failed',
          ),
        certificate,
      },
      options.port,
      options.host,
    );
  let server: AdmissionServer;
  try {
    server = await start(served);
  } catch (error) {
    if (served === null || (error as { code?: string }).code === 'EADDRINUSE') throw error;
    log.warn(
      { err: error },
      'the webhook certificate files do not hold a usable pair; handshakes fail until they do',
    );
    served = null;
    server = await start(null);
  }
  const watch: CertificateWatch | null =
    files === null
      ? null
      : watchCertificateFiles(files, served, {
          onPair: (cert, key) => {
            server.setCertificate(cert, key);
            log.info({ certificate: files.cert }, 'webhook certificate loaded');
          },
          onProblem: (message) => log.warn({ certificate: files.cert }, message),
        });
  log.info({ port: server.port, host: options.host }, 'validating admission webhook listening');
  return {
    prepare: reviewer.prepare,
    port: server.port,
    setCertificate: (cert, key) => server.setCertificate(cert, key),
    async close() {
      watch?.close();
      await server.close();
    },
  };
}

function logVerdict(log: Logger, request: AdmissionRequest, verdict: Verdict): void {
  if (verdict.outcome === 'ignored') return;
  const fields = {
    ingress: `${request.namespace}/${request.name}`,
    operation: request.operation,
    tested: verdict.tested,
    buildMs: Math.round(verdict.buildMs * 10) / 10,
  };
  if (verdict.allowed)
    log.info({ ...fields, warnings: verdict.warnings.length }, 'admission: Ingress accepted');
  else log.warn({ ...fields, reasons: verdict.reasons }, 'admission: Ingress refused');
}
