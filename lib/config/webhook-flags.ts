// The validating admission webhook's flags, as ingress-nginx names them: --validating-webhook
// (ADDR:PORT, `:8443` in ingress-nginx's manifests; empty: no webhook) and the PEM files of its
// certificate and key. Without the files the webhook starts without a certificate and refuses
// handshakes until one is given to it (the provisioning from a Secret does).

import { ConfigError } from './config-error.ts';
import { port } from './flag-values.ts';
import type { IgnoredFlag } from './pflag-args.ts';

/** Config.webhook: the validating admission webhook, or null without --validating-webhook (frozen). */
export interface WebhookConfig {
  /** '' listens on every interface */
  host: string;
  port: number;
  /** --validating-webhook-certificate and --validating-webhook-key, or null */
  files: { cert: string; key: string } | null;
}

export const WEBHOOK_FLAGS = {
  'validating-webhook': {
    type: 'string',
    default: '',
    help: 'ADDR:PORT of the validating admission webhook (HTTPS, POST /networking/v1/ingresses), e.g. :8443; empty: no webhook',
  },
  'validating-webhook-certificate': {
    type: 'string',
    default: '',
    help: "PEM certificate of the webhook's HTTPS server, read again when it changes",
  },
  'validating-webhook-key': {
    type: 'string',
    default: '',
    help: 'PEM private key of that certificate, read again when it changes',
  },
} as const;

type WebhookValues = { [K in keyof typeof WEBHOOK_FLAGS]: string };

/** ADDR:PORT as Go's net.Listen takes it: `:8443`, `0.0.0.0:8443`, `[::1]:8443`. */
function listenAddress(value: string): { host: string; port: number } {
  const colon = value.lastIndexOf(':');
  if (colon === -1)
    throw new ConfigError(`--validating-webhook must be ADDR:PORT such as :8443, got "${value}"`);
  let host = value.slice(0, colon);
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  return { host, port: port('validating-webhook', value.slice(colon + 1), true) };
}

export function webhookFlags(values: WebhookValues, ignored: IgnoredFlag[]): WebhookConfig | null {
  const cert = values['validating-webhook-certificate'];
  const key = values['validating-webhook-key'];
  if (values['validating-webhook'] === '') {
    for (const [flag, value] of [
      ['--validating-webhook-certificate', cert],
      ['--validating-webhook-key', key],
    ] as const) {
      if (value !== '') ignored.push({ flag, reason: 'only used with --validating-webhook' });
    }
    return null;
  }
  if ((cert === '') !== (key === '')) {
    throw new ConfigError('--validating-webhook-certificate and --validating-webhook-key go together');
  }
  return Object.freeze({
    ...listenAddress(values['validating-webhook']),
    files: cert === '' ? null : Object.freeze({ cert, key }),
  });
}
