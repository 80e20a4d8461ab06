// upstream-hash-by: the ring (same key → same peer, little movement when a peer joins or leaves),
// subsets (a random peer within the key's subset), and the key templates.
import type { IncomingMessage } from 'node:http';
import t from 'tap';
import type { Peer } from '../../lib/dataplane/upstream/balancer.ts';
import { ChashBalancer } from '../../lib/dataplane/upstream/balancers/chash.ts';
import { balancerKindFor } from '../../lib/dataplane/upstream/balancers/index.ts';
import { compileHashKey } from '../../lib/dataplane/upstream/hash-key.ts';
import { DEFAULT_AFFINITY } from '../../lib/model/annotations/affinity.ts';

const peers = (n: number, from = 1): Peer[] =>
  Array.from({ length: n }, (_, i) => ({
    address: `10.0.0.${from + i}`,
    port: 8080,
    key: `10.0.0.${from + i}:8080`,
  }));
const env = { random: Math.random, now: () => 0 };
const keys = Array.from({ length: 10_000 }, (_, i) => `/item/${i}?page=${i % 7}`);

t.test('chash: a key always gets the same peer; all peers get keys', async (t) => {
  const balancer = new ChashBalancer(peers(6), env, null);
  const first = balancer.pick(undefined, '/some/uri');
  let stable = true;
  for (let i = 0; i < 100; i++) stable &&= balancer.pick(new Set([first?.key ?? '']), '/some/uri') === first;
  t.ok(stable, '100 picks, retries included (chash ignores the tried set, as ingress-nginx)');
  const counts = new Map<string, number>();
  for (const key of keys) {
    const peer = balancer.pick(undefined, key) as Peer;
    counts.set(peer.key, (counts.get(peer.key) ?? 0) + 1);
  }
  t.equal(counts.size, 6, 'every peer owns keys');
  for (const [peer, count] of counts) t.ok(count > 10_000 / 6 / 3, `${peer}: ${count} keys (not starved)`);
  t.equal(new ChashBalancer([], env, null).pick(undefined, 'x'), undefined, 'no peers: no pick');
});

t.test(
  'chash: adding one peer to 10 moves at most 20% of 10,000 keys; removing one moves only its own',
  async (t) => {
    const ten = new ChashBalancer(peers(10), env, null);
    const before = keys.map((key) => ten.pick(undefined, key)?.key);
    ten.update(peers(11));
    const moved = keys.filter((key, i) => ten.pick(undefined, key)?.key !== before[i]).length;
    t.ok(moved / keys.length <= 0.2, `${((moved / keys.length) * 100).toFixed(1)}% of the keys moved`);
    t.ok(
      keys.every((key, i) => [before[i], '10.0.0.11:8080'].includes(ten.pick(undefined, key)?.key)),
      'only to the new peer',
    );

    ten.update(peers(10));
    const gone = '10.0.0.3:8080';
    ten.update(peers(10).filter((p) => p.key !== gone));
    t.ok(
      keys.every((key, i) => before[i] === gone || ten.pick(undefined, key)?.key === before[i]),
      'keys of the other peers stay put',
    );
  },
);

t.test('chashsubset: size 3 over 6 peers → exactly 3 distinct peers for one key; padding', async (t) => {
  const balancer = new ChashBalancer(peers(6), env, 3);
  t.equal(balancer.kind, 'chashsubset');
  const seen = new Set<string>();
  for (let i = 0; i < 200; i++) seen.add(balancer.pick(undefined, '/a')?.key ?? '');
  t.equal(seen.size, 3);
  const seven = new ChashBalancer(peers(7), env, 3);
  const all = new Set<string>();
  let largest = 0;
  for (const key of keys.slice(0, 2000)) {
    const subset = new Set<string>();
    for (let i = 0; i < 30; i++) subset.add(seven.pick(undefined, key)?.key ?? '');
    largest = Math.max(largest, subset.size);
    for (const k of subset) all.add(k);
  }
  t.equal(largest, 3, 'a key never reaches more peers than the subset size');
  t.equal(all.size, 7, 'the last subset is padded from the start, so every peer serves');
});

t.test('key templates: NGINX variables, braces and literal text', async (t) => {
  const req = {
    url: '/shop/cart?user=42&lang=de',
    method: 'GET',
    rawHeaders: ['Host', 'shop.test', 'X-User-Id', 'u-7', 'Cookie', 'a=1; session=abc'],
    socket: { remoteAddress: '192.0.2.9' },
  } as unknown as IncomingMessage;
  const input = { req, uri: '/shop/cart', host: 'shop.test', https: true };
  const cases: Array<[string, string]> = [
    ['$request_uri', '/shop/cart?user=42&lang=de'],
    ['$uri', '/shop/cart'],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: NGINX variable syntax, not a JS template
    ['${host}-x', 'shop.test-x'],
    ['$remote_addr', '192.0.2.9'],
    ['$binary_remote_addr', String.fromCharCode(192, 0, 2, 9)],
    ['$http_x_user_id', 'u-7'],
    ['$cookie_session', 'abc'],
    ['$arg_lang', 'de'],
    ['$args', 'user=42&lang=de'],
    ['$scheme-$request_method', 'https-GET'],
    ['$no_such_variable', ''],
    ['literal', 'literal'],
  ];
  for (const [template, expected] of cases) t.equal(compileHashKey(template)(input), expected, template);
});

t.test('key templates read the request as routing does', async (t) => {
  // an HTTP/2 request from an IPv4 client of a dual-stack listener, its target with a fragment
  const req = {
    url: '/shop?lang=de#top',
    method: 'GET',
    rawHeaders: [':authority', 'shop.test:8443', ':path', '/shop?lang=de#top'],
    socket: { remoteAddress: '::ffff:192.0.2.9' },
  } as unknown as IncomingMessage;
  const input = { req, uri: '/shop', host: 'shop.test', https: true };
  const cases: Array<[string, string]> = [
    ['$http_host', 'shop.test:8443'],
    ['$remote_addr', '192.0.2.9'],
    ['$binary_remote_addr', String.fromCharCode(192, 0, 2, 9)],
    ['$args', 'lang=de'],
    ['$arg_lang', 'de'],
  ];
  for (const [template, expected] of cases) t.equal(compileHashKey(template)(input), expected, template);
});

t.test('precedence: affinity > upstream-hash-by > load-balance', async (t) => {
  const hashBy = { key: '$uri', subset: false, subsetSize: 3 };
  const affinity = { ...DEFAULT_AFFINITY, mode: 'persistent' as const };
  t.equal(balancerKindFor('ewma', hashBy, affinity), 'sticky_persistent');
  t.equal(balancerKindFor('ewma', hashBy, null), 'chash');
  t.equal(balancerKindFor('ewma', { ...hashBy, subset: true }, null), 'chashsubset');
  t.equal(balancerKindFor('ewma', null, null), 'ewma');
  t.equal(balancerKindFor('chash', null, null), 'round_robin', 'load-balance never names chash');
});
