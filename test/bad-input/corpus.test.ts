// Every case of the bad-input corpus (test/bad-input/corpus/*.yaml plus the generated giants) goes
// through buildModel next to a known-good Ingress: the build does not throw, the diagnostics the case
// names are reported on the case's own objects, nothing is reported on the good objects, the good
// route is in the model, and compileRuntime accepts the model. Then the whole corpus at once.
import type { Test } from 'tap';
import t from 'tap';
import { generateDefaultCertificate } from '../../lib/dataplane/listening/sni.ts';
import { compileRuntime } from '../../lib/dataplane/routing/runtime.ts';
import { createEwmaStore } from '../../lib/dataplane/upstream/balancers/ewma.ts';
import { type BuildResult, buildModel, type Model } from '../../lib/model/index.ts';
import {
  type CorpusCase,
  describeDiagnostic,
  GOOD_HOST,
  goodObjects,
  loadCorpus,
  matches,
  snapshotFrom,
} from './corpus.ts';

t.setTimeout(120_000);
const corpus = loadCorpus();
const deps = {
  generatedDefaultCertificate: await generateDefaultCertificate(),
  balancerEnv: { random: () => 0, now: () => 0 },
  ewmaStore: createEwmaStore(),
};

t.ok(corpus.length >= 60, `at least 60 cases (${corpus.length})`);

function goodRouteServed(t: Test, model: Model): void {
  const server = model.servers.find((s) => s.hostname === GOOD_HOST);
  const route = server?.routes.find((r) => r.path === '/' && r.pathType === 'Prefix');
  t.equal(route?.ingress?.namespace, 'good', 'the good route is still served by the good Ingress');
  const upstream = route?.backend.type === 'upstream' ? model.upstreams[route.backend.upstream] : undefined;
  t.strictSame(
    upstream?.endpoints.map((e) => `${e.address}:${e.port}`),
    ['127.0.0.1:8080'],
    'with its endpoint',
  );
}

function check(t: Test, c: CorpusCase, result: BuildResult): void {
  const seen = result.diagnostics.map(describeDiagnostic);
  for (const expected of c.expect) {
    t.ok(
      result.diagnostics.some((d) => matches(d, expected)),
      `${expected.code} on ${expected.kind} ${expected.namespace}/${JSON.stringify(expected.name)}`,
      { seen },
    );
  }
  t.strictSame(
    result.diagnostics.filter((d) => d.namespace === 'good').map(describeDiagnostic),
    [],
    'nothing reported on the good objects',
  );
}

for (const c of corpus) {
  t.test(`${c.name}: ${c.what}`, async (t) => {
    const result = buildModel(snapshotFrom([...goodObjects(), ...c.objects]), c.options);
    check(t, c, result);
    if (c.nothing !== '') {
      // the corpus declares no Services for these: SERVICE_NOT_FOUND is expected and beside the point
      t.strictSame(
        result.diagnostics
          .filter((d) => d.namespace !== 'good' && d.code !== 'SERVICE_NOT_FOUND')
          .map(describeDiagnostic),
        [],
        `no diagnostic: ${c.nothing}`,
      );
    }
    goodRouteServed(t, result.model);
    t.doesNotThrow(() => compileRuntime(result.model, null, deps), 'compileRuntime accepts the model');
  });
}

t.test('the whole corpus in one snapshot', async (t) => {
  const objects = [...goodObjects(), ...corpus.flatMap((c) => c.objects)];
  const options = corpus.find((c) => c.options.configMap !== undefined)?.options ?? {};
  const result = buildModel(snapshotFrom(objects), options);
  for (const c of corpus) {
    // a case's expectations hold together with all the others (the ConfigMap ones only for the
    // ConfigMap that is the global one)
    if (c.options.configMap !== undefined && c.options.configMap !== options.configMap) continue;
    for (const expected of c.expect) {
      t.ok(
        result.diagnostics.some((d) => matches(d, expected)),
        `${c.name}: ${expected.code} ${expected.kind} ${expected.namespace}/${JSON.stringify(expected.name)}`,
      );
    }
  }
  t.strictSame(
    result.diagnostics.filter((d) => d.namespace === 'good').map(describeDiagnostic),
    [],
    'nothing reported on the good objects',
  );
  goodRouteServed(t, result.model);
  const again = buildModel(snapshotFrom([...objects].reverse()), options);
  t.equal(again.model.hash, result.model.hash, 'the same model from the reversed object order');
  t.doesNotThrow(() => compileRuntime(result.model, null, deps), 'compileRuntime accepts the model');
});
