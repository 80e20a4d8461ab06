// Scans of the folder one at a time, driven by what the watcher reports. No timer: the events of one
// event-loop turn share a scan (setImmediate), and events arriving during a scan bring exactly one
// more scan after it, covering all of them.

export interface ScanQueue {
  /** Something changed: `rel` (relative to the folder), or anything when null. */
  changed(rel: string | null): void;
  /** Runs the first scan (of everything) now; rejects with its error. */
  first(): Promise<void>;
  /** No scan starts after this; resolves once a scan in progress has finished. */
  stop(): Promise<void>;
}

/** `scan(all, named)`: read everything, or what was named and what else changed. */
export function createScanQueue(
  scan: (all: boolean, named: ReadonlySet<string>) => Promise<void>,
): ScanQueue {
  let stopped = false;
  /** What events named since the last scan began; everything when one could not say. */
  let all = false;
  let named = new Set<string>();
  let queued = false;
  let scanning: Promise<void> | null = null;

  /** Starts a scan of what is marked so far; the marks start again empty. */
  function begin(everything: boolean): Promise<void> {
    const scope = { all: everything || all, named };
    all = false;
    named = new Set();
    return scan(scope.all, scope.named);
  }

  /** A scan on the next turn, unless one is queued or running (its end looks again). */
  function queue(): void {
    if (stopped || queued || scanning !== null || (!all && named.size === 0)) return;
    queued = true;
    setImmediate(() => {
      queued = false;
      if (stopped || scanning !== null) return;
      // a scan reports what it can as problems; nothing escapes the watcher
      scanning = begin(false)
        .catch(() => {})
        .finally(() => {
          scanning = null;
          queue();
        });
    });
  }

  return {
    changed(rel) {
      if (stopped) return;
      if (rel === null) all = true;
      else named.add(rel);
      queue();
    },
    async first() {
      const first = begin(true);
      scanning = first;
      try {
        await first;
      } finally {
        scanning = null;
      }
      queue(); // events that arrived during the first scan
    },
    async stop() {
      stopped = true;
      await scanning?.catch(() => {});
    },
  };
}
