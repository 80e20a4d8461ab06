// The HTTPS listener's session cache on a bare TLS server: TLS 1.2 sessions are kept and resumed, TLS
// 1.3 ones are not kept (Node looks sessions up by the ClientHello's legacy ID only, a random value
// in TLS 1.3); sessions one data plane publishes resume on another that shares them; the cache off
// removes the listeners.
import { constants } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { connect, createServer, type Server } from 'node:tls';
import t, { type Test } from 'tap';
import {
  type SessionShare,
  sessionVersion,
  TlsSessions,
} from '../../lib/dataplane/listening/tls-sessions.ts';
import { DEFAULT_SSL_HANDSHAKE } from '../../lib/model/configmap/tls-session-keys.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url), 'utf8');
const credentials = { cert: fixture('a-example.crt'), key: fixture('a-example.key') };

async function tlsServer(t: Test): Promise<{ server: Server; port: number }> {
  const server = createServer({ ...credentials, secureOptions: constants.SSL_OP_NO_TICKET }, (socket) =>
    socket.end('hi'),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { server, port: (server.address() as AddressInfo).port };
}

/** A connection that reads to the end: whether it resumed, and the session it was given. */
function handshake(
  port: number,
  maxVersion: 'TLSv1.2' | 'TLSv1.3',
  session?: Buffer,
): Promise<{ reused: boolean; session: Buffer | undefined }> {
  return new Promise((resolve, reject) => {
    let reused = false;
    let given: Buffer | undefined;
    const socket = connect({ port, host: '127.0.0.1', rejectUnauthorized: false, maxVersion, session });
    socket.on('session', (value: Buffer) => {
      given = value;
    });
    socket.on('secureConnect', () => {
      reused = socket.isSessionReused();
    });
    socket.resume();
    socket.on('error', reject);
    socket.on('close', () => resolve({ reused, session: given }));
  });
}

/** Two data planes' shares, wired to each other in this thread. */
function pairedShares(): [SessionShare, SessionShare] {
  const receivers: Array<(id: Buffer, data: Buffer) => void> = [];
  const share = (self: number): SessionShare => ({
    publish: (id, data) => receivers[1 - self]?.(Buffer.from(id), Buffer.from(data)),
    subscribe: (receive) => {
      receivers[self] = receive;
    },
    close: () => {},
  });
  return [share(0), share(1)];
}

t.test('sessionVersion reads the protocol of a serialised session', async (t) => {
  t.equal(sessionVersion(Buffer.from('3081a0020101020203040402', 'hex')), 0x0304);
  t.equal(sessionVersion(Buffer.from('30819f020101020203030402', 'hex')), 0x0303);
  t.equal(sessionVersion(Buffer.from('0401', 'hex')), -1, 'not a session');
});

t.test('TLS 1.2 sessions are kept and resumed; TLS 1.3 ones are not kept', async (t) => {
  const { server, port } = await tlsServer(t);
  const sessions = new TlsSessions(server);
  sessions.apply(DEFAULT_SSL_HANDSHAKE);
  const tls12 = await handshake(port, 'TLSv1.2');
  t.equal(sessions.size, 1, 'one TLS 1.2 session');
  t.equal((await handshake(port, 'TLSv1.2', tls12.session)).reused, true);
  await handshake(port, 'TLSv1.3');
  t.equal(sessions.size, 1, 'no TLS 1.3 session kept');
  sessions.apply({ ...DEFAULT_SSL_HANDSHAKE, sessionCache: false });
  t.equal(server.listenerCount('resumeSession'), 0, 'the cache off: no listener, no lookup per handshake');
  t.equal((await handshake(port, 'TLSv1.2', tls12.session)).reused, false);
});

t.test('a session one data plane publishes resumes on the other', async (t) => {
  const [shareA, shareB] = pairedShares();
  const a = await tlsServer(t);
  const b = await tlsServer(t);
  // one process stands for the pool here: the same ticket keys and session ID context on both
  new TlsSessions(a.server, undefined, shareA).apply(DEFAULT_SSL_HANDSHAKE);
  const onB = new TlsSessions(b.server, undefined, shareB);
  onB.apply(DEFAULT_SSL_HANDSHAKE);
  const first = await handshake(a.port, 'TLSv1.2');
  t.equal(onB.size, 1, 'B holds the session A created');
  t.equal((await handshake(b.port, 'TLSv1.2', first.session)).reused, true, 'and resumes it');
});
