// The whole bad-input corpus (test/bad-input) in one standalone manifests folder, next to a good
// Ingress: the controller starts, the good host answers 200 from its backend, the hostile hosts get
// answers rather than a crash (a regex host is matched in linear time, a redirect with CRLF is not
// sent), and the process is still serving and healthy at the end.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { GOOD_HOST, goodObjects, loadCorpus } from '../bad-input/corpus.ts';
import { echoBackend, seenBy } from '../support/echo.ts';
import { get, listen, testConfig } from '../support/http.ts';
import { TEST_THREAD_COUNT, withTestThreads } from '../support/threads.ts';

t.setTimeout(120_000);

t.test('the bad-input corpus through a standalone controller', async (t) => {
  const backend = echoBackend('good');
  const backendPort = await listen(backend);
  t.teardown(() => backend.close());
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-bad-input-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const corpus = loadCorpus();
  // the global ConfigMap: the hostile one (its data is a map, where the suite's worker-processes,
  // read at start, can join the hostile values)
  const configMap = 'corpus/hostile-config';
  for (const c of corpus) {
    const hostile = c.options.configMap === configMap && c.objects.length === 1;
    const object = c.objects[0] as { data: Record<string, string> };
    const yaml = hostile ? stringify({ ...object, data: withTestThreads(object.data) }) : c.yaml;
    await writeFile(join(dir, `${c.name}.yaml`), yaml);
  }
  await writeFile(
    join(dir, '00-good.yaml'),
    goodObjects(backendPort)
      .map((o) => stringify(o))
      .join('---\n'),
  );

  const controller = await start(testConfig(dir, '--configmap', configMap), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  t.equal(controller.threads, TEST_THREAD_COUNT, "the suite's data-plane threads");
  const port = controller.http.port;

  const good = await get(port, GOOD_HOST, '/hello');
  t.equal(good.status, 200, 'the good host answers');
  t.equal(seenBy(good).name, 'good', 'from its backend');
  t.equal(seenBy(good).url, '/hello');

  // hostile hosts: each gets an HTTP answer, none takes the process down
  const started = performance.now();
  const regexHost = await get(port, 'path-regex-catastrophic.example', `/${'a'.repeat(50_000)}!`);
  t.ok(regexHost.status >= 400, `a regex-mode host with a refused path answers (${regexHost.status})`);
  const pattern = await get(port, 'canary-pattern.example', '/', undefined);
  t.ok(pattern.status >= 400, `the host of a canary with a refused pattern answers (${pattern.status})`);
  t.ok(performance.now() - started < 10_000, 'without backtracking for seconds');
  const redirect = await get(port, 'annotation-snippet-in-redirect.example', '/');
  t.equal(redirect.status, 404, 'the Ingress with a CRLF in its redirect URL is dropped');
  t.equal(redirect.headers['set-cookie'], undefined, 'and no injected header is sent');
  const huge = await get(port, 'generated-5000-paths.example', '/p4998/x');
  t.equal(huge.status, 503, 'the 5,000-path Ingress routes (its Service does not exist: 503)');

  const healthz = await get(controller.healthz.port, 'localhost', '/healthz');
  t.equal(healthz.status, 200, '/healthz is still 200');
  const again = await get(port, GOOD_HOST, '/');
  t.equal(again.status, 200, 'and the good host still answers');
});
