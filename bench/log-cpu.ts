// What the access log and the request metrics cost the main thread when the data plane runs in worker
// threads: ingress-ts with `worker-processes: N` (2) writing its access log to a file, /metrics on,
// under wrk; the CPU time of the main thread alone (/proc/<pid>/task/<pid>/stat) and of the whole
// process, per request. The main thread serves no request: what it spends per request is what the
// threads hand it (records, lines) and what it does with them. Not pinned (the cores are shared);
// compare runs of the same machine with each other, as ratios.
// The main thread's CPU while idle (timers, the threads' empty batches) is measured first, over the
// same time, and reported apart: "net" is per request above that.
// Usage: node bench/log-cpu.ts [--threads 2] [--rounds 3] [--seconds 5] [--connections 32]
//          [--no-metrics] [--no-access-log] [--label NAME] [--no-write]
// Each run appends its summary line to bench/results/log-cpu-YYYY-MM-DD.md (not with --no-write).
import { spawn } from 'node:child_process';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  fail,
  fixed,
  freePort,
  initHarness,
  int,
  log,
  makeTempDir,
  median,
  REPO,
  sleep,
  stopProcess,
} from './support/harness.ts';
import { plainManifests, startIngressTs } from './support/ingress-ts.ts';
import { parseWrk } from './support/wrk.ts';

const HOST = 'bench.test';

/** CPU time of one thread of `pid` so far, in µs (schedstat: nanoseconds on a CPU). */
function threadCpuUs(pid: number, tid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1000;
  } catch {
    return 0;
  }
}

/** A 1 KiB answer on every request, in a process of its own (its CPU is not the proxy's). */
function startUpstream(port: number) {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const body = Buffer.alloc(1024, 120);
       require('node:http').createServer((req, res) => { req.resume(); res.end(body); }).listen(${port}, '127.0.0.1');`,
    ],
    { stdio: 'ignore' },
  );
  return child;
}

function runWrk(port: number, connections: number, seconds: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', [
      '-t1',
      `-c${connections}`,
      `-d${seconds}s`,
      '--latency',
      '-H',
      `Host: ${HOST}`,
      `http://127.0.0.1:${port}/`,
    ]);
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`wrk exited ${code}`))));
  });
}

async function main() {
  const { values } = parseArgs({
    options: {
      threads: { type: 'string', default: '2' },
      rounds: { type: 'string', default: '3' },
      seconds: { type: 'string', default: '5' },
      connections: { type: 'string', default: '32' },
      'no-metrics': { type: 'boolean', default: false },
      'no-access-log': { type: 'boolean', default: false },
      /** a name for the run in the results file (e.g. before / after) */
      label: { type: 'string', default: '' },
      'no-write': { type: 'boolean', default: false },
    },
  });
  const threads = Number(values.threads);
  const rounds = Number(values.rounds);
  const seconds = Number(values.seconds);
  const connections = Number(values.connections);
  initHarness('log-cpu', (rounds * (seconds + 10) + 60) * 1000);

  const dir = makeTempDir('ingress-ts-log-cpu-');
  const upstreamPort = await freePort();
  const upstream = startUpstream(upstreamPort);
  const accessLog = join(dir, 'access.log');
  writeFileSync(
    join(dir, 'bench.yaml'),
    plainManifests({
      host: HOST,
      upstreamPort,
      configMap: {
        'worker-processes': String(threads),
        'access-log-path': accessLog,
        ...(values['no-access-log'] ? { 'disable-access-log': 'true' } : {}),
      },
    }),
  );
  const ports = { http: await freePort(), https: await freePort(), healthz: await freePort() };
  const { started } = await startIngressTs({
    manifestsDir: dir,
    ports,
    logLevel: 'warn',
    args: ['--configmap', 'bench/ingress-ts', ...(values['no-metrics'] ? ['--enable-metrics=false'] : [])],
    readyHost: HOST,
    cores: `0-${availableParallelism() - 1}`,
  });
  const pid = started.child.pid;
  if (pid === undefined) fail(1, 'ingress-ts has no pid');
  log(`ingress-ts pid ${pid}, ${threads} thread(s); warming up`);
  await runWrk(ports.http, connections, 2);

  const idleStart = threadCpuUs(pid, pid);
  await sleep(seconds * 1000);
  const idleUs = threadCpuUs(pid, pid) - idleStart;
  log(`idle: main thread ${fixed(idleUs / 1000, 1)} ms of CPU over ${seconds} s`);

  const mainUs: number[] = [];
  const netUs: number[] = [];
  const processUs: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const mainBefore = threadCpuUs(pid, pid);
    const processBefore = readProcessTicks(pid);
    const out = await runWrk(ports.http, connections, seconds);
    // the last batches (50 ms in the threads, 100 ms in the writer) are in before the reading
    if (!values['no-metrics']) await fetch(`http://127.0.0.1:${ports.healthz}/metrics`).then((r) => r.text());
    await sleep(200);
    const mainAfter = threadCpuUs(pid, pid);
    const processAfter = readProcessTicks(pid);
    const { requests, rps } = parseWrk(out);
    const main = mainAfter - mainBefore;
    mainUs.push(main / requests);
    netUs.push((main - idleUs * ((seconds * 1000 + 200) / (seconds * 1000))) / requests);
    processUs.push(((processAfter - processBefore) * 10000) / requests);
    log(
      `round ${round + 1}: ${int(requests)} requests (${int(rps)} req/s); main thread ${fixed(mainUs.at(-1) as number, 2)} µs/req (net of idle ${fixed(netUs.at(-1) as number, 2)}), process ${fixed(processUs.at(-1) as number, 1)} µs/req`,
    );
  }
  await stopProcess(started);
  upstream.kill();
  const lines = readFileSync(accessLog, 'utf8')
    .split('\n')
    .filter((line) => line !== '').length;
  const summary = `${values.label === '' ? '' : `${values.label}: `}threads ${threads}${values['no-metrics'] ? ', no metrics' : ''}${values['no-access-log'] ? ', no access log' : ''}, ${rounds} rounds of ${seconds} s, -c${connections}: main thread ${fixed(median(mainUs), 2)} µs/req (median; ${mainUs.map((v) => fixed(v, 2)).join(', ')}), net of idle ${fixed(median(netUs), 2)} µs/req (${netUs.map((v) => fixed(v, 2)).join(', ')}); process ${fixed(median(processUs), 1)} µs/req; ${int(lines)} access log lines (load average ${loadavg()[0]?.toFixed(1)})\n`;
  process.stdout.write(summary);
  if (!values['no-write']) {
    const file = join(REPO, 'bench/results', `log-cpu-${new Date().toISOString().slice(0, 10)}.md`);
    appendFileSync(file, `- ${summary}`);
  }
}

function readProcessTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

await main();
