// The pure parts of client-cert.ts: NGINX's $ssl_client_s_dn format (RFC 2253) from Node's subject
// lines, and the compiled settings of a host.
import t from 'tap';
import { compileClientAuth, rfc2253 } from '../../lib/dataplane/client-cert.ts';

t.test('rfc2253: least significant RDN first, comma-separated, escapes kept', async (t) => {
  t.equal(rfc2253('C=US\nO=Org\\, Inc\nCN=alice'), 'CN=alice,O=Org\\, Inc,C=US');
  t.equal(rfc2253('CN=one'), 'CN=one');
  t.equal(rfc2253(''), '');
  t.equal(rfc2253('O=Org\nCN=a + UID=7'), 'CN=a+UID=7,O=Org', 'a multi-valued RDN joins with +');
  t.equal(rfc2253('CN=Zoë'), 'CN=Zo\\C3\\AB', 'non-ASCII as escaped UTF-8 bytes (XN_FLAG_RFC2253)');
});

t.test('compileClientAuth: depth to chain length, a denied host, match-cn compiled once', async (t) => {
  t.equal(compileClientAuth(null), null);
  const base = {
    ingress: { namespace: 'n', name: 'i' },
    secret: 'n/ca',
    caPem: null,
    caSha256: '',
    verifyClient: 'on' as const,
    verifyDepth: 1,
    passCertificate: false,
    matchCN: null,
    errorPage: null,
  };
  const denied = compileClientAuth(base);
  t.equal(denied?.denied, true, 'no CA bundle: every request 503');
  t.equal(denied?.maxChain, 2, 'depth 1: leaf and CA');
  t.strictSame(denied?.cas, []);
  const cn = compileClientAuth({ ...base, matchCN: 'CN=(alice|bob)' });
  t.ok(cn?.matchCN?.matcher('CN=bob,O=x').find(), 'unanchored, like NGINX !~');
  t.notOk(cn?.matchCN?.matcher('CN=carol').find());
});
