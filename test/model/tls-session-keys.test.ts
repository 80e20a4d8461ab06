// The ConfigMap keys of the TLS handshake: ssl-session-cache, -cache-size, -timeout, -tickets,
// -ticket-key, ssl-ecdh-curve, ssl-dh-param (a Secret), ssl-reject-handshake; ssl-early-data is not
// applicable. ConfigMap (and Secret) in, config and diagnostics out.
import { getDiffieHellman } from 'node:crypto';
import t from 'tap';
import { DEFAULT_SSL_HANDSHAKE, ticketKeyForNode } from '../../lib/model/configmap/tls-session-keys.ts';
import { redactConfig } from '../../lib/model/redact.ts';
import { dhParamPem } from '../support/tls-params.ts';
import { type Case, runCases } from './helpers.ts';

const configMap = (data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'ingress-ts', namespace: 'ingress' },
  data,
});
const secret = (name: string, data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: 'ingress' },
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
});
const OPTIONS = { configMap: 'ingress/ingress-ts' };
const INVALID = 'CONFIG_VALUE_INVALID ConfigMap:ingress/ingress-ts';

// ingress-nginx's e2e test key (80 bytes) and a 48-byte one with recognisable parts
const KEY80 =
  'WW9gcPHgfcrw6DNqY5VE2NjM6gtgUhJ4Vn6ZwRGi/7+A9TNFa4Fvfe1cmlPec9bxDoenN70aMBeZBlcrKshnKT4WJxFNLCuTHhfn4loTOEo=';
const key48 = Buffer.concat([Buffer.alloc(16, 'n'), Buffer.alloc(16, 'a'), Buffer.alloc(16, 'h')]);

const modp14 = dhParamPem(getDiffieHellman('modp14'));

t.test('the key file layouts NGINX reads, in the layout Node takes', async (t) => {
  const node48 = Buffer.from(ticketKeyForNode(key48) ?? []);
  t.equal(node48.toString(), `${'n'.repeat(16)}${'h'.repeat(16)}${'a'.repeat(16)}`, '48: name, HMAC, AES');
  const raw80 = Buffer.from(KEY80, 'base64');
  const node80 = Buffer.from(ticketKeyForNode(raw80) ?? []);
  t.strictSame(
    [node80.subarray(0, 16), node80.subarray(16, 32), node80.subarray(32, 48)],
    [raw80.subarray(0, 16), raw80.subarray(16, 32), raw80.subarray(48, 64)],
    '80: the name, the first half of the HMAC key, the first half of the AES key',
  );
  t.equal(ticketKeyForNode(Buffer.alloc(32)), null, 'other lengths are refused');
});

runCases(t, [
  {
    name: "defaults: ingress-nginx's (cache on, 10m, 10m; tickets off; auto curves; no DH; no refusal)",
    ingresses: [],
    check: (t, { model }) => {
      t.strictSame(model.config.sslHandshake, {
        sessionCache: true,
        sessionCacheSize: 10 * 1024 * 1024,
        sessionTimeout: 600,
        sessionTickets: false,
        sessionTicketKey: '',
        ecdhCurve: 'auto',
        dhParamSecret: '',
        dhParam: '',
        rejectHandshake: false,
      });
    },
  },
  {
    name: 'every key is read',
    ingresses: [],
    configMaps: [
      configMap({
        'ssl-session-cache': 'false',
        'ssl-session-cache-size': '512k',
        'ssl-session-timeout': '1h30m',
        'ssl-session-tickets': 'true',
        'ssl-session-ticket-key': key48.toString('base64'),
        'ssl-ecdh-curve': 'X25519:prime256v1:secp384r1',
        'ssl-dh-param': 'ingress/dh',
        'ssl-reject-handshake': 'true',
      }),
    ],
    secrets: [secret('dh', { 'dhparam.pem': modp14 })],
    options: OPTIONS,
    check: (t, { model, references }) => {
      t.strictSame(model.config.sslHandshake, {
        sessionCache: false,
        sessionCacheSize: 512 * 1024,
        sessionTimeout: 5400,
        sessionTickets: true,
        sessionTicketKey: Buffer.from(ticketKeyForNode(key48) ?? []).toString('base64'),
        ecdhCurve: 'X25519:prime256v1:secp384r1',
        dhParamSecret: 'ingress/dh',
        dhParam: modp14,
        rejectHandshake: true,
      });
      t.ok(references.secrets.includes('ingress/dh'), 'the Secret is a reference: an edit rebuilds');
      t.equal(redactConfig(model.config).sslHandshake.sessionTicketKey, '***', '/debug/model hides the key');
    },
  },
  {
    name: "an 80-byte key (ingress-nginx's example: openssl rand 80)",
    ingresses: [],
    configMaps: [configMap({ 'ssl-session-ticket-key': KEY80 })],
    options: OPTIONS,
    check: (t, { model }) =>
      t.equal(
        model.config.sslHandshake.sessionTicketKey,
        Buffer.from(ticketKeyForNode(Buffer.from(KEY80, 'base64')) ?? []).toString('base64'),
      ),
  },
  {
    name: 'invalid values keep the defaults, each reported; the ticket key is never quoted',
    ingresses: [],
    configMaps: [
      configMap({
        'ssl-session-cache': 'yes please',
        'ssl-session-cache-size': '10 megabytes',
        'ssl-session-timeout': '0',
        'ssl-session-tickets': 'sometimes',
        'ssl-session-ticket-key': Buffer.alloc(32, 's').toString('base64'),
        'ssl-ecdh-curve': 'X25519:no-such-curve',
        'ssl-dh-param': 'not a secret name',
        'ssl-reject-handshake': 'maybe',
      }),
    ],
    options: OPTIONS,
    diagnostics: Array.from({ length: 8 }, () => INVALID),
    messages: ['ssl-session-ticket-key="***"', 'curve names OpenSSL knows', '48 or 80 bytes'],
    check: (t, { model, diagnostics }) => {
      t.strictSame(model.config.sslHandshake, DEFAULT_SSL_HANDSHAKE);
      const secretText = Buffer.alloc(32, 's').toString('base64');
      t.notOk(
        diagnostics.some((d) => d.message.includes(secretText)),
        'no message holds the key',
      );
    },
  },
  {
    name: 'ssl-dh-param: a missing Secret',
    ingresses: [],
    configMaps: [configMap({ 'ssl-dh-param': 'ingress/missing' })],
    options: OPTIONS,
    diagnostics: [INVALID],
    messages: ['is invalid (the Secret ingress/missing does not exist); no DH parameters are used'],
    check: (t, { model }) => t.equal(model.config.sslHandshake.dhParam, ''),
  },
  ...(
    [
      ['no dhparam.pem', { 'tls.crt': 'x' }, 'has no dhparam.pem'],
      [
        'a certificate',
        { 'dhparam.pem': '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' },
        'no PEM block of type DH PARAMETERS',
      ],
      [
        'garbage',
        { 'dhparam.pem': '-----BEGIN DH PARAMETERS-----\nAAAA\n-----END DH PARAMETERS-----\n' },
        'not a DH prime',
      ],
      ['768 bits', { 'dhparam.pem': dhParamPem(getDiffieHellman('modp1')) }, 'its prime has 768 bits'],
    ] as const
  ).map(
    ([what, data, message]): Case => ({
      name: `ssl-dh-param: ${what}`,
      ingresses: [],
      configMaps: [configMap({ 'ssl-dh-param': 'ingress/dh' })],
      secrets: [secret('dh', data)],
      options: OPTIONS,
      diagnostics: [INVALID],
      messages: [message],
      check: (t, { model }) => t.equal(model.config.sslHandshake.dhParam, ''),
    }),
  ),
  {
    name: 'ssl-early-data: not applicable, with the reason',
    ingresses: [],
    configMaps: [configMap({ 'ssl-early-data': 'true' })],
    options: OPTIONS,
    diagnostics: ['CONFIG_KEY_NOT_APPLICABLE ConfigMap:ingress/ingress-ts'],
    messages: ['does not accept TLS 1.3 early data (0-RTT)'],
  },
]);
