// The sticky balancers: backend keys, sessions kept or renewed, change-on-failure, persistence
// through endpoint changes; and the cookie's attributes.
import { createHash } from 'node:crypto';
import t from 'tap';
import {
  affinityCookie,
  cookieTime,
  sameSiteNoneCompatible,
} from '../../lib/dataplane/upstream/affinity-cookie.ts';
import type { Peer } from '../../lib/dataplane/upstream/balancer.ts';
import { backendKeyOf, StickyBalancer } from '../../lib/dataplane/upstream/balancers/sticky.ts';
import { DEFAULT_AFFINITY } from '../../lib/model/annotations/affinity.ts';
import type { Affinity } from '../../lib/model/index.ts';

const md5 = (s: string) => createHash('md5').update(s).digest('hex');
const peers = (n: number): Peer[] =>
  Array.from({ length: n }, (_, i) => ({ address: `10.0.0.${i + 1}`, port: 80, key: `10.0.0.${i + 1}:80` }));
const env = { random: Math.random, now: () => 0 };

t.test('backend key: md5hex(md5hex(name) .. name), as sticky.lua', async (t) => {
  t.equal(backendKeyOf('default-web-80'), md5(`${md5('default-web-80')}default-web-80`));
});

t.test('balanced: a session keeps its peer; a new one avoids tried peers', async (t) => {
  const balancer = new StickyBalancer(peers(3), env, 'default-web-80', 'balanced');
  const fresh = balancer.session(null, undefined, false);
  t.ok(fresh?.newKey, 'a new session key');
  const key = fresh?.newKey as string;
  for (let i = 0; i < 20; i++) t.equal(balancer.session(key, undefined, false)?.peer, fresh?.peer);
  balancer.update(peers(3));
  t.equal(
    balancer.session(key, undefined, false)?.peer.key,
    fresh?.peer.key,
    'the same peers after an update',
  );
  const tried = new Set([fresh?.peer.key as string]);
  t.equal(
    balancer.session(key, tried, false)?.peer.key,
    fresh?.peer.key,
    'a failed try keeps the session...',
  );
  const changed = balancer.session(key, tried, true);
  t.ok(changed?.newKey, '...unless change-on-failure: a new session');
  t.not(changed?.peer.key, fresh?.peer.key, 'on another peer');
});

t.test('persistent: pinned until the peer leaves; joining peers do not move it', async (t) => {
  const balancer = new StickyBalancer(peers(3), env, 'default-web-80', 'persistent');
  const fresh = balancer.session(null, undefined, false);
  t.equal(fresh?.newKey, md5(`default-web-80${fresh?.peer.key}`), 'the key is md5hex(name .. ip:port)');
  const key = fresh?.newKey as string;
  balancer.update(peers(6));
  t.equal(
    balancer.session(key, undefined, false)?.peer.key,
    fresh?.peer.key,
    'three more peers: still pinned',
  );
  balancer.update(peers(6).filter((p) => p.key !== fresh?.peer.key));
  const moved = balancer.session(key, undefined, false);
  t.ok(moved?.newKey, 'its peer left: a new session');
  t.equal(new StickyBalancer([], env, 'x', 'persistent').session(null, undefined, false), undefined);
});

t.test('the cookie: attributes, Secure on HTTPS, conditional SameSite=None', async (t) => {
  const affinity: Affinity = { ...DEFAULT_AFFINITY, sameSite: 'None', conditionalSameSiteNone: true };
  const request = { https: true, locationPath: '/app', userAgent: 'curl/8', now: 0 };
  t.equal(
    affinityCookie(affinity, 'k|b', request),
    'INGRESSCOOKIE=k|b; Path=/app; Secure; HttpOnly; SameSite=None',
  );
  const chrome51 = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/51.0.2704.103 Safari/537.36';
  t.equal(
    affinityCookie(affinity, 'k|b', { ...request, https: false, userAgent: chrome51 }),
    'INGRESSCOOKIE=k|b; Path=/app; HttpOnly',
    'no SameSite=None for Chrome 51; no Secure on HTTP',
  );
  t.notOk(sameSiteNoneCompatible('Mozilla/5.0 (iPhone; CPU iPhone OS 12_0 like Mac OS X)'));
  t.ok(sameSiteNoneCompatible('Mozilla/5.0 Chrome/120.0 Safari/537.36'));
  t.equal(cookieTime(Date.UTC(2037, 11, 31, 23, 55, 55)), 'Thu, 31-Dec-37 23:55:55 GMT');
});
