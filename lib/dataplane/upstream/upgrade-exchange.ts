// A proxied HTTP/1.1 Upgrade (WebSocket handshake): on 101 the client and upstream sockets become a
// tunnel; a refusal is passed on as an ordinary response and the connection closed.

import type { IncomingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { RequestRecord } from '../request-record.ts';
import { sendSocketErrorPage } from '../responses/error-pages.ts';
import { Exchange } from './exchange.ts';
import { CLIENT_ABORTED, noop, ProxyError } from './failures.ts';
import { rawHead, responseHeaders } from './response-headers.ts';
import type { ProxyTarget } from './target.ts';
import type { UpstreamProxy } from './upstream-proxy.ts';

/** An HTTP/1.1 Upgrade (WebSocket): on 101 the two sockets are piped together. */
export class UpgradeExchange extends Exchange {
  private readonly socket: Duplex;
  private readonly head: Buffer;
  private paused = false;

  constructor(
    proxy: UpstreamProxy,
    socket: Duplex,
    head: Buffer,
    target: ProxyTarget,
    opts: Dispatcher.DispatchOptions,
    record: RequestRecord | null,
  ) {
    super(proxy, target, opts, false, record);
    this.socket = socket;
    this.head = head;
    socket.on('error', noop);
    socket.on('close', () => this.clientGone());
  }

  protected fail(status: number): void {
    if (this.record !== null) this.record.status = status;
    sendSocketErrorPage(this.socket, status);
  }

  protected unexpected(error: unknown): void {
    // the upstream request ends with it
    this.clientGone();
    this.done = true;
    this.socket.destroy();
    this.proxy.containSocket(error);
  }

  protected cut(): void {
    this.socket.destroy();
  }

  // inside the exchange's boundary, as its response callbacks are (exchange.ts)
  onRequestUpgrade(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
    upstream: Duplex,
  ): void {
    try {
      this.upgraded(controller, statusCode, headers, upstream);
    } catch (error) {
      upstream.destroy();
      this.unexpected(error);
    }
  }

  private upgraded(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
    upstream: Duplex,
  ): void {
    this.headReceived(statusCode);
    if (this.record !== null) this.record.status = statusCode;
    if (this.done) {
      upstream.destroy();
      return;
    }
    this.done = true;
    this.responded = true;
    const client = this.socket;
    // NGINX sends a 101 through its header filters like any response (hide-headers, Server,
    // add-headers, its own Date), then `Connection: upgrade` and the upstream's Upgrade, which the
    // common list drops as hop-by-hop
    const out = responseHeaders(headers, this.policy, statusCode);
    out.push('date', new Date().toUTCString(), 'connection', 'upgrade');
    if (headers.upgrade !== undefined) out.push('upgrade', headers.upgrade);
    client.write(rawHead(statusCode, 'Switching Protocols', out));
    if (this.head.length > 0) upstream.write(this.head);
    this.proxy.tunnel(client, upstream);
  }

  /** The upstream refused the upgrade with an ordinary response: pass it on, then close. */
  protected responseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
    statusText?: string,
  ): void {
    if (statusCode < 200) return;
    this.responded = true;
    this.headReceived(statusCode);
    if (this.done) {
      controller.abort(new ProxyError(CLIENT_ABORTED, 'client closed the connection'));
      return;
    }
    if (this.record !== null) this.record.status = statusCode;
    const out = responseHeaders(headers, this.policy, statusCode);
    // the upstream's Date is dropped (NGINX's own replaces it) and this head is written by hand
    out.push('date', new Date().toUTCString(), 'connection', 'close');
    this.socket.write(rawHead(statusCode, statusText || 'Unknown', out));
  }

  protected responseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.done) return;
    this.noteData(chunk.length);
    if (!this.socket.write(chunk) && !this.paused) {
      this.paused = true;
      controller.pause();
      this.socket.once('drain', () => {
        this.paused = false;
        controller.resume();
      });
    }
  }

  protected responseEnd(): void {
    this.noteEnd();
    if (this.done) return;
    this.done = true;
    this.socket.end();
  }
}
