// WebSocket benchmark: the echo message rate through ingress-ts against the same echo server reached
// directly (no proxy). ingress-ts is pinned to core 0 (`taskset -c 0`); the echo upstream
// (bench/support/ws-echo.ts, the `ws` package) and the load generator (bench/support/ws-load.ts, `ws`
// clients) run as child Node processes pinned to core 1. The contenders are interleaved per round
// (direct, ingress-ts, direct, ...) and medians reported. Run with `node bench/ws-bench.ts [flags]`
// (see `--help`). Every process it starts is stopped by PID, also on errors and SIGINT; each load run
// and the whole run are bounded in time. Traffic stays on 127.0.0.1.

import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  cleanup,
  cpuTicks,
  ensureTools,
  fail,
  fixed,
  freePort,
  initHarness,
  int,
  isPinned,
  log,
  makeTempDir,
  median,
  pinned,
  probe,
  REPO,
  rssKiB,
  type Started,
  startProcess,
  stopProcess,
  waitFor,
} from './support/harness.ts';
import { startIngressTs } from './support/ingress-ts.ts';
import { echoOnce, type LoadResult } from './support/ws-load.ts';

const HOST = 'ws.bench.test';
const ECHO_SCRIPT = 'bench/support/ws-echo.ts';
const LOAD_SCRIPT = 'bench/support/ws-load.ts';
const WARMUP_S = 2;
const MESSAGE_BYTES = 64;
/** A load run is killed this long after its warm-up and duration have passed. */
const LOAD_GRACE_S = 20;
/** Linux USER_HZ: /proc CPU times are in 10 ms ticks. */
const TICK_MS = 10;

type Contender = 'direct' | 'ingress-ts';
const CONTENDERS: readonly Contender[] = ['direct', 'ingress-ts'];

// --- flags -----------------------------------------------------------------------------------------

interface Options {
  duration: number;
  rounds: number;
  connections: number;
  window: number;
  out: string | null;
}

const USAGE = `Usage: node bench/ws-bench.ts [--duration S] [--rounds N] [--connections C] [--window W] [--no-write]
  --duration S      measured seconds per load run, after a 2 s unrecorded warm-up (1-60) [8]
  --rounds N        interleaved rounds per scenario (1-10) [3]
  --connections C   WebSocket connections in the throughput scenario (1-512) [64]
  --window W        messages in flight per connection in the throughput scenario (1-256) [16]
  --no-write        print the report only, do not write bench/results/ws-YYYY-MM-DD.md
  --help            print this text
The defaults take about 2.2 minutes.
`;

/** The options, or the message for a bad argument (reported once the harness is up). */
function parseOptions(args: readonly string[]): Options | string {
  const options: Options = {
    duration: 8,
    rounds: 3,
    connections: 64,
    window: 16,
    out: join(REPO, 'bench', 'results', `ws-${new Date().toISOString().slice(0, 10)}.md`),
  };
  const ranges = {
    '--duration': [1, 60],
    '--rounds': [1, 10],
    '--connections': [1, 512],
    '--window': [1, 256],
  } as const;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--no-write') options.out = null;
    else if (arg === '--help') {
      process.stdout.write(USAGE);
      process.exit(0);
    } else if (Object.hasOwn(ranges, arg)) {
      const [min, max] = ranges[arg as keyof typeof ranges];
      const n = Number(args[++i]);
      if (!Number.isInteger(n) || n < min || n > max)
        return `${arg} expects an integer from ${min} to ${max}`;
      options[arg.slice(2) as 'duration' | 'rounds' | 'connections' | 'window'] = n;
    } else return `unknown argument "${arg}"\n${USAGE}`;
  }
  return options;
}

/** Twice the expected run time plus a minute: 2 scenarios × 2 contenders × rounds runs. */
const watchdogMs = (options: Options) =>
  (2 * (4 * options.rounds * (options.duration + WARMUP_S + 2) + 30) + 60) * 1000;

// --- setup -------------------------------------------------------------------------------------------

/** One Ingress routing ws.bench.test to the echo server, as a JSON `List` (ingress-ts reads .json). */
function manifests(upstreamPort: number): object {
  const metadata = (name: string) => ({ name, namespace: 'bench' });
  const paths = [
    { path: '/', pathType: 'Prefix', backend: { service: { name: 'ws-echo', port: { number: 80 } } } },
  ];
  return {
    apiVersion: 'v1',
    kind: 'List',
    items: [
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'IngressClass',
        metadata: { name: 'ingress-ts' },
        spec: { controller: 'ingress-ts.dev/controller' },
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: metadata('ws-echo'),
        spec: { ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
      },
      {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { ...metadata('ws-echo-0'), labels: { 'kubernetes.io/service-name': 'ws-echo' } },
        addressType: 'IPv4',
        ports: [{ name: 'http', port: upstreamPort, protocol: 'TCP' }],
        endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
      },
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
        metadata: metadata('ws-echo'),
        spec: { ingressClassName: 'ingress-ts', rules: [{ host: HOST, http: { paths } }] },
      },
    ],
  };
}

interface Env {
  echo: Started;
  ingressTs: Started;
  urls: Record<Contender, string>;
  commandLines: { echo: string; ingressTs: string };
}

async function setup(): Promise<Env> {
  const dir = makeTempDir('ingress-ts-ws-bench-');
  const manifestsDir = join(dir, 'manifests');
  mkdirSync(manifestsDir);
  // each port is taken just before the process that listens on it starts, so that another process on
  // the machine has less time to take it in between
  const upstreamPort = await freePort();
  const echoArgv = pinned(1, [process.execPath, ECHO_SCRIPT, String(upstreamPort)]);
  const echo = startProcess(echoArgv);
  await waitFor('ws-echo', async () => {
    if (echo.child.exitCode !== null) fail(1, `ws-echo exited:\n${echo.output.join('\n')}`);
    return (await probe(upstreamPort, false, '/', HOST))?.status === 200;
  });

  writeFileSync(join(manifestsDir, 'ws-bench.json'), `${JSON.stringify(manifests(upstreamPort), null, 2)}\n`);
  const ports = { http: await freePort(), https: await freePort(), healthz: await freePort() };
  const ts = await startIngressTs({ manifestsDir, ports, logLevel: 'warn', readyHost: HOST });

  const urls: Record<Contender, string> = {
    direct: `ws://127.0.0.1:${upstreamPort}/`,
    'ingress-ts': `ws://127.0.0.1:${ports.http}/`,
  };
  for (const contender of CONTENDERS) {
    try {
      await echoOnce(urls[contender], HOST);
    } catch (error) {
      fail(1, `${contender}: WebSocket echo check failed: ${(error as Error).message}`);
    }
  }
  return {
    echo,
    ingressTs: ts.started,
    urls,
    commandLines: { echo: echoArgv.join(' '), ingressTs: ts.command },
  };
}

// --- load runs ---------------------------------------------------------------------------------------

interface Scenario {
  name: string;
  connections: number;
  window: number;
}

interface Run extends LoadResult {
  /** ingress-ts CPU time (utime+stime) per echoed message over the measured window, in µs */
  proxyUsPerMessage: number | null;
  /** ingress-ts CPU time over the measured window, in % of one core */
  proxyCpuPercent: number | null;
  /** ws-load + ws-echo CPU time (both on core 1) over the measured window, in % of one core */
  loadSideCpuPercent: number;
}

function loadArgv(url: string, scenario: Scenario, seconds: number): string[] {
  return pinned(1, [
    process.execPath,
    LOAD_SCRIPT,
    '--url',
    url,
    '--host',
    HOST,
    '--connections',
    String(scenario.connections),
    '--window',
    String(scenario.window),
    '--duration',
    String(seconds),
    '--warmup',
    String(WARMUP_S),
    '--size',
    String(MESSAGE_BYTES),
  ]);
}

/** The parsed JSON line `{"event":NAME,...}` the load generator printed, or undefined. */
function eventLine(started: Started, name: string): (LoadResult & { event: string }) | undefined {
  const line = started.output.find((l) => l.startsWith(`{"event":"${name}"`));
  return line === undefined ? undefined : JSON.parse(line);
}

/** One load-generator run; CPU times are read when it starts and ends its measured window. */
async function load(env: Env, contender: Contender, scenario: Scenario, seconds: number): Promise<Run> {
  const started = startProcess(loadArgv(env.urls[contender], scenario, seconds));
  const { child } = started;
  const limitMs = (WARMUP_S + seconds + LOAD_GRACE_S) * 1000;
  const killer = setTimeout(() => {
    if (child.exitCode === null) process.kill(started.pid, 'SIGKILL');
  }, limitMs);
  const exited = new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
  const waitEvent = (name: string) =>
    waitFor(
      `ws-load (${contender}, ${name})`,
      async () => {
        if (eventLine(started, name) !== undefined) return true;
        // exited without the line, and all its output has been read
        if ((child.exitCode !== null || child.signalCode !== null) && child.stdout!.readableEnded) {
          const how = child.exitCode ?? child.signalCode;
          fail(1, `ws-load (${contender}) exited with ${how}:\n${started.output.join('\n')}`);
        }
        return false;
      },
      limitMs,
      TICK_MS,
    );
  const cpu = () => ({
    proxy: contender === 'ingress-ts' ? cpuTicks(env.ingressTs.pid) : 0,
    loadSide: cpuTicks(started.pid) + cpuTicks(env.echo.pid),
    at: performance.now(),
  });

  await waitEvent('measuring');
  const before = cpu();
  await waitEvent('result');
  const after = cpu();
  const code = await exited;
  clearTimeout(killer);
  if (code !== 0) fail(1, `ws-load (${contender}) exited with ${code}:\n${started.output.join('\n')}`);

  for (const [name, server] of [
    ['ingress-ts', env.ingressTs],
    ['ws-echo', env.echo],
  ] as const) {
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      fail(1, `${name} exited during a load run:\n${server.output.join('\n')}`);
    }
  }
  const result = eventLine(started, 'result')!;
  if (result.messages === 0)
    fail(1, `${contender}: no echo in the measured window (${result.errors} errors)`);
  const wallMs = after.at - before.at;
  const proxyMs = (after.proxy - before.proxy) * TICK_MS;
  const isProxy = contender === 'ingress-ts';
  return {
    messages: result.messages,
    seconds: result.seconds,
    rate: result.rate,
    p50Ms: result.p50Ms,
    p99Ms: result.p99Ms,
    errors: result.errors,
    connections: result.connections,
    proxyUsPerMessage: isProxy ? (proxyMs * 1000) / result.messages : null,
    proxyCpuPercent: isProxy ? (proxyMs / wallMs) * 100 : null,
    loadSideCpuPercent: (((after.loadSide - before.loadSide) * TICK_MS) / wallMs) * 100,
  };
}

interface ScenarioResult {
  scenario: Scenario;
  runs: Map<Contender, Run[]>;
  /** ingress-ts ÷ direct messages/s, one per round */
  ratios: number[];
  rssKiB: number | null;
}

async function runScenario(env: Env, scenario: Scenario, options: Options): Promise<ScenarioResult> {
  const runs = new Map<Contender, Run[]>(CONTENDERS.map((c) => [c, []]));
  const ratios: number[] = [];
  for (let round = 1; round <= options.rounds; round++) {
    const rates = new Map<Contender, number>();
    for (const contender of CONTENDERS) {
      const run = await load(env, contender, scenario, options.duration);
      runs.get(contender)!.push(run);
      rates.set(contender, run.rate);
      log(
        `${scenario.name} round ${round} ${contender}: ${Math.round(run.rate)} msg/s, p50 ${fixed(run.p50Ms, 3)} ms, p99 ${fixed(run.p99Ms, 3)} ms, ${run.errors} errors`,
      );
    }
    ratios.push(rates.get('ingress-ts')! / rates.get('direct')!);
  }
  return { scenario, runs, ratios, rssKiB: rssKiB(env.ingressTs.pid) };
}

// --- report ------------------------------------------------------------------------------------------

const medianOf = (runs: readonly Run[], pick: (run: Run) => number | null): number =>
  median(runs.map(pick).filter((v): v is number => v !== null));

function scenarioTable(result: ScenarioResult): string {
  const lines = [
    '| contender | msg/s (median) | × direct | p50 ms | p99 ms | proxy CPU µs/msg | proxy CPU % | core 1 CPU % | errors (sum) | ingress-ts RSS MiB | msg/s per round |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|',
  ];
  for (const [contender, runs] of result.runs) {
    const isProxy = contender === 'ingress-ts';
    const cells = [
      contender,
      int(medianOf(runs, (r) => r.rate)),
      isProxy ? fixed(median(result.ratios), 2) : '1.00',
      fixed(
        medianOf(runs, (r) => r.p50Ms),
        3,
      ),
      fixed(
        medianOf(runs, (r) => r.p99Ms),
        3,
      ),
      isProxy
        ? fixed(
            medianOf(runs, (r) => r.proxyUsPerMessage),
            1,
          )
        : '–',
      isProxy
        ? fixed(
            medianOf(runs, (r) => r.proxyCpuPercent),
            0,
          )
        : '–',
      fixed(
        medianOf(runs, (r) => r.loadSideCpuPercent),
        0,
      ),
      int(runs.reduce((sum, r) => sum + r.errors, 0)),
      isProxy && result.rssKiB !== null ? (result.rssKiB / 1024).toFixed(1) : '–',
      runs.map((r) => int(r.rate)).join(' / '),
    ];
    lines.push(`| ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

function header(options: Options, env: Env, scenarios: readonly Scenario[]): string {
  const cpu = cpus();
  const ws = JSON.parse(readFileSync(join(REPO, 'node_modules', 'ws', 'package.json'), 'utf8')) as {
    version: string;
  };
  const loadCommands = scenarios.flatMap((scenario) =>
    CONTENDERS.map((c) => loadArgv(env.urls[c], scenario, options.duration).join(' ')),
  );
  return `# WebSocket benchmark: ingress-ts vs direct

- date: ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}
- machine: ${cpu[0]?.model ?? 'unknown'} × ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB
- node: ${process.version}; ws ${ws.version} (echo server and load generator, no compression)
- pinning: ${isPinned() ? 'ingress-ts on core 0 (`taskset -c 0`), the echo server and the load generator on core 1' : '**taskset missing: nothing pinned**'}
- method: every load run opens its connections, sends for ${WARMUP_S} s unrecorded, then measures for ${options.duration} s; ${options.rounds} interleaved rounds per scenario (direct, ingress-ts, direct, ...), medians over rounds. Each connection keeps its window of ${MESSAGE_BYTES}-byte text messages in flight, sending one more per echo; the round trip of every echo in the measured window is a latency sample. × direct is the median of the per-round ratios. Proxy CPU is utime+stime of ingress-ts over the measured window, per echoed message (each crosses the proxy twice) and in % of one core; core 1 CPU is that of the load generator plus the echo server.

Commands:

\`\`\`sh
${env.commandLines.echo}
${env.commandLines.ingressTs}
${loadCommands.join('\n')}
\`\`\`
`;
}

// --- main --------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const parsed = parseOptions(process.argv.slice(2));
  initHarness('ws-bench', typeof parsed === 'string' ? 60000 : watchdogMs(parsed));
  if (typeof parsed === 'string') fail(2, parsed);
  const options = parsed;
  ensureTools(false);
  const startedAt = Date.now();
  log('starting ws-echo and ingress-ts');
  const env = await setup();
  const scenarios: Scenario[] = [
    {
      name: `${options.connections} connections × ${options.window} in flight`,
      connections: options.connections,
      window: options.window,
    },
    { name: '1 connection × 1 in flight', connections: 1, window: 1 },
  ];
  const results: ScenarioResult[] = [];
  for (const scenario of scenarios) results.push(await runScenario(env, scenario, options));
  const tsLogLines = env.ingressTs.output.length;

  await stopProcess(env.ingressTs, 'SIGINT');
  await stopProcess(env.echo, 'SIGTERM');
  const minutes = ((Date.now() - startedAt) / 60000).toFixed(1);
  const sections = results.map((r) => `## ${r.scenario.name}\n\n${scenarioTable(r)}\n`);
  const report = `${header(options, env, scenarios)}\nTotal run time: ${minutes} min. ingress-ts logged ${tsLogLines} line(s) at warn or above.\n\n${sections.join('\n')}`;
  process.stdout.write(report);
  if (options.out !== null) {
    mkdirSync(join(REPO, 'bench', 'results'), { recursive: true });
    writeFileSync(options.out, report);
    log(`written to ${options.out}`);
  }
  cleanup();
}

if (import.meta.main) await main();
