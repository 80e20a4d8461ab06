// The chart's Gateway API values, rendered by a real Helm: off by default (--enable-gateway-api=false,
// no RBAC for it), on with exactly the RBAC the Gateway API sources and status writer use, in the
// ClusterRole or, for the namespaced kinds, the Role of the namespace served; and the GatewayClass.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { obtainHelm } from '../../scripts/fetch-helm.ts';
import { type Rendered, render, schemaErrors } from './render.ts';

const GROUP = 'gateway.networking.k8s.io';

/** "group/resource" → verbs, per role kind, with resourceNames when a rule has them. */
function granted(objects: Rendered[], kind: 'ClusterRole' | 'Role'): Record<string, string> {
  const out: Record<string, string> = {};
  for (const role of objects.filter((o) => o.kind === kind)) {
    const rules = (role as unknown as { rules: Array<Record<string, string[] | undefined>> }).rules;
    for (const rule of rules) {
      for (const group of rule.apiGroups ?? []) {
        for (const resource of rule.resources ?? []) {
          const names = rule.resourceNames ? ` ${rule.resourceNames.join(',')}` : '';
          out[`${group}/${resource}${names}`] = [...(rule.verbs ?? [])].sort().join(',');
        }
      }
    }
  }
  return out;
}
const gatewayRules = (rules: Record<string, string>) =>
  Object.fromEntries(
    Object.entries(rules).filter(
      ([key]) => key.startsWith(GROUP) || key.startsWith('/namespaces') || key.startsWith('apiextensions'),
    ),
  );
const args = (objects: Rendered[]): string[] => {
  const workload = objects.find((o) => o.kind === 'Deployment') as unknown as {
    spec: { template: { spec: { containers: Array<{ args: string[] }> } } };
  };
  return workload.spec.template.spec.containers[0]?.args ?? [];
};

t.setTimeout(180_000);
const helmBinary = await obtainHelm();
if ('skip' in helmBinary) {
  t.plan(0, `no Helm binary: ${helmBinary.skip}`);
} else {
  const helmPath = helmBinary.path;
  const dir = mkdtempSync(path.join(tmpdir(), 'ingress-ts-chart-gateway-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));

  t.test('off by default: --enable-gateway-api=false, no RBAC, no GatewayClass', async (t) => {
    const objects = await render(helmPath, dir, 'defaults', null);
    t.ok(args(objects).includes('--enable-gateway-api=false'));
    t.notOk(args(objects).some((arg) => arg.startsWith('--gateway-controller-name')));
    t.same(gatewayRules(granted(objects, 'ClusterRole')), {}, 'no Gateway API or Namespace rule');
    t.same(gatewayRules(granted(objects, 'Role')), {});
    t.notOk(objects.some((o) => o.kind === 'GatewayClass'));
  });

  const read = 'get,list,watch';
  const status = 'get,update';
  t.test('on: the controller name, the RBAC, the GatewayClass', async (t) => {
    const objects = await render(helmPath, dir, 'gateway', {
      controller: {
        gatewayAPI: {
          enabled: true,
          controllerName: 'example.net/edge',
          gatewayClass: { create: true, name: 'edge' },
        },
      },
    });
    t.ok(args(objects).includes('--gateway-controller-name=example.net/edge'));
    t.notOk(args(objects).includes('--enable-gateway-api=false'));
    t.same(gatewayRules(granted(objects, 'ClusterRole')), {
      [`${GROUP}/gatewayclasses`]: read,
      [`${GROUP}/gatewayclasses/status`]: status,
      [`${GROUP}/gateways`]: read,
      [`${GROUP}/httproutes`]: read,
      [`${GROUP}/referencegrants`]: read,
      [`${GROUP}/gateways/status`]: status,
      [`${GROUP}/httproutes/status`]: status,
      '/namespaces': read,
      'apiextensions.k8s.io/customresourcedefinitions httproutes.gateway.networking.k8s.io': 'get',
    });
    const gatewayClass = objects.find((o) => o.kind === 'GatewayClass');
    t.match(gatewayClass, {
      apiVersion: `${GROUP}/v1`,
      metadata: { name: 'edge' },
      spec: { controllerName: 'example.net/edge' },
    });
    t.same(schemaErrors(gatewayClass as Rendered), []);
  });

  t.test(
    'on, one namespace served, --update-status=false: namespaced reads in the Role, no status',
    async (t) => {
      const objects = await render(helmPath, dir, 'gateway-scoped', {
        controller: {
          gatewayAPI: { enabled: true },
          scope: { enabled: true, namespace: 'apps' },
          extraArgs: { 'update-status': 'false' },
        },
      });
      t.same(gatewayRules(granted(objects, 'ClusterRole')), {
        [`${GROUP}/gatewayclasses`]: read,
        '/namespaces': read,
        'apiextensions.k8s.io/customresourcedefinitions httproutes.gateway.networking.k8s.io': 'get',
      });
      t.same(gatewayRules(granted(objects, 'Role')), {
        [`${GROUP}/gateways`]: read,
        [`${GROUP}/httproutes`]: read,
        [`${GROUP}/referencegrants`]: read,
      });
      t.ok(
        args(objects).includes('--gateway-controller-name=ingress-ts.dev/gateway-controller'),
        'the default name',
      );
      t.notOk(
        objects.some((o) => o.kind === 'GatewayClass'),
        'no GatewayClass unless asked',
      );
    },
  );
}
