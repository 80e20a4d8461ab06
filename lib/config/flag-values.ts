// The readers of flag values (ports, object references, durations, URLs, bucket lists): each
// returns the value or throws ConfigError with a message naming the flag.

import { parseGoDurationMs } from '../model/index.ts';
import { ConfigError } from './config-error.ts';

export function port(name: string, value: string, allowZero: boolean): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || number > 65535 || (!allowZero && number === 0)) {
    throw new ConfigError(`--${name} must be a port number (${allowZero ? 0 : 1}-65535), got "${value}"`);
  }
  return number;
}

export function objectRef(name: string, value: string): string | null {
  if (value === '') return null;
  if (!/^[^/\s]+\/[^/\s]+$/.test(value)) {
    throw new ConfigError(`--${name} must be namespace/name, got "${value}"`);
  }
  return value;
}

/** A Go duration as ingress-nginx's flags take it (`30s`, `1m30s`, `500ms`), in milliseconds. */
export function duration(name: string, value: string): number {
  const total = parseGoDurationMs(value.trim());
  if (total === null) throw new ConfigError(`--${name} must be a duration such as 30s, got "${value}"`);
  if (total <= 0) throw new ConfigError(`--${name} must be longer than 0, got "${value}"`);
  return total;
}

/**
 * --apiserver-host as client-go reads it: a URL, or host:port to which it adds https:// when a CA is
 * given, else http://. Credentials in the URL are refused (they belong in a kubeconfig, and the
 * server's address is logged).
 */
export function apiserverHost(value: string, withCA: boolean): string | null {
  if (value === '') return null;
  const text = value.includes('://') ? value : `${withCA ? 'https' : 'http'}://${value}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError('--apiserver-host must be a URL such as https://10.0.0.1:6443');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`--apiserver-host must be an http:// or https:// URL, got "${url.protocol}//..."`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new ConfigError('--apiserver-host must not carry credentials: put them in a kubeconfig');
  }
  return text.replace(/\/+$/, '');
}

/** A bucket list: comma-separated finite numbers, strictly increasing. */
export function buckets(name: string, value: string): number[] {
  const parts = value.split(',').map((part) => part.trim());
  const numbers = parts.map(Number);
  const valid =
    parts.every((part) => part !== '') &&
    numbers.every((n, i) => Number.isFinite(n) && (i === 0 || n > (numbers[i - 1] as number)));
  if (!valid) {
    throw new ConfigError(`--${name} must be increasing numbers separated by commas, got "${value}"`);
  }
  return numbers;
}

/** Names as given; unknown ones are kept and warned about at start (ingress-nginx ignores them). */
export function excludedMetrics(value: string): string[] {
  return value
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
}
