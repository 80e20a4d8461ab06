// An HTTP backend that answers with what it saw (method, URL, headers) as JSON; `/status/<n>`
// answers n, and every response carries headers a route may have to replace.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { type Reply, type SendOptions, send as sendRequest } from './http.ts';

export type { Reply } from './http.ts';

export interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** which backend answered */
  name: string;
}

export function echoBackend(name: string): Server {
  return createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const seen: Seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, name };
      const status = /^\/status\/(\d{3})$/.exec(req.url ?? '');
      res.writeHead(status === null ? 200 : Number(status[1]), {
        'content-type': 'application/json',
        'access-control-allow-origin': 'https://from-upstream.example',
        'x-frame-options': 'SAMEORIGIN',
      });
      res.end(JSON.stringify(seen));
    });
  });
}

/** One request to the proxy on a connection of its own (see `send` in http.ts). */
export function send(port: number, host: string, path: string, options: SendOptions = {}): Promise<Reply> {
  return sendRequest(port, host, path, { agent: false, ...options });
}

export const seenBy = (reply: Reply): Seen => JSON.parse(reply.body) as Seen;
