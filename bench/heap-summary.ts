// A heap snapshot (DevTools' .heapsnapshot, e.g. from `node bench/memory.ts --parts scale --snapshot
// FILE`) summarised without DevTools: self size and count by constructor (plain objects by their first
// property names, so that `{manager, operation, apiVersion, …}` tells managedFields entries from the
// rest), strings by the first characters of their text, and the strings that occur more than once.
// Run with `node bench/heap-summary.ts FILE [--top N]`; needs a few GiB of memory for a 600 MiB file.

import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

const SHAPE_KEYS = 5;
const PREFIX = 24;

type Tally = Map<string, { size: number; count: number }>;

function add(tally: Tally, key: string, size: number): void {
  const entry = tally.get(key) ?? { size: 0, count: 0 };
  entry.size += size;
  entry.count++;
  tally.set(key, entry);
}

function table(title: string, tally: Tally, top: number, total: number): string {
  const rows = [...tally].sort((a, b) => b[1].size - a[1].size).slice(0, top);
  return [
    `## ${title}`,
    '',
    '| what | MiB | count |',
    '|---|--:|--:|',
    ...rows.map(
      ([key, { size, count }]) =>
        `| \`${key.replaceAll('|', '\\|').replaceAll('`', "'").replaceAll('\n', '\\n')}\` | ${(size / 2 ** 20).toFixed(1)} | ${count.toLocaleString('en-US')} |`,
    ),
    `| all | ${(total / 2 ** 20).toFixed(1)} | |`,
    '',
  ].join('\n');
}

/** The number array after `"name":[`, parsed from the bytes (the file is too large for one string). */
function numbers(bytes: Buffer, name: string): number[] {
  let at = bytes.indexOf(`"${name}":[`);
  if (at === -1) throw new Error(`no ${name} in the snapshot`);
  at += name.length + 4;
  const out: number[] = [];
  let value = 0;
  let digits = false;
  for (; at < bytes.length; at++) {
    const c = bytes[at]!;
    if (c >= 48 && c <= 57) {
      value = value * 10 + (c - 48);
      digits = true;
    } else {
      if (digits) out.push(value);
      value = 0;
      digits = false;
      if (c === 93) break; // ]
    }
  }
  return out;
}

/** The strings array, one JSON string at a time. */
function stringTable(bytes: Buffer): string[] {
  let at = bytes.indexOf('"strings":[');
  if (at === -1) throw new Error('no strings in the snapshot');
  at += '"strings":['.length;
  const out: string[] = [];
  while (at < bytes.length) {
    const c = bytes[at]!;
    if (c === 93) break;
    if (c !== 34) {
      at++;
      continue;
    }
    let end = at + 1;
    while (bytes[end] !== 34) end += bytes[end] === 92 ? 2 : 1;
    out.push(JSON.parse(bytes.toString('utf8', at, end + 1)) as string);
    at = end + 1;
  }
  return out;
}

function readSnapshot(file: string): Snapshot {
  const bytes = readFileSync(file);
  const metaEnd = bytes.indexOf('"nodes":[');
  const head = `${bytes.toString('utf8', 0, metaEnd).replace(/,\s*$/, '')}}`;
  const { snapshot } = JSON.parse(head) as Pick<Snapshot, 'snapshot'>;
  return {
    snapshot,
    nodes: numbers(bytes, 'nodes'),
    edges: numbers(bytes, 'edges'),
    strings: stringTable(bytes),
  };
}

function summarise(file: string, top: number): string {
  const { snapshot, nodes, edges, strings } = readSnapshot(file);
  const fields = snapshot.meta.node_fields;
  const types = snapshot.meta.node_types[0];
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const edgeCountAt = fields.indexOf('edge_count');
  const edgeFields = snapshot.meta.edge_fields;
  const edgeWidth = edgeFields.length;
  const edgeTypeAt = edgeFields.indexOf('type');
  const edgeNameAt = edgeFields.indexOf('name_or_index');
  const propertyType = snapshot.meta.edge_types[0].indexOf('property');
  const byKind: Tally = new Map();
  const byPrefix: Tally = new Map();
  const byText: Tally = new Map();
  let total = 0;
  let stringTotal = 0;
  let edge = 0;
  for (let i = 0; i < nodes.length; i += width) {
    const type = types[nodes[i + typeAt] as number] as string;
    const name = strings[nodes[i + nameAt] as number] as string;
    const size = nodes[i + sizeAt] as number;
    const edgeCount = nodes[i + edgeCountAt] as number;
    total += size;
    let key = type === 'object' || type === 'closure' ? `${name} (${type})` : `(${type})`;
    if (type === 'object' && name === 'Object') {
      const keys: string[] = [];
      for (let e = edge; e < edge + edgeCount * edgeWidth && keys.length < SHAPE_KEYS; e += edgeWidth) {
        if (edges[e + edgeTypeAt] === propertyType)
          keys.push(strings[edges[e + edgeNameAt] as number] as string);
      }
      key = `{${keys.join(', ')}}`;
    }
    if (type === 'string' || type === 'concatenated string' || type === 'sliced string') {
      stringTotal += size;
      add(byPrefix, name.slice(0, PREFIX), size);
      if (type === 'string') add(byText, name, size);
    }
    edge += edgeCount * edgeWidth;
    add(byKind, key, size);
  }
  const duplicates: Tally = new Map();
  let duplicateBytes = 0;
  for (const [text, { size, count }] of byText) {
    if (count < 2) continue;
    const extra = (size / count) * (count - 1);
    duplicateBytes += extra;
    duplicates.set(text.length > 80 ? `${text.slice(0, 80)}… (${text.length} characters)` : text, {
      size: extra,
      count,
    });
  }
  return [
    table('Self size by constructor (plain objects by their first properties)', byKind, top, total),
    table(`Strings by their first ${PREFIX} characters`, byPrefix, top, stringTotal),
    table('Strings held more than once: the copies beyond the first', duplicates, top, duplicateBytes),
  ].join('\n');
}

function main(): void {
  const args = process.argv.slice(2);
  const file = args[0];
  if (file === undefined || file.startsWith('--')) {
    process.stderr.write('Usage: node bench/heap-summary.ts FILE [--top N]\n');
    process.exit(2);
  }
  const topAt = args.indexOf('--top');
  const top = topAt === -1 ? 30 : Number(args[topAt + 1]);
  process.stdout.write(summarise(file, top));
}

if (import.meta.main) main();
