// An HTTP backend that answers with what it saw (method, URL, headers) as JSON; `/status/<n>`
// answers n, and every response carries headers a route may have to replace.
import { createServer, type IncomingHttpHeaders, request, type Server } from 'node:http';

export interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** which backend answered */
  name: string;
}

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
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

/** One request to the proxy on 127.0.0.1 with this Host; the raw request target is sent as is. */
export function send(
  port: number,
  host: string,
  path: string,
  options: { method?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        port,
        host: '127.0.0.1',
        path,
        method: options.method ?? 'GET',
        headers: { host, ...options.headers },
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

export const seenBy = (reply: Reply): Seen => JSON.parse(reply.body) as Seen;
