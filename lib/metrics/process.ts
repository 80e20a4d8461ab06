// ingress-nginx's nginx_process_* series, filled from this process: the Node process is the data
// plane, so it stands where NGINX's worker processes stood (one process, its CPU, memory and start
// time), and the data plane's counters stand for NGINX's stub_status connections and requests.

import { readFileSync } from 'node:fs';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { DataPlaneStats } from '../dataplane/dataplane.ts';

const PREFIX = 'nginx_ingress_controller_';

/** Virtual memory size of this process in bytes (Linux /proc), or null. */
function virtualMemoryBytes(): number | null {
  try {
    const match = /^VmSize:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** num_procs, cpu_seconds_total, resident/virtual memory and the start time, read at scrape time. */
export function registerProcessMetrics(registers: Registry[], threads: () => number = () => 0): void {
  const started = Date.now() / 1000 - process.uptime();
  new Gauge({
    name: `${PREFIX}nginx_process_num_procs`,
    help: 'number of processes',
    registers,
    collect() {
      // as NGINX counts its master and workers: the controller's thread and each data-plane thread
      this.set(1 + threads());
    },
  });
  new Counter({
    name: `${PREFIX}nginx_process_cpu_seconds_total`,
    help: 'Cpu usage in seconds',
    registers,
    collect() {
      const usage = process.cpuUsage();
      this.reset();
      this.inc((usage.user + usage.system) / 1e6);
    },
  });
  new Gauge({
    name: `${PREFIX}nginx_process_resident_memory_bytes`,
    help: 'number of bytes of memory in use',
    registers,
    collect() {
      this.set(process.memoryUsage.rss());
    },
  });
  new Gauge({
    name: `${PREFIX}nginx_process_virtual_memory_bytes`,
    help: 'number of bytes of memory in use',
    registers,
    collect() {
      const bytes = virtualMemoryBytes();
      if (bytes !== null) this.set(bytes);
    },
  });
  new Gauge({
    name: `${PREFIX}nginx_process_oldest_start_time_seconds`,
    help: 'start time in seconds since 1970/01/01',
    registers,
    collect() {
      this.set(started);
    },
  });
}

/**
 * connections{state}, connections_total{state} and requests_total from the data plane's counters;
 * `finished` is the number of requests (and WebSocket sessions) over so far.
 */
export function registerConnectionMetrics(
  registers: Registry[],
  stats: () => Readonly<DataPlaneStats>,
  finished: () => number,
): void {
  // NGINX's stub_status: accepted = handled (nothing is dropped for lack of resources). writing =
  // requests in progress (started − finished; a WebSocket until it closes), waiting = the other open
  // connections (idle keep-alive), reading = 0: Node's parser does not say which connections are
  // in the middle of a request head, and counting that would cost every request.
  new Gauge({
    name: `${PREFIX}nginx_process_connections`,
    help: 'current number of client connections with state {active, reading, writing, waiting}',
    labelNames: ['state'],
    registers,
    collect() {
      const { active, requests } = stats();
      const writing = Math.min(active, Math.max(0, requests - finished()));
      this.set({ state: 'active' }, active);
      this.set({ state: 'reading' }, 0);
      this.set({ state: 'writing' }, writing);
      this.set({ state: 'waiting' }, active - writing);
    },
  });
  new Counter({
    name: `${PREFIX}nginx_process_connections_total`,
    help: 'total number of connections with state {accepted, handled}',
    labelNames: ['state'],
    registers,
    collect() {
      const { accepted } = stats();
      this.reset();
      this.inc({ state: 'accepted' }, accepted);
      this.inc({ state: 'handled' }, accepted);
    },
  });
  new Counter({
    name: `${PREFIX}nginx_process_requests_total`,
    help: 'total number of client requests',
    registers,
    collect() {
      this.reset();
      this.inc(stats().requests);
    },
  });
}
