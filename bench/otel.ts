// What OpenTelemetry costs a proxied request: CPU µs per request of ingress-ts (one thread, standalone,
// access log off, metrics on) with tracing off (the default), and on (enable-opentelemetry, AlwaysOn,
// every span exported over OTLP/gRPC to a local collector that is up, with the default batch
// settings), and with --compare another checkout (e.g. main without this code) as the floor. The
// upstream, the client and the collector run in this process; only ingress-ts's own CPU (utime+stime
// from /proc) is counted, so the figure holds on a shared machine where req/s does not. Contenders run
// in interleaved rounds; medians over rounds. Run: `node bench/otel.ts [--rounds N] [--requests N]
// [--connections C] [--compare CHECKOUT] [--out FILE]`.

import { writeFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
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
}

function parseArgs(argv: string[]): Options {
  const options: Options = { rounds: 5, requests: 20_000, connections: 16, compare: null, out: null };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (flag === '--help') {
      console.log(
        'Usage: node bench/otel.ts [--rounds N (5)] [--requests N per run (20000)] [--connections C (16)] [--compare CHECKOUT] [--out FILE]',
      );
      process.exit(0);
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

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
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
    all: c.cpuUsPerRequest.map((v) => fixed(v, 1)).join(' '),
    rssMiB: (rssKiB(c.started.child.pid ?? 0) ?? 0) / 1024,
  }));
  const floor = rows.find((r) => r.name === 'tracing off')?.median ?? Number.NaN;
  const table = [
    '| contender | CPU µs / request (median) | vs tracing off | rounds | RSS at the end |',
    '|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${fixed(r.median, 1)} | ${r.name === 'tracing off' ? '' : `${r.median >= floor ? '+' : ''}${fixed(r.median - floor, 1)}`} | ${r.all} | ${fixed(r.rssMiB, 0)} MiB |`,
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
