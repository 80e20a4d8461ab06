// The objects `ingress-ts check` looks at, read once from the controller's own sources: the
// manifests folder through the standalone source (the same parser, Lists included, and its
// MANIFEST_* findings), or the cluster through one list per kind of the Kubernetes source's targets,
// with its client code and its store (no watch, no informer), the Gateway API kinds included when
// installed and readable (the controller's rules, gateway-sources.ts).

import type { Config } from '../config/flags.ts';
import type { Diagnostic, Snapshot } from '../model/index.ts';
import { createManifestSource } from '../source/manifests/source.ts';
import { ObjectStore } from '../store/store.ts';

export interface Objects {
  snapshot: Snapshot;
  /** the source's findings (manifest documents it could not use) */
  problems: readonly Diagnostic[];
  /** where from, for the table's first line */
  from: string;
}

export async function readObjects(config: Config): Promise<Objects> {
  return config.manifests !== null ? readManifests(config.manifests, config) : readCluster(config);
}

async function readManifests(dir: string, config: Config): Promise<Objects> {
  const source = createManifestSource({
    dir,
    model: config.model,
    gatewayApi: config.gatewayApi,
    onChange: () => {},
  });
  await source.start();
  try {
    return { snapshot: source.snapshot(), problems: source.problems(), from: `manifests in ${dir}` };
  } finally {
    await source.stop();
  }
}

async function readCluster(config: Config): Promise<Objects> {
  const { loadKubeConfig } = await import('../source/kube/kubeconfig.ts');
  const { watchTargets } = await import('../source/kube/source.ts');
  const { listObjects } = await import('../source/kube/informer.ts');
  const { kubeconfig, apiserverHost, certificateAuthority, watchNamespace, namespaceSelector } = config.kube;
  const kubeConfig = loadKubeConfig(
    kubeconfig,
    process.env,
    apiserverHost === null ? null : { server: apiserverHost, caFile: certificateAuthority },
  );
  const store = new ObjectStore({
    classes: config.model,
    configMap: config.model.configMap,
    selectNamespaces: namespaceSelector !== null,
  });
  const targets = watchTargets({ watchNamespace, namespaceSelector, model: config.model });
  const lists = await Promise.all(targets.map((target) => listObjects(kubeConfig, target)));
  const namespaces = new Set<string>();
  targets.forEach((target, i) => {
    for (const item of lists[i]?.items ?? []) {
      if (target.store === 'Namespace') namespaces.add(item.metadata?.name ?? '');
      else store.upsert(target.store, item as Parameters<ObjectStore['upsert']>[1]);
    }
  });
  if (namespaceSelector !== null) store.setNamespaces(namespaces);
  if (config.gatewayApi) {
    // as the controller reads them: only when installed and listable
    const { listGatewayApiOnce } = await import('../source/kube/gateway-sources.ts');
    const gateway = await listGatewayApiOnce(kubeConfig, watchNamespace);
    if (gateway.state.enabled) store.enableGatewayApi();
    for (const { target, items } of gateway.lists) {
      for (const item of items) store.upsert(target.store, item as Parameters<ObjectStore['upsert']>[1]);
    }
  }
  return {
    snapshot: store.snapshot(),
    problems: [],
    from: `the cluster at ${kubeConfig.getCurrentCluster()?.server ?? '?'}`,
  };
}
