// The L4 table (--tcp-services-configmap, --udp-services-configmap) as a table of cases: ConfigMap
// entries and Services in, stream lines and diagnostics out.
import t from 'tap';
import type { ConfigMap, Model, ModelOptions } from '../../lib/model/index.ts';
import { parseStreamEntry } from '../../lib/model/streams.ts';
import { build, type Case, diagnosticLines, externalNameService, service, slice } from './helpers.ts';

function streamMap(name: string, data: Record<string, string>): ConfigMap {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ingress' }, data };
}

const OPTIONS: Partial<ModelOptions> = {
  tcpServicesConfigMap: 'ingress/tcp',
  udpServicesConfigMap: 'ingress/udp',
  reservedPorts: [80, 443, 10254],
};

const db = service('db', [
  { port: 5432, targetPort: 5432, name: 'pg', protocol: 'TCP' },
  { port: 53, targetPort: 5353, name: 'dns', protocol: 'UDP' },
]);
const dbSlice = slice(
  'db',
  [{ addresses: ['10.0.0.2'] }, { addresses: ['10.0.0.1'] }, { addresses: ['10.0.0.9'], ready: false }],
  [
    { port: 5432, name: 'pg', protocol: 'TCP' },
    { port: 5353, name: 'dns', protocol: 'UDP' },
  ],
);

/** `PROTO port -> ns/svc:port [decode] [encode] = endpoints` */
function streamLines(model: Model): string[] {
  const table = model.streams ?? { tcp: [], udp: [] };
  return [...table.tcp, ...table.udp].map((s) => {
    const flags = `${s.decodeProxyProtocol ? ' decode' : ''}${s.encodeProxyProtocol ? ' encode' : ''}`;
    const endpoints = s.endpoints.map((e) => `${e.address}:${e.port}`).join(',');
    return `${s.protocol} ${s.port} -> ${s.service.namespace}/${s.service.name}:${s.service.port}${flags} = ${endpoints} (${s.name})`;
  });
}

interface StreamCase extends Case {
  streams: string[];
}

const cases: StreamCase[] = [
  {
    name: 'a TCP entry by port number and a UDP entry by port name, ready endpoints only, sorted',
    ingresses: [],
    services: [db],
    slices: [dbSlice],
    configMaps: [
      streamMap('tcp', { '5432': 'default/db:5432' }),
      streamMap('udp', { '53': 'default/db:dns' }),
    ],
    streams: [
      'TCP 5432 -> default/db:5432 = 10.0.0.1:5432,10.0.0.2:5432 (tcp-default-db-5432)',
      'UDP 53 -> default/db:dns = 10.0.0.1:5353,10.0.0.2:5353 (udp-default-db-dns)',
    ],
  },
  {
    name: 'PROXY flags: first decodes, second encodes, any case; on UDP they mean nothing (as ingress-nginx)',
    ingresses: [],
    services: [db],
    slices: [dbSlice],
    configMaps: [
      streamMap('tcp', {
        '1000': 'default/db:5432:PROXY',
        '1001': 'default/db:5432:proxy:PROXY',
        '1002': 'default/db:5432::PROXY',
        '1003': 'default/db:5432:PROXY:no',
      }),
      streamMap('udp', { '1004': 'default/db:dns:PROXY:PROXY' }),
    ],
    streams: [
      'TCP 1000 -> default/db:5432 decode = 10.0.0.1:5432,10.0.0.2:5432 (tcp-default-db-5432)',
      'TCP 1001 -> default/db:5432 decode encode = 10.0.0.1:5432,10.0.0.2:5432 (tcp-default-db-5432)',
      'TCP 1002 -> default/db:5432 encode = 10.0.0.1:5432,10.0.0.2:5432 (tcp-default-db-5432)',
      'TCP 1003 -> default/db:5432 decode = 10.0.0.1:5432,10.0.0.2:5432 (tcp-default-db-5432)',
      'UDP 1004 -> default/db:dns = 10.0.0.1:5353,10.0.0.2:5353 (udp-default-db-dns)',
    ],
  },
  {
    name: 'invalid entries are errors on the ConfigMap; the valid one is served',
    ingresses: [],
    services: [db],
    slices: [dbSlice],
    configMaps: [
      streamMap('tcp', {
        http: 'default/db:5432',
        '70000': 'default/db:5432',
        '0': 'default/db:5432',
        '2000': 'default/db',
        '2001': 'db:5432',
        '2002': 'default/db:',
        '2003': 'a/b/c:5432',
        '2004': 'default/db:5432',
      }),
    ],
    streams: ['TCP 2004 -> default/db:5432 = 10.0.0.1:5432,10.0.0.2:5432 (tcp-default-db-5432)'],
    diagnostics: Array.from({ length: 7 }, () => 'STREAM_ENTRY_INVALID ConfigMap:ingress/tcp'),
    messages: [
      'key "http" is not a port number',
      'port 2000: "default/db" is not <namespace>/<service>:<port>',
    ],
  },
  {
    name: "the controller's own ports and a port taken twice are conflicts; the first key keeps its port",
    ingresses: [],
    services: [db],
    slices: [dbSlice],
    configMaps: [
      streamMap('tcp', {
        '80': 'default/db:5432',
        '443': 'default/db:5432',
        '0900': 'default/db:5432',
        '900': 'default/db:pg',
      }),
      streamMap('udp', { '10254': 'default/db:53', '900': 'default/db:53' }),
    ],
    streams: [
      'TCP 900 -> default/db:5432 = 10.0.0.1:5432,10.0.0.2:5432 (tcp-default-db-5432)',
      // the same port on the other protocol is no conflict
      'UDP 900 -> default/db:53 = 10.0.0.1:5353,10.0.0.2:5353 (udp-default-db-53)',
    ],
    diagnostics: [
      'STREAM_PORT_CONFLICT ConfigMap:ingress/tcp',
      'STREAM_PORT_CONFLICT ConfigMap:ingress/tcp',
      'STREAM_PORT_CONFLICT ConfigMap:ingress/tcp',
      'STREAM_PORT_CONFLICT ConfigMap:ingress/udp',
    ],
    messages: ['key "900" is port 900 again (key "0900" has it)', 'port 80 is one the controller listens on'],
  },
  {
    name: 'a missing Service, a port of another protocol or name, no ready endpoints: not opened, warnings',
    ingresses: [],
    services: [db, service('empty', [{ port: 7000 }])],
    slices: [dbSlice, slice('empty', [{ addresses: ['10.0.1.1'], ready: false }], [{ port: 7000 }])],
    configMaps: [
      streamMap('tcp', {
        '3000': 'default/nothing:80',
        '3001': 'default/db:53',
        '3002': 'default/db:dns',
        '3003': 'default/empty:7000',
        '3004': 'default/db:pg',
      }),
    ],
    streams: ['TCP 3004 -> default/db:pg = 10.0.0.1:5432,10.0.0.2:5432 (tcp-default-db-pg)'],
    diagnostics: Array.from({ length: 4 }, () => 'STREAM_SERVICE_UNUSABLE ConfigMap:ingress/tcp'),
    messages: [
      'Service default/nothing not found',
      'Service default/db has no TCP port "53"',
      'Service default/empty TCP port "7000" has no ready endpoints',
    ],
  },
  {
    name: 'an ExternalName Service relays to its name and targetPort; refused with --disable-svc-external-name',
    ingresses: [],
    services: [
      externalNameService('remote', 'db.example.com', { ports: [{ port: 5432, targetPort: 6432 }] }),
    ],
    configMaps: [streamMap('tcp', { '5432': 'default/remote:5432' })],
    streams: ['TCP 5432 -> default/remote:5432 = db.example.com:6432 (tcp-default-remote-5432)'],
  },
  {
    name: 'the ConfigMap a flag names does not exist: a warning, nothing opened',
    ingresses: [],
    configMaps: [],
    streams: [],
    diagnostics: ['CONFIGMAP_NOT_FOUND ConfigMap:ingress/tcp', 'CONFIGMAP_NOT_FOUND ConfigMap:ingress/udp'],
    messages: ['--tcp-services-configmap ingress/tcp does not exist'],
  },
];

for (const c of cases) {
  t.test(c.name, async (t) => {
    // a case that does not say has an empty UDP ConfigMap
    const named = (name: string) => c.configMaps?.some((m) => m.metadata?.name === name);
    const udp = named('udp') || c.configMaps?.length === 0 ? [] : [streamMap('udp', {})];
    const result = build(
      { ...c, configMaps: [...(c.configMaps ?? []), ...udp] },
      { ...OPTIONS, ...c.options },
    );
    t.strictSame(streamLines(result.model), c.streams, 'streams');
    t.strictSame(diagnosticLines(result), [...(c.diagnostics ?? [])].sort(), 'diagnostics');
    for (const fragment of c.messages ?? []) {
      t.ok(
        result.diagnostics.some((d) => d.message.includes(fragment)),
        `a diagnostic says "${fragment}"`,
      );
    }
  });
}

t.test('without the flags there is no stream table entry and no diagnostic', async (t) => {
  const result = build({ ingresses: [], services: [db], slices: [dbSlice] });
  t.strictSame(result.model.streams, { tcp: [], udp: [] });
  t.strictSame(result.diagnostics, []);
});

t.test('the ConfigMaps and Services of the entries are references: their changes rebuild', async (t) => {
  const result = build(
    {
      ingresses: [],
      services: [db],
      slices: [dbSlice],
      configMaps: [streamMap('tcp', { '5432': 'default/db:5432' })],
    },
    OPTIONS,
  );
  t.ok(result.references.configMaps?.includes('ingress/tcp'));
  t.ok(result.references.configMaps?.includes('ingress/udp'), 'a missing one too: creating it rebuilds');
  t.ok(result.references.services.includes('default/db'));
});

t.test('hashes: an endpoint change changes hash only, an entry change routesHash too', async (t) => {
  const world = (addresses: string[], data: Record<string, string>) => ({
    ingresses: [],
    services: [db],
    slices: [
      slice(
        'db',
        addresses.map((a) => ({ addresses: [a] })),
        [{ port: 5432, name: 'pg', protocol: 'TCP' }],
      ),
    ],
    configMaps: [streamMap('tcp', data)],
  });
  const a = build(world(['10.0.0.1'], { '5432': 'default/db:5432' }), OPTIONS).model;
  const b = build(world(['10.0.0.2'], { '5432': 'default/db:5432' }), OPTIONS).model;
  const c = build(world(['10.0.0.2'], { '5432': 'default/db:5432:PROXY' }), OPTIONS).model;
  t.not(a.hash, b.hash);
  t.equal(a.routesHash, b.routesHash);
  t.not(b.routesHash, c.routesHash);
});

t.test('--disable-svc-external-name refuses an ExternalName stream Service', async (t) => {
  const result = build(
    {
      ingresses: [],
      services: [externalNameService('remote', 'db.example.com', { ports: [{ port: 5432 }] })],
      configMaps: [streamMap('tcp', { '5432': 'default/remote:5432' })],
    },
    { ...OPTIONS, disableSvcExternalName: true },
  );
  t.strictSame(result.model.streams?.tcp, []);
  t.match(diagnosticLines(result), [
    'CONFIGMAP_NOT_FOUND ConfigMap:ingress/udp',
    'STREAM_SERVICE_UNUSABLE ConfigMap:ingress/tcp',
  ]);
});

t.test('parseStreamEntry reads the value as ingress-nginx splits it', async (t) => {
  t.match(parseStreamEntry('8080', 'ns/svc:http:PROXY:PROXY:extra', 'TCP'), {
    port: 8080,
    namespace: 'ns',
    name: 'svc',
    servicePort: 'http',
    decode: true,
    encode: false,
  });
  t.match(parseStreamEntry('8080', 'ns/svc:http:PROXY:PROXY', 'TCP'), { decode: true, encode: true });
  t.match(parseStreamEntry(' 8080 ', 'ns/svc:80', 'UDP'), { port: 8080, decode: false });
  t.match(parseStreamEntry('-1', 'ns/svc:80', 'TCP'), { invalid: /not a port/ });
});

t.test('the proxy-stream-* keys of the global ConfigMap', async (t) => {
  const cases: Array<[data: Record<string, string>, stream: Record<string, unknown>, invalid: number]> = [
    [
      {},
      {
        timeoutMs: 600_000,
        nextUpstream: true,
        nextUpstreamTimeoutMs: 600_000,
        nextUpstreamTries: 3,
        responses: 1,
      },
      0,
    ],
    [
      {
        'proxy-stream-timeout': '10m',
        'proxy-stream-next-upstream': 'false',
        'proxy-stream-next-upstream-timeout': '500ms',
        'proxy-stream-next-upstream-tries': '0',
        'proxy-stream-responses': '0',
      },
      {
        timeoutMs: 600_000,
        nextUpstream: false,
        nextUpstreamTimeoutMs: 500,
        nextUpstreamTries: 0,
        responses: 0,
      },
      0,
    ],
    [{ 'proxy-stream-timeout': '30' }, { timeoutMs: 30_000 }, 0],
    [
      {
        'proxy-stream-timeout': 'soon',
        'proxy-stream-responses': '-1',
        'proxy-stream-next-upstream': 'maybe',
      },
      { timeoutMs: 600_000, responses: 1, nextUpstream: true },
      3,
    ],
  ];
  for (const [data, stream, invalid] of cases) {
    const result = build(
      {
        ingresses: [],
        configMaps: [
          { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'ingress' }, data },
        ],
      },
      { configMap: 'ingress/c' },
    );
    t.match(result.model.config.stream, stream, JSON.stringify(data));
    t.equal(
      result.diagnostics.filter((d) => d.code === 'CONFIG_VALUE_INVALID').length,
      invalid,
      'invalid values',
    );
    t.equal(
      result.diagnostics.filter((d) => d.code === 'CONFIG_KEY_NOT_APPLICABLE').length,
      0,
      'no key is NGINX-only',
    );
  }
});
