// Helpers of the chart tests: run the real Helm, parse what it renders, validate every object against
// the Kubernetes OpenAPI schemas (kubernetes-models), and read the binary's own flags from --help.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  PrometheusRule,
  ServiceMonitor,
} from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { ValidatingWebhookConfiguration } from 'kubernetes-models/admissionregistration.k8s.io/v1';
import { DaemonSet, Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { IngressClass, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import {
  ClusterRole,
  ClusterRoleBinding,
  Role,
  RoleBinding,
} from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { ConfigMap, Service, ServiceAccount } from 'kubernetes-models/v1';
import { parseAllDocuments, stringify } from 'yaml';

const run = promisify(execFile);

export const chartDir = new URL('../../charts/ingress-ts', import.meta.url).pathname;
const bin = new URL('../../bin/ingress-ts.ts', import.meta.url).pathname;

/** A rendered object, as loosely typed as YAML gives it; the schema check comes first. */
export interface Rendered {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  // biome-ignore lint/suspicious/noExplicitAny: the shape depends on the kind, checked by the schemas
  [field: string]: any;
}

type Validator = new (data: Rendered) => { validate(): void };

/** Where each kind's model lives (the class and its `I<Kind>` interface). */
const MODULES: Record<string, string> = {
  'apps/v1/Deployment': 'kubernetes-models/apps/v1/Deployment',
  'apps/v1/DaemonSet': 'kubernetes-models/apps/v1/DaemonSet',
  'v1/Service': 'kubernetes-models/v1/Service',
  'v1/ConfigMap': 'kubernetes-models/v1/ConfigMap',
  'v1/ServiceAccount': 'kubernetes-models/v1/ServiceAccount',
  'rbac.authorization.k8s.io/v1/ClusterRole': 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole',
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding':
    'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding',
  'rbac.authorization.k8s.io/v1/Role': 'kubernetes-models/rbac.authorization.k8s.io/v1/Role',
  'rbac.authorization.k8s.io/v1/RoleBinding': 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding',
  'networking.k8s.io/v1/IngressClass': 'kubernetes-models/networking.k8s.io/v1/IngressClass',
  'networking.k8s.io/v1/NetworkPolicy': 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy',
  'policy/v1/PodDisruptionBudget': 'kubernetes-models/policy/v1/PodDisruptionBudget',
  'autoscaling/v2/HorizontalPodAutoscaler': 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler',
  'monitoring.coreos.com/v1/ServiceMonitor':
    '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor',
  'monitoring.coreos.com/v1/PrometheusRule':
    '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule',
  'admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration':
    'kubernetes-models/admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration',
};

/** Every kind the chart may render; an object of any other kind fails the test. */
const MODELS: Record<string, Validator> = {
  'apps/v1/Deployment': Deployment as unknown as Validator,
  'apps/v1/DaemonSet': DaemonSet as unknown as Validator,
  'v1/Service': Service as unknown as Validator,
  'v1/ConfigMap': ConfigMap as unknown as Validator,
  'v1/ServiceAccount': ServiceAccount as unknown as Validator,
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole as unknown as Validator,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding as unknown as Validator,
  'rbac.authorization.k8s.io/v1/Role': Role as unknown as Validator,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding as unknown as Validator,
  'networking.k8s.io/v1/IngressClass': IngressClass as unknown as Validator,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy as unknown as Validator,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget as unknown as Validator,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler as unknown as Validator,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor as unknown as Validator,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule as unknown as Validator,
  'admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration':
    ValidatingWebhookConfiguration as unknown as Validator,
  'cert-manager.io/v1/Issuer': certManagerModel('Issuer'),
  'cert-manager.io/v1/Certificate': certManagerModel('Certificate'),
  'gateway.networking.k8s.io/v1/GatewayClass': gatewayClassModel(),
};

/** The GatewayClass CRD's spec (standard channel; no schema package of the Gateway API is installed). */
function gatewayClassModel(): Validator {
  return class {
    #data: Rendered;
    constructor(data: Rendered) {
      this.#data = data;
    }
    validate(): void {
      const spec = this.#data.spec as Record<string, unknown> | undefined;
      const problems: string[] = [];
      if (typeof spec?.controllerName !== 'string' || !/^[a-z0-9.-]+\/\S+$/.test(spec.controllerName))
        problems.push('spec.controllerName is a domain-prefixed path');
      for (const key of Object.keys(spec ?? {}))
        if (!['controllerName', 'parametersRef', 'description'].includes(key))
          problems.push(`spec.${key} is not a field`);
      if (problems.length > 0)
        throw new Error(`GatewayClass ${this.#data.metadata.name}: ${problems.join('; ')}`);
    }
  };
}

/**
 * cert-manager's kinds, checked against the parts of its v1 CRDs the chart uses (no schema package
 * of cert-manager is installed): the required fields, their types, and no field the CRD lacks.
 */
function certManagerModel(kind: 'Issuer' | 'Certificate'): Validator {
  const issuerSpec = ['selfSigned', 'ca', 'acme', 'vault', 'venafi'];
  const certificateSpec = [
    'secretName',
    'issuerRef',
    'dnsNames',
    'commonName',
    'duration',
    'renewBefore',
    'isCA',
    'subject',
    'revisionHistoryLimit',
    'privateKey',
    'usages',
  ];
  return class {
    #data: Rendered;
    constructor(data: Rendered) {
      this.#data = data;
    }
    validate(): void {
      const spec = this.#data.spec as Record<string, unknown> | undefined;
      const problems: string[] = [];
      if (typeof spec !== 'object' || spec === null) throw new Error(`${kind}: spec is required`);
      const allowed = kind === 'Issuer' ? issuerSpec : certificateSpec;
      for (const key of Object.keys(spec))
        if (!allowed.includes(key)) problems.push(`spec.${key} is not a field`);
      if (kind === 'Issuer') {
        const types = issuerSpec.filter((key) => key in spec);
        if (types.length !== 1) problems.push('an Issuer has exactly one type');
        const ca = spec.ca as { secretName?: unknown } | undefined;
        if (ca !== undefined && typeof ca.secretName !== 'string')
          problems.push('spec.ca.secretName is required');
      } else {
        if (typeof spec.secretName !== 'string') problems.push('spec.secretName is required');
        const issuerRef = spec.issuerRef as { name?: unknown } | undefined;
        if (typeof issuerRef?.name !== 'string') problems.push('spec.issuerRef.name is required');
        const names = spec.dnsNames;
        if (names !== undefined && !(Array.isArray(names) && names.every((n) => typeof n === 'string')))
          problems.push('spec.dnsNames is a list of strings');
        for (const key of ['duration', 'renewBefore'] as const) {
          const value = spec[key];
          if (value !== undefined && !(typeof value === 'string' && /^(\d+(\.\d+)?(h|m|s|ms))+$/.test(value)))
            problems.push(`spec.${key} is a Go duration`);
        }
      }
      if (problems.length > 0) throw new Error(`${kind} ${this.#data.metadata.name}: ${problems.join('; ')}`);
    }
  };
}

/** Schema errors of one object ([] when valid), or why it cannot be checked. */
export function schemaErrors(object: Rendered): string[] {
  const Model = MODELS[`${object.apiVersion}/${object.kind}`];
  if (Model === undefined) return [`no schema known for ${object.apiVersion} ${object.kind}`];
  try {
    new Model(object).validate();
    return [];
  } catch (error) {
    return [(error as Error).message];
  }
}

const repo = new URL('../..', import.meta.url).pathname;

/**
 * Unknown fields, per object ('<set> <kind> <name>' → TypeScript's messages). The OpenAPI schemas
 * accept unknown fields (the API server drops them, or refuses them under strict field validation), so
 * a misspelt `securityContex` would pass them: each object is type-checked as an object literal of its
 * kubernetes-models interface instead, where every unknown property is an error (TypeScript 7: ~1 s).
 */
export async function unknownFieldErrors(sets: Map<string, Rendered[]>): Promise<Map<string, string[]>> {
  // Inside the repository, so that the imports resolve from its node_modules.
  mkdirSync(path.join(repo, '.cache'), { recursive: true });
  const dir = mkdtempSync(path.join(repo, '.cache', 'chart-fields-'));
  try {
    const imports = new Set<string>();
    const lines: string[] = [];
    const owners: string[] = [];
    for (const [set, objects] of sets) {
      for (const object of objects) {
        const module = MODULES[`${object.apiVersion}/${object.kind}`];
        if (module === undefined) continue; // schemaErrors reports it
        imports.add(`import type { I${object.kind} } from '${module}';`);
        lines.push(`export const o${lines.length}: I${object.kind} = ${JSON.stringify(object)};`);
        owners.push(`${set} ${object.kind} ${object.metadata.name}`);
      }
    }
    writeFileSync(path.join(dir, 'objects.ts'), [...imports, ...lines].join('\n'));
    writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          skipLibCheck: true,
          types: [],
        },
        files: ['objects.ts'],
      }),
    );
    // The native compiler itself: its Node launcher (node_modules/.bin/tsc) breaks under the test
    // runner's module hooks, which follow every Node child process.
    const launcher = path.join(repo, 'node_modules', 'typescript', 'lib', 'getExePath.js');
    const { default: getExePath } = (await import(launcher)) as { default: () => string };
    const output = await run(getExePath(), ['-p', path.join(dir, 'tsconfig.json')], {
      maxBuffer: 16 * 1024 * 1024,
    }).then(
      () => '',
      (error: { stdout?: string; stderr?: string }) =>
        `${error.stdout ?? ''}${error.stderr ?? String(error)}`,
    );
    const errors = new Map<string, string[]>();
    for (const match of output.matchAll(/objects\.ts\((\d+),\d+\): error (TS\d+: .*)/g)) {
      const index = Number(match[1]) - 1 - imports.size;
      const owner = owners[index] ?? `line ${match[1]}`;
      errors.set(owner, [...(errors.get(owner) ?? []), match[2] as string]);
    }
    if (errors.size === 0 && output !== '') errors.set('tsc', [output]);
    return errors;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function helm(helmPath: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  return run(helmPath, args, { maxBuffer: 16 * 1024 * 1024, timeout: 60_000 });
}

export const RELEASE = 'edge';
export const NAMESPACE = 'ingress';

/** `helm template` of the chart with these values (written to a file in dir). */
export async function render(
  helmPath: string,
  dir: string,
  name: string,
  values: Record<string, unknown> | string | null,
): Promise<Rendered[]> {
  const args = ['template', RELEASE, chartDir, '--namespace', NAMESPACE];
  const file = valuesFile(dir, name, values);
  if (file !== null) args.push('--values', file);
  const { stdout } = await helm(helmPath, args);
  return parseAllDocuments(stdout)
    .map((document) => document.toJS() as Rendered | null)
    .filter((object): object is Rendered => object !== null);
}

/** A values file path: as given (a string), written from an object, or null for the defaults. */
export function valuesFile(dir: string, name: string, values: Record<string, unknown> | string | null) {
  if (values === null || typeof values === 'string') return values;
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(file, stringify(values));
  return file;
}

export interface HelpFlags {
  /** flag name → default shown in brackets ('' when none) */
  defaults: Map<string, string>;
  text: string;
}

/** The flags `ingress-ts --help` lists, with their defaults. */
export async function helpFlags(): Promise<HelpFlags> {
  const { stdout } = await run(process.execPath, [bin, '--help']);
  const defaults = new Map<string, string>();
  for (const line of stdout.split('\n')) {
    const match = /^ {2}--([a-z0-9-]+)(?: [A-Z]+)?\s{2,}.*?(?:\[([^\]]*)\])?$/.exec(line);
    if (match) defaults.set(match[1] as string, match[2] ?? '');
  }
  return { defaults, text: stdout };
}
