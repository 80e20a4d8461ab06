// One kind watched through a client-node ListWatch, made to survive the API server.
//
// The client's informer re-watches by itself only after a clean end of the stream, a 410 or its own
// 30 s inactivity timeout. A reset connection, a 5xx/429/403 on the watch, a refused connection or a
// failed list fire `error` and leave it stopped for good (test/source/fake-apiserver.test.ts pins this
// down against the real client).
// So every `error` here schedules `start()` again after a jittered exponential backoff (capped), which
// resumes from the last resourceVersion (the server answers 410 if that is too old, and the informer
// then relists, reporting deletions that happened meanwhile). `stop()` also fires `error` (an
// AbortError): the `stopping` flag tells that apart.
//
// The list goes through our own GET rather than the typed API: the typed calls turn every object into
// class instances with Date fields (watch events stay plain JSON), and deserialising 10,000s of objects
// through the generated serializer is slow. Plain JSON from both paths keeps the store uniform.

import {
  HttpMethod,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  ListWatch,
  RequestContext,
  Watch,
} from '@kubernetes/client-node';
import { fetch } from 'undici';

export interface WatchTarget {
  /** for logs: "Ingress", "Secret"... */
  kind: string;
  /** the collection's API path, e.g. /apis/networking.k8s.io/v1/ingresses */
  path: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface Backoff {
  /** the first retry's delay before jitter; default 500 ms */
  initialMs: number;
  /** the longest delay; default 30 s */
  maxMs: number;
}

export const DEFAULT_BACKOFF: Readonly<Backoff> = Object.freeze({ initialMs: 500, maxMs: 30_000 });

export interface InformerOptions extends WatchTarget {
  kubeConfig: KubeConfig;
  onUpsert(object: KubernetesObject): void;
  onDelete(object: KubernetesObject): void;
  /** an error that stopped the watch, and when it is retried */
  onError?(error: unknown, retryInMs: number): void;
  /** each (re)connect cycle of the client, just before its list (if any), sleep (if any) and watch */
  onConnect?(): void;
  /** When set, a 403 on a list before any list succeeded is not retried: the informer stops (start()
   * resolves) and this is called instead of onError. A 403 later goes through onError and the retries. */
  onFirstListForbidden?(error: unknown): void;
  backoff?: Backoff;
  /** [0, 1): jitter (tests) */
  random?: () => number;
}

export interface ResilientInformer {
  /** Starts watching; resolves once the first list has been delivered to onUpsert, however many
   * retries that takes. Resolves at once (having delivered nothing more) if stop() comes first. */
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly kind: string;
  /** restarts after errors so far */
  readonly restarts: number;
  readonly synced: boolean;
}

/** The delay before retry number `attempt` (0-based): exponential, capped, with "equal jitter". */
export function backoffDelay(attempt: number, backoff: Backoff, random: () => number): number {
  const ceiling = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** GET of a collection as plain JSON, with the kubeconfig's server, credentials and TLS settings. */
export async function listObjects(
  kubeConfig: KubeConfig,
  target: WatchTarget,
): Promise<KubernetesListObject<KubernetesObject>> {
  const cluster = kubeConfig.getCurrentCluster();
  if (cluster === null) throw new Error('the kubeconfig has no current cluster');
  const url = new URL(cluster.server + target.path);
  if (target.labelSelector !== undefined) url.searchParams.set('labelSelector', target.labelSelector);
  if (target.fieldSelector !== undefined) url.searchParams.set('fieldSelector', target.fieldSelector);
  const context = new RequestContext(url.toString(), HttpMethod.GET);
  await kubeConfig.applySecurityAuthentication(context);
  const headers = { ...context.getHeaders(), accept: 'application/json' };
  const response = await fetch(url, { headers, dispatcher: context.getDispatcher() });
  if (response.status !== 200) {
    const body = await response.text().catch(() => '');
    let message = body.slice(0, 300);
    try {
      message = (JSON.parse(body) as { message?: string }).message ?? message;
    } catch {
      // not a Status object: the text says what it is
    }
    throw Object.assign(new Error(`list ${target.path}: HTTP ${response.status} ${message}`.trim()), {
      statusCode: response.status,
    });
  }
  return (await response.json()) as KubernetesListObject<KubernetesObject>;
}

const statusCodeOf = (error: unknown): number | undefined =>
  (error as { statusCode?: number } | null)?.statusCode;

export function createInformer(options: InformerOptions): ResilientInformer {
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  const random = options.random ?? Math.random;
  let listed = false;
  let synced = false;
  let stopping = false;
  /** consecutive failed starts; the backoff grows with it */
  let attempt = 0;
  let restarts = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  /** settles start(): on the first delivered list, or on stop() */
  const { promise: settled, resolve: settle } = Promise.withResolvers<void>();

  /** the first list was refused (onFirstListForbidden): no retry */
  let refused = false;
  const listFn = async () => {
    try {
      const list = await listObjects(options.kubeConfig, options);
      listed = true; // the informer hands the items to onUpsert right after this resolves
      return list;
    } catch (error) {
      if (!listed && options.onFirstListForbidden !== undefined && statusCodeOf(error) === 403) {
        refused = true;
      }
      throw error;
    }
  };
  // The client sleeps between re-watches (1 s, 2 s ... 30 s after empty streams) and does not look
  // at its stopped flag afterwards: a stop() during that sleep would be followed by a new watch.
  // Its sleeps are ours, so after stop() they never end.
  const sleeps = new Set<ReturnType<typeof setTimeout>>();
  const delayFn = (ms: number) =>
    new Promise<void>((resolve) => {
      if (stopping) return;
      const sleep = setTimeout(() => {
        sleeps.delete(sleep);
        resolve();
      }, ms);
      sleeps.add(sleep);
    });
  const informer = new ListWatch<KubernetesObject>(
    options.path,
    new Watch(options.kubeConfig),
    listFn,
    false,
    options.labelSelector,
    options.fieldSelector,
    { delayFn },
  );

  const retryLater = (error: unknown): void => {
    if (stopping || timer !== null) return;
    if (refused) {
      stopping = true;
      settle();
      void informer.stop();
      options.onFirstListForbidden?.(error);
      return;
    }
    const delay = backoffDelay(attempt++, backoff, random);
    options.onError?.(error, delay);
    timer = setTimeout(() => {
      timer = null;
      restarts++;
      void run();
    }, delay);
  };

  const run = async (): Promise<void> => {
    if (stopping) return;
    try {
      await informer.start(); // failures come as `error` events, not as a rejection
    } catch (error) {
      retryLater(error);
    }
    if (listed && !synced) {
      synced = true;
      settle();
    }
    if (timer === null && !stopping) attempt = 0; // this start reached a running watch
  };

  informer.on('add', options.onUpsert);
  informer.on('update', options.onUpsert);
  informer.on('delete', options.onDelete);
  informer.on('error', retryLater);
  if (options.onConnect) informer.on('connect', options.onConnect);

  return {
    kind: options.kind,
    get restarts() {
      return restarts;
    },
    get synced() {
      return synced;
    },
    async start() {
      void run();
      await settled;
    },
    async stop() {
      stopping = true;
      if (timer !== null) clearTimeout(timer);
      timer = null;
      for (const sleep of sleeps) clearTimeout(sleep);
      sleeps.clear();
      settle();
      await informer.stop();
    },
  };
}
