// The header lines of a head the proxy writes by hand on an upgrade request's socket: add-headers and
// Server as setOwnResponseHeaders sets them, but never a framing or hop-by-hop name, whatever the
// policy holds (the head carries its own Connection, Upgrade or Content-Length).
import t from 'tap';
import { DEFAULT_HTTP_POLICY, type HttpPolicy } from '../../lib/dataplane/http-policy.ts';
import { ownResponseHeadLines } from '../../lib/dataplane/upstream/response-headers.ts';

const policy = (responseHeaders: string[], statusHeaders: string[] = []): HttpPolicy => ({
  ...DEFAULT_HTTP_POLICY,
  responseHeaders,
  statusHeaders,
  serverFallback: null,
});

const cases: Array<[string, HttpPolicy, number | undefined, string]> = [
  [
    'plain headers pass',
    policy(['X-Team', 'edge', 'X-Frame-Options', 'DENY']),
    200,
    'X-Team: edge\r\nX-Frame-Options: DENY\r\n',
  ],
  ['a name set twice keeps its last value', policy(['X-Team', 'a', 'x-team', 'b']), 200, 'x-team: b\r\n'],
  [
    'Transfer-Encoding and Content-Length are skipped',
    policy(['Transfer-Encoding', 'chunked', 'X-Team', 'edge', 'Content-Length', '0']),
    200,
    'X-Team: edge\r\n',
  ],
  [
    'hop-by-hop names of any case are skipped',
    policy([
      'CONNECTION',
      'close',
      'Upgrade',
      'h2c',
      'Keep-Alive',
      'timeout=5',
      'TE',
      'trailers',
      'Trailer',
      'x',
      'Proxy-Connection',
      'close',
    ]),
    200,
    '',
  ],
  [
    "a status's add_header lines skip them too",
    policy([], ['Content-Length', '5', 'X-Status', 'yes']),
    200,
    'X-Status: yes\r\n',
  ],
  [
    "no status: the status's add_header lines are not added",
    policy(['X-Team', 'edge'], ['X-Status', 'yes']),
    undefined,
    'X-Team: edge\r\n',
  ],
];

for (const [name, given, status, lines] of cases) {
  t.equal(ownResponseHeadLines(given, status), lines, name);
}
