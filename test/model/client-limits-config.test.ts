// The ConfigMap keys of the client limits: large-client-header-buffers
// (`<number> <size>`, k / m suffixes) and max-worker-connections (0: no cap); invalid values keep the
// ingress-nginx defaults and are reported on the ConfigMap.
import t from 'tap';
import { type Case, runCases } from './helpers.ts';

const configMap = (data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'ingress-ts', namespace: 'ingress' },
  data,
});
const OPTIONS = { configMap: 'ingress/ingress-ts' };
const INVALID = 'CONFIG_VALUE_INVALID ConfigMap:ingress/ingress-ts';

runCases(t, [
  {
    name: 'client limits: ingress-nginx defaults (4 8k, 16384)',
    ingresses: [],
    check: (t, { model }) => {
      t.strictSame(model.config.largeClientHeaderBuffers, { count: 4, size: 8192 });
      t.equal(model.config.maxWorkerConnections, 16384);
    },
  },
  {
    name: 'client limits: values as NGINX writes them',
    ingresses: [],
    configMaps: [configMap({ 'large-client-header-buffers': '8 16k', 'max-worker-connections': '0' })],
    options: OPTIONS,
    check: (t, { model }) => {
      t.strictSame(model.config.largeClientHeaderBuffers, { count: 8, size: 16384 });
      t.equal(model.config.maxWorkerConnections, 0, '0: no cap');
    },
  },
  {
    name: 'client limits: a size in bytes and in m',
    ingresses: [],
    configMaps: [configMap({ 'large-client-header-buffers': '1 1m', 'max-worker-connections': '100' })],
    options: OPTIONS,
    check: (t, { model }) => {
      t.strictSame(model.config.largeClientHeaderBuffers, { count: 1, size: 1 << 20 });
      t.equal(model.config.maxWorkerConnections, 100);
    },
  },
  ...['8k', '0 8k', '4 512', '4 8x', '2 1m', 'four 8k'].map(
    (value): Case => ({
      name: `client limits: large-client-header-buffers ${JSON.stringify(value)} keeps 4 8k`,
      ingresses: [],
      configMaps: [configMap({ 'large-client-header-buffers': value })],
      options: OPTIONS,
      diagnostics: [INVALID],
      check: (t, { model }) => t.strictSame(model.config.largeClientHeaderBuffers, { count: 4, size: 8192 }),
    }),
  ),
  {
    name: 'client limits: max-worker-connections that is no count keeps 16384',
    ingresses: [],
    configMaps: [configMap({ 'max-worker-connections': '-1' })],
    options: OPTIONS,
    diagnostics: [INVALID],
    check: (t, { model }) => t.equal(model.config.maxWorkerConnections, 16384),
  },
]);
