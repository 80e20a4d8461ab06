// OpenTelemetry through the real proxy, exported over OTLP/gRPC by the SDK to a local collector
// (test/support/otlp-collector.ts); run it with INGRESS_TS_TEST_THREADS=2 too. A traced route's
// request becomes a SERVER span with NGINX module's attributes and the route's, the upstream gets a
// traceparent naming that span; an incoming context is the parent only when trusted; the annotation
// turns a route on or off against the ConfigMap; AlwaysOff exports nothing; the log variables name
// the span; a collector that is down costs no request, and the spans it misses are counted.
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { echoBackend, type Reply, seenBy, send } from '../support/echo.ts';
import { get, listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { OtlpCollector } from '../support/otlp-collector.ts';
import { untilStats } from '../support/plane.ts';
import { parseExposition } from '../support/prometheus.ts';
import { nextSwap } from '../support/swaps.ts';
import { withTestThreads } from '../support/threads.ts';

t.setTimeout(90_000);

const configMap = (data: Record<string, string>) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: config, namespace: e2e }\ndata: ${JSON.stringify(
    withTestThreads(data),
  )}\n`;

const CLIENT_TRACE = '0af7651916cd43dd8448eb211c80319c';
const CLIENT_SPAN = 'b7ad6b7169203331';
const CLIENT_PARENT = `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`;
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0([01])$/;

t.test('OpenTelemetry spans of proxied requests', async (t) => {
  const collector = await OtlpCollector.start();
  t.teardown(() => collector.stop());
  const backend = echoBackend('web');
  const backendPort = await listen(backend);
  t.teardown(() => {
    backend.closeAllConnections();
    return new Promise<void>((resolve) => backend.close(() => resolve()));
  });
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-otel-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const exporter = {
    'otlp-collector-host': '127.0.0.1',
    'otlp-collector-port': String(collector.port),
    // each span is sent as it ends: no wait for a batch
    'otel-max-export-batch-size': '1',
    'otel-schedule-delay-millis': '20',
    'log-format-upstream':
      '$host $status trace=$opentelemetry_trace_id span=$opentelemetry_span_id tp=$opentelemetry_context_traceparent',
  };
  await writeFile(join(dir, 'config.yaml'), configMap({ ...exporter, 'enable-opentelemetry': 'true' }));
  await writeFile(
    join(dir, 'site.yaml'),
    `${INGRESS_CLASS}${serviceYaml('web', [backendPort])}` +
      ingressYaml({ name: 'site', host: 'site.test', path: '/app', service: 'web' }) +
      ingressYaml({
        name: 'quiet',
        host: 'quiet.test',
        path: '/',
        service: 'web',
        annotations: { 'enable-opentelemetry': 'false' },
      }) +
      ingressYaml({
        name: 'named',
        host: 'named.test',
        path: '/',
        service: 'web',
        annotations: {
          'enable-opentelemetry': 'true',
          'opentelemetry-operation-name': 'named-op',
          'opentelemetry-trust-incoming-span': 'false',
        },
      }),
  );
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('latin1').split('\n')) if (line !== '') lines.push(line);
      sink.emit('lines');
      done();
    },
  });
  const lineWith = async (part: string) => {
    for (;;) {
      const line = lines.find((l) => l.includes(part));
      if (line !== undefined) return line;
      await once(sink, 'lines');
    }
  };
  const controller = await start(testConfig(dir, '--configmap', 'e2e/config'), createLogger('silent'), {
    accessLogStdout: sink,
  });
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;
  const swapTo = async (data: Record<string, string>) => {
    const swapped = nextSwap();
    await writeFile(join(dir, 'config.yaml'), configMap(data));
    await swapped;
  };

  await t.test('a trusted incoming context: the span is its child, the upstream gets the span', async (t) => {
    const reply = await send(port, 'site.test', '/app/page?q=1', {
      headers: { traceparent: CLIENT_PARENT, tracestate: 'vendor=1', 'user-agent': 'otel-test' },
    });
    t.equal(reply.status, 200);
    const sent = TRACEPARENT.exec(String(seenBy(reply).headers.traceparent));
    t.ok(sent, 'the upstream got a traceparent');
    const [, traceId, spanId, sampled] = sent ?? [];
    t.equal(traceId, CLIENT_TRACE, 'in the client trace');
    t.not(spanId, CLIENT_SPAN, 'naming the proxy span, not the client one');
    t.equal(sampled, '1');
    t.equal(seenBy(reply).headers.tracestate, 'vendor=1', 'the trusted tracestate goes on');
    const span = await collector.span((s) => s.spanId === spanId);
    t.equal(span.traceId, CLIENT_TRACE);
    t.equal(span.parentSpanId, CLIENT_SPAN, 'child of the incoming span');
    t.equal(span.kind, 'SPAN_KIND_SERVER');
    t.equal(span.name, '/app', 'named after the location, as NGINX module names it');
    t.equal(span.status, 'STATUS_CODE_UNSET');
    t.equal(span.resource['service.name'], 'nginx');
    t.equal(collector.unknownBytes, 0, 'the OTLP schema decodes every field the SDK wrote');
    t.match(span.attributes, {
      'http.method': 'GET',
      'http.target': '/app/page?q=1',
      'http.flavor': '1.1',
      'http.scheme': 'http',
      'http.host': 'site.test',
      'http.server_name': 'site.test',
      'http.user_agent': 'otel-test',
      'http.route': '/app',
      'http.status_code': 200,
      'net.peer.ip': '127.0.0.1',
      'net.host.port': port,
      'k8s.namespace.name': 'e2e',
      'k8s.ingress.name': 'site',
      'k8s.service.name': 'web',
      'upstream.address': `127.0.0.1:${backendPort}`,
    });
    const line = await lineWith(`span=${spanId}`);
    t.equal(
      line,
      `site.test 200 trace=${CLIENT_TRACE} span=${spanId} tp=00-${CLIENT_TRACE}-${spanId}-01`,
      'the log variables name the span',
    );
  });

  await t.test('no incoming context: a new trace, a 5xx is an error span', async (t) => {
    const reply = await send(port, 'named.test', '/status/503');
    t.equal(reply.status, 503);
    const [, traceId, spanId] = TRACEPARENT.exec(String(seenBy(reply).headers.traceparent)) ?? [];
    const span = await collector.span((s) => s.spanId === spanId);
    t.equal(span.traceId, traceId);
    t.equal(span.parentSpanId, '', 'a root span');
    t.equal(span.status, 'STATUS_CODE_ERROR');
    t.equal(span.attributes['http.status_code'], 503);
  });

  await t.test('annotation false: no span, the client context passes untouched', async (t) => {
    const before = collector.spans.length;
    const reply = await send(port, 'quiet.test', '/x', { headers: { traceparent: CLIENT_PARENT } });
    t.equal(seenBy(reply).headers.traceparent, CLIENT_PARENT);
    await lineWith('quiet.test 200 trace=- span=- tp=-');
    // a traced request after it: its span arrives, and none came for the quiet one
    const traced = await send(port, 'site.test', '/app/after-quiet');
    const [, , spanId] = TRACEPARENT.exec(String(seenBy(traced).headers.traceparent)) ?? [];
    await collector.span((s) => s.spanId === spanId);
    t.same(
      collector.spans.slice(before).map((s) => s.attributes['http.host']),
      ['site.test'],
      'only the traced request has a span',
    );
  });

  await t.test('annotation: its operation name, and an untrusted client context replaced', async (t) => {
    const reply = await send(port, 'named.test', '/n', {
      headers: { traceparent: CLIENT_PARENT, tracestate: 'vendor=1' },
    });
    const [, traceId, spanId] = TRACEPARENT.exec(String(seenBy(reply).headers.traceparent)) ?? [];
    t.not(traceId, CLIENT_TRACE, 'a trace of its own');
    t.equal(seenBy(reply).headers.tracestate, undefined, "the client's tracestate is dropped");
    const span = await collector.span((s) => s.spanId === spanId);
    t.equal(span.name, 'named-op');
    t.equal(span.parentSpanId, '');
  });

  await t.test('ConfigMap off, trust off, a name with variables: the annotation still traces', async (t) => {
    await swapTo({
      ...exporter,
      'opentelemetry-trust-incoming-span': 'false',
      'opentelemetry-operation-name': 'HTTP $request_method $service_name',
    });
    const plain = await send(port, 'site.test', '/app/off', { headers: { traceparent: CLIENT_PARENT } });
    t.equal(seenBy(plain).headers.traceparent, CLIENT_PARENT, 'site.test is not traced any more');
    const reply = await send(port, 'named.test', '/n', { headers: { traceparent: CLIENT_PARENT } });
    const [, , spanId] = TRACEPARENT.exec(String(seenBy(reply).headers.traceparent)) ?? [];
    const span = await collector.span((s) => s.spanId === spanId);
    t.equal(span.name, 'named-op', "the annotation's name wins");
    await swapTo({
      ...exporter,
      'enable-opentelemetry': 'true',
      'opentelemetry-trust-incoming-span': 'false',
      'opentelemetry-operation-name': 'HTTP $request_method $service_name',
    });
    const untrusted = await send(port, 'site.test', '/app/v', { headers: { traceparent: CLIENT_PARENT } });
    const [, traceId, id] = TRACEPARENT.exec(String(seenBy(untrusted).headers.traceparent)) ?? [];
    t.not(traceId, CLIENT_TRACE, 'not trusted: a new trace');
    const named = await collector.span((s) => s.spanId === id);
    t.equal(named.name, 'HTTP GET web');
    t.equal(named.parentSpanId, '');
  });

  await t.test('AlwaysOff: unsampled contexts go upstream, nothing of them is exported', async (t) => {
    await swapTo({ ...exporter, 'enable-opentelemetry': 'true', 'otel-sampler': 'AlwaysOff' });
    const sampledOf = (reply: Reply) =>
      (TRACEPARENT.exec(String(seenBy(reply).headers.traceparent)) ?? [])[3];
    // parent-based (the default): a request without a parent is not sampled
    t.equal(sampledOf(await send(port, 'site.test', '/app/orphan')), '0');
    // ... and a sampled parent still decides for its child
    t.equal(
      sampledOf(await send(port, 'site.test', '/app/child', { headers: { traceparent: CLIENT_PARENT } })),
      '1',
    );
    await swapTo({
      ...exporter,
      'enable-opentelemetry': 'true',
      'otel-sampler': 'AlwaysOff',
      'otel-sampler-parent-based': 'false',
    });
    const last = await send(port, 'site.test', '/app/last', { headers: { traceparent: CLIENT_PARENT } });
    t.equal(sampledOf(last), '0', 'not parent-based: even a sampled parent gets an unsampled child');
    // the providers swapped out are flushed; a sampled probe after them arrives, the others never did
    await swapTo({ ...exporter, 'enable-opentelemetry': 'true' });
    const probe = await send(port, 'site.test', '/app/probe');
    const [, , probeSpan] = TRACEPARENT.exec(String(seenBy(probe).headers.traceparent)) ?? [];
    await collector.span((s) => s.spanId === probeSpan);
    await collector.span((s) => s.attributes['http.target'] === '/app/child');
    const targets = new Set(collector.spans.map((s) => s.attributes['http.target']));
    t.notOk(targets.has('/app/orphan'), 'the orphan was not exported');
    t.notOk(targets.has('/app/last'), 'nor the child of the non-parent-based sampler');
  });

  await t.test('another collector and service name: a new exporter, no restart', async (t) => {
    const second = await OtlpCollector.start();
    t.teardown(() => second.stop());
    await swapTo({
      ...exporter,
      'enable-opentelemetry': 'true',
      'otlp-collector-port': String(second.port),
      'otel-service-name': 'edge',
    });
    const reply = await send(port, 'site.test', '/app/second');
    const [, , spanId] = TRACEPARENT.exec(String(seenBy(reply).headers.traceparent)) ?? [];
    const span = await second.span((s) => s.spanId === spanId);
    t.equal(span.resource['service.name'], 'edge');
    t.notOk(
      collector.spans.some((s) => s.spanId === spanId),
      'the first collector does not get it',
    );
  });

  await t.test('the collector down: requests are served, dropped spans are counted', async (t) => {
    collector.stop();
    await swapTo({
      ...exporter,
      'enable-opentelemetry': 'true',
      'otel-max-queuesize': '1',
      'otel-schedule-delay-millis': '60000',
    });
    for (let i = 0; i < 5; i++) {
      const reply = await send(port, 'site.test', `/app/down-${i}`);
      t.equal(reply.status, 200, `request ${i} served`);
    }
    await untilStats(controller.handle, (s) => (s.spans?.dropped ?? 0) >= 3);
    const metrics = parseExposition((await get(controller.healthz.port, 'localhost', '/metrics')).body);
    const dropped = metrics
      .get('ingress_ts_otel_spans_total')
      ?.samples.find((s) => s.labels.result === 'dropped')?.value;
    t.ok((dropped ?? 0) >= 3, `ingress_ts_otel_spans_total{result="dropped"} = ${dropped}`);
  });
});
