// The dependency rules of lib/ (docs/architecture.md describes them for readers), as data a test can check.
// The flow is source → store → model ← dataplane: the model is a pure function of a snapshot, the
// data plane is a unit made from options plus a model (so it can move into worker threads), and
// metrics observe through events instead of being called from the hot path.

import { isBuiltin } from 'node:module';
import { posix } from 'node:path';
import { type ImportRef, scanImports } from './imports.ts';

export interface Target {
  /** lib: a file of lib/; outside: a repository file outside lib/; builtin: node:*; package: npm */
  kind: 'lib' | 'outside' | 'builtin' | 'package';
  /** repository path for lib/outside, `node:name` for builtins, the package name for packages */
  name: string;
}

export interface Rule {
  name: string;
  why: string;
  applies: (file: string) => boolean;
  breaks: (target: Target, ref: ImportRef) => boolean;
}

/** A known import that breaks a rule today, kept visible instead of silently allowed. */
export interface Exception {
  file: string;
  specifier: string;
  rule: string;
  why: string;
}

const under = (dir: string) => (file: string) => file.startsWith(dir);
const inLib = (target: Target, ...dirs: string[]) =>
  target.kind === 'lib' && dirs.some((dir) => target.name === dir || target.name.startsWith(dir));

// what build() may use: parsing addresses and certificates, RE2 syntax checks, a memo of parsed
// certificates; nothing that reads files, opens sockets, starts timers or logs
const MODEL_BUILTINS = new Set(['node:crypto', 'node:net', 'node:tls']);
const MODEL_PACKAGES = new Set(['re2js', 'lru-cache']);

/** The rules; kubeNames are the names lib/model/k8s.ts exports (the Kubernetes object types). */
export function dependencyRules(kubeNames: ReadonlySet<string>): Rule[] {
  return [
    {
      name: 'the model is pure',
      why:
        'lib/model/ imports only itself, node:crypto, node:net, node:tls, re2js and lru-cache: the build is a ' +
        'pure function of a snapshot, so no I/O, clock or other part of lib/',
      applies: under('lib/model/'),
      breaks: (target) =>
        target.kind === 'outside' ||
        (target.kind === 'lib' && !inLib(target, 'lib/model/')) ||
        (target.kind === 'builtin' && !MODEL_BUILTINS.has(target.name)) ||
        (target.kind === 'package' && !MODEL_PACKAGES.has(target.name)),
    },
    {
      name: 'the data plane is made of options and a model',
      why:
        'lib/dataplane/ imports only itself, lib/model/ and lib/errors.ts (never source, store, metrics, config, log, ' +
        'main) and never prom-client, pino or the Kubernetes client: it reports through events so it can run in a worker thread',
      applies: under('lib/dataplane/'),
      breaks: (target) =>
        target.kind === 'outside' ||
        (target.kind === 'lib' && !inLib(target, 'lib/dataplane/', 'lib/model/', 'lib/errors.ts')) ||
        (target.kind === 'package' &&
          ['prom-client', 'pino', '@kubernetes/client-node'].includes(target.name)),
    },
    {
      name: 'a data-plane thread loads the data plane alone',
      why:
        'lib/dataplane/ takes only types from lib/model/index.ts and lib/model/annotations/index.ts (they load the whole ' +
        'model builder) and its values from the model file that holds them, and loads selfsigned only when it ' +
        'generates a certificate (the main thread does): a worker thread then carries neither (thread-boot.test.ts)',
      applies: under('lib/dataplane/'),
      breaks: (target, ref) =>
        (inLib(target, 'lib/model/index.ts', 'lib/model/annotations/index.ts') && !ref.typeOnly) ||
        (target.kind === 'package' && target.name === 'selfsigned' && ref.kind !== 'dynamic'),
    },
    {
      name: 'the data plane never sees a Kubernetes object',
      why: 'lib/dataplane/ reads the routing model, not the Kubernetes object types of lib/model/k8s.ts',
      applies: under('lib/dataplane/'),
      breaks: (target, ref) =>
        inLib(target, 'lib/model/') &&
        (target.name === 'lib/model/k8s.ts' ||
          ref.names.some(
            ({ name }) => kubeNames.has(name) || (name === '*' && target.name === 'lib/model/index.ts'),
          )),
    },
    {
      name: 'the controller reaches the data plane through its handle',
      why:
        'lib/controller/, lib/healthz.ts and lib/debug-model.ts take from lib/dataplane/ only types (the handle, ' +
        'the descriptions, the records), the event channels of events.ts and the queue that reads their records a run ' +
        'at a time (record-queue.ts): what a data plane in a worker thread could serve them',
      applies: (file) =>
        file.startsWith('lib/controller/') || file === 'lib/healthz.ts' || file === 'lib/debug-model.ts',
      breaks: (target, ref) =>
        inLib(target, 'lib/dataplane/') &&
        !ref.typeOnly &&
        target.name !== 'lib/dataplane/events.ts' &&
        target.name !== 'lib/dataplane/record-queue.ts',
    },
    {
      name: "threads are the pool's business",
      why:
        'only lib/dataplane/worker/ imports node:worker_threads: the rest of the data plane never knows which thread ' +
        'it runs on, and the controller reaches the threads through the DataPlaneHandle the pool implements ' +
        '(the one other reader, access/shared-zone.ts, takes only threadId: its lock marks the holder, whichever thread)',
      applies: (file) =>
        !file.startsWith('lib/dataplane/worker/') && file !== 'lib/dataplane/access/shared-zone.ts',
      breaks: (target) => target.kind === 'builtin' && target.name === 'node:worker_threads',
    },
    {
      name: 'the thread entry runs only as a thread',
      why:
        'lib/dataplane/worker/thread-main.ts starts a DataPlane driven by its parent port: the pool loads it with ' +
        'new Worker(), no module imports it',
      applies: under('lib/'),
      breaks: (target) => inLib(target, 'lib/dataplane/worker/thread-main.ts'),
    },
    {
      name: 'the source feeds the store',
      why: 'lib/source/ hands objects to the store; it never reaches the data plane, metrics or the wiring in main',
      applies: under('lib/source/'),
      breaks: (target) =>
        target.kind === 'outside' ||
        inLib(target, 'lib/dataplane/', 'lib/metrics/', 'lib/main.ts', 'lib/cli.ts'),
    },
    {
      name: 'the store knows only the model',
      why: 'lib/store/ imports only itself and lib/model/: everything after the store never knows where objects came from',
      applies: under('lib/store/'),
      breaks: (target) =>
        target.kind === 'outside' || (target.kind === 'lib' && !inLib(target, 'lib/store/', 'lib/model/')),
    },
    {
      name: 'metrics only observe',
      why:
        'lib/metrics/ imports itself, lib/model/ and types of lib/dataplane/ and lib/admission/: it subscribes to ' +
        'diagnostics_channel events instead of calling into the data plane or the webhook',
      applies: under('lib/metrics/'),
      breaks: (target, ref) =>
        target.kind === 'outside' ||
        (target.kind === 'lib' &&
          !inLib(target, 'lib/metrics/', 'lib/model/') &&
          !(inLib(target, 'lib/dataplane/', 'lib/admission/') && ref.typeOnly)),
    },
    {
      name: 'prom-client stays in lib/metrics',
      why: 'the hot path never imports prom-client; metrics subscribe to events',
      applies: (file) => !file.startsWith('lib/metrics/'),
      breaks: (target) => target.kind === 'package' && target.name === 'prom-client',
    },
    {
      name: 'the Kubernetes client is loaded lazily',
      why:
        'outside lib/source/kube/, @kubernetes/client-node and lib/source/kube/ are imported as types or with import(), ' +
        'so standalone mode never loads the client',
      applies: (file) => !file.startsWith('lib/source/kube/'),
      breaks: (target, ref) =>
        ref.kind !== 'dynamic' &&
        !ref.typeOnly &&
        ((target.kind === 'package' && target.name === '@kubernetes/client-node') ||
          inLib(target, 'lib/source/kube/')),
    },
    {
      name: 'lib/ stands alone',
      why: 'lib/ never imports bin/, test/, bench/ or scripts/, nor lib/cli.ts, which only bin/ starts',
      applies: under('lib/'),
      breaks: (target) => target.kind === 'outside' || inLib(target, 'lib/cli.ts'),
    },
    {
      name: 'the errors module is a leaf',
      why:
        'lib/errors.ts imports nothing, so any part of lib/ can name its error codes without loading anything ' +
        '(the command line before the rest, a data plane in a worker thread)',
      applies: (file) => file === 'lib/errors.ts',
      breaks: () => true,
    },
    {
      name: 'only the command line starts the controller',
      why: 'lib/main.ts wires everything together; only lib/cli.ts imports it',
      applies: (file) => file.startsWith('lib/') && file !== 'lib/cli.ts',
      breaks: (target) => inLib(target, 'lib/main.ts'),
    },
  ];
}

/** The names a module exports by declaration (`export interface X`, `export const Y`, ...). */
export function declaredExports(source: string): Set<string> {
  return new Set(
    [
      ...source.matchAll(/^export\s+(?:declare\s+)?(?:interface|type|const|let|function|class)\s+([\w$]+)/gm),
    ].map((m) => m[1] as string),
  );
}

function resolve(file: string, specifier: string): Target {
  if (specifier.startsWith('.')) {
    const path = posix.normalize(posix.join(posix.dirname(file), specifier));
    return { kind: path.startsWith('lib/') ? 'lib' : 'outside', name: path };
  }
  if (specifier.startsWith('node:') || isBuiltin(specifier)) {
    return { kind: 'builtin', name: specifier.startsWith('node:') ? specifier : `node:${specifier}` };
  }
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] as string);
  return { kind: 'package', name };
}

export interface Finding {
  file: string;
  specifier: string;
  rule: string;
  message: string;
}

/**
 * Every import of `files` (repository path → source) checked against `rules`; `exists` says whether
 * a relative import points at a file, so a typo or a scanner slip cannot hide an import.
 */
export function checkImports(
  files: ReadonlyMap<string, string>,
  rules: Rule[],
  exists: (path: string) => boolean,
) {
  const findings: Finding[] = [];
  for (const [file, source] of files) {
    for (const ref of scanImports(source)) {
      const at = `${file}:${ref.line}`;
      if (ref.specifier === null) {
        findings.push({
          file,
          specifier: '',
          rule: 'imports can be checked',
          message: `${at}: import() of a computed specifier cannot be checked against the dependency rules`,
        });
        continue;
      }
      const target = resolve(file, ref.specifier);
      if (target.kind !== 'builtin' && target.kind !== 'package' && !exists(target.name)) {
        findings.push({
          file,
          specifier: ref.specifier,
          rule: 'imports can be checked',
          message: `${at}: '${ref.specifier}' resolves to ${target.name}, which does not exist`,
        });
        continue;
      }
      for (const rule of rules) {
        if (!rule.applies(file) || !rule.breaks(target, ref)) continue;
        const what = target.kind === 'lib' || target.kind === 'outside' ? ` (${target.name})` : '';
        const types = ref.typeOnly ? ' (types only)' : '';
        findings.push({
          file,
          specifier: ref.specifier,
          rule: rule.name,
          message: `${at} imports '${ref.specifier}'${what}${types}: breaks "${rule.name}": ${rule.why}`,
        });
      }
    }
  }
  return findings;
}
