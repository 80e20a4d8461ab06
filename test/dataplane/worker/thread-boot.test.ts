// A data-plane thread starts without Node's TypeScript stripper (~16 MiB per thread): the main
// thread strips the entry's modules once and the thread's load hook serves them. Checked on a probe
// entry that loads the whole data plane, and on the real entry: the stripped set holds every module
// of lib/ a thread loads, and that is the data plane alone (no model builder, no certificate generator).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import t from 'tap';
import { generateDefaultCertificate } from '../../../lib/dataplane/listening/sni.ts';
import { startThread, stripThreadModules } from '../../../lib/dataplane/worker/thread-boot.ts';

const REPO = new URL('../../../', import.meta.url);
const LIB = new URL('lib/', REPO);
const THREAD_ENTRY = new URL('lib/dataplane/worker/thread-main.ts', REPO);

function firstMessage<T>(worker: Worker): Promise<T> {
  return new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

t.test('a thread started with its modules stripped does not load the stripper', async (t) => {
  const probe = new URL('test/support/thread-probe.ts', REPO);
  const worker = startThread(probe, {}, REPO);
  t.teardown(() => worker.terminate());
  const { stripper } = await firstMessage<{ stripper: boolean }>(worker);
  t.equal(stripper, false, 'no amaro in the thread');

  // the same entry loaded by Node alone: the check above can fail. A copy no run has seen: with
  // NODE_COMPILE_CACHE (npm test) Node strips nothing it stripped before, so the same file loaded
  // a second time would not need the stripper either
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-probe-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const copy = join(dir, 'thread-probe.ts');
  const source = await readFile(probe, 'utf8');
  await writeFile(
    copy,
    `// ${Date.now()} ${Math.random()}\n${source.replace("'../../lib/", `'${LIB.href}`)}`,
  );
  const plain = new Worker(pathToFileURL(copy));
  t.teardown(() => plain.terminate());
  t.equal((await firstMessage<{ stripper: boolean }>(plain)).stripper, true, 'amaro without the hook');
});

t.test('the stripped set of the thread entry holds every module of lib/ a thread loads', async (t) => {
  const sources = stripThreadModules(THREAD_ENTRY);
  // the modules the real entry loads, as Node resolves them, recorded in a thread of its own
  const tracer = new Worker(
    `const { registerHooks } = require('node:module');
     const { parentPort } = require('node:worker_threads');
     const seen = new Set();
     registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.add(r.url); return r; } });
     import(${JSON.stringify(THREAD_ENTRY.href)}).then(() => parentPort.postMessage([...seen]));`,
    {
      eval: true,
      workerData: {
        httpPort: 0,
        httpsPort: 0,
        bindAddress: '127.0.0.1',
        generatedDefaultCertificate: await generateDefaultCertificate(),
      },
    },
  );
  t.teardown(() => tracer.terminate());
  const all = await firstMessage<string[]>(tracer);
  const loaded = all.filter((url) => url.startsWith(LIB.href));
  t.ok(loaded.length > 50, `the thread loads ${loaded.length} modules of lib/`);
  t.strictSame(
    loaded.filter((url) => !sources.index.has(url)),
    [],
    'none of them left to the stripper',
  );
  // what a thread has no use for: the model builder (the main thread builds) and the certificate
  // generator (the main thread generates the default certificate)
  t.strictSame(
    all.filter((url) => url.endsWith('/lib/model/build.ts') || url.includes('/node_modules/selfsigned/')),
    [],
    'neither the model builder nor selfsigned',
  );
  // the OpenTelemetry SDK is loaded once some route is traced (tracing/sdk-loader.ts), never at boot
  t.strictSame(
    all.filter(
      (url) => url.includes('/node_modules/@opentelemetry/') || url.endsWith('/lib/dataplane/tracing/sdk.ts'),
    ),
    [],
    'no OpenTelemetry SDK',
  );
  const text = Buffer.from(sources.buffer).toString(
    'utf8',
    ...(sources.index.get(THREAD_ENTRY.href) ?? [0, 0]),
  );
  t.match(text, /parentPort/, 'the entry itself, as JavaScript');
  t.notMatch(text, /import type/, 'its types stripped');
});

t.test('a module that cannot be read is left to Node, the others are still stripped', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'thread-boot-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'entry.ts'),
    "import { x } from './here.ts';\n// from './gone.ts'\nexport const y: number = x;\n",
  );
  await writeFile(join(dir, 'here.ts'), 'export const x: number = 1;\n');
  const root = pathToFileURL(`${dir}/`);
  const { index } = stripThreadModules(new URL('entry.ts', root), root);
  t.strictSame([...index.keys()].sort(), [new URL('entry.ts', root).href, new URL('here.ts', root).href]);
});
