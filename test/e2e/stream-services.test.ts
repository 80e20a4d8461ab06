// TCP and UDP services (--tcp-services-configmap, --udp-services-configmap) through a running
// standalone controller: a TCP echo relayed both ways, round-robin with the next endpoint on a
// refused connect, a swap with a stream open (it keeps working, a new port opens, the removed port
// stops accepting while its stream finishes), UDP echo with a session per client (reused, ended by
// proxy-stream-timeout or by proxy-stream-responses), and the two PROXY flags.

import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { type AddressInfo, createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { type StreamClosed, streamClosed } from '../../lib/dataplane/events.ts';
import { encodeProxyV2 } from '../../lib/dataplane/listening/proxy-protocol.ts';
import { createLogger } from '../../lib/log.ts';
import { type Controller, start } from '../../lib/main.ts';
import { testConfig } from '../support/http.ts';
import { INGRESS_CLASS } from '../support/manifests.ts';
import { nextSwap } from '../support/swaps.ts';
import { TEST_THREAD_COUNT, withTestThreads } from '../support/threads.ts';

t.setTimeout(120_000); // seven controllers start one after the other: slow on a loaded machine

/** A TCP server on 127.0.0.1: echoes each chunk with a `name:` prefix; records what each connection sent. */
async function tcpBackend(t: Test, name: string): Promise<{ port: number; received: string[] }> {
  const received: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    const index = received.push('') - 1;
    socket.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      received[index] += text;
      // a PROXY header is recorded, not echoed
      const payload = text.replace(/^PROXY [^\r]*\r\n/, '');
      if (payload !== '') socket.write(`${name}:${payload}`);
    });
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  return { port: (server.address() as AddressInfo).port, received };
}

/** A UDP echo on 127.0.0.1 that records the source port of every datagram (one per session). */
async function udpBackend(t: Test): Promise<{ port: number; sources: number[] }> {
  const sources: number[] = [];
  const socket = createSocket('udp4');
  socket.on('message', (message, from) => {
    sources.push(from.port);
    socket.send(`echo:${message.toString()}`, from.port, from.address);
  });
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  t.teardown(() => socket.close());
  return { port: socket.address().port, sources };
}

/** Ports free on 127.0.0.1 for TCP and UDP (bound, then released). */
async function freePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const server: Server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const udp = createSocket('udp4');
    const free = await new Promise<boolean>((resolve) => {
      udp.once('error', () => resolve(false));
      udp.bind(port, '127.0.0.1', () => resolve(true));
    });
    udp.close();
    if (free && !ports.includes(port)) ports.push(port);
  }
  return ports;
}

async function refusingPort(): Promise<number> {
  const [port] = await freePorts(1);
  return port as number;
}

/** A Service in e2e with one port per protocol and one EndpointSlice per backend port (127.0.0.1). */
function serviceYaml(name: string, tcp: readonly number[], udp: readonly number[] = []): string {
  const slice = (protocol: string, port: number, i: number) => `---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: ${name}-${protocol.toLowerCase()}-${i}, namespace: e2e, labels: { kubernetes.io/service-name: ${name} } }
addressType: IPv4
ports: [{ name: ${protocol.toLowerCase()}, port: ${port}, protocol: ${protocol} }]
endpoints: [{ addresses: [127.0.0.1] }]
`;
  return `---
apiVersion: v1
kind: Service
metadata: { name: ${name}, namespace: e2e }
spec:
  ports:
    - { name: tcp, port: 9000, targetPort: tcp, protocol: TCP }
    - { name: udp, port: 9053, targetPort: udp, protocol: UDP }
${tcp.map((p, i) => slice('TCP', p, i)).join('')}${udp.map((p, i) => slice('UDP', p, i)).join('')}`;
}

const mapYaml = (name: string, data: Record<string, string>) =>
  `---\napiVersion: v1\nkind: ConfigMap\nmetadata: { name: ${name}, namespace: e2e }\ndata: ${JSON.stringify(data)}\n`;

interface Site {
  controller: Controller;
  write(tcp: Record<string, string>, udp?: Record<string, string>): Promise<void>;
}

/**
 * A standalone controller serving `services` (YAML) with the two ConfigMaps; `settings` go into its
 * controller ConfigMap. `write` replaces the entries and resolves once the ports follow.
 */
async function site(
  t: Test,
  services: string,
  tcp: Record<string, string>,
  udp: Record<string, string>,
  settings: Record<string, string> = {},
): Promise<Site> {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-streams-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const controllerMap = mapYaml('controller', withTestThreads(settings));
  const files = (tcpData: Record<string, string>, udpData: Record<string, string>) =>
    `${INGRESS_CLASS}${services}${controllerMap}${mapYaml('tcp', tcpData)}${mapYaml('udp', udpData)}`;
  await writeFile(join(dir, 'site.yaml'), files(tcp, udp));
  const config = testConfig(
    dir,
    '--configmap',
    'e2e/controller',
    '--tcp-services-configmap',
    'e2e/tcp',
    '--udp-services-configmap',
    'e2e/udp',
  );
  const controller = await start(config, createLogger('silent'));
  t.teardown(() => controller.stop(0));
  let current = { tcp, udp };
  return {
    controller,
    async write(tcpData, udpData = current.udp) {
      current = { tcp: tcpData, udp: udpData };
      const swapped = nextSwap();
      await writeFile(join(dir, 'site.yaml'), files(tcpData, udpData));
      await swapped;
      // one thread: the ports open after the swap event; threads answer the commit once they did
      if (controller.threads === 1) await controller.dataPlane.streamsSettled();
    },
  };
}

/** A TCP connection to the proxy's port; `say` writes and resolves with the next chunk back. */
async function tcpClient(t: Test, port: number) {
  const socket = netConnect({ port, host: '127.0.0.1' });
  t.teardown(() => socket.destroy());
  await once(socket, 'connect');
  const say = async (text: string | Buffer): Promise<string> => {
    socket.write(text);
    const [chunk] = (await once(socket, 'data')) as [Buffer];
    return chunk.toString('latin1');
  };
  return { socket, say };
}

/** Resolves once a connection to `port` is refused or closed without data. */
async function refused(port: number): Promise<string> {
  const socket = netConnect({ port, host: '127.0.0.1' });
  socket.on('data', () => {});
  const [error] = (await Promise.race([once(socket, 'error'), once(socket, 'close')])) as [unknown];
  socket.destroy();
  return (error as NodeJS.ErrnoException | undefined)?.code ?? 'closed';
}

/** The next `count` stream-closed events matching `filter`. */
function closings(filter: (event: StreamClosed) => boolean, count = 1): Promise<StreamClosed[]> {
  return new Promise((resolve) => {
    const seen: StreamClosed[] = [];
    const on = (message: unknown) => {
      const event = message as StreamClosed;
      if (!filter(event)) return;
      seen.push(event);
      if (seen.length === count) {
        unsubscribe(streamClosed.name, on);
        resolve(seen);
      }
    };
    subscribe(streamClosed.name, on);
  });
}

async function udpClient(
  t: Test,
): Promise<{ socket: UdpSocket; ask(port: number, text: string): Promise<string> }> {
  const socket = createSocket('udp4');
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  t.teardown(() => socket.close());
  return {
    socket,
    async ask(port, text) {
      const reply = once(socket, 'message') as Promise<[Buffer]>;
      socket.send(text, port, '127.0.0.1');
      const [message] = await reply;
      return message.toString();
    },
  };
}

t.test('TCP: echo both ways, round-robin, the next endpoint on a refused connect', async (t) => {
  const a = await tcpBackend(t, 'a');
  const b = await tcpBackend(t, 'b');
  const dead = await refusingPort();
  const [port, flakyPort, lonely] = (await freePorts(3)) as [number, number, number];
  const { controller } = await site(
    t,
    serviceYaml('pair', [a.port, b.port]) +
      serviceYaml('flaky', [dead, a.port]).replaceAll('pair', 'flaky') +
      serviceYaml('dead', [dead]).replaceAll('pair', 'dead'),
    {
      [String(port)]: 'e2e/pair:9000',
      [String(flakyPort)]: 'e2e/flaky:tcp',
      [String(lonely)]: 'e2e/dead:9000',
    },
    {},
  );
  // each data-plane thread takes its turns (as each NGINX worker does): with more connections than
  // threads, some thread serves two of them, one per endpoint
  const clients = [];
  for (let i = 0; i < TEST_THREAD_COUNT + 1; i++) clients.push(await tcpClient(t, port));
  const answers = await Promise.all(clients.map((client) => client.say('hello')));
  t.strictSame(
    [...new Set(answers)].sort(),
    ['a:hello', 'b:hello'],
    'the streams take the endpoints in turn',
  );
  if (TEST_THREAD_COUNT === 1) t.strictSame(answers.slice(0, 2).sort(), ['a:hello', 'b:hello'], 'in turn');
  const first = clients[0] as Awaited<ReturnType<typeof tcpClient>>;
  const firstEndpoint = (await first.say('again')).split(':')[0];
  t.equal(await first.say('and again'), `${firstEndpoint}:and again`, 'a stream keeps its endpoint');

  // flaky: its endpoints are the refusing port and a; every connection reaches a
  for (let i = 0; i < 4; i++) {
    const client = await tcpClient(t, flakyPort);
    t.equal(await client.say(`try ${i}`), `a:try ${i}`, `connection ${i} reaches the live endpoint`);
    client.socket.destroy();
  }
  // dead: no endpoint answers, the client is closed
  const unreachable = closings((e) => e.port === lonely);
  t.equal(await refused(lonely), 'closed', 'closed when no endpoint can be reached');
  t.equal((await unreachable)[0]?.reason, 'unreachable');

  const description = await controller.handle.describe();
  t.match(
    description?.streams?.find((s) => s.port === port),
    { protocol: 'TCP', upstream: 'tcp-e2e-pair-9000', service: 'e2e/pair:9000' },
    '/debug/model lists the port',
  );
  t.match(
    description?.streams?.find((s) => s.port === port),
    { active: TEST_THREAD_COUNT + 1, accepted: TEST_THREAD_COUNT + 1 },
    'with the streams of every thread counted',
  );
});

t.test('TCP: a swap keeps open streams; a new port opens, a removed one stops accepting', async (t) => {
  const a = await tcpBackend(t, 'a');
  const [kept, removed, added] = (await freePorts(3)) as [number, number, number];
  const s = await site(
    t,
    serviceYaml('echo', [a.port]),
    {
      [String(kept)]: 'e2e/echo:9000',
      [String(removed)]: 'e2e/echo:9000',
    },
    {},
  );
  const onKept = await tcpClient(t, kept);
  const onRemoved = await tcpClient(t, removed);
  t.equal(await onKept.say('one'), 'a:one');
  t.equal(await onRemoved.say('one'), 'a:one');

  await s.write({ [String(kept)]: 'e2e/echo:9000:PROXY', [String(added)]: 'e2e/echo:9000' });
  t.equal(await onKept.say('two'), 'a:two', 'the stream of a kept port goes on (its entry as accepted)');
  t.equal(await onRemoved.say('two'), 'a:two', 'the stream of a removed port goes on');
  t.equal(await refused(removed), 'ECONNREFUSED', 'the removed port accepts nothing');
  const fresh = await tcpClient(t, added);
  t.equal(await fresh.say('three'), 'a:three', 'the new port serves');
  const ended = closings((e) => e.port === removed);
  onRemoved.socket.end();
  t.equal((await ended)[0]?.reason, 'done', "the removed port's stream finishes on its own");
});

t.test('TCP: the PROXY flags (decode from the client, encode to the upstream)', async (t) => {
  const a = await tcpBackend(t, 'a');
  const [encode, both, decode] = (await freePorts(3)) as [number, number, number];
  await site(
    t,
    serviceYaml('echo', [a.port]),
    {
      [String(encode)]: 'e2e/echo:9000::PROXY',
      [String(both)]: 'e2e/echo:9000:PROXY:PROXY',
      [String(decode)]: 'e2e/echo:tcp:PROXY',
    },
    {},
  );

  const plain = await tcpClient(t, encode);
  const clientPort = plain.socket.localPort;
  t.equal(await plain.say('x'), 'a:x', 'relayed');
  t.equal(
    a.received.at(-1),
    `PROXY TCP4 127.0.0.1 127.0.0.1 ${clientPort} ${encode}\r\nx`,
    'the upstream reads a v1 header with the client address first',
  );

  const proxied = await tcpClient(t, both);
  t.equal(await proxied.say(`PROXY TCP4 203.0.113.7 198.51.100.1 5555 ${both}\r\nhi`), 'a:hi');
  t.equal(
    a.received.at(-1),
    `PROXY TCP4 203.0.113.7 198.51.100.1 5555 ${both}\r\nhi`,
    'the decoded client address is passed on',
  );

  // the listeners' parser: version 2 (binary) headers too
  const binary = await tcpClient(t, both);
  const v2 = encodeProxyV2({ address: '203.0.113.9', port: 6666 }, { address: '198.51.100.1', port: both });
  t.equal(await binary.say(Buffer.concat([v2, Buffer.from('v2')])), 'a:v2');
  t.equal(
    a.received.at(-1),
    `PROXY TCP4 203.0.113.9 198.51.100.1 6666 ${both}\r\nv2`,
    'a v2 header is decoded, and passed on as v1',
  );

  const decoded = await tcpClient(t, decode);
  t.equal(
    await decoded.say('PROXY TCP4 203.0.113.7 198.51.100.1 5555 80\r\nhello'),
    'a:hello',
    'the header is not relayed',
  );
  t.equal(a.received.at(-1), 'hello');

  const bad = closings((e) => e.port === decode);
  const garbage = await tcpClient(t, decode);
  garbage.socket.write('GET / HTTP/1.1\r\n\r\n');
  t.equal((await bad)[0]?.reason, 'refused', 'no valid header: closed without relaying');
});

t.test('UDP: a session per client, reused, ended when idle for proxy-stream-timeout', async (t) => {
  const echo = await udpBackend(t);
  const [port] = (await freePorts(1)) as [number];
  await site(
    t,
    serviceYaml('dns', [], [echo.port]),
    {},
    { [String(port)]: 'e2e/dns:9053' },
    {
      'proxy-stream-timeout': '1s',
      'proxy-stream-responses': '0',
    },
  );
  const client = await udpClient(t);
  const idle = closings((e) => e.protocol === 'UDP' && e.port === port);
  t.equal(await client.ask(port, 'one'), 'echo:one');
  t.equal(await client.ask(port, 'two'), 'echo:two');
  t.equal(echo.sources.length, 2);
  t.equal(echo.sources[0], echo.sources[1], 'one upstream socket for the session');
  const [closed] = await idle;
  t.match(closed, { reason: 'idle', received: 6, sent: 16 }, 'the idle session ends');
  t.equal(await client.ask(port, 'three'), 'echo:three');
  t.not(echo.sources[2], echo.sources[0], 'a new session after the timeout');
  const other = await udpClient(t);
  t.equal(await other.ask(port, 'four'), 'echo:four');
  t.not(echo.sources[3], echo.sources[2], 'another client, another session');
});

t.test('UDP: proxy-stream-responses (1 by default) ends the session once answered', async (t) => {
  const echo = await udpBackend(t);
  const [port] = (await freePorts(1)) as [number];
  const { controller } = await site(
    t,
    serviceYaml('dns', [], [echo.port]),
    {},
    { [String(port)]: 'e2e/dns:udp' },
  );
  const client = await udpClient(t);
  const answered = closings((e) => e.protocol === 'UDP' && e.port === port);
  t.equal(await client.ask(port, 'query'), 'echo:query');
  t.match((await answered)[0], { reason: 'responses' });
  const metrics = await fetch(`http://127.0.0.1:${controller.healthz.port}/metrics`).then((r) => r.text());
  t.match(
    metrics,
    new RegExp(`ingress_ts_streams_total\\{[^}]*protocol="UDP",port="${port}",reason="responses"[^}]*\\} 1`),
  );
  t.match(
    metrics,
    new RegExp(
      `ingress_ts_stream_bytes_total\\{[^}]*protocol="UDP",port="${port}",direction="out"[^}]*\\} 10`,
    ),
  );
});

t.test('TCP: the graceful stop waits for open streams, as for requests', async (t) => {
  const a = await tcpBackend(t, 'a');
  const [port] = (await freePorts(1)) as [number];
  const { controller } = await site(
    t,
    serviceYaml('echo', [a.port]),
    { [String(port)]: 'e2e/echo:9000' },
    {},
  );
  const open = await tcpClient(t, port);
  t.equal(await open.say('before'), 'a:before');
  let stopped = false;
  const stopping = controller.stop(0, 30_000).then(() => {
    stopped = true;
  });
  const ended = closings((e) => e.port === port);
  t.equal(await open.say('during'), 'a:during', 'the stream goes on while the controller stops');
  t.notOk(stopped, 'the stop waits for the stream');
  open.socket.end();
  await stopping;
  // (when the listeners close during the stop has no event to wait for: checked once it is over)
  t.equal(await refused(port), 'ECONNREFUSED', 'the port is closed');
  t.equal((await ended)[0]?.reason, 'done', 'the stream ended on its own, then the stop completed');
});

t.test('TCP: a stop whose drain time is over cuts the streams left', async (t) => {
  const a = await tcpBackend(t, 'a');
  const [port] = (await freePorts(1)) as [number];
  const { controller } = await site(
    t,
    serviceYaml('echo', [a.port]),
    { [String(port)]: 'e2e/echo:9000' },
    {},
  );
  const open = await tcpClient(t, port);
  t.equal(await open.say('before'), 'a:before');
  const cut = closings((e) => e.port === port);
  const closed = once(open.socket, 'close');
  await controller.stop(0, 0);
  t.equal((await cut)[0]?.reason, 'cut');
  await closed;
  t.pass('the client connection is closed');
});
