// The pipeline of an HTTP/1.1 connection (pipelining.ts), on stand-in sockets and responses: one
// request served at a time, the next when its response closes, the rest dropped when the
// connection ends; and one pipeline per connection, reused by its keep-alive requests.
import type { IncomingMessage, ServerResponse } from 'node:http';
import t from 'tap';
import type { Arrival } from '../../lib/dataplane/pipeline/decide.ts';
import { nextPipelined, type Waiting, waitsInPipeline } from '../../lib/dataplane/pipeline/pipelining.ts';

const arrival: Arrival = { https: false, port: 80, random: () => 0 };

interface Connection {
  socket: IncomingMessage['socket'] & { reads: string[] };
  request(): { req: IncomingMessage; res: ServerResponse };
}

function connection(): Connection {
  const reads: string[] = [];
  const socket = {
    destroyed: false,
    reads,
    _handle: { readStart: () => reads.push('start'), readStop: () => reads.push('stop') },
  } as unknown as Connection['socket'];
  return {
    socket,
    request: () => ({
      req: { socket } as unknown as IncomingMessage,
      res: { shouldKeepAlive: true } as unknown as ServerResponse,
    }),
  };
}

/** The pipeline object a connection holds, whatever its key. */
const pipelineOf = (socket: object): unknown => {
  const [key] = Object.getOwnPropertySymbols(socket);
  return key === undefined ? undefined : (socket as Record<symbol, unknown>)[key];
};

t.test('keep-alive requests one after the other reuse the connection’s pipeline', async (t) => {
  const c = connection();
  const first = c.request();
  t.equal(waitsInPipeline(first.req, first.res, arrival), false, 'the first is served');
  const pipeline = pipelineOf(c.socket);
  t.ok(pipeline !== undefined);
  const served: Waiting[] = [];
  nextPipelined(
    first.res,
    (next) => served.push(next),
    () => t.fail('nothing to drop'),
  );
  for (let i = 0; i < 3; i++) {
    const next = c.request();
    t.equal(waitsInPipeline(next.req, next.res, arrival), false, `request ${i + 2} is served at once`);
    t.equal(pipelineOf(c.socket), pipeline, `request ${i + 2}: the same pipeline`);
    nextPipelined(
      next.res,
      (n) => served.push(n),
      () => t.fail('nothing to drop'),
    );
  }
  t.equal(Object.getOwnPropertySymbols(c.socket).length, 1, 'one property on the socket');
  t.same(served, [], 'nothing waited');
  t.same(c.socket.reads, [], 'reading never stopped');
});

t.test('pipelined requests wait for the one served, then go one by one', async (t) => {
  const c = connection();
  const a = c.request();
  const b = c.request();
  const d = c.request();
  t.equal(waitsInPipeline(a.req, a.res, arrival), false);
  t.equal(waitsInPipeline(b.req, b.res, arrival), true, 'b waits');
  t.equal(waitsInPipeline(d.req, d.res, arrival), true, 'd waits');
  t.same(c.socket.reads, ['stop'], 'the connection is not read while requests wait');
  const served: ServerResponse[] = [];
  const serve = (next: Waiting) => served.push(next.res);
  nextPipelined(b.res, serve, () => t.fail('nothing to drop'));
  t.same(served, [], 'a waiting response closing serves nothing');
  nextPipelined(a.res, serve, () => t.fail('nothing to drop'));
  t.equal(served[0], b.res, 'b after a');
  nextPipelined(b.res, serve, () => t.fail('nothing to drop'));
  t.equal(served[1], d.res, 'd after b');
  t.same(c.socket.reads, ['stop', 'start'], 'read again once the last waiting one is served');
  nextPipelined(d.res, serve, () => t.fail('nothing to drop'));
  const e = c.request();
  t.equal(waitsInPipeline(e.req, e.res, arrival), false, 'a later request is served at once');
});

t.test('a connection that ends drops the requests still waiting', async (t) => {
  const c = connection();
  const a = c.request();
  const b = c.request();
  waitsInPipeline(a.req, a.res, arrival);
  waitsInPipeline(b.req, b.res, arrival);
  (c.socket as { destroyed: boolean }).destroyed = true;
  const dropped: ServerResponse[] = [];
  nextPipelined(
    a.res,
    () => t.fail('nothing served'),
    (res) => dropped.push(res),
  );
  t.same(dropped, [b.res]);
});
