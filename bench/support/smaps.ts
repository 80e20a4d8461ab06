// A process's resident memory by kind of mapping, from /proc/<pid>/smaps:
// - files: the node binary, shared libraries and other mapped files;
// - brk heap: glibc malloc's main arena (`[heap]`);
// - malloc arenas: glibc's other arenas, one per thread that allocated while the others were taken
//   (up to 8 × cores): each is a 64 MiB reservation aligned to 64 MiB, its used part read-write and
//   the rest inaccessible, so a read-write mapping at a 64 MiB boundary that, with the inaccessible
//   mapping right after it, spans exactly 64 MiB is one;
// - stacks: `[stack]` (the main thread's; the other threads' stacks are anonymous and fall below);
// - other anonymous: V8's heap pages (every isolate's), code space, malloc's large blocks (mmapped
//   one by one above its threshold), thread stacks.

import { readFileSync } from 'node:fs';

export interface SmapsBreakdown {
  /** KiB resident per kind */
  files: number;
  brkHeap: number;
  arenas: number;
  /** how many arenas are mapped */
  arenaCount: number;
  stack: number;
  otherAnon: number;
  total: number;
}

interface Mapping {
  start: bigint;
  end: bigint;
  perms: string;
  path: string;
  rss: number;
}

const ARENA = 64n * 2n ** 20n;

function mappings(pid: number): Mapping[] {
  const out: Mapping[] = [];
  let current: Mapping | null = null;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head !== null) {
      current = {
        start: BigInt(`0x${head[1]}`),
        end: BigInt(`0x${head[2]}`),
        perms: head[3]!,
        path: head[4] ?? '',
        rss: 0,
      };
      out.push(current);
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss !== null && current !== null) current.rss = Number(rss[1]);
  }
  return out;
}

/** null when the process is gone. */
export function smapsBreakdown(pid: number): SmapsBreakdown | null {
  let maps: Mapping[];
  try {
    maps = mappings(pid);
  } catch {
    return null;
  }
  const b: SmapsBreakdown = {
    files: 0,
    brkHeap: 0,
    arenas: 0,
    arenaCount: 0,
    stack: 0,
    otherAnon: 0,
    total: 0,
  };
  maps.forEach((m, i) => {
    b.total += m.rss;
    if (m.path === '[heap]') b.brkHeap += m.rss;
    else if (m.path === '[stack]') b.stack += m.rss;
    else if (m.path !== '' && !m.path.startsWith('[')) b.files += m.rss;
    else if (m.path === '' && m.perms.startsWith('rw') && m.start % ARENA === 0n) {
      const next = maps[i + 1];
      const span =
        next !== undefined && next.start === m.end && next.perms.startsWith('---')
          ? next.end - m.start
          : m.end - m.start;
      if (span === ARENA) {
        b.arenas += m.rss;
        b.arenaCount++;
      } else b.otherAnon += m.rss;
    } else b.otherAnon += m.rss;
  });
  return b;
}
