// A proxied response has one 'close' listener, the request pipeline's, which tells the exchange: a
// second listener per response (the exchange's own) made every response's close an emit over a
// copied listener array, and a closure per request. The exchange must still hear a client that
// leaves mid-response and stop its upstream request.

import { createServer, type IncomingMessage, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import t, { type Test } from 'tap';
import { DataPlane } from '../../lib/dataplane/dataplane.ts';
import { generateDefaultCertificate } from '../../lib/dataplane/listening/sni.ts';
import type { Model } from '../../lib/model/index.ts';
import { build, ingress, path, rule, service, slice } from '../model/helpers.ts';
import { echoBackend, send } from '../support/echo.ts';
import { listen } from '../support/http.ts';

function modelFor(backendPort: number): Model {
  return build({
    ingresses: [ingress('app', { rules: [rule('app.test', path('/', 'web:80'))] })],
    services: [service('web', [{ port: 80, targetPort: backendPort }])],
    slices: [slice('web', [{ addresses: ['127.0.0.1'] }], [{ port: backendPort }])],
  }).model;
}

async function startDataPlane(t: Test, backendPort: number): Promise<number> {
  const dataPlane = new DataPlane({
    httpPort: 0,
    httpsPort: 0,
    bindAddress: '127.0.0.1',
    generatedDefaultCertificate: await generateDefaultCertificate(),
  });
  dataPlane.swap(modelFor(backendPort));
  const { http } = await dataPlane.listen();
  t.teardown(() => dataPlane.close());
  return http.port;
}

t.test('a proxied response has one close listener', async (t) => {
  const backend = echoBackend('web');
  const backendPort = await listen(backend);
  t.teardown(() => backend.close());
  const port = await startDataPlane(t, backendPort);
  // the listeners a response has when the exchange writes its head: every one is in place by then
  const counts: number[] = [];
  const writeHead = ServerResponse.prototype.writeHead;
  ServerResponse.prototype.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    // the proxy's responses, not the backend's (same process)
    if (this.socket?.localPort === port) counts.push(this.listenerCount('close'));
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
  } as typeof writeHead;
  t.teardown(() => {
    ServerResponse.prototype.writeHead = writeHead;
  });
  for (let i = 0; i < 3; i++) t.equal((await send(port, 'app.test', `/r${i}`)).status, 200);
  ServerResponse.prototype.writeHead = writeHead;
  t.same(counts, [1, 1, 1]);
});

t.test('a client that leaves mid-response still stops the upstream request', async (t) => {
  // the upstream sends a head and part of a body, then holds the rest
  let arrived: (req: IncomingMessage) => void = () => {};
  const upstreamRequest = new Promise<IncomingMessage>((resolve) => {
    arrived = resolve;
  });
  const backend = createServer((req, res) => {
    res.writeHead(200, { 'content-length': '100000' });
    res.write('x'.repeat(100));
    arrived(req);
  });
  const backendPort = await listen(backend);
  t.teardown(() => {
    backend.closeAllConnections();
    backend.close();
  });
  const port = await startDataPlane(t, backendPort);
  const client = connect(port, '127.0.0.1');
  client.write('GET /held HTTP/1.1\r\nHost: app.test\r\n\r\n');
  // the client leaves once the first body bytes reached it
  await new Promise<void>((resolve) => client.once('data', () => resolve()));
  const req = await upstreamRequest;
  const upstreamClosed = new Promise<void>((resolve) => req.socket.once('close', () => resolve()));
  client.destroy();
  await upstreamClosed;
  t.pass('the upstream connection was closed');
});
