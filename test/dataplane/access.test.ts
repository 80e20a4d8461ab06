// The access phase with an explicit clock: NGINX's leaky bucket arithmetic (refill, burst, rejected
// requests not counted, all zones charged or none), limit-connections slots, the order (limits,
// then deny, then allow) and the address handling (families kept apart, IPv4-mapped peers).
import t from 'tap';
import {
  AccessCompiler,
  type AccessPolicy,
  ADMITTED_WITH_SLOT,
  ALLOWLISTED,
  admit,
  cidrSetOf,
  leave,
  listed,
  unmapped,
} from '../../lib/dataplane/access/access.ts';
import { ConnectionZone, RequestZone, ZONE_MAX_ADDRESSES } from '../../lib/dataplane/access/rate-limit.ts';
import { ZoneMemory } from '../../lib/dataplane/access/zone-memory.ts';

const limits = (over: Partial<NonNullable<AccessPolicy['limits']>>): AccessPolicy => ({
  deny: null,
  allow: null,
  limits: { exempt: null, connections: null, rpm: null, rps: null, reqStatus: 503, connStatus: 429, ...over },
});

t.test('limit-rps: the bucket drains at the rate; rejected requests change nothing', async (t) => {
  const rps = new RequestZone(2, 0, false); // 2 r/s, burst 0: one request per 500 ms
  const policy = limits({ rps });
  t.equal(admit(policy, '10.0.0.1', 0), 0, 'a new address starts empty');
  t.equal(admit(policy, '10.0.0.1', 100), 503, 'too soon');
  t.equal(admit(policy, '10.0.0.1', 400), 503, 'still too soon (the rejected one did not count)');
  t.equal(admit(policy, '10.0.0.1', 500), 0, 'drained after 500 ms');
  t.equal(admit(policy, '10.0.0.2', 500), 0, 'another address');
});

t.test('burst: 1 + burst back to back, and the excess drains', async (t) => {
  const rps = new RequestZone(1, 3, false);
  const policy = limits({ rps });
  const at0 = [0, 0, 0, 0, 0].map(() => admit(policy, 'a', 0));
  t.strictSame(at0, [0, 0, 0, 0, 503]);
  t.equal(admit(policy, 'a', 999), 503, 'less than a request drained');
  t.equal(admit(policy, 'a', 1000), 0, 'one request drained');
});

t.test('limit-rpm: 1r/m drains 16 thousandths per second, as NGINX computes it', async (t) => {
  const rpm = new RequestZone(1, 0, true);
  t.equal(rpm.rate, 16);
  const policy = limits({ rpm });
  t.equal(admit(policy, 'a', 0), 0);
  t.equal(admit(policy, 'a', 30_000), 503);
  t.equal(admit(policy, 'a', 62_500), 0, '1000 / 16 s later');
});

t.test('rpm and rps are charged together or not at all', async (t) => {
  const rpm = new RequestZone(1, 1, true);
  const rps = new RequestZone(100, 0, false);
  const policy = limits({ rpm, rps });
  t.equal(admit(policy, 'a', 0), 0);
  t.equal(admit(policy, 'a', 1), 503, 'rps rejects (10 ms per request)');
  t.equal(admit(policy, 'a', 20), 0, 'rpm was not charged by the rejected request: its burst of 1 is left');
  t.equal(admit(policy, 'a', 40), 503, 'now rpm is over');
});

t.test('limit-connections: slots, release, exemption, order with the lists', async (t) => {
  const connections = new ConnectionZone(1);
  const policy: AccessPolicy = {
    ...limits({ connections, exempt: cidrSetOf(['10.9.0.0/16']) }),
    deny: cidrSetOf(['10.0.0.2/32']),
  };
  t.equal(admit(policy, '10.0.0.1', 0), ADMITTED_WITH_SLOT);
  t.equal(admit(policy, '10.0.0.1', 0), 429, 'limit-conn-status-code');
  leave(policy, '10.0.0.1');
  t.equal(connections.inFlight('10.0.0.1'), 0);
  t.equal(admit(policy, '::ffff:10.0.0.1', 0), ADMITTED_WITH_SLOT, 'the mapped form is the same client');
  t.equal(connections.inFlight('10.0.0.1'), 1);
  leave(policy, '::ffff:10.0.0.1');
  t.equal(admit(policy, '10.9.1.1', 0), 0, 'limit-allowlist: no slot taken');
  t.equal(admit(policy, '10.0.0.2', 0), 403, 'denied after the limits');
  t.equal(connections.inFlight('10.0.0.2'), 0, "a denied request's slot is given back");
});

t.test(
  'satisfy any: the lists never answer 403, an allowlisted client is flagged to skip auth',
  async (t) => {
    const connections = new ConnectionZone(1);
    const policy: AccessPolicy = {
      ...limits({ connections }),
      deny: cidrSetOf(['10.0.0.2/32']),
      allow: cidrSetOf(['10.0.0.0/24']),
    };
    t.equal(
      admit(policy, '10.0.0.1', 0, true),
      ADMITTED_WITH_SLOT | ALLOWLISTED,
      'allowlisted, with its slot',
    );
    t.equal(admit(policy, '10.0.0.1', 0, true), 429, 'the limits still answer');
    leave(policy, '10.0.0.1');
    t.equal(admit(policy, '10.0.0.2', 0, true), ADMITTED_WITH_SLOT, 'denylisted: authentication decides');
    t.equal(connections.inFlight('10.0.0.2'), 1, 'the slot is held while authentication runs');
    leave(policy, '10.0.0.2');
    t.equal(
      admit(policy, '10.1.0.1', 0, true),
      ADMITTED_WITH_SLOT,
      'outside the allowlist: authentication decides',
    );
    leave(policy, '10.1.0.1');
    const denyOnly: AccessPolicy = { deny: cidrSetOf(['10.0.0.2/32']), allow: null, limits: null };
    t.equal(
      admit(denyOnly, '10.0.0.1', 0, true),
      0,
      'a denylist alone never lets a client skip authentication',
    );
    t.equal(admit(denyOnly, '10.0.0.2', 0, true), 0);
    t.equal(admit(denyOnly, '10.0.0.2', 0), 403, 'satisfy all: 403');
  },
);

t.test('a connection zone full of addresses rejects new ones', async (t) => {
  const zone = new ConnectionZone(1);
  let taken = 0;
  for (let i = 0; i < ZONE_MAX_ADDRESSES; i++) if (zone.acquire(`a${i}`)) taken++;
  t.equal(taken, ZONE_MAX_ADDRESSES, 'up to the bound');
  t.notOk(zone.acquire('one-more'), 'then a new address is rejected');
  zone.release('a0');
  t.ok(zone.acquire('one-more'));
});

t.test('CIDR sets: families apart, IPv4-mapped peers as IPv4', async (t) => {
  const set = cidrSetOf(['::/64', '192.168.0.0/16']);
  if (set === null) throw new Error('expected a set');
  t.notOk(listed(set, '127.0.0.1'), 'an IPv4 address is never in an IPv6 range');
  t.ok(listed(set, '::1'));
  t.ok(listed(set, unmapped('::ffff:192.168.3.4')));
  t.notOk(listed(set, 'not an address'));
  t.equal(cidrSetOf([]), null);
});

t.test('a request zone remembers at most ZONE_MAX_ADDRESSES addresses (LRU)', async (t) => {
  const zone = new RequestZone(1, 0, false);
  t.equal(zone.size, 0, 'nothing allocated before the first request');
  for (let i = 0; i <= ZONE_MAX_ADDRESSES; i++) zone.commit(`a${i}`, 0, 0);
  t.equal(zone.size, ZONE_MAX_ADDRESSES);
  t.equal(zone.probe('a0', 0), 0, 'the oldest address was evicted: it starts afresh');
  t.equal(zone.probe(`a${ZONE_MAX_ADDRESSES}`, 0), -1, 'the newest is remembered (over its burst of 0)');
});

t.test('zones are one per Ingress and survive a recompile while its limits are unchanged', async (t) => {
  const globals = { allowlist: [], denylist: [], limitReqStatus: 503, limitConnStatus: 503 };
  const annotations = (rps: number) =>
    ({
      accessControl: { allow: null, deny: null },
      rateLimit: { rps, rpm: 0, connections: 0, burstMultiplier: 5, allowlist: [] },
    }) as unknown as Parameters<AccessCompiler['policyOf']>[0];
  const memory = new ZoneMemory();
  const first = new AccessCompiler(globals, undefined, memory);
  const a = first.policyOf(annotations(5), { namespace: 'n', name: 'a' });
  const a2 = first.policyOf(annotations(5), { namespace: 'n', name: 'a' });
  const b = first.policyOf(annotations(5), { namespace: 'n', name: 'b' });
  t.equal(a?.limits?.rps, a2?.limits?.rps, 'the paths of one Ingress share the zone');
  t.not(a?.limits?.rps, b?.limits?.rps, 'another Ingress has its own');
  t.equal(
    first.policyOf(annotations(0), { namespace: 'n', name: 'c' }),
    null,
    'no limit, no list: no policy',
  );
  t.equal(first.policyOf(annotations(5), null), null, 'a route no Ingress defines has none');
  const second = new AccessCompiler(globals, first.zones, memory);
  t.equal(
    second.policyOf(annotations(5), { namespace: 'n', name: 'a' })?.limits?.rps,
    a?.limits?.rps,
    'kept',
  );
  t.not(
    second.policyOf(annotations(6), { namespace: 'n', name: 'b' })?.limits?.rps,
    b?.limits?.rps,
    'new limits, new zone',
  );
});
