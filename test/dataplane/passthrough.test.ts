// The ssl-passthrough front (lib/dataplane/listening/passthrough.ts) on sockets fed by hand: what reaches the
// TLS server (every byte read put back), the chunk bound, the ClientHello timeout, a target without
// endpoints, and no peek at all while no host passes through. The relay itself is tested end to end
// (test/e2e/ssl-passthrough.test.ts).
import { once } from 'node:events';
import { createServer, Socket } from 'node:net';
import { connect } from 'node:tls';
import t from 'tap';
import {
  createPassthroughFront,
  MAX_PEEK_CHUNKS,
  type PassthroughTable,
} from '../../lib/dataplane/listening/passthrough.ts';
import { HostTable } from '../../lib/dataplane/routing/router.ts';
import type { PassthroughTarget } from '../../lib/dataplane/routing/runtime.ts';
import type { Balancer } from '../../lib/dataplane/upstream/balancer.ts';

/** What OpenSSL sends first for `servername`. */
async function realHello(servername: string): Promise<Buffer> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  const accepted = once(server, 'connection') as Promise<[Socket]>;
  const client = connect({ port, host: '127.0.0.1', servername });
  client.on('error', () => {});
  const [socket] = await accepted;
  const [hello] = (await once(socket, 'data')) as [Buffer];
  socket.destroy();
  client.destroy();
  server.close();
  return hello;
}

const hello = await realHello('pass.test');
const otherHello = await realHello('other.test');

function table(peers: Balancer['peers']): PassthroughTable {
  const entries = new HostTable<PassthroughTarget | null>(null);
  const balancer = { peers } as Balancer;
  entries.add('pass.test', {
    hostname: 'pass.test',
    upstream: 'u',
    balancer,
    connectTimeoutMs: 1000,
    next: 0,
  });
  return entries;
}

function front(entries: PassthroughTable | null, helloTimeoutMs = 60_000) {
  const tunnels: Socket[] = [];
  const plane = createPassthroughFront({
    table: () => entries,
    helloTimeoutMs: () => helloTimeoutMs,
    tunnel: (client) => tunnels.push(client),
  });
  return { plane, tunnels };
}

/** An unconnected socket the test feeds; resolves handOver with the bytes the TLS server would read. */
function feed() {
  const socket = new Socket();
  let handedOver: ((bytes: Buffer) => void) | null = null;
  const handed = new Promise<Buffer>((resolve) => {
    handedOver = resolve;
  });
  const handOver = (s: Socket) => {
    const chunks: Buffer[] = [];
    for (let chunk = s.read() as Buffer | null; chunk !== null; chunk = s.read() as Buffer | null)
      chunks.push(chunk);
    handedOver?.(Buffer.concat(chunks));
  };
  return { socket, handed, handOver };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

t.test('another name: handed to TLS with every byte put back', async (t) => {
  const { plane } = front(table([]));
  const { socket, handed, handOver } = feed();
  plane.accept(socket, handOver);
  socket.push(otherHello.subarray(0, 10));
  await tick();
  socket.push(otherHello.subarray(10));
  t.strictSame(await handed, otherHello);
  socket.destroy();
});

t.test('not TLS: handed over unchanged at the first byte that says so', async (t) => {
  const { plane } = front(table([]));
  const { socket, handed, handOver } = feed();
  plane.accept(socket, handOver);
  socket.push(Buffer.from('GET / HTTP/1.1\r\n'));
  t.strictSame(await handed, Buffer.from('GET / HTTP/1.1\r\n'));
  socket.destroy();
});

t.test(`a hello dripped over more than ${MAX_PEEK_CHUNKS} chunks is handed over as it is`, async (t) => {
  const { plane, tunnels } = front(table([{ address: '127.0.0.1', port: 1, key: '127.0.0.1:1' }]));
  const { socket, handed, handOver } = feed();
  plane.accept(socket, handOver);
  let done = false;
  void handed.then(() => {
    done = true;
  });
  let sent = 0;
  while (!done && sent < hello.length) {
    socket.push(hello.subarray(sent, sent + 1));
    sent++;
    await tick();
  }
  t.equal(sent, MAX_PEEK_CHUNKS, 'given up after the bound');
  t.strictSame(await handed, hello.subarray(0, MAX_PEEK_CHUNKS), 'with the bytes read so far');
  t.equal(tunnels.length, 0, 'not relayed');
  socket.destroy();
});

t.test('the passthrough name without endpoints: closed', async (t) => {
  const { plane } = front(table([]));
  const { socket, handOver } = feed();
  plane.accept(socket, () => t.fail('not handed over'));
  void handOver;
  socket.push(hello);
  await once(socket, 'close');
  t.pass('closed');
});

t.test('no ClientHello within client-header-timeout: closed', async (t) => {
  const { plane } = front(table([]), 50);
  const { socket } = feed();
  plane.accept(socket, () => t.fail('not handed over'));
  socket.push(hello.subarray(0, 20));
  // a socket's timeout timer does not keep the process alive (a connected socket's handle would)
  const alive = setInterval(() => {}, 1000);
  const started = Date.now();
  await once(socket, 'close');
  clearInterval(alive);
  t.ok(Date.now() - started >= 40, 'closed by the timeout');
});

t.test('no passthrough host: handed over at once, nothing read', async (t) => {
  const { plane } = front(null);
  const socket = new Socket();
  let handed: Socket | null = null;
  plane.accept(socket, (s) => {
    handed = s;
  });
  t.equal(handed, socket, 'synchronously');
  t.equal(socket.listenerCount('data'), 0, 'no data listener');
  socket.destroy();
});

t.test('destroyPending cuts the connections being peeked at', async (t) => {
  const { plane } = front(table([]));
  const { socket, handOver } = feed();
  plane.accept(socket, handOver);
  socket.push(hello.subarray(0, 3));
  plane.destroyPending();
  t.equal(socket.destroyed, true);
});
