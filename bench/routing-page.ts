// The routing page (/debug/routing) at scale, measured in the browser: ingress-ts in standalone mode
// over N generated Ingresses (support/scale-manifests.ts, default 10,000), the page loaded in the
// distribution's headless Chromium (test/support/browser.ts) R times, each in a fresh context.
// Run with `node bench/routing-page.ts [--size N] [--rounds R] [--no-write]`.
//
// Per round:
// - first render: the page's own marks (app.js: routing:model-fetched, routing:model-parsed,
//   routing:view-built, routing:rendered), in ms since navigation start;
// - search: the middle Ingress's host typed one key at a time, then cleared: per keystroke, the
//   keydown's timestamp to the routing:rendered mark (the list in the DOM), and to the next frame
//   after it (a requestAnimationFrame, then a task: the result on screen);
// - refresh with an unchanged model: three polls at ?refresh=2 (the page's own timing, start to end);
// - the renderer's main-thread time from the DevTools protocol (Performance.getMetrics: script,
//   layout and style durations, task duration), the DOM node count and the JS heap, after the first
//   render and per unchanged refresh: CPU-like figures that depend less on the machine's load.
// The /debug/model answer's size and the time to fetch it with Node are reported beside them.

import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import type { CDPSession, Page } from 'playwright-core';
import { findBrowser, launchBrowser } from '../test/support/browser.ts';
import {
  fail,
  fixed,
  freePort,
  initHarness,
  log,
  makeTempDir,
  median,
  REPO,
  startProcess,
  waitFor,
} from './support/harness.ts';
import { ingressTsArgv } from './support/ingress-ts.ts';
import { writeScaleManifests } from './support/scale-manifests.ts';

const NAME = 'routing-page';
const USAGE = `Usage: node bench/routing-page.ts [--size N] [--rounds R] [--no-write]
  --size N     Ingresses generated (10-50000) [10000]
  --rounds R   page loads measured (1-10) [3]
  --no-write   print the report only, do not write bench/results/routing-page-YYYY-MM-DD.md
`;

function options(argv: string[]): { size: number; rounds: number; write: boolean } {
  const result = { size: 10000, rounds: 3, write: true };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = Number(argv[i + 1]);
    if (flag === '--size' && Number.isInteger(value) && value >= 10 && value <= 50000) {
      result.size = value;
      i++;
    } else if (flag === '--rounds' && Number.isInteger(value) && value >= 1 && value <= 10) {
      result.rounds = value;
      i++;
    } else if (flag === '--no-write') result.write = false;
    else {
      process.stderr.write(`${NAME}: unexpected ${flag}\n${USAGE}`);
      process.exit(2);
    }
  }
  return result;
}

/** GET on the status port with Node: status, bytes, ms. */
async function fetchTimed(
  port: number,
  path: string,
): Promise<{ status: number; bytes: number; ms: number }> {
  const started = performance.now();
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  const body = await response.arrayBuffer();
  return { status: response.status, bytes: body.byteLength, ms: performance.now() - started };
}

type Metrics = Record<string, number>;

async function metrics(cdp: CDPSession): Promise<Metrics> {
  const { metrics: list } = await cdp.send('Performance.getMetrics');
  return Object.fromEntries(list.map((m) => [m.name, m.value]));
}

const msOf = (after: Metrics, before: Metrics, name: string) =>
  ((after[name] ?? 0) - (before[name] ?? 0)) * 1000;

// Page-side code as strings: the repository's TypeScript has no DOM types, and the page's CSP would
// refuse code that playwright evaluates from strings inside the page (these go through the protocol).
const MARKS = `Object.fromEntries(['routing:model-fetched', 'routing:model-parsed', 'routing:view-built', 'routing:rendered'].map((name) => [name, performance.getEntriesByName(name)[0]?.startTime ?? null]))`;
const WAIT_RENDERED = `new Promise((resolve) => { const check = () => performance.getEntriesByName('routing:rendered').length > 0 ? resolve(true) : setTimeout(check, 10); check(); })`;
const RECORD_KEYS = `(() => {
  window.__bench = { keys: [], rendered: [], framed: [] };
  document.getElementById('search').addEventListener('keydown', (event) => window.__bench.keys.push(event.timeStamp));
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (entry.name !== 'routing:rendered') continue;
      window.__bench.rendered.push(entry.startTime);
      requestAnimationFrame(() => setTimeout(() => window.__bench.framed.push(performance.now())));
    }
  }).observe({ type: 'mark' });
})()`;
const waitFramed = (n: number) =>
  `new Promise((resolve) => { const check = () => window.__bench.framed.length >= ${n} ? resolve(true) : setTimeout(check, 5); check(); })`;
const waitRefreshes = (n: number) => `new Promise((resolve) => {
  const seen = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (entry.name !== 'routing:refresh-end') continue;
      const start = performance.getEntriesByName('routing:refresh-start')[0];
      seen.push({ ms: entry.startTime - start.startTime, changed: entry.detail });
      if (seen.length === ${n}) resolve(seen);
    }
  }).observe({ type: 'mark' });
})`;

interface Round {
  marks: Record<string, number | null>;
  load: Metrics;
  keystrokes: number[];
  framed: number[];
  refreshes: Array<{ ms: number; changed: boolean }>;
  refreshScriptMs: number;
  refreshTaskMs: number;
  shownAfterSearch: number;
}

async function measureRound(page: Page, cdp: CDPSession, url: string, host: string): Promise<Round> {
  await cdp.send('Performance.enable');
  await page.goto(url);
  await page.evaluate(WAIT_RENDERED);
  const marks = (await page.evaluate(MARKS)) as Record<string, number | null>;
  const load = await metrics(cdp);

  await page.evaluate(RECORD_KEYS);
  await page.locator('#search').focus();
  let presses = 0;
  for (const key of [...host, 'Control+A', 'Backspace']) {
    await page.keyboard.press(key);
    if (key === 'Control+A') continue;
    presses++;
    await page.evaluate(waitFramed(presses));
  }
  const bench = (await page.evaluate('window.__bench')) as {
    keys: number[];
    rendered: number[];
    framed: number[];
  };
  const keys = bench.keys.filter((_, i) => i !== host.length); // Control+A renders nothing
  const keystrokes = bench.rendered.map((at, i) => at - (keys[i] ?? at));
  const framed = bench.framed.map((at, i) => at - (keys[i] ?? at));
  await page.locator('#search').fill(host);
  await page.evaluate(waitFramed(presses + 1));
  const shownAfterSearch = await page.locator('#hosts > li').count();
  await page.locator('#search').fill('');

  const before = await metrics(cdp);
  const refreshes = (await page.evaluate(waitRefreshes(3))) as Array<{ ms: number; changed: boolean }>;
  const after = await metrics(cdp);
  return {
    marks,
    load,
    keystrokes,
    framed,
    refreshes,
    refreshScriptMs: msOf(after, before, 'ScriptDuration') / refreshes.length,
    refreshTaskMs: msOf(after, before, 'TaskDuration') / refreshes.length,
    shownAfterSearch,
  };
}

const stat = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return `${fixed(median(sorted), 1)} / ${fixed(sorted[sorted.length - 1] ?? Number.NaN, 1)}`;
};

async function main(): Promise<void> {
  const { size, rounds, write } = options(process.argv.slice(2));
  const browserPath = findBrowser();
  if ('missing' in browserPath) fail(3, browserPath.missing);
  initHarness(NAME, 30 * 60_000);
  const loadBefore = loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');
  const dir = makeTempDir('ingress-ts-routing-page-');
  log(`generating ${size} Ingresses`);
  const manifests = writeScaleManifests(dir, size, await freePort(), 'yaml');
  const ports = { http: await freePort(), https: await freePort(), healthz: await freePort() };
  const argv = ingressTsArgv({ manifestsDir: dir, ports, logLevel: 'warn', readyHost: manifests.host });
  const ingressTs = startProcess(argv, REPO);
  // the status port opens once the first model is served; at 10,000 Ingresses on a loaded machine
  // that takes minutes
  const ready = async () => {
    if (ingressTs.child.exitCode !== null)
      fail(1, `ingress-ts exited:\n${ingressTs.output.slice(-20).join('\n')}`);
    return (await fetchTimed(ports.healthz, '/healthz').catch(() => null))?.status === 200;
  };
  const startedAt = performance.now();
  await waitFor('ingress-ts', ready, 900_000, 1000);
  log(`ingress-ts ready after ${((performance.now() - startedAt) / 1000).toFixed(0)} s`);
  const answers = [];
  for (let i = 0; i < 3; i++) answers.push(await fetchTimed(ports.healthz, '/debug/model?compact=1'));
  const modelBytes = answers[0]?.bytes ?? 0;
  const modelMs = median(answers.map((a) => a.ms));
  log(`/debug/model: ${modelBytes} bytes in ${modelMs.toFixed(0)} ms`);

  const browser = await launchBrowser(browserPath.path);
  const results: Round[] = [];
  try {
    for (let round = 0; round < rounds; round++) {
      const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
      const page = await context.newPage();
      const cdp = await context.newCDPSession(page);
      const url = `http://127.0.0.1:${ports.healthz}/debug/routing?refresh=2`;
      results.push(await measureRound(page, cdp, url, manifests.host));
      log(`round ${round + 1}: rendered at ${results.at(-1)?.marks['routing:rendered']?.toFixed(0)} ms`);
      await context.close();
    }
  } finally {
    await browser.close();
  }
  const loadAfter = loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');
  const med = (pick: (r: Round) => number) => fixed(median(results.map(pick)), 1);
  const lines = [
    `# Routing page at ${size.toLocaleString('en-US')} Ingresses (${new Date().toISOString().slice(0, 10)})`,
    '',
    `Node ${process.version}, Chromium ${browser.version()} headless, ${cpus().length} CPUs (${cpus()[0]?.model.trim()}), load average ${loadBefore} before, ${loadAfter} after.`,
    `ingress-ts in standalone mode over ${manifests.ingresses.toLocaleString('en-US')} Ingresses (${manifests.services.toLocaleString('en-US')} Services); /debug/model?compact=1 is ${(modelBytes / 1e6).toFixed(1)} MB, fetched by Node in ${modelMs.toFixed(0)} ms (median of 3). ${rounds} page loads, each in a fresh browser context; medians over the rounds.`,
    '',
    '| first render | ms since navigation start |',
    '|---|---:|',
    `| model fetched (HTML, scripts, /debug/model downloaded) | ${med((r) => r.marks['routing:model-fetched'] ?? Number.NaN)} |`,
    `| JSON parsed | ${med((r) => r.marks['routing:model-parsed'] ?? Number.NaN)} |`,
    `| view built (hosts joined to their objects, search index made) | ${med((r) => r.marks['routing:view-built'] ?? Number.NaN)} |`,
    `| first page of hosts in the DOM | ${med((r) => r.marks['routing:rendered'] ?? Number.NaN)} |`,
    '',
    '| renderer main thread after the first render (DevTools Performance.getMetrics) | |',
    '|---|---:|',
    `| script ms | ${med((r) => (r.load.ScriptDuration ?? 0) * 1000)} |`,
    `| layout + style ms | ${med((r) => ((r.load.LayoutDuration ?? 0) + (r.load.RecalcStyleDuration ?? 0)) * 1000)} |`,
    `| task ms (all main-thread work) | ${med((r) => (r.load.TaskDuration ?? 0) * 1000)} |`,
    `| DOM nodes | ${med((r) => r.load.Nodes ?? 0)} |`,
    `| JS heap used, MB | ${med((r) => (r.load.JSHeapUsedSize ?? 0) / 1e6)} |`,
    '',
    `Search: the host \`${manifests.host}\` typed one key at a time, then cleared (${manifests.host.length + 1} renders per round, all rounds together; median / max ms):`,
    '',
    '| keystroke to | median / max ms |',
    '|---|---:|',
    `| result in the DOM | ${stat(results.flatMap((r) => r.keystrokes))} |`,
    `| next frame after it | ${stat(results.flatMap((r) => r.framed))} |`,
    '',
    `Hosts listed for the full host: ${results.map((r) => r.shownAfterSearch).join(', ')}.`,
    '',
    'Refresh with an unchanged model (3 polls per round at ?refresh=2; the page fetches /debug/model and /debug/traffic):',
    '',
    '| per refresh | median |',
    '|---|---:|',
    `| poll, start to end (ms) | ${fixed(median(results.flatMap((r) => r.refreshes.map((x) => x.ms))), 1)} |`,
    `| script ms in the renderer | ${med((r) => r.refreshScriptMs)} |`,
    `| task ms in the renderer | ${med((r) => r.refreshTaskMs)} |`,
    `| polls that found the model changed | ${results.flatMap((r) => r.refreshes.filter((x) => x.changed)).length} of ${results.length * 3} |`,
    '',
  ];
  const report = lines.join('\n');
  process.stdout.write(`${report}\n`);
  if (write) {
    const file = `${REPO}bench/results/${NAME}-${new Date().toISOString().slice(0, 10)}.md`;
    writeFileSync(file, report);
    log(`wrote ${file}`);
  }
  process.exit(0);
}

await main();
