// Which property reads of the per-request path went megamorphic: ingress-ts (worker-processes 1, its
// defaults; --no-log / --no-metrics as bench/instructions.ts) runs natively with V8's `--log-ic`,
// serves `--warmup` then `--requests` GETs of the 1 KiB upstream over keep-alive connections, and
// the log's IC events are read back: every site whose inline cache reached the megamorphic state
// (`N`), by source position (file:line:column), key and kind, with the number of misses seen after
// the warm-up (a megamorphic site that still misses the stub cache then is on the steady path) and
// the number of maps it saw. Sites are grouped by who owns the code: ours (lib/), each package of
// node_modules, Node's own (node:, and its startup snapshot's code, which has no script name).
// V8's tools/ic-processor is not shipped with Node; this reads the few fields needed. --floor runs
// the bare Node proxy (bench/support/bare-proxy.ts) instead. Run with `node bench/ic-sites.ts [flags]` (see --help).

import {
  closeSync,
  copyFileSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import {
  ensureTools,
  fail,
  freePort,
  initHarness,
  int,
  log,
  makeTempDir,
  probe,
  REPO,
  startProcess,
  stopProcess,
  waitFor,
} from './support/harness.ts';
import { ingressTsArgv, plainManifests } from './support/ingress-ts.ts';
import { startNginx, upstreamConf } from './support/nginx.ts';

const HOST = 'bench.test';

const USAGE = `Usage: node bench/ic-sites.ts [--requests N] [--warmup N] [--connections C] [--no-log] [--no-metrics] [--floor] [--top N] [--keep FILE]
  --requests N     GETs after the warm-up, whose misses are counted as steady [20000]
  --warmup N       GETs first [20000]
  --connections C  keep-alive connections [8]
  --no-log         ConfigMap disable-access-log: "true"
  --no-metrics     --enable-metrics=false
  --top N          rows per owner [40]
  --floor          the bare Node proxy (bench/support/bare-proxy.ts) instead, to tell its sites apart
  --keep FILE      copy the V8 log to FILE
`;

interface Options {
  requests: number;
  warmup: number;
  connections: number;
  noLog: boolean;
  noMetrics: boolean;
  top: number;
  keep: string | null;
  floor: boolean;
}

function parseOptions(args: string[]): Options {
  const options: Options = {
    requests: 20000,
    warmup: 20000,
    connections: 8,
    noLog: false,
    noMetrics: false,
    top: 40,
    keep: null,
    floor: false,
  };
  const count = (flag: string, value: string | undefined): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0) fail(2, `${flag} expects a whole number`);
    return n;
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--requests') options.requests = count(arg, args[++i]);
    else if (arg === '--warmup') options.warmup = count(arg, args[++i]);
    else if (arg === '--connections') options.connections = Math.max(1, count(arg, args[++i]));
    else if (arg === '--top') options.top = count(arg, args[++i]);
    else if (arg === '--no-log') options.noLog = true;
    else if (arg === '--floor') options.floor = true;
    else if (arg === '--no-metrics') options.noMetrics = true;
    else if (arg === '--keep') options.keep = args[++i] ?? fail(2, '--keep expects a file');
    else if (arg === '--help') {
      process.stdout.write(USAGE);
      process.exit(0);
    } else fail(2, `unknown argument "${arg}"\n${USAGE}`);
  }
  return options;
}

// --- the log -------------------------------------------------------------------------------------------

/** One compiled code object: where it starts, how long it is, the function and script it belongs to. */
interface Code {
  start: number;
  end: number;
  /** `name path:line:column`, as V8 logs it */
  name: string;
}

interface Site {
  kind: string;
  /** the script (URL or node:...) and the position in it */
  where: string;
  key: string;
  fn: string;
  misses: number;
  steady: number;
  maps: Set<string>;
}

/** Splits one log line on its commas; V8 escapes the commas inside a field (`\x2C`). */
const fields = (line: string) => line.split(',');

/** The script of a code object's name: `fn file:///…/lib/x.ts:1:2` → the file, `fn node:http:1:2` → node:http. */
function scriptOf(name: string): { fn: string; script: string } {
  const space = name.lastIndexOf(' ');
  const fn = space === -1 ? '' : name.slice(0, space);
  const located = name.slice(space + 1).replace(/:\d+:\d+$/, '');
  return { fn: fn === '' ? '(anonymous)' : fn, script: located };
}

/** Who owns a script: ours, a dependency (by its package), or Node's. */
function ownerOf(script: string): string {
  const path = script.replace(/^file:\/\//, '');
  const modules = path.lastIndexOf('/node_modules/');
  if (modules !== -1) return path.slice(modules + 14).split('/')[0] ?? 'node_modules';
  if (path.startsWith(REPO))
    return path.slice(REPO.length).split('/')[0] === 'lib' ? 'ingress-ts (lib/)' : 'ingress-ts (other)';
  if (path.startsWith('node:')) return 'node';
  // bytecode deserialised from Node's startup snapshot has no code-creation event: Node's own
  return path === '' ? 'node (snapshot: no script name)' : 'other';
}

function shortScript(script: string): string {
  const path = script.replace(/^file:\/\//, '');
  const modules = path.lastIndexOf('/node_modules/');
  if (modules !== -1) return path.slice(modules + 14);
  return path.startsWith(REPO) ? path.slice(REPO.length) : path;
}

/**
 * Reads the log in one pass: code objects as they are created (moves and deletes are rare on a warm
 * heap and left out), each IC event matched to the newest code object containing its pc. `steadyFrom`
 * is the byte offset the warm-up ended at; misses after it are counted apart.
 */
function readLog(file: string, steadyFrom: number): Site[] {
  const codes: Code[] = [];
  let sorted = true;
  const sites = new Map<string, Site>();
  const find = (pc: number): Code | undefined => {
    if (!sorted) {
      codes.sort((a, b) => a.start - b.start);
      sorted = true;
    }
    let lo = 0;
    let hi = codes.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if ((codes[mid] as Code).start <= pc) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    // overlapping entries (code freed and its space reused): the newest one, pushed last, wins ties
    for (let k = found; k >= 0 && k > found - 8; k--) {
      const code = codes[k] as Code;
      if (pc < code.end) return code;
    }
    return undefined;
  };
  const fd = openSync(file, 'r');
  const buffer = Buffer.alloc(1 << 20);
  let offset = 0;
  let rest = '';
  try {
    for (;;) {
      const n = readSync(fd, buffer, 0, buffer.length, offset);
      if (n === 0) break;
      // latin1: one character per byte, so positions in the text are byte offsets
      let at = offset - rest.length;
      const text = rest + buffer.toString('latin1', 0, n);
      const lines = text.split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        const lineAt = at;
        at += line.length + 1;
        if (line.startsWith('code-creation,')) {
          const f = fields(line);
          // code-creation,type,kind,time,address,size,name,...
          const start = Number.parseInt(f[4] ?? '', 16);
          const size = Number(f[5]);
          if (Number.isFinite(start) && size > 0) {
            const last = codes[codes.length - 1];
            if (last !== undefined && last.start > start) sorted = false;
            codes.push({ start, end: start + size, name: (f[6] ?? '').trim() });
          }
          continue;
        }
        const ic =
          /^(Load|KeyedLoad|Store|KeyedStore|StoreInArrayLiteral|DefineKeyedOwn|DefineNamedOwn)IC,/.exec(
            line,
          );
        if (ic === null) continue;
        // kind,pc,time,line,column,old,new,map,key,modifier,slow-reason
        const f = fields(line);
        if (f[6] !== 'N') continue;
        const code = find(Number.parseInt(f[1] ?? '', 16));
        const { fn, script } = scriptOf(code?.name ?? '');
        const where = `${script}:${f[3]}:${f[4]}`;
        const kind = `${ic[1]}IC`;
        const key = (f[8] ?? '').replaceAll('\\x2C', ',');
        const id = `${kind} ${where} ${key}`;
        let site = sites.get(id);
        if (site === undefined) {
          site = { kind, where, key, fn, misses: 0, steady: 0, maps: new Set() };
          sites.set(id, site);
        }
        site.misses++;
        if (lineAt >= steadyFrom) site.steady++;
        site.maps.add(f[7] ?? '');
      }
      offset += n;
    }
  } finally {
    closeSync(fd);
  }
  return [...sites.values()];
}

// --- load ----------------------------------------------------------------------------------------------

async function send(pool: Pool, requests: number, connections: number): Promise<void> {
  let left = requests;
  const loop = async () => {
    while (left > 0) {
      left--;
      const answer = await pool.request({ path: '/', method: 'GET', headers: { host: HOST } });
      const body = await answer.body.arrayBuffer();
      if (answer.statusCode !== 200 || body.byteLength < 1024)
        fail(1, `a request got ${answer.statusCode} with ${body.byteLength} bytes`);
    }
  };
  await Promise.all(Array.from({ length: connections }, loop));
}

/** The isolate's log V8 writes next to `--logfile` (one per isolate: `isolate-ADDR-PID-NAME`). */
function logOf(dir: string): string {
  const files = readdirSync(dir).filter((f) => f.endsWith('ic.log'));
  if (files.length === 0) fail(1, `no IC log in ${dir}`);
  // the main thread's isolate logs the most
  return files.map((f) => join(dir, f)).sort((a, b) => statSync(b).size - statSync(a).size)[0] as string;
}

function table(title: string, sites: Site[], top: number): string {
  const rows = sites
    .slice(0, top)
    .map(
      (s) =>
        `| ${int(s.steady)} | ${int(s.misses)} | ${s.maps.size} | ${s.kind} | \`${s.key.slice(0, 40)}\` | \`${shortScript(s.where)}\` | \`${s.fn.slice(0, 50)}\` |`,
    )
    .join('\n');
  return `### ${title} (${sites.length} sites)

| misses after warm-up | misses | maps | kind | key | where | function |
|--:|--:|--:|---|---|---|---|
${rows}
`;
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  ensureTools();
  const dir = makeTempDir('ingress-ts-ic-sites-');
  const upstreamPort = await freePort();
  const upstream = await startNginx(
    join(dir, 'upstream'),
    upstreamConf(join(dir, 'upstream'), dir, [upstreamPort]),
    1,
  );
  const manifestsDir = join(dir, 'manifests');
  mkdirSync(manifestsDir, { recursive: true });
  const configMap: Record<string, string> = {
    'worker-processes': '1',
    'access-log-path': join(dir, 'access.log'),
  };
  if (options.noLog) configMap['disable-access-log'] = 'true';
  writeFileSync(join(manifestsDir, 'bench.yaml'), plainManifests({ host: HOST, upstreamPort, configMap }));
  const logDir = join(dir, 'v8');
  mkdirSync(logDir);
  const ports = { http: await freePort(), https: await freePort(), healthz: await freePort() };
  const icFlags = ['--log-ic', `--logfile=${join(logDir, 'ic.log')}`];
  const argv = options.floor
    ? [process.execPath, ...icFlags, 'bench/support/bare-proxy.ts', String(ports.http), String(upstreamPort)]
    : ingressTsArgv({
        manifestsDir,
        ports,
        logLevel: 'warn',
        nodeFlags: icFlags,
        readyHost: HOST,
        args: ['--configmap', 'bench/ingress-ts', ...(options.noMetrics ? ['--enable-metrics=false'] : [])],
      });
  log(`starting ${argv.join(' ')}`);
  const started = startProcess(argv);
  await waitFor(
    'ingress-ts',
    async () => {
      if (started.child.exitCode !== null) fail(1, `ingress-ts exited:\n${started.output.join('\n')}`);
      return (await probe(ports.http, false, '/', HOST))?.status === 200;
    },
    120_000,
    200,
  );
  const pool = new Pool(`http://127.0.0.1:${ports.http}`, {
    connections: options.connections,
    pipelining: 1,
  });
  log(`warm-up: ${options.warmup} requests`);
  await send(pool, options.warmup, options.connections);
  const file = logOf(logDir);
  // V8 flushes its log in chunks: what is on disk now was written during the warm-up or just after
  const steadyFrom = statSync(file).size;
  log(`measured: ${options.requests} requests (log at ${int(steadyFrom)} bytes)`);
  await send(pool, options.requests, options.connections);
  await pool.close();
  await stopProcess(started, 'SIGINT', 30_000);
  await stopProcess(upstream, 'SIGQUIT');
  if (options.keep !== null) copyFileSync(file, options.keep);
  log(`reading ${file} (${int(statSync(file).size)} bytes)`);
  const sites = readLog(file, steadyFrom).sort((a, b) => b.steady - a.steady || b.misses - a.misses);
  const owners = new Map<string, Site[]>();
  for (const s of sites) {
    const owner = ownerOf(s.where.replace(/:\d+:\d+$/, ''));
    let list = owners.get(owner);
    if (list === undefined) {
      list = [];
      owners.set(owner, list);
    }
    list.push(s);
  }
  const steadyOf = (list: Site[]) => list.reduce((n, s) => n + s.steady, 0);
  const order = [...owners].sort((a, b) => steadyOf(b[1]) - steadyOf(a[1]));
  const report = `## Megamorphic IC sites: ${options.floor ? 'the bare Node proxy' : `ingress-ts, ${options.noLog ? 'no access log' : 'access log on'}, ${options.noMetrics ? 'no metrics' : 'metrics on'}`}

- \`node bench/ic-sites.ts ${process.argv.slice(2).join(' ')}\`; ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}, node ${process.version}; load average at the end ${loadavg()[0]?.toFixed(2)}
- ${options.warmup} warm-up GETs, then ${options.requests}; a miss is one IC event in the megamorphic state (the stub cache had no handler: a site that stays megamorphic but hits the cache logs nothing)

| owner | sites | misses after warm-up |
|---|--:|--:|
${order.map(([owner, list]) => `| ${owner} | ${list.length} | ${int(steadyOf(list))} |`).join('\n')}

${order.map(([owner, list]) => table(owner, list, options.top)).join('\n')}`;
  process.stdout.write(report);
}

initHarness('ic-sites', 20 * 60 * 1000);
await main();
process.exit(0);
