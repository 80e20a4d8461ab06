// What OpenTelemetry costs a proxied request: CPU µs per request of ingress-ts (one thread, standalone,
// access log off, metrics on) with tracing off (the default), and on (enable-opentelemetry, AlwaysOn,
// every span exported over OTLP/gRPC to a local collector that is up, with the default batch
// settings), and with --compare another checkout (e.g. main without this code) as the floor. The
// upstream, the client and the collector run in this process; only ingress-ts's own CPU (utime+stime
// from /proc) is counted, so the figure holds on a shared machine where req/s does not. Contenders run
// in interleaved rounds; medians over rounds. Run: `node bench/otel.ts [--rounds N] [--requests N]
// [--connections C] [--compare CHECKOUT] [--out FILE]`.

import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { Agent, createServer, type IncomingMessage, request } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { compileRouteTracing } from '../lib/dataplane/tracing/route-tracing.ts';
import { loadedSdk, sdkLoaded } from '../lib/dataplane/tracing/sdk-loader.ts';
import { Tracing } from '../lib/dataplane/tracing/tracing.ts';
import { DEFAULT_TRACING } from '../lib/model/configmap/tracing-keys.ts';
import { OtlpCollector } from '../test/support/otlp-collector.ts';
import {
  cleanup,
  cpuTicks,
  fail,
  fixed,
  freePort,
  initHarness,
  int,
  log,
  makeTempDir,
  median,
  rssKiB,
  type Started,
  stopProcess,
} from './support/harness.ts';
import { plainManifests, startIngressTs } from './support/ingress-ts.ts';

const HOST = 'bench.test';
const TICK_US = 10_000; // USER_HZ 100

interface Options {
  rounds: number;
  requests: number;
  connections: number;
  compare: string | null;
  out: string | null;
  /** the span alone, in this thread: CPU µs per span of the SDK as the data plane drives it */
  micro: boolean;
}

function parseArgs(argv: string[]): Options {
  const options: Options = {
    rounds: 5,
    requests: 20_000,
    connections: 16,
    compare: null,
    out: null,
    micro: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (flag === '--help') {
      console.log(
        'Usage: node bench/otel.ts [--rounds N (5)] [--requests N per run (20000)] [--connections C (16)] [--compare CHECKOUT] [--micro] [--out FILE]',
      );
      process.exit(0);
    }
    if (flag === '--micro') {
      options.micro = true;
      continue;
    }
    if (value === undefined) fail(2, `${flag} needs a value`);
    i++;
    if (flag === '--rounds') options.rounds = Number(value);
    else if (flag === '--requests') options.requests = Number(value);
    else if (flag === '--connections') options.connections = Number(value);
    else if (flag === '--compare') options.compare = value;
    else if (flag === '--out') options.out = value;
    else fail(2, `unknown flag ${flag}`);
  }
  return options;
}

interface Contender {
  name: string;
  started: Started;
  port: number;
  cpuUsPerRequest: number[];
}

/** `count` GETs over `connections` keep-alive connections; resolves with the number answered 200. */
async function load(port: number, count: number, connections: number, headers: Record<string, string> = {}) {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  let next = 0;
  let ok = 0;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path: '/', agent, headers: { host: HOST, ...headers } },
        (res) => {
          if (res.statusCode === 200) ok++;
          res.resume();
          res.on('end', resolve);
        },
      );
      req.on('error', reject);
      req.end();
    });
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next < count) {
        next++;
        await one();
      }
    }),
  );
  agent.destroy();
  return ok;
}

/**
 * --micro: the work tracing adds to one request, alone in this thread: the span started (context
 * extracted, attributes, context injected for the upstream) and ended, and its share of the batch
 * export (the OTLP encoding and the gRPC write happen on the data plane's thread too). The collector
 * runs in a worker thread, so its decoding is not counted. Thread CPU time is not stretched by other
 * processes as wall time is; the minimum over rounds is the least disturbed.
 */
async function micro(options: Options): Promise<string> {
  const collector = new Worker(
    `const { parentPort } = require('node:worker_threads');
     import(${JSON.stringify(new URL('../test/support/otlp-collector.ts', import.meta.url).href)})
       .then(async ({ OtlpCollector }) => parentPort.postMessage((await OtlpCollector.start()).port));`,
    { eval: true },
  );
  const [port] = (await once(collector, 'message')) as [number];
  const runs: Array<[string, number[], string]> = [];
  for (const sampler of ['AlwaysOff', 'AlwaysOn'] as const) {
    const [label, values, counts] = await spanRounds(options, port, sampler);
    runs.push([label, values, counts]);
  }
  await collector.terminate();
  const row = (label: string, values: number[]) =>
    `| ${label} | ${fixed(Math.min(...values), 2)} | ${fixed(median(values), 2)} | ${values.map((v) => fixed(v, 1)).join(' ')} |`;
  return `| the tracing work of one request | CPU µs: min | median | each round |
|---|---|---|---|
${runs.map(([label, values]) => row(label, values)).join('\n')}

${options.rounds} rounds of ${int(options.requests)} spans each (after one warm-up round); ${runs.map(([label, , counts]) => `${label}: ${counts}`).join('; ')}. Node ${process.version}, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')} at the end.`;
}

/** Rounds of spans with this sampler; AlwaysOn waits for every span to be exported. */
async function spanRounds(
  options: Options,
  port: number,
  sampler: 'AlwaysOn' | 'AlwaysOff',
): Promise<[string, number[], string]> {
  const tracing = new Tracing();
  // a queue that never fills: every span of the run is exported, and counted
  tracing.configure({
    ...DEFAULT_TRACING,
    sampler,
    // the incoming context is sampled: parent-based, AlwaysOff would still record its child
    samplerParentBased: false,
    collectorHost: '127.0.0.1',
    collectorPort: port,
    maxQueueSize: 1 << 20,
  });
  const route = compileRouteTracing({ trustIncomingSpan: true, operationName: '' }, '/', HOST, {
    namespace: 'bench',
    ingress: 'bench',
    service: 'bench',
    servicePort: '80',
  });
  await sdkLoaded();
  const sdk = loadedSdk();
  const tracer = tracing.tracer();
  if (route === null || sdk === null || tracer === null) fail(1, 'the SDK did not load');
  const req = {
    method: 'GET',
    url: '/shop/cart?item=42',
    httpVersion: '1.1',
    rawHeaders: [
      'Host',
      HOST,
      'User-Agent',
      'bench',
      'traceparent',
      '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    ],
    headers: { host: HOST, 'user-agent': 'bench' },
    socket: { localPort: 80, remotePort: 50000 },
  } as unknown as IncomingMessage;
  const perSpan: number[] = [];
  let total = 0;
  // whole batches (otel-max-export-batch-size): each leaves at once, none waits for the batch delay
  const count = Math.max(512, Math.round(options.requests / 512) * 512);
  for (let round = 0; round <= options.rounds; round++) {
    const before = process.threadCpuUsage();
    for (let i = 0; i < count; i++) {
      const span = sdk.startRequestSpan(tracer, route, req, HOST, false, '127.0.0.1');
      sdk.endRequestSpan(span, 200, '127.0.0.1:8080');
      // the event loop turns between requests as it does under traffic: the batches leave meanwhile
      if (i % 64 === 63) await new Promise((resolve) => setImmediate(resolve));
    }
    total += count;
    while (sampler === 'AlwaysOn' && tracing.stats.exported + tracing.stats.dropped < total)
      await new Promise((resolve) => setTimeout(resolve, 1));
    const used = process.threadCpuUsage(before);
    // round 0 warms the JIT up
    if (round > 0) perSpan.push((used.user + used.system) / count);
  }
  await tracing.close();
  const label =
    sampler === 'AlwaysOn'
      ? 'AlwaysOn: span started, ended, exported to the collector'
      : 'AlwaysOff: context made and injected, nothing recorded or sent';
  return [label, perSpan, `${int(tracing.stats.exported)} exported, ${int(tracing.stats.dropped)} dropped`];
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  if (options.micro) {
    const summary = await micro(options);
    console.log(summary);
    if (options.out !== null) writeFileSync(options.out, `${summary}\n`);
    return;
  }
  initHarness('otel', 20 * 60 * 1000);
  const upstream = createServer((req, res) => {
    req.resume();
    res.end('ok');
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const upstreamPort = (upstream.address() as { port: number }).port;
  const collector = await OtlpCollector.start();

  const contenders: Contender[] = [];
  const start = async (name: string, configMap: Record<string, string>, checkout?: string) => {
    const dir = makeTempDir(`otel-${name}-`);
    writeFileSync(join(dir, 'site.yaml'), plainManifests({ host: HOST, upstreamPort, configMap }));
    const ports = { http: await freePort(), https: await freePort(), healthz: await freePort() };
    const { started } = await startIngressTs({
      manifestsDir: dir,
      ports,
      logLevel: 'warn',
      args: ['--configmap', 'bench/ingress-ts'],
      readyHost: HOST,
      ...(checkout === undefined ? {} : { checkout }),
    });
    contenders.push({ name, started, port: ports.http, cpuUsPerRequest: [] });
  };
  const common = { 'worker-processes': '1', 'disable-access-log': 'true' };
  if (options.compare !== null) await start('compare (floor)', common, options.compare);
  await start('tracing off', common);
  await start('tracing on (AlwaysOn)', {
    ...common,
    'enable-opentelemetry': 'true',
    'otlp-collector-host': '127.0.0.1',
    'otlp-collector-port': String(collector.port),
  });

  log(`warm-up: ${options.requests} requests each`);
  for (const c of contenders) await load(c.port, options.requests, options.connections);
  for (let round = 1; round <= options.rounds; round++) {
    for (const c of contenders) {
      const before = cpuTicks(c.started.child.pid ?? 0);
      const ok = await load(c.port, options.requests, options.connections);
      // the last spans are sent within the batch delay: counted in the next run, as in steady traffic
      const ticks = cpuTicks(c.started.child.pid ?? 0) - before;
      if (ok !== options.requests) fail(1, `${c.name}: ${options.requests - ok} requests failed`);
      c.cpuUsPerRequest.push((ticks * TICK_US) / options.requests);
    }
    log(
      `round ${round}: ${contenders.map((c) => `${c.name} ${fixed(c.cpuUsPerRequest.at(-1) ?? Number.NaN, 1)} µs`).join(', ')}`,
    );
  }
  const rows = contenders.map((c) => ({
    name: c.name,
    median: median(c.cpuUsPerRequest),
    min: Math.min(...c.cpuUsPerRequest),
    all: c.cpuUsPerRequest.map((v) => fixed(v, 1)).join(' '),
    rssMiB: (rssKiB(c.started.child.pid ?? 0) ?? 0) / 1024,
  }));
  const off = rows.find((r) => r.name === 'tracing off');
  const versus = (value: number, base: number | undefined) =>
    base === undefined ? '' : `${value >= base ? '+' : ''}${fixed(value - base, 1)}`;
  // on a machine shared with other work a round is only ever slowed down: the least disturbed
  // (minimum) is the closest to the cost itself, the median says how steady that is
  const table = [
    '| contender | CPU µs / request: min | median | min vs tracing off | median vs tracing off | each round | RSS at the end |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${fixed(r.min, 1)} | ${fixed(r.median, 1)} | ${r === off ? '' : versus(r.min, off?.min)} | ${r === off ? '' : versus(r.median, off?.median)} | ${r.all} | ${fixed(r.rssMiB, 0)} MiB |`,
    ),
  ].join('\n');
  const summary = `${table}

${options.rounds} rounds of ${int(options.requests)} keep-alive GETs over ${options.connections} connections per contender; spans received by the collector: ${int(collector.spans.length)} (${collector.exports} export calls). Node ${process.version}, ${cpus().length} CPUs, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')} at the end.`;
  console.log(summary);
  if (options.out !== null) writeFileSync(options.out, `${summary}\n`);
  for (const c of contenders) await stopProcess(c.started);
  collector.stop();
  upstream.close();
  cleanup();
}

main().catch((error: unknown) => {
  console.error(error);
  cleanup();
  process.exit(1);
});
