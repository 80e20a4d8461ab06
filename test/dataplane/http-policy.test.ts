// The ConfigMap's client-address rule compiled for the data plane: NGINX's real_ip_recursive over
// the forwarded-for chain, IPv4 and IPv6 CIDRs, IPv4-mapped peers; and the header tables.
import t from 'tap';
import { compileHttpPolicy, createClientAddress } from '../../lib/dataplane/http-policy.ts';
import { DEFAULT_GLOBAL_CONFIG, type GlobalConfig } from '../../lib/model/index.ts';

t.test('real IP: the rightmost untrusted address, when the peer is trusted', async (t) => {
  const resolve = createClientAddress(['10.0.0.0/8', '127.0.0.1/32', 'fd00::/8']);
  const cases: Array<[string, string | undefined, string, string]> = [
    ['127.0.0.1', undefined, '127.0.0.1', 'no header: the peer'],
    ['127.0.0.1', '', '127.0.0.1', 'an empty header: the peer'],
    ['192.0.2.1', '9.9.9.9', '192.0.2.1', 'an untrusted peer names nobody'],
    ['127.0.0.1', '9.9.9.9', '9.9.9.9', 'one hop'],
    ['127.0.0.1', '1.1.1.1, 9.9.9.9, 10.0.0.2', '9.9.9.9', 'trusted hops are skipped from the right'],
    ['127.0.0.1', '10.0.0.3, 10.0.0.2', '10.0.0.3', 'all trusted: the leftmost'],
    ['127.0.0.1', '9.9.9.9, junk, 10.0.0.2', '10.0.0.2', 'an entry that is no address ends the walk'],
    ['::ffff:127.0.0.1', '9.9.9.9', '9.9.9.9', 'an IPv4-mapped peer matches the IPv4 CIDR'],
    ['fd00::5', '2001:db8::1, fd00::9', '2001:db8::1', 'IPv6 chain and CIDR'],
    ['::1', '9.9.9.9', '::1', '::1 is not in 127.0.0.1/32'],
  ];
  for (const [peer, chain, want, name] of cases) t.equal(resolve(peer, chain), want, name);
  const everyone = createClientAddress(['0.0.0.0/0']);
  t.equal(
    everyone('203.0.113.7', '9.9.9.9, 8.8.8.8'),
    '9.9.9.9',
    'the default 0.0.0.0/0 trusts every IPv4 hop',
  );
});

t.test('policy: real IP only with enable-real-ip or use-forwarded-headers; header tables', async (t) => {
  t.equal(compileHttpPolicy(DEFAULT_GLOBAL_CONFIG).clientAddress, null, 'off by default');
  const config = structuredClone(DEFAULT_GLOBAL_CONFIG) as GlobalConfig;
  config.forwarding.useForwardedHeaders = true;
  config.headers.serverTokens = true;
  config.headers.hideHeaders = ['x-powered-by'];
  config.headers.addHeaders = { source: 'a/b', headers: [['X-Frame-Options', 'DENY']] };
  config.headers.proxySetHeaders = { source: 'a/c', headers: [['X-Env', 'prod']] };
  const policy = compileHttpPolicy(config);
  t.not(policy.clientAddress, null, 'use-forwarded-headers turns on real IP');
  t.strictSame(policy.responseHeaders, ['X-Frame-Options', 'DENY', 'server', 'ingress-ts']);
  t.equal(policy.responseDrop.has('x-powered-by'), true, 'hidden');
  t.equal(policy.responseDrop.has('x-frame-options'), true, 'replaced by add-headers');
  t.equal(policy.responseDrop.has('server'), true, "the upstream's Server never passes");
  t.strictSame(policy.upstreamHeaders, ['X-Env', 'prod']);
  t.equal(policy.upstreamHeaderNames?.['x-env'], true);
});

t.test(
  'policy with use-proxy-protocol: the header names the client, forwarded-for only with use-forwarded-headers',
  async (t) => {
    const config = structuredClone(DEFAULT_GLOBAL_CONFIG) as GlobalConfig;
    t.equal(compileHttpPolicy(config).proxyProtocol, null, 'off by default');
    config.forwarding.useProxyProtocol = true;
    config.forwarding.proxyProtocolHeaderTimeoutMs = 1500;
    config.forwarding.enableRealIp = true;
    config.forwarding.realIpCidrs = ['10.0.0.0/8', 'fd00::/8'];
    const policy = compileHttpPolicy(config);
    t.strictSame(policy.proxyProtocol, { headerTimeoutMs: 1500 });
    t.equal(
      policy.clientAddress,
      null,
      'enable-real-ip: real_ip_header is proxy_protocol, forwarded-for is not read',
    );
    t.equal(policy.trustedPeer('10.1.2.3'), true, 'the balancer is checked against proxy-real-ip-cidr');
    t.equal(policy.trustedPeer('192.0.2.1'), false);
    t.equal(policy.trustedPeer('fd00::1'), true);
    config.forwarding.useForwardedHeaders = true;
    t.not(
      compileHttpPolicy(config).clientAddress,
      null,
      'use-forwarded-headers: the chain past the header is read',
    );
  },
);
