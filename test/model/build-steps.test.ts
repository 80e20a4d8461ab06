// The steps of buildModel run alone: a state prepared by the steps before one, then that step, and
// only what it changed is checked. Here attachCanaries: it sets route.canary and reports its own
// diagnostics (in canary order), and never adds a route or a server.
import t from 'tap';
import { readGlobalConfig, resolveLocationReferences, selectIngresses } from '../../lib/model/build.ts';
import { type BuildState, createBuildState, createObjectLookups } from '../../lib/model/build-state.ts';
import { attachCanaries } from '../../lib/model/canaries.ts';
import { resolveDefaultBackendFlag } from '../../lib/model/default-backends.ts';
import { DiagnosticsCollector } from '../../lib/model/diagnostics.ts';
import type { Ingress } from '../../lib/model/k8s.ts';
import { DEFAULT_MODEL_OPTIONS } from '../../lib/model/options.ts';
import { addRoutes } from '../../lib/model/routes.ts';
import { addClientAuth, applyHostSettings, createServers } from '../../lib/model/servers.ts';
import type { Server } from '../../lib/model/types.ts';
import { ingress, path, rule, snapshotOf, type World } from './helpers.ts';

/** The state attachCanaries receives: every step before it has run. */
function stateBeforeCanaries(world: World): BuildState {
  const snapshot = snapshotOf(world);
  const options = DEFAULT_MODEL_OPTIONS;
  const diagnostics = new DiagnosticsCollector();
  const lookups = createObjectLookups(snapshot);
  const config = readGlobalConfig(snapshot, options, lookups, diagnostics);
  const state = createBuildState(snapshot, options, diagnostics, lookups, config);
  selectIngresses(state);
  resolveLocationReferences(state);
  resolveDefaultBackendFlag(state);
  createServers(state);
  applyHostSettings(state);
  addClientAuth(state);
  addRoutes(state);
  return state;
}

const serversOf = (state: BuildState): Server[] => [
  ...state.drafts.values().map((d) => d.server),
  state.catchAll.server,
];

/** `host path <- canary (upstream)` for each route with a canary */
const canaryLines = (state: BuildState): string[] =>
  serversOf(state).flatMap((server) =>
    server.routes.flatMap((r) =>
      r.canary === null
        ? []
        : [`${server.hostname} ${r.path} <- ${r.canary.ingress.name} (${r.canary.upstream})`],
    ),
  );

const main = (name: string, host: string, backend = 'web:80', namespace?: string): Ingress =>
  ingress(name, { namespace, created: 0, rules: [rule(host, path('/app', backend))] });
const canary = (name: string, host: string, created: number, backend = 'web-v2:80', namespace?: string) =>
  ingress(name, {
    namespace,
    created,
    nginx: { canary: 'true', 'canary-weight': '10' },
    rules: [rule(host, path('/app', backend))],
  });

const cases: { name: string; ingresses: Ingress[]; canaries: string[]; diagnostics: string[] }[] = [
  {
    name: 'a canary joins the main route of its host and path',
    ingresses: [main('m', 'a.com'), canary('c', 'a.com', 10)],
    canaries: ['a.com /app <- c (default-web-v2-80)'],
    diagnostics: [],
  },
  {
    name: 'the oldest canary keeps the route; the next is reported, in canary order',
    ingresses: [main('m', 'a.com'), canary('young', 'a.com', 20, 'web-v3:80'), canary('old', 'a.com', 10)],
    canaries: ['a.com /app <- old (default-web-v2-80)'],
    diagnostics: ['CANARY_CONFLICT default/young'],
  },
  {
    name: 'a canary of another namespace, or of a host without a main Ingress, gets no route',
    ingresses: [
      main('m', 'a.com'),
      canary('other', 'a.com', 10, 'web-v2:80', 'team'),
      canary('lost', 'b.com', 20),
    ],
    canaries: [],
    diagnostics: ['CANARY_NO_MAIN team/other', 'CANARY_NO_MAIN default/lost'],
  },
  {
    name: 'a canary with the main route’s own Service and port splits nothing',
    ingresses: [main('m', 'a.com'), canary('same', 'a.com', 10, 'web:80')],
    canaries: [],
    diagnostics: [],
  },
];

for (const c of cases) {
  t.test(c.name, async (t) => {
    const state = stateBeforeCanaries({ ingresses: c.ingresses });
    const before = state.diagnostics.list().length;
    const routes = serversOf(state).map((s) => s.routes.length);
    const hosts = [...state.drafts.keys()];
    t.strictSame(canaryLines(state), [], 'no canary before the step');

    attachCanaries(state);

    t.strictSame(canaryLines(state), c.canaries, 'canaries');
    t.strictSame(
      state.diagnostics
        .list()
        .slice(before)
        .map((d) => `${d.code} ${d.namespace}/${d.name}`),
      c.diagnostics,
      'diagnostics the step added, in order',
    );
    t.strictSame(
      serversOf(state).map((s) => s.routes.length),
      routes,
      'no route added',
    );
    t.strictSame([...state.drafts.keys()], hosts, 'no host added');
  });
}
