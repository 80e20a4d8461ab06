// `ingress-ts check`'s command line: its own --output and --help, and every controller flag read by
// the controller's parser (lib/config/flags.ts), so the class, ConfigMap, default backend and
// certificate flags mean what they mean to the controller and a copy of its args can be pasted.

import { type Config, ConfigError, FLAGS, type IgnoredFlag, parseFlags } from '../config/flags.ts';

export const OUTPUTS = ['table', 'json'] as const;
export type Output = (typeof OUTPUTS)[number];

export type CheckArgs =
  | { kind: 'help' }
  | { kind: 'check'; output: Output; config: Config; ignored: readonly IgnoredFlag[] };

/** Parses the arguments after `check`; bad input throws ConfigError. */
export function parseCheckArgs(argv: readonly string[]): CheckArgs {
  let output: string = 'table';
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    if (arg === '-h' || arg === '--help') return { kind: 'help' };
    const inline = /^(?:--output|-o)=(.*)$/s.exec(arg);
    if (inline !== null) {
      output = inline[1] as string;
    } else if (arg === '--output' || arg === '-o') {
      const value = argv[++i];
      if (value === undefined) throw new ConfigError(`Option '${arg}' needs a value`);
      output = value;
    } else {
      rest.push(arg);
    }
  }
  if (!(OUTPUTS as readonly string[]).includes(output)) {
    throw new ConfigError(`--output must be one of ${OUTPUTS.join(', ')}, got "${output}"`);
  }
  const parsed = parseFlags(rest);
  if (parsed.kind === 'help') return { kind: 'help' };
  if (parsed.kind === 'version') throw new ConfigError('--version is not a flag of ingress-ts check');
  return { kind: 'check', output: output as Output, config: parsed.config, ignored: parsed.ignored };
}

/** The flags that change what check reports, shown in its help; the others are accepted and unused. */
const BUILD_FLAGS: ReadonlyArray<keyof typeof FLAGS> = [
  'manifests',
  'kubeconfig',
  'apiserver-host',
  'certificate-authority',
  'watch-namespace',
  'watch-namespace-selector',
  'ingress-class',
  'controller-class',
  'ingress-class-by-name',
  'watch-ingress-without-class',
  'configmap',
  'default-backend-service',
  'default-ssl-certificate',
  'enable-ssl-passthrough',
  'annotations-prefix',
  'disable-catch-all',
  'disable-svc-external-name',
  'tcp-services-configmap',
  'udp-services-configmap',
];

export function checkHelpText(version: string): string {
  const lines = [
    `ingress-ts ${version} check: what ingress-ts would do with each Ingress, without serving anything.`,
    '',
    'Usage: ingress-ts check --manifests DIR [flags]      a folder of manifests, e.g. the output of',
    '                                                    kubectl get ingress,service,endpointslice,secret,configmap,ingressclass -A -o yaml',
    '       ingress-ts check [--kubeconfig FILE] [flags]  a cluster, listed once (no watch)',
    '',
    'Each Ingress gets a verdict: served, served-with-differences (served, but not all as written or',
    'not as ingress-nginx would), partly-served (a rule, path, tls entry or alias is left out, or some',
    'hosts answer 503), not-served, or ignored (another class); then its findings with their codes',
    '(docs/diagnostics.md).',
    '',
    'Exit status: 0 every Ingress of the class is served (differences allowed), 1 one is partly or not',
    'served, 2 a usage error, 3 the manifests or the cluster could not be read.',
    '',
    'Flags:',
    `  ${'--output table|json, -o'.padEnd(40)} a table (default), or JSON: { ingresses: [...], configMap: { findings } }`,
  ];
  for (const name of BUILD_FLAGS) {
    const spec = FLAGS[name];
    const shown =
      spec.type === 'boolean'
        ? `--${name}`
        : `--${name} ${name === 'manifests' ? 'DIR' : name === 'kubeconfig' ? 'FILE' : 'VALUE'}`;
    const fallback = spec.type === 'boolean' || spec.default === '' ? '' : ` [${spec.default}]`;
    lines.push(`  ${shown.padEnd(40)} ${spec.help}${fallback}`);
  }
  lines.push(
    `  ${'--help, -h'.padEnd(40)} print this help and exit`,
    '',
    "The controller's other flags (ports, metrics, leader election...) are accepted and change nothing here,",
    'so the args of a running controller can be passed as they are.',
    '',
  );
  return lines.join('\n');
}
