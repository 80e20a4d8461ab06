// ingress-nginx's command line read as its parser (Go's pflag) reads it, before node:util's parseArgs
// sees what is left: ingress-nginx's own flags taken out and checked, klog's -v, Go's boolean
// spellings. `ownType` says which of ingress-ts's flags take a value.

import { ConfigError } from './config-error.ts';
import { COMPAT_FLAGS, goBool, goValueValid } from './ingress-nginx-flags.ts';
/** A flag of ingress-nginx that ingress-ts accepts and ignores, and why. */
export interface IgnoredFlag {
  flag: string;
  reason: string;
}

export interface PflagArgs {
  /** what is left for parseArgs: ingress-ts's own flags */
  args: string[];
  ignored: IgnoredFlag[];
  /** klog's --v, or null */
  verbosity: number | null;
}

const GO_TYPE_WORDS = {
  bool: 'true or false',
  string: 'a string',
  int: 'an integer',
  uint: 'a non-negative integer',
  float: 'a number',
  duration: 'a duration such as 30s',
  ip: 'an IP address',
  port: 'a port number (1-65535)',
} as const;

/**
 * Reads argv as ingress-nginx's parser (Go's pflag) would, before node:util's parseArgs sees it:
 * - the flags in COMPAT_FLAGS are taken out, their values checked, and listed as ignored;
 * - klog's -v / --v (pflag makes a one-letter Go flag its own shorthand: -v 2, -v=2, -v2);
 * - booleans written `--flag=true|false|1|0|t|f...` (strconv.ParseBool) become `--flag` / `--no-flag`;
 * - ingress-nginx's manifests and chart start the args with the binary, /nginx-ingress-controller:
 *   as the first argument it is ignored. Any other positional argument is still refused, where
 *   ingress-nginx ignores them all: a stray word is more often a value split from its flag by mistake.
 * A value after `--flag value` is skipped over for ingress-ts's string flags, so a value is never
 * mistaken for a flag.
 */
export function readPflagArgs(
  argv: readonly string[],
  ownType: (name: string) => 'string' | 'boolean' | undefined,
): PflagArgs {
  const args: string[] = [];
  const ignored = new Map<string, string>();
  let verbosity: number | null = null;
  const nextValue = (i: number, name: string): string => {
    const value = argv[i];
    if (value === undefined) throw new ConfigError(`Option '--${name}' needs a value`);
    return value;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (i === 0 && /(^|\/)nginx-ingress-controller$/.test(arg)) {
      ignored.set(arg, "ingress-nginx's binary, the first of its args; ingress-ts's image starts its own");
      continue;
    }
    if (arg === '--') {
      args.push(...argv.slice(i));
      break;
    }
    const v = /^(?:--?v(?:=(.*))?|-v(\d.*))$/s.exec(arg);
    if (v !== null) {
      const value = v[1] ?? v[2] ?? nextValue(++i, 'v');
      if (!/^[-+]?\d+$/.test(value)) throw new ConfigError(`--v must be an integer, got "${value}"`);
      verbosity = Number(value);
      continue;
    }
    const match = /^--([^=]+)(?:=(.*))?$/s.exec(arg);
    if (match === null) {
      args.push(arg);
      continue;
    }
    const name = match[1] as string;
    const inline = match[2];
    const compat = Object.hasOwn(COMPAT_FLAGS, name) ? COMPAT_FLAGS[name] : undefined;
    if (compat !== undefined) {
      const value = compat.type === 'bool' ? (inline ?? 'true') : (inline ?? nextValue(++i, name));
      if (!goValueValid(compat.type, value)) {
        // a string flag is never invalid, so no secret (--maxmind-license-key) reaches this message
        throw new ConfigError(`--${name} must be ${GO_TYPE_WORDS[compat.type]}, got "${value}"`);
      }
      ignored.set(`--${name}`, compat.reason);
      continue;
    }
    const type = ownType(name);
    if (type === 'boolean' && inline !== undefined) {
      const value = goBool(inline);
      args.push(value === null ? arg : value ? `--${name}` : `--no-${name}`);
      continue;
    }
    args.push(arg);
    if (type === 'string' && inline === undefined && i + 1 < argv.length) args.push(argv[++i] as string);
  }
  return { args, ignored: [...ignored].map(([flag, reason]) => ({ flag, reason })), verbosity };
}
