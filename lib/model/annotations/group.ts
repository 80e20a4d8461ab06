// The one interface every annotation parser implements. A group owns a few related annotations
// (written without the prefix), validates them as ingress-nginx does, and returns a plain value.

/** What an invalid value does, following the ingress-nginx parser of that annotation. */
export type InvalidOutcome =
  /** the parser falls back to its default; the Ingress is still used (warning) */
  | 'default'
  /** the parser propagates the error; ingress-nginx skips the whole Ingress (error) */
  | 'drop';

export interface AnnotationDoc {
  /** without the prefix, e.g. `rewrite-target` */
  name: string;
  /** default as a user would write it ('' when unset) */
  default: string;
  doc: string;
}

/**
 * Where a group's value lives:
 * - `location`: on every route of the Ingress (and on the host's default route it creates);
 * - `server`: once per host, taken from the oldest Ingress of that host that sets it;
 * - `ingress`: read by the build itself, not copied into the model.
 */
export type AnnotationScope = 'location' | 'server' | 'ingress';

export interface AnnotationReader {
  /** The raw value; absent and empty values are `undefined` (ingress-nginx never validates empty values). */
  string(name: string): string | undefined;
  /** `strconv.ParseBool` values (true/false, 1/0, t/f, TRUE/FALSE, True/False). */
  bool(name: string, fallback: boolean, onInvalid: InvalidOutcome): boolean;
  /** Report a value that fails validation. */
  invalid(name: string, value: string, reason: string, onInvalid: InvalidOutcome): void;
}

export interface AnnotationGroup<T> {
  readonly scope: AnnotationScope;
  readonly annotations: readonly AnnotationDoc[];
  /** the value when none of the group's annotations is set */
  readonly defaults: T;
  parse(read: AnnotationReader): T;
  /** server scope only: whether a parsed value differs from "not set" (oldest non-default wins) */
  isSet?(value: T): boolean;
}

const TRUE_VALUES = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE_VALUES = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

export function parseGoBool(value: string): boolean | undefined {
  if (TRUE_VALUES.has(value)) return true;
  if (FALSE_VALUES.has(value)) return false;
  return undefined;
}
