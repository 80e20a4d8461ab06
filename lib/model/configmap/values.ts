// Readers of the value shapes ConfigMap keys share (and some annotations too): CIDRs, status lists,
// NGINX times, header names and values, comma lists. Each returns null when the value is invalid.

import { isIP } from 'node:net';
import { HEADER_NAME } from '../annotations/validators.ts';

/** An IPv4 or IPv6 CIDR (or a bare address, a /32 or /128), normalised to `address/prefix`. */
export function parseCidr(entry: string): string | null {
  const slash = entry.indexOf('/');
  const address = slash === -1 ? entry : entry.slice(0, slash);
  const family = isIP(address);
  if (family === 0) return null;
  const max = family === 4 ? 32 : 128;
  if (slash === -1) return `${address}/${max}`;
  const prefix = entry.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > max) return null;
  return `${address}/${Number(prefix)}`;
}

/** custom-http-errors (ConfigMap and annotation): comma list of codes 400-599, sorted, unique. */
export function parseStatusList(value: string): number[] | null {
  const codes = new Set<number>();
  for (const entry of value.split(',')) {
    const code = entry.trim();
    if (code === '') continue;
    if (!/^[45]\d\d$/.test(code)) return null;
    codes.add(Number(code));
  }
  return [...codes].sort((a, b) => a - b);
}

const NGINX_TIME_UNITS_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
  M: 2_592_000_000,
  y: 31_536_000_000,
};

/** NGINX's time syntax (`240s`, `4m`, `1m30s`, `500ms`; a bare number is seconds) in milliseconds, or null. */
export function parseNginxTimeMs(value: string): number | null {
  if (!/^(?:\d+(?:ms|[smhdwMy])?)+$/.test(value)) return null;
  let total = 0;
  for (const [, digits, unit] of value.matchAll(/(\d+)(ms|[smhdwMy])?/g)) {
    total += Number(digits) * (NGINX_TIME_UNITS_MS[unit ?? 's'] ?? 1000);
  }
  return Number.isSafeInteger(total) ? total : null;
}

const GO_DURATION_UNITS_MS: Record<string, number> = {
  h: 3_600_000,
  m: 60_000,
  s: 1000,
  ms: 1,
  us: 0.001,
  µs: 0.001,
  ns: 1e-6,
};

/** A Go duration as time.ParseDuration reads it (`5s`, `1m30s`, `1.5s`, `500ms`; a unit is required) in ms, or null. */
export function parseGoDurationMs(value: string): number | null {
  if (!/^(?:\d+(?:\.\d+)?(?:h|ms|m|s|us|µs|ns))+$/.test(value)) return null;
  let total = 0;
  for (const [, digits, unit] of value.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/g)) {
    total += Number(digits) * (GO_DURATION_UNITS_MS[unit as string] as number);
  }
  return Number.isFinite(total) ? total : null;
}

/** Header values Node writes: visible ASCII, Latin-1, spaces and tabs; no CR/LF. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

export const isHeaderName = (value: string): boolean => HEADER_NAME.test(value);
export const isHeaderValue = (value: string): boolean => HEADER_VALUE.test(value);

/** A comma list, each entry trimmed, empty entries left out. */
export function commaList(value: string): string[] {
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}
