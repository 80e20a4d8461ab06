// How ingress-ts reaches the API server, in ingress-nginx's order: --kubeconfig FILE; else the Pod's
// service account when KUBERNETES_SERVICE_HOST is set (in-cluster); else $KUBECONFIG or
// ~/.kube/config. With none of these, say so rather than let the client fall back to
// http://localhost:8080 and fail on every request.
// --apiserver-host overrides the server as client-go's BuildConfigFromFlags does: with --kubeconfig,
// that file's credentials go to the given server; alone, nothing is loaded and no credentials are
// sent (a kubectl proxy in the Pod, say), and --certificate-authority verifies its certificate.

import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { type Cluster, KubeConfig, type User } from '@kubernetes/client-node';

/** --apiserver-host and --certificate-authority */
export interface ApiserverOverride {
  server: string;
  caFile: string | null;
}

export function loadKubeConfig(
  file: string | null,
  env: NodeJS.ProcessEnv = process.env,
  apiserver: ApiserverOverride | null = null,
): KubeConfig {
  if (apiserver !== null) return overridden(file, apiserver);
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

function overridden(file: string | null, { server, caFile }: ApiserverOverride): KubeConfig {
  let cluster: Cluster = { name: 'apiserver-host', server, skipTLSVerify: false };
  let user: User = { name: 'apiserver-host' };
  if (file !== null) {
    const loaded = new KubeConfig();
    loaded.loadFromFile(file);
    const current = loaded.getCurrentCluster();
    if (current === null) throw new Error(`the kubeconfig ${file} has no current context with a cluster`);
    cluster = { ...current, server };
    user = loaded.getCurrentUser() ?? user;
  }
  if (caFile !== null) {
    // client-go replaces the whole TLS configuration with the CA; the kubeconfig's client certificate
    // is kept here, since dropping it would only turn a working setup into a 401
    cluster = { ...cluster, caFile, caData: undefined, skipTLSVerify: false };
  }
  // client-node refuses a plain-HTTP server unless told there is no certificate to verify
  if (server.startsWith('http:')) cluster = { ...cluster, skipTLSVerify: true };
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromClusterAndUser(cluster, user);
  return kubeConfig;
}
