// Kubernetes mode, loaded only when used: @kubernetes/client-node takes ~0.5 s to import (its
// generated API), which standalone mode should not pay at start-up.

export { logGatewayApiState } from './gateway-sources.ts';
export { loadKubeConfig } from './kubeconfig.ts';
export { createReporting } from './reporting.ts';
export { createKubeSource } from './source.ts';
export { startWebhookCertificate } from './webhook-certificate.ts';
