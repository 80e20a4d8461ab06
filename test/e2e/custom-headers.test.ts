// custom-headers through the real proxy: the ConfigMap's entries on every response
// of the route (upstream 200 and 404, the proxy's own 503), replacing the upstream's; a key missing
// from global-allowed-response-headers, a framing header (Transfer-Encoding) even when that list names
// it, a missing ConfigMap, or a ConfigMap of another namespace without allow-cross-namespace-resources
// deny the location (503, never the headers-less route);
// editing the referenced ConfigMap alone is applied.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { ModelDescription } from '../../lib/debug-model.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { echoBackend, seenBy, send } from '../support/echo.ts';
import { get, listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { nextSwap } from '../support/swaps.ts';
import { withTestThreads } from '../support/threads.ts';

const configMap = (namespace: string, name: string, data: Record<string, string>) => `---
apiVersion: v1
kind: ConfigMap
metadata: { name: ${name}, namespace: ${namespace} }
data: ${JSON.stringify(name === 'ingress-ts' ? withTestThreads(data) : data)}
`;

const global = (extra: Record<string, string> = {}) =>
  configMap('ingress', 'ingress-ts', {
    'global-allowed-response-headers': 'X-Frame-Options,X-Team, X-Cache, Transfer-Encoding',
    ...extra,
  });

t.test('custom-headers through the proxy', async (t) => {
  const web = echoBackend('web');
  const webPort = await listen(web);
  t.teardown(() => web.close());
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-custom-headers-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const site = (name: string, reference: string, service = 'web') =>
    ingressYaml({ name, host: `${name}.test`, service, annotations: { 'custom-headers': reference } });
  await writeFile(
    join(dir, 'routes.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('web', [webPort]),
      serviceYaml('empty', []),
      site('good', 'good-headers'),
      site('qualified', 'e2e/good-headers'),
      site('empty', 'good-headers', 'empty'),
      site('disallowed', 'bad-headers'),
      site('missing', 'no-such-configmap'),
      site('framing', 'framing-headers'),
      ingressYaml({
        name: 'forced',
        host: 'forced.test',
        service: 'web',
        annotations: { 'custom-headers': 'bad-headers', 'force-ssl-redirect': 'true' },
      }),
      site('cross', 'other/shared-headers'),
      ingressYaml({ name: 'plain', host: 'plain.test', service: 'web' }),
    ].join(''),
  );
  await writeFile(
    join(dir, 'maps.yaml'),
    configMap('e2e', 'good-headers', { 'X-Frame-Options': 'DENY', 'X-Team': 'edge "one"; two' }) +
      configMap('e2e', 'bad-headers', { 'X-Team': 'edge', 'X-Not-Allowed': 'no' }) +
      configMap('e2e', 'framing-headers', { 'Transfer-Encoding': 'chunked', 'X-Team': 'edge' }) +
      configMap('other', 'shared-headers', { 'X-Cache': 'shared' }),
  );
  await writeFile(join(dir, 'config.yaml'), global());
  const controller = await start(
    testConfig(dir, '--configmap', 'ingress/ingress-ts'),
    createLogger('silent'),
    { accessLogStdout: { write() {} } },
  );
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;

  await t.test('allowed keys on every status', async (t) => {
    for (const host of ['good.test', 'qualified.test']) {
      const ok = await send(port, host, '/x');
      t.equal(ok.status, 200, host);
      t.equal(seenBy(ok).url, '/x');
      t.equal(ok.headers['x-frame-options'], 'DENY', `${host}: replaces the upstream's value`);
      t.equal(ok.headers['x-team'], 'edge "one"; two', `${host}: the value as written`);
    }
    const notFound = await send(port, 'good.test', '/status/404');
    t.equal(notFound.status, 404);
    t.equal(notFound.headers['x-team'], 'edge "one"; two', 'an upstream 404');
    const unavailable = await send(port, 'empty.test', '/x');
    t.equal(unavailable.status, 503);
    t.equal(unavailable.headers['x-team'], 'edge "one"; two', "the proxy's own 503");
    const plain = await send(port, 'plain.test', '/x');
    t.equal(plain.headers['x-frame-options'], 'SAMEORIGIN', 'other routes are untouched');
    t.equal(plain.headers['x-team'], undefined);
  });

  await t.test('a location that cannot be honoured answers 503', async (t) => {
    for (const [host, why] of [
      ['disallowed.test', 'a key not in global-allowed-response-headers'],
      ['missing.test', 'a missing ConfigMap'],
      ['framing.test', 'Transfer-Encoding, though global-allowed-response-headers lists it'],
      ['cross.test', 'another namespace without allow-cross-namespace-resources'],
      ['forced.test', 'before the ssl-redirect (NGINX returns 503 in the rewrite phase)'],
    ] as const) {
      const reply = await send(port, host, '/x');
      t.equal(reply.status, 503, why);
      t.match(
        reply.body,
        /503 Service Temporarily Unavailable/,
        `${why}: the proxy answers, not the backend`,
      );
      t.equal(reply.headers['x-team'], undefined);
      t.equal(reply.headers['x-cache'], undefined);
      t.equal(reply.headers['transfer-encoding'], undefined, `${why}: the proxy's own framing only`);
    }
  });

  await t.test('/debug/model shows the headers (values hidden) and the denials per route', async (t) => {
    const reply = await get(controller.healthz.port, 'localhost', '/debug/model');
    const model = JSON.parse(reply.body) as ModelDescription;
    const route = (host: string) => model.hosts.find((h) => h.host === host)?.routes[0];
    t.strictSame(route('good.test')?.customHeaders, {
      configMap: 'good-headers',
      headers: { 'X-Frame-Options': '***', 'X-Team': '***' },
    });
    t.match(route('disallowed.test')?.customHeaders, {
      configMap: 'bad-headers',
      headers: {},
      denied: /X-Not-Allowed is not listed in global-allowed-response-headers/,
    });
    t.equal(route('plain.test')?.customHeaders, undefined);
    t.match(model.diagnostics['Ingress e2e/cross'], [{ code: 'CUSTOM_HEADERS_DENIED' }]);
  });

  await t.test('allow-cross-namespace-resources, and a ConfigMap edit alone', async (t) => {
    let swapped = nextSwap();
    await writeFile(join(dir, 'config.yaml'), global({ 'allow-cross-namespace-resources': 'true' }));
    await swapped;
    const cross = await send(port, 'cross.test', '/x');
    t.equal(cross.status, 200);
    t.equal(cross.headers['x-cache'], 'shared');
    swapped = nextSwap();
    await writeFile(
      join(dir, 'maps.yaml'),
      configMap('e2e', 'good-headers', { 'X-Frame-Options': 'SAMEORIGIN', 'X-Team': 'edited' }) +
        configMap('e2e', 'bad-headers', { 'X-Team': 'edge', 'X-Not-Allowed': 'no' }) +
        configMap('other', 'shared-headers', { 'X-Cache': 'shared' }),
    );
    await swapped;
    const edited = await send(port, 'good.test', '/x');
    t.equal(edited.headers['x-team'], 'edited');
  });
});
