// The validating admission webhook's certificate, kept by ingress-ts itself (no helper image, no
// Helm hook Job): every replica serves the pair in one Secret; the elected leader writes that Secret
// and the CA into the webhook configuration's caBundle.
//
// - Every replica watches the one Secret (--validating-webhook-secret, by a metadata.name field
//   selector, which RBAC authorizes against resourceNames) and hands each new valid pair to
//   onCertificate. A Secret that is damaged or deleted leaves the last good pair serving.
// - With --validating-webhook-service, the leader writes the Secret when it is missing, invalid,
//   does not name the Service, or is due for renewal (webhook-pki.ts): create when missing (an
//   AlreadyExists means another replica won: its Secret arrives through the watch), else replace
//   guarded by the resourceVersion read (a Conflict: the newer Secret arrives through the watch and
//   is judged again). Without it the Secret is only read (cert-manager or another tool owns it).
// - With --validating-webhook-configuration, the leader watches that object too and patches every
//   webhook's clientConfig.caBundle to the Secret's ca.crt whenever they differ: `helm upgrade`
//   re-applies the configuration, maybe with an empty caBundle, and with failurePolicy Fail every
//   Ingress apply would be refused until the bundle is back. A new CA goes into the caBundle before
//   the Secret that uses it, so no replica serves a certificate the API server cannot verify yet.
//   The patch is a JSON patch that first tests the resourceVersion read: nothing written by
//   someone else in between is overwritten.
// - The leader re-judges the Secret every recheck period (default an hour: the renewal window is
//   months) and after a failed write retries with backoff.
// - Logs name the certificate by its SHA-256 fingerprint and expiry, never its key.

import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../../log.ts';
import { apiRequest, statusMessage } from './api-request.ts';
import {
  type Backoff,
  backoffDelay,
  createInformer,
  DEFAULT_BACKOFF,
  type ResilientInformer,
} from './informer.ts';
import {
  type Assessment,
  assessSecret,
  decodeSecretData,
  encodeSecretData,
  issueCertificate,
  type PemData,
  parseBundle,
  serviceDnsNames,
  servingPair,
} from './webhook-pki.ts';

export interface ObjectName {
  namespace: string;
  name: string;
}

export interface WebhookCertificateOptions {
  kubeConfig: KubeConfig;
  /** --validating-webhook-secret */
  secret: ObjectName;
  /** --validating-webhook-service: the leader provisions the Secret for its DNS names; null: read only */
  service: ObjectName | null;
  /** --validating-webhook-configuration: the leader keeps its caBundle; null: left alone */
  configuration: string | null;
  /** a new valid serving pair (every replica) */
  onCertificate(certPem: string, keyPem: string): void;
  log: Logger;
  /** wall clock in ms (tests) */
  now?: () => number;
  /** how often the leader re-judges the Secret; default one hour */
  recheckMs?: number;
  backoff?: Backoff;
}

export interface WebhookCertificate {
  /** Starts the watches; resolves once the Secret (and the configuration) have been listed. */
  start(): Promise<void>;
  /** The leader writes; the others only read. */
  setLeader(leader: boolean): void;
  stop(): Promise<void>;
  /** SHA-256 fingerprint of the pair handed to onCertificate last, or null */
  readonly served: string | null;
}

interface SecretObject extends KubernetesObject {
  type?: string;
  data?: Record<string, string>;
}
interface WebhookConfiguration extends KubernetesObject {
  webhooks?: Array<{ name?: string; clientConfig?: { caBundle?: string } }>;
}

const HOUR_MS = 3600 * 1000;

/** The caBundle (base64) holds the same certificates as `caPem`. */
function sameBundle(caBundle: string | undefined, caPem: string): boolean {
  const have = parseBundle(caBundle === undefined ? '' : Buffer.from(caBundle, 'base64').toString('utf8'));
  const want = parseBundle(caPem);
  return (
    have.length === want.length && have.every((cert, i) => cert.fingerprint256 === want[i]?.fingerprint256)
  );
}

const CONFIGURATIONS_PATH = '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations';

/**
 * A JSON patch of every webhook's caBundle that differs from caPem, after a test of the
 * resourceVersion read; the object as stored, or null when it changed meanwhile or there was nothing
 * to write (the watch then brings the state to judge).
 */
async function patchCaBundle(
  kubeConfig: KubeConfig,
  current: WebhookConfiguration,
  caPem: string,
  log: Logger,
): Promise<WebhookConfiguration | null> {
  const name = current.metadata?.name ?? '';
  const encoded = Buffer.from(caPem, 'utf8').toString('base64');
  const operations: unknown[] = [
    { op: 'test', path: '/metadata/resourceVersion', value: current.metadata?.resourceVersion },
  ];
  (current.webhooks ?? []).forEach((webhook, index) => {
    if (!sameBundle(webhook.clientConfig?.caBundle, caPem)) {
      operations.push({ op: 'add', path: `/webhooks/${index}/clientConfig/caBundle`, value: encoded });
    }
  });
  if (operations.length === 1) return null;
  const path = `${CONFIGURATIONS_PATH}/${encodeURIComponent(name)}`;
  const response = await apiRequest(kubeConfig, 'PATCH', path, operations, 'application/json-patch+json');
  if (response.status === 200) {
    const ca = parseBundle(caPem)[0]?.fingerprint256;
    log.info(
      { configuration: name, webhooks: operations.length - 1, ca },
      'admission webhook caBundle written',
    );
    return response.body as WebhookConfiguration;
  }
  if ([404, 409, 422].includes(response.status)) return null;
  throw new Error(`patching the caBundle of ${name}: ${statusMessage(response)}`);
}

/**
 * Creates the Secret (current null) or replaces it guarded by its resourceVersion, keeping its type,
 * labels and annotations; the Secret as stored, or null when another replica wrote first.
 */
async function writeSecret(
  kubeConfig: KubeConfig,
  name: ObjectName,
  current: SecretObject | null,
  data: PemData,
): Promise<SecretObject | null> {
  const collection = `/api/v1/namespaces/${encodeURIComponent(name.namespace)}/secrets`;
  const metadata = {
    name: name.name,
    namespace: name.namespace,
    labels: current?.metadata?.labels,
    annotations: current?.metadata?.annotations,
    resourceVersion: current?.metadata?.resourceVersion,
  };
  // the type cannot change; a new Secret is the kind cert-manager writes
  const type = current?.type ?? 'kubernetes.io/tls';
  const body = { apiVersion: 'v1', kind: 'Secret', metadata, type, data: encodeSecretData(data) };
  const response =
    current === null
      ? await apiRequest(kubeConfig, 'POST', collection, body)
      : await apiRequest(kubeConfig, 'PUT', `${collection}/${encodeURIComponent(name.name)}`, body);
  if (response.status === 200 || response.status === 201) return response.body as SecretObject;
  if (response.status === 409) return null;
  throw new Error(`writing the Secret ${name.namespace}/${name.name}: ${statusMessage(response)}`);
}

/**
 * Runs `work` one at a time while `active()`: a kick while it runs gives one more run; a failure
 * retries after a backoff.
 */
function serialRunner(work: () => Promise<void>, active: () => boolean, backoff: Backoff, log: Logger) {
  let running: Promise<void> | null = null;
  let again = false;
  let failures = 0;
  let retry: ReturnType<typeof setTimeout> | null = null;
  const kick = (): void => {
    if (!active()) return;
    if (running !== null) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await work();
          failures = 0;
        } catch (error) {
          const delay = backoffDelay(failures++, backoff, Math.random);
          log.warn({ err: error, retryInMs: delay }, 'provisioning the admission webhook certificate failed');
          retry ??= setTimeout(() => {
            retry = null;
            kick();
          }, delay);
          again = false;
        }
      } while (again && active());
    })().finally(() => {
      running = null;
    });
  };
  return {
    kick,
    async stop() {
      if (retry !== null) clearTimeout(retry);
      retry = null;
      await running;
    },
  };
}

/** The two watches, by name: the Secret, and the webhook configuration when one is kept. */
function watchObjects(
  options: WebhookCertificateOptions,
  onSecret: (secret: SecretObject | null) => void,
  onConfiguration: (configuration: WebhookConfiguration | null) => void,
): ResilientInformer[] {
  const { kubeConfig, backoff, log, secret } = options;
  const informers = [
    createInformer({
      kind: 'Secret',
      path: `/api/v1/namespaces/${encodeURIComponent(secret.namespace)}/secrets`,
      fieldSelector: `metadata.name=${secret.name}`,
      kubeConfig,
      backoff,
      onUpsert: (object) => onSecret(object as SecretObject),
      onDelete: () => onSecret(null),
      onError: (error, retryInMs) =>
        log.warn(
          { err: error, retryInMs, secret: `${secret.namespace}/${secret.name}` },
          'watching the admission webhook Secret failed',
        ),
    }),
  ];
  if (options.configuration !== null) {
    informers.push(
      createInformer({
        kind: 'ValidatingWebhookConfiguration',
        path: CONFIGURATIONS_PATH,
        fieldSelector: `metadata.name=${options.configuration}`,
        kubeConfig,
        backoff,
        onUpsert: (object) => onConfiguration(object as WebhookConfiguration),
        onDelete: () => onConfiguration(null),
        onError: (error, retryInMs) =>
          log.warn(
            { err: error, retryInMs, configuration: options.configuration },
            'watching the webhook configuration failed',
          ),
      }),
    );
  }
  return informers;
}

export function createWebhookCertificate(options: WebhookCertificateOptions): WebhookCertificate {
  const { kubeConfig, log, secret: secretName } = options;
  const now = options.now ?? Date.now;
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  const names = options.service === null ? [] : serviceDnsNames(options.service);
  const secretRef = `${secretName.namespace}/${secretName.name}`;

  let secret: SecretObject | null = null;
  let configuration: WebhookConfiguration | null = null;
  let served: string | null = null;
  let leader = false;
  let stopped = false;
  /** nothing is written before the first lists: a Secret not seen yet is not a missing one */
  let synced = false;
  let recheck: ReturnType<typeof setInterval> | null = null;

  /** Every replica: the Secret's serving pair, when it is new and usable. */
  const serve = (data: PemData): void => {
    const pair = servingPair(data);
    if ('problem' in pair) {
      log.warn(
        { secret: secretRef, problem: pair.problem },
        'admission webhook Secret unusable; the previous certificate stays',
      );
      return;
    }
    if (pair.cert.fingerprint256 === served) return;
    served = pair.cert.fingerprint256;
    log.info(
      { secret: secretRef, fingerprint: served, notAfter: pair.cert.validTo },
      'admission webhook certificate loaded',
    );
    options.onCertificate(pair.certPem, pair.keyPem);
  };

  const writeCaBundle = async (caPem: string): Promise<void> => {
    if (configuration === null || options.configuration === null) return;
    configuration = (await patchCaBundle(kubeConfig, configuration, caPem, log)) ?? configuration;
  };

  /** The leader writes a new certificate into the Secret. */
  const provision = async (assessment: Extract<Assessment, { renew: true }>): Promise<void> => {
    log.info({ secret: secretRef, reason: assessment.reason }, 'writing a new admission webhook certificate');
    const data = await issueCertificate(names, assessment.reusableCa, assessment.keepCaPem, now());
    // a new CA is trusted before any replica serves a certificate it signed
    if (assessment.reusableCa === null) await writeCaBundle(data['ca.crt'] as string);
    const written = await writeSecret(kubeConfig, secretName, secret, data);
    if (written === null) {
      log.info(
        { secret: secretRef },
        'another replica wrote the admission webhook Secret first; using theirs',
      );
      return;
    }
    secret = written;
    serve(data);
  };

  const reconcile = async (): Promise<void> => {
    const data = secret === null ? null : decodeSecretData(secret.data);
    if (options.service !== null) {
      const assessment = assessSecret(data, names, now());
      if (assessment.renew) {
        await provision(assessment);
        return; // the written Secret (or the winner's) comes back through the watch: judged then
      }
    }
    const caPem = data?.['ca.crt'];
    if (caPem !== undefined && parseBundle(caPem).length > 0) await writeCaBundle(caPem);
  };

  const runner = serialRunner(reconcile, () => leader && synced && !stopped, backoff, log);
  const informers = watchObjects(
    options,
    (object) => {
      secret = object;
      if (object !== null) serve(decodeSecretData(object.data));
      runner.kick();
    },
    (object) => {
      configuration = object;
      if (object !== null) runner.kick();
    },
  );

  return {
    get served() {
      return served;
    },
    async start() {
      await Promise.all(informers.map((informer) => informer.start()));
      synced = true;
      runner.kick();
    },
    setLeader(next) {
      if (next === leader) return;
      leader = next;
      if (recheck !== null) clearInterval(recheck);
      recheck = null;
      if (!next) return;
      recheck = setInterval(runner.kick, options.recheckMs ?? HOUR_MS);
      recheck.unref();
      runner.kick();
    },
    async stop() {
      stopped = true;
      if (recheck !== null) clearInterval(recheck);
      recheck = null;
      await Promise.all(informers.map((informer) => informer.stop()));
      await runner.stop();
    },
  };
}

/** The webhook's serving pair, kept for whoever serves it (the admission server, which may start later). */
export interface WebhookCertificateRelay {
  provisioner: WebhookCertificate;
  /** `serve` gets the current pair at once, if there is one, then every new one */
  connect(serve: (certPem: string, keyPem: string) => void): void;
}

/** Creates and starts the provisioner (its watches retry until listed; nothing waits for them). */
export function startWebhookCertificate(
  options: Omit<WebhookCertificateOptions, 'onCertificate'>,
): WebhookCertificateRelay {
  let pair: { certPem: string; keyPem: string } | null = null;
  let target: ((certPem: string, keyPem: string) => void) | null = null;
  const provisioner = createWebhookCertificate({
    ...options,
    onCertificate(certPem, keyPem) {
      pair = { certPem, keyPem };
      target?.(certPem, keyPem);
    },
  });
  void provisioner.start();
  return {
    provisioner,
    connect(serve) {
      target = serve;
      if (pair !== null) serve(pair.certPem, pair.keyPem);
    },
  };
}
