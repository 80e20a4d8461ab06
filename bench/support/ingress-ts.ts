// ingress-ts in standalone mode as a benchmark contender: bin/ingress-ts.ts over a manifests folder,
// on loopback, pinned to core 0 (or the cores given).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fail, pinned, probe, REPO, type Started, startProcess, waitFor } from './harness.ts';

export interface IngressTsPorts {
  http: number;
  https: number;
  healthz: number;
}

export interface IngressTsOptions {
  manifestsDir: string;
  ports: IngressTsPorts;
  logLevel: string;
  /** node flags before the script (e.g. --cpu-prof) */
  nodeFlags?: string[];
  /** ingress-ts flags after the required ones */
  args?: string[];
  /** the host (and path) whose 200 means ready */
  readyHost: string;
  readyPath?: string;
  readyTimeoutMs?: number;
  /** how often readiness is polled [100] */
  pollMs?: number;
  /** taskset's core list [0]; with `worker-processes` > 1 in the ConfigMap, one core per thread */
  cores?: number | string;
  /** another checkout of ingress-ts to run instead of this one (its bin/ingress-ts.ts) */
  checkout?: string;
  /** variables added to this process's environment */
  env?: Record<string, string>;
}

export function ingressTsArgv(options: IngressTsOptions): string[] {
  const { ports } = options;
  return [
    process.execPath,
    ...(options.nodeFlags ?? []),
    options.checkout === undefined ? 'bin/ingress-ts.ts' : join(options.checkout, 'bin', 'ingress-ts.ts'),
    '--manifests',
    options.manifestsDir,
    '--http-port',
    String(ports.http),
    '--https-port',
    String(ports.https),
    '--healthz-port',
    String(ports.healthz),
    '--bind-address',
    '127.0.0.1',
    '--log-level',
    options.logLevel,
    ...(options.args ?? []),
  ];
}

/**
 * The environment the image gives ingress-ts: the Containerfile's `ENV NAME=VALUE` lines (e.g. glibc's
 * MALLOC_MMAP_THRESHOLD_, which moves RSS by tens of MiB), so that a benchmark runs what is shipped.
 */
export function imageEnv(containerfile = join(REPO, 'Containerfile')): Record<string, string> {
  const env: Record<string, string> = {};
  for (const m of readFileSync(containerfile, 'utf8').matchAll(/^ENV\s+([A-Za-z_][A-Za-z0-9_]*)=(\S*)\s*$/gm))
    env[m[1]!] = m[2]!;
  return env;
}

/** Starts ingress-ts on `cores` (core 0) and waits until `readyHost` answers 200 over plain HTTP. */
export async function startIngressTs(
  options: IngressTsOptions,
): Promise<{ started: Started; command: string }> {
  const argv = pinned(options.cores ?? 0, ingressTsArgv(options));
  const env = options.env === undefined ? undefined : { ...process.env, ...options.env };
  const started = startProcess(argv, undefined, env);
  await waitFor(
    'ingress-ts',
    async () => {
      if (started.child.exitCode !== null) fail(1, `ingress-ts exited:\n${started.output.join('\n')}`);
      const answer = await probe(options.ports.http, false, options.readyPath ?? '/', options.readyHost);
      return answer?.status === 200;
    },
    options.readyTimeoutMs ?? 15000,
    options.pollMs ?? 100,
  );
  return { started, command: argv.join(' ') };
}

/** One of ingress-ts's pino log lines; the fields a benchmark reads are typed, the rest is open. */
export interface LogLine {
  level?: number;
  time?: number;
  msg?: string;
  [field: string]: unknown;
}

/** A line of ingress-ts's output as a log entry, or null when it is not pino's JSON. */
export function parseLogLine(text: string): LogLine | null {
  if (!text.startsWith('{')) return null;
  try {
    return JSON.parse(text) as LogLine;
  } catch {
    return null;
  }
}

export interface PlainManifestsOptions {
  host: string;
  upstreamPort: number;
  /** ConfigMap data, e.g. `worker-processes` or `access-log-path` (values are quoted) */
  configMap: Record<string, string>;
}

/** The IngressClass every bench contender's Ingresses name. */
export const INGRESS_CLASS_YAML = `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: ingress-ts
spec:
  controller: ingress-ts.dev/controller
`;

/** ConfigMap `bench/ingress-ts` (pass `--configmap bench/ingress-ts`); values are quoted. */
export function benchConfigMap(data: Record<string, string>): string {
  const entries = Object.entries(data)
    .map(([key, value]) => `  ${key}: ${JSON.stringify(value)}`)
    .join('\n');
  return `apiVersion: v1
kind: ConfigMap
metadata:
  name: ingress-ts
  namespace: bench
data:
${entries}
`;
}

/** Service `bench/bench`, port 80 to the endpoints' port named http. */
export const BENCH_SERVICE_YAML = `apiVersion: v1
kind: Service
metadata:
  name: bench
  namespace: bench
spec:
  ports:
    - name: http
      port: 80
      targetPort: http
`;

/** An EndpointSlice of Service bench with one ready endpoint, 127.0.0.1:`port`. */
export function benchSlice(name: string, port: number): string {
  return `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: ${name}
  namespace: bench
  labels:
    kubernetes.io/service-name: bench
addressType: IPv4
ports:
  - name: http
    port: ${port}
    protocol: TCP
endpoints:
  - addresses: ["127.0.0.1"]
    conditions:
      ready: true
`;
}

/** A path of the bench Ingress: Prefix, to Service bench port 80 (indented for `paths:`). */
export function benchPath(path: string): string {
  return `          - path: ${path}
            pathType: Prefix
            backend:
              service:
                name: bench
                port:
                  number: 80`;
}

/**
 * The smallest manifests for a contender: the IngressClass, a ConfigMap `bench/ingress-ts` (pass
 * `--configmap bench/ingress-ts`), one Service with one EndpointSlice (127.0.0.1:upstreamPort) and
 * one Ingress for `host` on `/` (Prefix), plain HTTP.
 */
export function plainManifests(options: PlainManifestsOptions): string {
  return `${INGRESS_CLASS_YAML}---
${benchConfigMap(options.configMap)}---
${BENCH_SERVICE_YAML}---
${benchSlice('bench-0', options.upstreamPort)}---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: bench
  namespace: bench
spec:
  ingressClassName: ingress-ts
  rules:
    - host: ${options.host}
      http:
        paths:
${benchPath('/')}
`;
}
