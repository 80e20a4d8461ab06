// The suite's thread switch: INGRESS_TS_TEST_THREADS=2 runs every controller an end-to-end test
// starts with `worker-processes: "2"`, so the same tests cover the data plane in worker threads.
// Unset, nothing changes. `worker-processes` is read once at start, so what counts is the
// controller ConfigMap present then; helpers still merge it into every write so that a later
// swap does not log the restart warning.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

function readSwitch(): string | null {
  const value = process.env.INGRESS_TS_TEST_THREADS;
  if (value === undefined || value === '') return null;
  if (!/^[1-9][0-9]*$/.test(value))
    throw new Error(`INGRESS_TS_TEST_THREADS must be a thread count, not ${value}`);
  return value;
}

/** The `worker-processes` the suite asks for, or null for today's default (one thread). */
export const TEST_THREADS: string | null = readSwitch();

/** True when the suite runs the data plane in worker threads. */
export const THREAD_MODE = TEST_THREADS !== null && TEST_THREADS !== '1';

/** `data` of a controller ConfigMap with the suite's `worker-processes` merged in. */
export function withTestThreads(data: Record<string, string>): Record<string, string> {
  return TEST_THREADS === null ? data : { 'worker-processes': TEST_THREADS, ...data };
}

/** The same as a YAML flow-map entry with its trailing comma (`worker-processes: "2", `), or ''. */
export const TEST_THREADS_ENTRY = TEST_THREADS === null ? '' : `worker-processes: "${TEST_THREADS}", `;

/** Where the suite's own controller ConfigMap lives when a test names none. */
export const TEST_THREADS_CONFIGMAP = 'ingress-ts-test/threads';

/**
 * The flags that name a controller ConfigMap for a test that names none: the ConfigMap is written
 * into `manifests`. No flags without the switch, or when `flags` already has --configmap (that
 * test writes its own, through the helpers above).
 */
export function testThreadsFlags(manifests: string, flags: readonly string[]): string[] {
  if (TEST_THREADS === null || flags.some((f) => f === '--configmap' || f.startsWith('--configmap=')))
    return [];
  const [namespace, name] = TEST_THREADS_CONFIGMAP.split('/');
  writeFileSync(
    join(manifests, 'zz-test-threads.yaml'),
    `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: ${name}, namespace: ${namespace} }\ndata: { worker-processes: "${TEST_THREADS}" }\n`,
  );
  return ['--configmap', TEST_THREADS_CONFIGMAP];
}
