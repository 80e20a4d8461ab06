// The data plane's tracing pieces without sockets: a path's span settings compiled (null when the
// route is not traced: nothing to do per request; the name's variables read per request, a fixed
// name made once), the collector's URL, and export failures logged at most once per 30 s with the
// count of spans lost, never per span.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { IncomingMessage } from 'node:http';
import t from 'tap';
import { compileRouteTracing, spanName } from '../../lib/dataplane/tracing/route-tracing.ts';
import { collectorUrl, Tracing } from '../../lib/dataplane/tracing/tracing.ts';
import { DEFAULT_TRACING } from '../../lib/model/configmap/tracing-keys.ts';

const ROUTE = { namespace: 'shop', ingress: 'web', service: 'front', servicePort: '80' };
const request = (method: string, url: string) => ({
  req: { method, url } as IncomingMessage,
  host: 'a.test',
  https: true,
});

t.test('a route without tracing compiles to null', async (t) => {
  t.equal(compileRouteTracing(null, '/', 'a.test', ROUTE), null);
});

t.test('no provider (and no SDK) until a traced request asks for one', async (t) => {
  const tracing = new Tracing();
  tracing.configure({ ...DEFAULT_TRACING, enabled: true });
  t.equal(tracing.tracer(), null, 'the SDK was never asked for in this process');
  await tracing.close();
});

t.test('the span name: the location path by default, variables read per request', async (t) => {
  const plain = compileRouteTracing({ trustIncomingSpan: true, operationName: '' }, '/api', 'a.test', ROUTE);
  t.equal(plain?.name, '/api', 'a fixed name, made once');
  t.equal(plain === null ? '' : spanName(plain, request('GET', '/api/x')), '/api');
  t.match(plain?.attributes, {
    'http.route': '/api',
    'http.server_name': 'a.test',
    'k8s.namespace.name': 'shop',
    'k8s.ingress.name': 'web',
    'k8s.service.name': 'front',
  });
  // the route's own variables are resolved at compile; the request's per request
  const named = compileRouteTracing(
    // biome-ignore lint/suspicious/noTemplateCurlyInString: NGINX's ${name} syntax
    { trustIncomingSpan: false, operationName: 'HTTP $request_method ${service_name}:$uri ($scheme)' },
    '/api',
    'a.test',
    ROUTE,
  );
  t.equal(named?.name, null, 'made per request');
  t.equal(named?.trust, false);
  t.equal(
    named === null ? '' : spanName(named, request('POST', '/api/a%20b?q=1')),
    'HTTP POST front:/api/a b (https)',
  );
  const routeOnly = compileRouteTracing(
    { trustIncomingSpan: true, operationName: '$namespace-$ingress_name-$location_path' },
    '/api',
    'a.test',
    ROUTE,
  );
  t.equal(routeOnly?.name, 'shop-web-/api', 'no request variable: fixed at compile');
});

t.test('the collector URL: plain text, IPv6 bracketed', async (t) => {
  t.equal(
    collectorUrl({ ...DEFAULT_TRACING, collectorHost: 'otel.svc', collectorPort: 4317 }),
    'http://otel.svc:4317',
  );
  t.equal(
    collectorUrl({ ...DEFAULT_TRACING, collectorHost: 'fd00::7', collectorPort: 55680 }),
    'http://[fd00::7]:55680',
  );
});

t.test('export failures: every lost span counted, one log line per 30 s', async (t) => {
  const messages: string[] = [];
  const listener = (message: unknown) => messages.push((message as { message: string }).message);
  subscribe('ingress-ts:dataplane:error', listener);
  t.teardown(() => unsubscribe('ingress-ts:dataplane:error', listener));
  const tracing = new Tracing();
  tracing.configure({ ...DEFAULT_TRACING, collectorHost: 'otel.svc' });
  tracing.dropped(3, null);
  t.same(messages, [], 'a full queue alone is counted, not logged');
  tracing.dropped(512, new Error('14 UNAVAILABLE: No connection established'));
  tracing.dropped(512, new Error('14 UNAVAILABLE: No connection established'));
  tracing.dropped(1, null);
  t.same(tracing.stats, { exported: 0, dropped: 1028 });
  t.equal(messages.length, 1, 'one line for both failures');
  t.match(messages[0], 'http://otel.svc:4317');
  t.match(messages[0], '515 dropped since the last report');
});
