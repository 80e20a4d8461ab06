// A request from a chosen source address (127.0.0.2, ::1…) on a new connection: how the access
// control and rate-limit tests vary the client address the proxy sees.
import { request } from 'node:http';

export interface SourcedReply {
  status: number;
  body: string;
}

export function getFrom(
  source: string,
  target: { port: number; address?: string },
  host: string,
  path = '/',
  headers: Record<string, string> = {},
): Promise<SourcedReply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.address ?? '127.0.0.1',
        port: target.port,
        localAddress: source,
        path,
        agent: false,
        headers: { host, ...headers },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}
