// What every ConfigMap key is: a parser that applies a valid value to the config or says why the
// value is invalid (the key then keeps its default). Builders for the shapes many keys share.

import { parseGoBool } from '../annotations/group.ts';
import type { ConfigMap } from '../k8s.ts';
import type { GlobalConfig } from './global-config.ts';
import { parseCidr } from './values.ts';

/** Looks a ConfigMap up by namespace and name (and records that the model depends on it). */
export type ConfigMapLookup = (namespace: string, name: string) => ConfigMap | undefined;

/** Reports a part of a value that is left out while the rest is used (an entry of a list). */
export type PartDropped = (problem: string) => void;

/**
 * Applies the value to the config and returns null, or returns why the value is invalid. A list
 * whose bad entries are left out and the rest used says so through `dropped`.
 */
export type KeyParser = (
  value: string,
  config: GlobalConfig,
  lookup: ConfigMapLookup,
  dropped: PartDropped,
) => string | null;

/** One topic's keys, by ConfigMap key. */
export type KeyTable = Record<string, KeyParser>;

export const bool =
  (set: (config: GlobalConfig, value: boolean) => void): KeyParser =>
  (value, config) => {
    const parsed = parseGoBool(value);
    if (parsed === undefined) return 'expected "true" or "false"';
    set(config, parsed);
    return null;
  };

export const seconds =
  (set: (config: GlobalConfig, value: number) => void, allowZero = true): KeyParser =>
  (value, config) => {
    // NGINX time syntax without a unit is seconds; `60s` is accepted too
    const m = /^(\d+)s?$/.exec(value);
    if (m === null || (!allowZero && Number(m[1]) === 0)) return 'expected a number of seconds';
    set(config, Number(m[1]));
    return null;
  };

export const count =
  (set: (config: GlobalConfig, value: number) => void, min: number): KeyParser =>
  (value, config) => {
    if (!/^\d+$/.test(value) || Number(value) < min) return `expected an integer >= ${min}`;
    set(config, Number(value));
    return null;
  };

/** A comma list of addresses/CIDRs, all valid or the key keeps its default. */
export const cidrList =
  (set: (config: GlobalConfig, cidrs: string[]) => void): KeyParser =>
  (value, config) => {
    const cidrs: string[] = [];
    for (const entry of value.split(',')) {
      const trimmed = entry.trim();
      if (trimmed === '') continue;
      const cidr = parseCidr(trimmed);
      if (cidr === null) return `${JSON.stringify(trimmed)} is not an IPv4 or IPv6 address or CIDR`;
      if (!cidrs.includes(cidr)) cidrs.push(cidr);
    }
    set(config, cidrs.sort());
    return null;
  };
