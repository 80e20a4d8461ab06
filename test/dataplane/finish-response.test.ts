// finishResponse: a response's record closed with its status (499 when nothing reached the
// connection) and its bytes, from one reading of the connection's byte count.
import type { Duplex } from 'node:stream';
import t from 'tap';
import { requestLogged } from '../../lib/dataplane/events.ts';
import { finishResponse, type RequestRecord } from '../../lib/dataplane/request-record.ts';
import { record } from '../support/request-record.ts';

/** A connection whose byte count is `total`, counting how often it is read. */
function connection(total: number): { source: Duplex; reads: () => number } {
  let reads = 0;
  const source = {
    get bytesWritten() {
      reads++;
      return total;
    },
  };
  return { source: source as unknown as Duplex, reads: () => reads };
}

const rows: Array<{
  name: string;
  /** the count before the request (a keep-alive connection's earlier responses) */
  before: number;
  after: number;
  headersSent: boolean;
  want: { status: number; bytesSent: number };
}> = [
  {
    name: 'a response that went out',
    before: 100,
    after: 350,
    headersSent: true,
    want: { status: 200, bytesSent: 250 },
  },
  {
    name: 'a head marked sent but never written: 499',
    before: 100,
    after: 100,
    headersSent: true,
    want: { status: 499, bytesSent: 0 },
  },
  {
    name: 'no head at all: 499',
    before: 0,
    after: 0,
    headersSent: false,
    want: { status: 499, bytesSent: 0 },
  },
  {
    name: 'the first request of a connection',
    before: 0,
    after: 1200,
    headersSent: true,
    want: { status: 200, bytesSent: 1200 },
  },
];

t.test('status and bytes from one reading of the connection', async (t) => {
  const published: RequestRecord[] = [];
  const onRecord = (message: unknown) => published.push(message as RequestRecord);
  requestLogged.subscribe(onRecord);
  t.teardown(() => requestLogged.unsubscribe(onRecord));
  for (const row of rows) {
    const r = record({ status: 0, bytesSent: -row.before, start: performance.now() });
    const { source, reads } = connection(row.after);
    finishResponse(r, source, row.headersSent, 200);
    t.match(r, row.want, row.name);
    t.equal(reads(), 1, `${row.name}: the byte count read once`);
    t.equal(published.at(-1), r, `${row.name}: published`);
  }
});
