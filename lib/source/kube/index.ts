// Kubernetes mode, loaded only when used: @kubernetes/client-node takes ~0.5 s to import (its
// generated API), which standalone mode should not pay at start-up.

export { createEventRecorder } from './events.ts';
export { loadKubeConfig } from './kubeconfig.ts';
export { createLeaderElection } from './leader.ts';
export { createKubeSource } from './source.ts';
export { createStatusWriter } from './status.ts';
