// The ConfigMap keys of the client limits: large-client-header-buffers
// (`<number> <size>`, k / m suffixes), client-header-buffer-size, http2-max-concurrent-streams and
// max-worker-connections (0: no cap); invalid values keep the ingress-nginx defaults and are reported
// on the ConfigMap.
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
    name: 'client limits: ingress-nginx defaults (4 8k, 1k, 128 streams, 16384)',
    ingresses: [],
    check: (t, { model }) => {
      t.strictSame(model.config.largeClientHeaderBuffers, { count: 4, size: 8192 });
      t.equal(model.config.clientHeaderBufferSize, 1024);
      t.equal(model.config.http2MaxConcurrentStreams, 128);
      t.strictSame(model.config.headerNames, { underscores: false, ignoreInvalid: true });
      t.equal(model.config.maxWorkerConnections, 16384);
    },
  },
  {
    name: 'client limits: enable-underscores-in-headers and ignore-invalid-headers',
    ingresses: [],
    configMaps: [configMap({ 'enable-underscores-in-headers': 'true', 'ignore-invalid-headers': 'false' })],
    options: OPTIONS,
    check: (t, { model }) =>
      t.strictSame(model.config.headerNames, { underscores: true, ignoreInvalid: false }),
  },
  {
    name: 'client limits: header-name switches that are no booleans keep their defaults',
    ingresses: [],
    configMaps: [
      configMap({ 'enable-underscores-in-headers': 'yes please', 'ignore-invalid-headers': 'maybe' }),
    ],
    options: OPTIONS,
    diagnostics: [INVALID, INVALID],
    check: (t, { model }) =>
      t.strictSame(model.config.headerNames, { underscores: false, ignoreInvalid: true }),
  },
  {
    name: 'client limits: client-header-buffer-size and http2-max-concurrent-streams as NGINX writes them',
    ingresses: [],
    configMaps: [configMap({ 'client-header-buffer-size': '64k', 'http2-max-concurrent-streams': '32' })],
    options: OPTIONS,
    check: (t, { model }) => {
      t.equal(model.config.clientHeaderBufferSize, 64 * 1024);
      t.equal(model.config.http2MaxConcurrentStreams, 32);
    },
  },
  ...['0', '1 k', '2m', 'big'].map(
    (value): Case => ({
      name: `client limits: client-header-buffer-size ${JSON.stringify(value)} keeps 1k`,
      ingresses: [],
      configMaps: [configMap({ 'client-header-buffer-size': value })],
      options: OPTIONS,
      diagnostics: [INVALID],
      check: (t, { model }) => t.equal(model.config.clientHeaderBufferSize, 1024),
    }),
  ),
  ...['0', '-1', '4294967296', 'many'].map(
    (value): Case => ({
      name: `client limits: http2-max-concurrent-streams ${JSON.stringify(value)} keeps 128`,
      ingresses: [],
      configMaps: [configMap({ 'http2-max-concurrent-streams': value })],
      options: OPTIONS,
      diagnostics: [INVALID],
      check: (t, { model }) => t.equal(model.config.http2MaxConcurrentStreams, 128),
    }),
  ),
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
