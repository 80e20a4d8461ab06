// The pure parts of client-cert.ts: NGINX's $ssl_client_s_dn format (RFC 2253) from Node's subject
// lines, the compiled settings of a host, and what a plain HTTP request to an mTLS host gets.

import type { IncomingMessage } from 'node:http';
import t from 'tap';
import { compileClientAuth, rfc2253, serverClientAuth } from '../../lib/dataplane/access/client-cert.ts';
import type { ClientAuth } from '../../lib/model/index.ts';

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

t.test(
  'serverClientAuth on plain HTTP: only match-cn applies, tested against an empty subject',
  async (t) => {
    const base: ClientAuth = {
      ingress: { namespace: 'n', name: 'i' },
      secret: 'n/ca',
      caPem: '-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n',
      caSha256: 'x',
      verifyClient: 'on',
      verifyDepth: 1,
      passCertificate: false,
      matchCN: null,
      errorPage: null,
    };
    // on plain HTTP nothing reads the request: there is no TLS socket to look at
    const req = {} as IncomingMessage;
    const plain = (settings: Partial<ClientAuth>) =>
      serverClientAuth(req, false, 'a.test', compileClientAuth({ ...base, ...settings }));
    t.equal(plain({}), null, 'verify-client on, no match-cn: NGINX verifies TLS connections only');
    t.equal(plain({ errorPage: 'https://e.test/' }), null, 'the error page is for verification failures');
    t.strictSame(plain({ matchCN: 'CN=(alice|bob)' }), { kind: 'reject', status: 403 }, 'match-cn: 403');
    t.strictSame(
      plain({ matchCN: 'CN=alice', verifyClient: 'off' }),
      { kind: 'reject', status: 403 },
      'whatever verify-client says (the server-level if is rendered for any match-cn)',
    );
    t.equal(
      plain({ matchCN: 'CN=alice|^$' }),
      null,
      'a pattern that matches an empty subject lets it through',
    );
    t.strictSame(plain({ caPem: null }), { kind: 'reject', status: 503 }, 'a denied host: 503 on HTTP too');
  },
);
