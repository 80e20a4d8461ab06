// The routing page (/debug/routing on the status port): a read-only view of /debug/model and
// /debug/traffic for people. Its files (assets/) are plain browser ES modules, HTML and CSS, read
// once when this module loads and answered from memory: nothing is fetched from elsewhere, so the
// page works offline and inside clusters without egress. The page itself only reads the documented
// JSON answers of the same port, by relative URL (it works behind `kubectl proxy` too).
//
// Plain JavaScript rather than TypeScript stripped at serve time: what the browser runs is the file
// in the repository byte for byte (readable in the browser's developer tools, no transform to trust
// or to pay for at start), and the page is small enough that the lint (biome) and the browser tests
// carry it.

import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join } from 'node:path';

/** Answers `path` if it is the page or one of its files; false: not the page's, the caller goes on. */
export type RoutingPage = (path: string, req: IncomingMessage, res: ServerResponse) => boolean;

interface Asset {
  type: string;
  body: Buffer;
  etag: string;
}

export const PAGE_PATH = '/debug/routing';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
};

// Only the page's own files and the JSON of this origin: model text can never bring in a script,
// a style, a frame or a form target, even if something were ever inserted as markup by mistake.
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function loadAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)];
    if (type === undefined) continue;
    const body = readFileSync(join(dir, name));
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
    assets.set(name === 'index.html' ? PAGE_PATH : `${PAGE_PATH}/${name}`, { type, body, etag });
  }
  return assets;
}

/** The page's request handler, its files read now. */
export function createRoutingPage(dir = new URL('./assets', import.meta.url).pathname): RoutingPage {
  const assets = loadAssets(dir);
  return (path, req, res) => {
    const asset = assets.get(path);
    if (asset === undefined) return false;
    const headers = {
      'Content-Type': asset.type,
      'Content-Security-Policy': CONTENT_SECURITY_POLICY,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      // revalidated on every load: an upgraded controller serves its own page at once
      'Cache-Control': 'no-cache',
      ETag: asset.etag,
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain' }).end('method not allowed\n');
    } else if (req.headers['if-none-match'] === asset.etag) {
      res.writeHead(304, headers).end();
    } else {
      res.writeHead(200, { ...headers, 'Content-Length': asset.body.length });
      res.end(req.method === 'HEAD' ? undefined : asset.body);
    }
    return true;
  };
}
