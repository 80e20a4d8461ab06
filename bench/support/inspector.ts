// Node's inspector of a running ingress-ts, opened from outside: SIGUSR1 on a process started with
// `--inspect-port=127.0.0.1:0` opens it on a random loopback port (until then the flag changes
// nothing) and prints its WebSocket URL. One WebSocket carries every call; events are ignored except
// the chunks of a heap snapshot.

import { createWriteStream } from 'node:fs';
import { type Started, waitFor } from './harness.ts';

export interface Inspector {
  /** one DevTools protocol call; its `result` */
  call(
    method: string,
    params?: Record<string, unknown>,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  /** an expression evaluated on the main thread, its value passed through JSON */
  evaluate<T>(expression: string): Promise<T>;
  /** two full GCs (HeapProfiler.collectGarbage) */
  collectGarbage(): Promise<void>;
  /** a heap snapshot of the main thread written to `file` */
  heapSnapshot(file: string): Promise<void>;
  /** an expression evaluated in every worker thread (NodeWorker domain), each value through JSON */
  evaluateInWorkers<T>(expression: string, timeoutMs?: number): Promise<T[]>;
  close(): void;
}

/** What `process.memoryUsage()` and V8's heap spaces say inside the process, bytes. */
export interface MemoryInside {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  spaces: Record<string, { size: number; used: number }>;
}

const MEMORY_EXPRESSION = `JSON.stringify({
  ...process.memoryUsage(),
  spaces: Object.fromEntries(process.getBuiltinModule('node:v8').getHeapSpaceStatistics()
    .map((s) => [s.space_name, { size: s.space_size, used: s.space_used_size }])),
})`;

/** Sends SIGUSR1 to `started` and connects to the inspector it opens. */
export async function openInspector(started: Started, timeoutMs = 20000): Promise<Inspector> {
  const from = started.output.length;
  process.kill(started.pid, 'SIGUSR1');
  let url: string | undefined;
  await waitFor(
    'the inspector of ingress-ts (SIGUSR1)',
    async () => {
      url = started.output
        .slice(from)
        .map((text) => /ws:\/\/\S+/.exec(text)?.[0])
        .find((match) => match !== undefined);
      return url !== undefined;
    },
    5000,
    20,
  );
  const socket = new WebSocket(url!);
  await new Promise<void>((resolve, reject) => {
    socket.onopen = () => resolve();
    socket.onerror = () => reject(new Error(`could not talk to the inspector at ${url}`));
  });
  let next = 0;
  const waiting = new Map<number, (reply: { result?: Record<string, unknown>; error?: unknown }) => void>();
  let onChunk: ((chunk: string) => void) | null = null;
  /** worker sessions attached (NodeWorker.attachedToWorker), and the replies awaited from them */
  const workerSessions = new Set<string>();
  const workerWaiting = new Map<string, (message: { result?: { result?: { value?: unknown } } }) => void>();
  socket.onmessage = (event) => {
    const message = JSON.parse(String(event.data)) as {
      id?: number;
      method?: string;
      params?: { chunk?: string; sessionId?: string; message?: string };
      result?: Record<string, unknown>;
      error?: unknown;
    };
    if (message.method === 'HeapProfiler.addHeapSnapshotChunk') onChunk?.(message.params?.chunk ?? '');
    if (message.method === 'NodeWorker.attachedToWorker') workerSessions.add(message.params?.sessionId ?? '');
    if (message.method === 'NodeWorker.detachedFromWorker')
      workerSessions.delete(message.params?.sessionId ?? '');
    if (message.method === 'NodeWorker.receivedMessageFromWorker') {
      const inner = JSON.parse(message.params?.message ?? '{}') as {
        id?: number;
        result?: { result?: { value?: unknown } };
      };
      workerWaiting.get(`${message.params?.sessionId}:${inner.id}`)?.(inner);
    }
    if (message.id !== undefined) waiting.get(message.id)?.(message);
  };
  const call = (method: string, params: Record<string, unknown> = {}, callTimeoutMs = timeoutMs) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const id = ++next;
      const timer = setTimeout(
        () => reject(new Error(`the inspector did not answer ${method} within ${callTimeoutMs} ms`)),
        callTimeoutMs,
      );
      waiting.set(id, (reply) => {
        clearTimeout(timer);
        waiting.delete(id);
        if (reply.error !== undefined) reject(new Error(`${method}: ${JSON.stringify(reply.error)}`));
        else resolve(reply.result ?? {});
      });
      socket.send(JSON.stringify({ id, method, params }));
    });
  return {
    call,
    async evaluate<T>(expression: string): Promise<T> {
      const { result } = (await call('Runtime.evaluate', { expression, returnByValue: true })) as {
        result?: { value?: unknown };
      };
      return JSON.parse(String(result?.value)) as T;
    },
    async collectGarbage() {
      await call('HeapProfiler.collectGarbage');
      await call('HeapProfiler.collectGarbage');
    },
    async heapSnapshot(file: string) {
      const out = createWriteStream(file);
      onChunk = (chunk) => out.write(chunk);
      // a heap of a few hundred MiB takes minutes to walk and send on a busy machine
      await call('HeapProfiler.takeHeapSnapshot', { reportProgress: false }, 600000);
      onChunk = null;
      await new Promise<void>((resolve) => out.end(resolve));
    },
    async evaluateInWorkers<T>(expression: string, callTimeoutMs = timeoutMs): Promise<T[]> {
      if (workerSessions.size === 0) {
        await call('NodeWorker.enable', { waitForDebuggerOnStart: false });
        await waitFor('worker sessions', async () => workerSessions.size > 0, 5000, 20);
      }
      return Promise.all(
        [...workerSessions].map(
          (sessionId) =>
            new Promise<T>((resolve, reject) => {
              const id = ++next;
              const key = `${sessionId}:${id}`;
              const timer = setTimeout(() => {
                workerWaiting.delete(key);
                reject(new Error(`a worker did not answer within ${callTimeoutMs} ms`));
              }, callTimeoutMs);
              workerWaiting.set(key, (reply) => {
                clearTimeout(timer);
                workerWaiting.delete(key);
                resolve(JSON.parse(String(reply.result?.result?.value)) as T);
              });
              const inner = { id, method: 'Runtime.evaluate', params: { expression, returnByValue: true } };
              void call('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify(inner) });
            }),
        ),
      );
    },
    close: () => socket.close(),
  };
}

export const memoryInside = (inspector: Inspector): Promise<MemoryInside> =>
  inspector.evaluate<MemoryInside>(MEMORY_EXPRESSION);

/** The same figures in every worker thread (rss is the whole process's). */
export const memoryInWorkers = (inspector: Inspector): Promise<MemoryInside[]> =>
  inspector.evaluateInWorkers<MemoryInside>(MEMORY_EXPRESSION);
