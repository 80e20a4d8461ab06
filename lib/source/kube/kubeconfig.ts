// How ingress-ts reaches the API server, in ingress-nginx's order: --kubeconfig FILE; else the Pod's
// service account when KUBERNETES_SERVICE_HOST is set (in-cluster); else $KUBECONFIG or
// ~/.kube/config. With none of these, say so rather than let the client fall back to
// http://localhost:8080 and fail on every request.

import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

export function loadKubeConfig(file: string | null, env: NodeJS.ProcessEnv = process.env): KubeConfig {
  const kubeConfig = new KubeConfig();
  if (file !== null) {
    kubeConfig.loadFromFile(file);
  } else if (env.KUBERNETES_SERVICE_HOST) {
    kubeConfig.loadFromCluster();
  } else if (env.KUBECONFIG || existsSync(path.join(homedir(), '.kube', 'config'))) {
    kubeConfig.loadFromDefault();
  } else {
    throw new Error(
      'no Kubernetes API to watch: not in a Pod, no $KUBECONFIG, no ~/.kube/config; pass --kubeconfig FILE, or --manifests DIR for standalone mode',
    );
  }
  const cluster = kubeConfig.getCurrentCluster();
  if (cluster === null) {
    throw new Error(`the kubeconfig${file === null ? '' : ` ${file}`} has no current context with a cluster`);
  }
  return kubeConfig;
}
