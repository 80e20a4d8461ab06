// No credential leaves ingress-ts through what it shows of its configuration. A controller in
// Kubernetes mode (the fake API server) gets secrets planted in every place a user puts them: URL
// userinfo and query values in auth-url (valid and rejected), auth-signin, global-auth-url,
// global-auth-signin (rejected), mirror-target (valid with a query token, its copies failing; and
// rejected with userinfo), permanent-redirect (rejected), proxy-redirect-from; header values in the proxy-set-headers, add-headers,
// auth-proxy-set-headers and custom-headers ConfigMaps; a basic-auth Secret. Then /debug/model, every
// log line (debug level, access log included) and every Event posted to the API server are searched: no marker may appear,
// while the URLs, header names and diagnostics themselves are there.
import { once } from 'node:events';
import { Writable } from 'node:stream';
import t from 'tap';
import { parseFlags } from '../../lib/config/flags.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { type KubeObject, startFakeApiServer } from '../support/fake-apiserver.ts';
import { get, LOOPBACK_PORT_0 } from '../support/http.ts';
import { webCluster } from '../support/kube-objects.ts';
import { TEST_THREAD_COUNT, withTestThreads } from '../support/threads.ts';

t.setTimeout(60_000);

/** Every secret planted; each one unique so that a hit says where it came from. */
const SECRET = {
  authUserinfo: 'userinfo-auth-s3cr3t',
  authQuery: 'query-auth-t0ken',
  signinQuery: 'query-signin-t0ken',
  globalUserinfo: 'userinfo-global-s3cr3t',
  globalQuery: 'query-global-t0ken',
  globalSigninRejected: 'userinfo-global-signin-rejected',
  mirrorQuery: 'query-mirror-t0ken',
  mirrorRejectedUserinfo: 'userinfo-mirror-rejected',
  mirrorRejectedQuery: 'query-mirror-rejected',
  redirectRejected: 'userinfo-redirect-rejected',
  authUrlRejected: 'userinfo-auth-url-rejected',
  proxyRedirect: 'userinfo-proxy-redirect',
  proxySetHeader: 'apikey-proxy-set-h3ader',
  addHeader: 'apikey-add-h3ader',
  authProxyHeader: 'apikey-auth-proxy-h3ader',
  customHeader: 'apikey-custom-h3ader',
  basicAuthHash: 'basic-auth-h4sh',
};

const configMap = (name: string, data: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'e2e' },
  data,
});

function ingress(name: string, annotations: Record<string, string>): KubeObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      name,
      namespace: 'e2e',
      annotations: Object.fromEntries(
        Object.entries(annotations).map(([key, value]) => [`nginx.ingress.kubernetes.io/${key}`, value]),
      ),
    },
    spec: {
      ingressClassName: 'ingress-ts',
      rules: [
        {
          host: `${name}.test`,
          http: {
            paths: [
              { path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } },
            ],
          },
        },
      ],
    },
  };
}

const OBJECTS: KubeObject[] = [
  // nothing listens on port 1: the proxied request fails, which does not matter here
  ...webCluster(1),
  configMap(
    'ingress-ts',
    withTestThreads({
      'global-auth-url': `https://admin:${SECRET.globalUserinfo}@global-auth.test/check?key=${SECRET.globalQuery}`,
      'global-auth-signin': `ftp://u:${SECRET.globalSigninRejected}@login.test/`,
      'proxy-set-headers': 'e2e/upstream-headers',
      'add-headers': 'e2e/response-headers',
      'proxy-redirect-from': `http://u:${SECRET.proxyRedirect}@backend.test/`,
      'proxy-redirect-to': '/',
      'global-allowed-response-headers': 'X-Custom-Key',
    }),
  ),
  configMap('upstream-headers', { 'X-Api-Key': SECRET.proxySetHeader }),
  configMap('response-headers', { 'X-Response-Key': SECRET.addHeader }),
  configMap('auth-headers', { 'X-Auth-Key': SECRET.authProxyHeader }),
  configMap('custom', { 'X-Custom-Key': SECRET.customHeader }),
  {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'users', namespace: 'e2e' },
    type: 'Opaque',
    data: { auth: Buffer.from(`alice:{PLAIN}${SECRET.basicAuthHash}\n`).toString('base64') },
  },
  ingress('auth', {
    // ingress-nginx's character set for auth-url has no `@` either: the credentials go in the query
    'auth-url': `https://auth.test/verify?token=${SECRET.authQuery}&user=${SECRET.authUserinfo}&rd=$escaped_request_uri`,
    'auth-signin': `https://login.test/start?client_secret=${SECRET.signinQuery}`,
    'auth-proxy-set-headers': 'auth-headers',
    'custom-headers': 'custom',
  }),
  ingress('mirror', {
    'enable-global-auth': 'false',
    // ingress-nginx's character set for mirror-target has no `@`: a target with userinfo is rejected
    'mirror-target': `http://127.0.0.1:1/$request_uri?key=${SECRET.mirrorQuery}`,
  }),
  ingress('mirror-rejected', {
    'mirror-target': `http://m:${SECRET.mirrorRejectedUserinfo}@mirror.test/x?key=${SECRET.mirrorRejectedQuery}!`,
  }),
  ingress('redirect-rejected', {
    'permanent-redirect': `ftp://u:${SECRET.redirectRejected}@elsewhere.test/`,
  }),
  ingress('auth-url-rejected', { 'auth-url': `ftp://u:${SECRET.authUrlRejected}@auth.test/` }),
  ingress('basic', { 'auth-type': 'basic', 'auth-secret': 'users' }),
];

/** The markers found in `text`. */
const leaked = (text: string): string[] => Object.values(SECRET).filter((secret) => text.includes(secret));

t.test('no output carries a planted credential', async (t) => {
  const api = await startFakeApiServer({ objects: OBJECTS });
  t.teardown(() => api.close());
  const kubeconfig = await api.writeKubeconfig();
  const parsed = parseFlags([
    '--kubeconfig',
    kubeconfig,
    '--configmap',
    'e2e/ingress-ts',
    ...LOOPBACK_PORT_0,
  ]);
  if (parsed.kind !== 'run') throw new Error('expected run');

  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      sink.emit('lines');
      done();
    },
  });
  const controller = await start(parsed.config, createLogger('debug', sink), { accessLogStdout: sink });
  t.equal(controller.threads, TEST_THREAD_COUNT, "the suite's data-plane threads");
  t.teardown(() => controller.stop(0));

  // Events: the leader posts one per diagnostic; wait for the last Ingress's
  const events = () => api.list('Event', 'e2e');
  const hasEvent = (name: string, reason: string) =>
    events().some((e) => {
      const event = e as { reason?: string; involvedObject?: { name?: string } };
      return event.reason === reason && event.involvedObject?.name === name;
    });
  while (
    !hasEvent('mirror-rejected', 'ANNOTATION_INVALID') ||
    !hasEvent('ingress-ts', 'CONFIG_VALUE_INVALID')
  ) {
    await api.waitForRequest({ verb: 'create', resource: 'events' }, 20_000);
  }

  // the mirror's copies fail (nothing listens on port 1): the data plane logs it
  const mirrorFailed = () => lines.some((line) => line.includes('"mirror"') && line.includes('data plane'));
  await get(controller.http.port, 'mirror.test', '/some/path?q=1');
  while (!mirrorFailed()) await once(sink, 'lines');

  const reply = await get(controller.healthz.port, 'localhost', '/debug/model');
  t.equal(reply.status, 200);
  const model = JSON.parse(reply.body) as {
    hosts: Array<{ host: string; routes: Array<Record<string, unknown>> }>;
    diagnostics: Record<string, Array<{ code: string; message: string }>>;
    config: Record<string, unknown>;
  };

  // the places exist (else the test proves nothing) ...
  const route = (host: string) => model.hosts.find((h) => h.host === host)?.routes[0];
  t.match(route('auth.test'), {
    auth: {
      external: {
        url: 'https://auth.test/verify?token=***&user=***&rd=$escaped_request_uri',
        signin: 'https://login.test/start?client_secret=***',
      },
    },
    customHeaders: { configMap: 'custom', headers: { 'X-Custom-Key': '***' } },
  });
  t.match(route('mirror.test'), {
    mirror: { target: 'http://127.0.0.1:1/$request_uri?key=***' },
  });
  t.match(model.config, {
    globalAuth: { url: 'https://***@global-auth.test/check?key=***' },
    headers: {
      proxySetHeaders: { source: 'e2e/upstream-headers', headers: [['X-Api-Key', '***']] },
      addHeaders: { source: 'e2e/response-headers', headers: [['X-Response-Key', '***']] },
    },
    proxy: { redirectFrom: 'http://***@backend.test/' },
  });
  t.match(model.diagnostics['Ingress e2e/mirror-rejected'], [
    { code: 'ANNOTATION_INVALID', message: /mirror-target="http:\/\/\*\*\*@mirror\.test\/x\?key=\*\*\*"/ },
  ]);
  t.match(model.diagnostics['Ingress e2e/redirect-rejected'], [{ code: 'ANNOTATION_INVALID' }]);
  t.match(model.diagnostics['Ingress e2e/auth-url-rejected'], [
    { code: 'ANNOTATION_INVALID', message: /auth-url="ftp:\/\/\*\*\*@auth\.test\/"/ },
  ]);
  t.match(model.diagnostics['ConfigMap e2e/ingress-ts'], [
    { code: 'CONFIG_VALUE_INVALID', message: /global-auth-signin="ftp:\/\/\*\*\*@login\.test\/"/ },
  ]);
  t.ok(
    lines.some((line) => line.includes('mirror-rejected') && line.includes('ANNOTATION_INVALID')),
    'the rejected mirror-target is logged',
  );

  // ... and no marker is in any of them
  t.strictSame(leaked(reply.body), [], '/debug/model');
  t.strictSame(leaked(lines.join('\n')), [], 'log lines');
  t.strictSame(leaked(JSON.stringify(events())), [], 'Events');
});
