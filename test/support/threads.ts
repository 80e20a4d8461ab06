// The suite's thread switch: INGRESS_TS_TEST_THREADS=2 runs every controller an end-to-end test
// starts with `worker-processes: "2"`, so the same tests cover the data plane in worker threads.
// Unset, the helpers pin `worker-processes: "1"`: the default is `auto`, and the suite must not
// change with the CPUs of the machine it runs on. `worker-processes` is read once at start, so what
// counts is the controller ConfigMap present then; helpers still merge it into every write so that a
// later swap does not log the restart warning.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeObject } from './fake-apiserver.ts';

function readSwitch(): string {
  const value = process.env.INGRESS_TS_TEST_THREADS;
  if (value === undefined || value === '') return '1';
  if (!/^[1-9][0-9]*$/.test(value))
    throw new Error(`INGRESS_TS_TEST_THREADS must be a thread count, not ${value}`);
  return value;
}

/** The `worker-processes` every controller a test starts gets: the switch's, else "1". */
export const TEST_THREADS: string = readSwitch();

/** The data-plane threads a controller started by a test runs (tests check the switch reached it). */
export const TEST_THREAD_COUNT = Number(TEST_THREADS);

/** True when the suite runs the data plane in worker threads. */
export const THREAD_MODE = TEST_THREADS !== '1';

/** `data` of a controller ConfigMap with the suite's `worker-processes` merged in. */
export function withTestThreads(data: Record<string, string>): Record<string, string> {
  return { 'worker-processes': TEST_THREADS, ...data };
}

/** The same as a YAML flow-map entry with its trailing comma (`worker-processes: "2", `). */
export const TEST_THREADS_ENTRY = `worker-processes: "${TEST_THREADS}", `;

const namesConfigMap = (flags: readonly string[]) =>
  flags.some((f) => f === '--configmap' || f.startsWith('--configmap='));

/** Where the suite's own controller ConfigMap lives when a test names none. */
export const TEST_THREADS_CONFIGMAP = 'ingress-ts-test/threads';

/**
 * The flags that name a controller ConfigMap for a test that names none: the ConfigMap is written
 * into `manifests`. No flags when `flags` already has --configmap (that test writes its own,
 * through the helpers above).
 */
export function testThreadsFlags(manifests: string, flags: readonly string[]): string[] {
  if (namesConfigMap(flags)) return [];
  const [namespace, name] = TEST_THREADS_CONFIGMAP.split('/');
  writeFileSync(
    join(manifests, 'zz-test-threads.yaml'),
    `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: ${name}, namespace: ${namespace} }\ndata: { worker-processes: "${TEST_THREADS}" }\n`,
  );
  return ['--configmap', TEST_THREADS_CONFIGMAP];
}

/**
 * Kubernetes mode, for a test that names no --configmap: the controller ConfigMap the fake API server
 * serves (in `namespace`, one the controller watches anyway, so no watch is added) and the flags
 * that name it. Nothing when `flags` already has --configmap.
 */
export function testThreadsKube(
  flags: readonly string[],
  namespace = 'e2e',
): { objects: KubeObject[]; flags: string[] } {
  if (namesConfigMap(flags)) return { objects: [], flags: [] };
  const name = 'ingress-ts-test-threads';
  return {
    objects: [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace },
        data: { 'worker-processes': TEST_THREADS },
      },
    ],
    flags: ['--configmap', `${namespace}/${name}`],
  };
}
