// What the request measures of a data-plane thread cost to cross to the main thread, per request:
// serialising a batch of 256 in the thread (v8.serialize, what postMessage does) and reading it back
// on the main thread (v8.deserialize, then the objects the metrics read). Compared: one object of
// 16 fields per request (`[channel, measure]` pairs, as threads sent them before) and MeasurePacker's
// batch (ten numbers per request, a route's labels once per run of its requests). CPU time of this
// thread, interleaved rounds, the median.
// Usage: node bench/measure-transfer.ts [--rounds 5] [--batches 2000]

import { parseArgs } from 'node:util';
import { deserialize, serialize } from 'node:v8';
import type { MeasuredRequest } from '../lib/dataplane/request-measure.ts';
import { MeasurePacker, unpackMeasures } from '../lib/dataplane/request-measure.ts';
import type { RequestRecord } from '../lib/dataplane/request-record.ts';
import { measuresOf, record } from '../test/support/request-record.ts';
import { fixed, median } from './support/harness.ts';

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '5' }, batches: { type: 'string', default: '2000' } },
});
const ROUNDS = Number(values.rounds);
const BATCHES = Number(values.batches);
const PER_BATCH = 256;

/** Requests of two routes, in runs of a few, with varying timings and sizes. */
const records: RequestRecord[] = Array.from({ length: PER_BATCH }, (_, i) =>
  record({
    path: i % 8 < 5 ? '/' : '/api',
    service: i % 8 < 5 ? 'web' : 'api',
    status: i % 50 === 0 ? 503 : 200,
    requestTime: 0.001 * (i % 13),
    responseTime: 0.001 * (i % 11),
    bytesSent: 1000 + i,
  }),
);

let sink = 0;
const read = (m: MeasuredRequest) => {
  sink += m.status;
};

interface Way {
  name: string;
  /** the batch as the thread posts it */
  make: () => unknown;
  /** what the main thread does with it */
  take: (batch: unknown) => void;
}

const WAYS: Way[] = [
  {
    name: 'objects',
    make: () => records.map((r) => [0, measuresOf(r)]),
    take: (batch) => {
      for (const [, m] of batch as Array<[number, MeasuredRequest]>) read(m);
    },
  },
  {
    name: 'packed',
    make: () => {
      const packer = new MeasurePacker();
      for (const r of records) packer.add(r);
      return packer.take();
    },
    take: (batch) => unpackMeasures(batch as Parameters<typeof unpackMeasures>[0], read),
  },
];

const cpuUs = () => {
  const u = process.threadCpuUsage();
  return u.user + u.system;
};

const results = new Map(WAYS.map((w) => [w.name, { ser: [] as number[], de: [] as number[], bytes: 0 }]));
for (let round = 0; round < ROUNDS; round++) {
  for (const way of WAYS) {
    const out = results.get(way.name)!;
    let bytes = Buffer.alloc(0);
    const t0 = cpuUs();
    for (let b = 0; b < BATCHES; b++) bytes = serialize(way.make());
    const t1 = cpuUs();
    for (let b = 0; b < BATCHES; b++) way.take(deserialize(bytes));
    const t2 = cpuUs();
    out.ser.push(((t1 - t0) * 1000) / (BATCHES * PER_BATCH));
    out.de.push(((t2 - t1) * 1000) / (BATCHES * PER_BATCH));
    out.bytes = bytes.length;
  }
}

const lines = [
  `# Request measures across threads, ${new Date().toISOString().slice(0, 10)}`,
  '',
  `node ${process.version}, ${ROUNDS} interleaved rounds of ${BATCHES} batches of ${PER_BATCH} requests (two routes).`,
  '',
  '| way | in the thread: make + serialise, ns/request | on the main thread: deserialise + read, ns/request | bytes/request |',
  '|---|--:|--:|--:|',
];
for (const [name, r] of results)
  lines.push(
    `| ${name} | ${fixed(median(r.ser), 0)} | ${fixed(median(r.de), 0)} | ${fixed(r.bytes / PER_BATCH, 0)} |`,
  );
process.stdout.write(`${lines.join('\n')}\n`);
if (sink < 0) process.stdout.write('\n');
