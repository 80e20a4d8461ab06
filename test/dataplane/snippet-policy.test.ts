// snippetPolicy: a server-snippet and a configuration-snippet merged into a route's header policy as
// NGINX merges the levels (headers-more: the server's operations, then the location's, in order;
// add_header: the location's list replaces the server's whole), and what responseHeaders() then
// sends for an upstream response of each status. Tables, no sockets.
import t from 'tap';
import { DEFAULT_HTTP_POLICY } from '../../lib/dataplane/http-policy.ts';
import { snippetPolicy } from '../../lib/dataplane/responses/route-headers.ts';
import { responseHeaders } from '../../lib/dataplane/upstream/response-headers.ts';
import type { SnippetRules } from '../../lib/model/index.ts';

const rules = (partial: Partial<SnippetRules>): SnippetRules => ({
  responseOps: [],
  addHeaders: [],
  hideHeaders: [],
  requestOps: [],
  return: null,
  noEffect: [],
  ...partial,
});

const UPSTREAM = {
  'content-type': 'text/plain',
  'x-debug-a': '1',
  'x-debug-b': '2',
  'x-keep': 'k',
  'x-team': 'up',
};

/** The response headers as `name: value` lines, in order (names as sent). */
function sent(server: SnippetRules | null, location: SnippetRules | null, status = 200): string[] {
  const out = responseHeaders(UPSTREAM, snippetPolicy(DEFAULT_HTTP_POLICY, server, location), status);
  const lines: string[] = [];
  for (let i = 0; i < out.length; i += 2) lines.push(`${out[i]}: ${String(out[i + 1])}`);
  return lines;
}

const UPSTREAM_LINES = [
  'content-type: text/plain',
  'x-debug-a: 1',
  'x-debug-b: 2',
  'x-keep: k',
  'x-team: up',
];

const ROWS: Array<[string, SnippetRules | null, SnippetRules | null, number, string[]]> = [
  ['nothing: the upstream headers as they are', null, null, 200, UPSTREAM_LINES],
  [
    'a set replaces the upstream value',
    null,
    rules({ responseOps: [['X-Team', 'edge']] }),
    200,
    ['content-type: text/plain', 'x-debug-a: 1', 'x-debug-b: 2', 'x-keep: k', 'X-Team: edge'],
  ],
  [
    'a clear after a set of the same name wins (order)',
    null,
    rules({
      responseOps: [
        ['X-New', '1'],
        ['x-new', null],
      ],
    }),
    200,
    UPSTREAM_LINES,
  ],
  [
    'a prefix clear, then a set under it: the set stays',
    null,
    rules({
      responseOps: [
        ['x-debug-*', null],
        ['X-Debug-C', '3'],
      ],
    }),
    200,
    ['content-type: text/plain', 'x-keep: k', 'x-team: up', 'X-Debug-C: 3'],
  ],
  [
    "the server's headers-more first, then the location's",
    rules({
      responseOps: [
        ['X-Team', 'server'],
        ['X-Server', 's'],
      ],
    }),
    rules({ responseOps: [['X-Team', 'location']] }),
    200,
    [
      'content-type: text/plain',
      'x-debug-a: 1',
      'x-debug-b: 2',
      'x-keep: k',
      'X-Server: s',
      'X-Team: location',
    ],
  ],
  [
    "add_header is appended on a 200, the upstream's kept",
    null,
    rules({ addHeaders: [{ name: 'X-Team', value: 'added', always: false }] }),
    200,
    [...UPSTREAM_LINES, 'X-Team: added'],
  ],
  [
    'add_header is not on a 404',
    null,
    rules({ addHeaders: [{ name: 'X-Team', value: 'added', always: false }] }),
    404,
    UPSTREAM_LINES,
  ],
  [
    'add_header always is on a 404',
    null,
    rules({ addHeaders: [{ name: 'X-Always', value: 'a', always: true }] }),
    404,
    [...UPSTREAM_LINES, 'X-Always: a'],
  ],
  [
    "a location's add_header replaces the server's whole",
    rules({ addHeaders: [{ name: 'X-Server', value: 's', always: true }] }),
    rules({ addHeaders: [{ name: 'X-Location', value: 'l', always: true }] }),
    200,
    [...UPSTREAM_LINES, 'X-Location: l'],
  ],
  [
    "a location without add_header keeps the server's",
    rules({ addHeaders: [{ name: 'X-Server', value: 's', always: true }] }),
    rules({ responseOps: [['X-Other', 'o']] }),
    200,
    [...UPSTREAM_LINES, 'X-Other: o', 'X-Server: s'],
  ],
  [
    'proxy_hide_header drops the upstream header only',
    rules({ hideHeaders: ['x-keep'] }),
    null,
    200,
    ['content-type: text/plain', 'x-debug-a: 1', 'x-debug-b: 2', 'x-team: up'],
  ],
  [
    'an add_header with an empty value adds nothing (NGINX)',
    null,
    rules({ addHeaders: [{ name: 'X-Empty', value: '', always: true }] }),
    200,
    UPSTREAM_LINES,
  ],
];

t.test('snippetPolicy: response headers per level and status', async (t) => {
  for (const [name, server, location, status, expected] of ROWS) {
    t.strictSame(sent(server, location, status), expected, name);
  }
});

t.test('snippetPolicy: request headers set and removed, later wins, server first', async (t) => {
  const policy = snippetPolicy(
    DEFAULT_HTTP_POLICY,
    rules({ requestOps: [['X-Input', 'server']] }),
    rules({
      requestOps: [
        ['X-Input', 'location'],
        ['X-Team', 'edge'],
        ['x-gone', null],
      ],
    }),
  );
  t.strictSame(policy.upstreamHeaders, ['X-Input', 'location', 'X-Team', 'edge']);
  t.strictSame(Object.keys(policy.upstreamHeaderNames ?? {}).sort(), ['x-gone', 'x-input', 'x-team']);
  t.equal(snippetPolicy(DEFAULT_HTTP_POLICY, null, null), DEFAULT_HTTP_POLICY, 'no snippet: the same policy');
});
