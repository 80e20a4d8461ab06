// ingress-ts's own flags for the admission webhook's certificate (ingress-nginx has none: its chart
// runs a helper image in Helm hook Jobs to make the Secret and patch the caBundle). Kubernetes mode
// only.

import { ConfigError } from './config-error.ts';
import { objectRef } from './flag-values.ts';

export interface WebhookCertificateFlags {
  /** --validating-webhook-secret: the Secret every replica serves the webhook's certificate from */
  secret: { namespace: string; name: string };
  /** --validating-webhook-service: the leader provisions the Secret for its DNS names; null: read only */
  service: { namespace: string; name: string } | null;
  /** --validating-webhook-configuration: the leader keeps its caBundle; null: not touched */
  configuration: string | null;
}

export const WEBHOOK_CERTIFICATE_FLAGS = {
  'validating-webhook-secret': {
    type: 'string',
    default: '',
    help: 'namespace/name of the Secret (ca.crt, tls.crt, tls.key) the admission webhook serves its certificate from, watched by every replica',
  },
  'validating-webhook-service': {
    type: 'string',
    default: '',
    help: "namespace/name of the webhook's Service: the leader creates and renews the certificate in --validating-webhook-secret for its DNS names; without it the Secret is only read (cert-manager writes it)",
  },
  'validating-webhook-configuration': {
    type: 'string',
    default: '',
    help: "name of the ValidatingWebhookConfiguration whose caBundle the leader keeps equal to the Secret's ca.crt",
  },
} as const;

type Values = { [K in keyof typeof WEBHOOK_CERTIFICATE_FLAGS]: string };

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

const split = (ref: string) => {
  const slash = ref.indexOf('/');
  return { namespace: ref.slice(0, slash), name: ref.slice(slash + 1) };
};

export function webhookCertificateFlags(
  values: Values,
  manifests: string | null,
): WebhookCertificateFlags | null {
  const secret = objectRef('validating-webhook-secret', values['validating-webhook-secret']);
  const service = objectRef('validating-webhook-service', values['validating-webhook-service']);
  const configuration = values['validating-webhook-configuration'];
  if (secret === null) {
    for (const name of ['validating-webhook-service', 'validating-webhook-configuration'] as const) {
      if (values[name] !== '') throw new ConfigError(`--${name} needs --validating-webhook-secret`);
    }
    return null;
  }
  if (manifests !== null) {
    throw new ConfigError('--validating-webhook-secret has no meaning with --manifests (standalone mode)');
  }
  if (configuration !== '' && !DNS_SUBDOMAIN.test(configuration)) {
    throw new ConfigError(
      `--validating-webhook-configuration must be an object name, got "${configuration}"`,
    );
  }
  return {
    secret: split(secret),
    service: service === null ? null : split(service),
    configuration: configuration === '' ? null : configuration,
  };
}
