// Our GatewayClasses: every class whose spec.controllerName is --gateway-controller-name (the
// conformance suite makes a second one). ingress-ts takes no parameters, so a class with a
// parametersRef is not accepted and its Gateways are not served.

import type { BuildState } from '../build-state.ts';
import { condition, generationOf } from './conditions.ts';
import type { GatewayClass } from './k8s.ts';
import { text } from './read.ts';
import type { GatewayClassStatusReport } from './types.ts';

/** What `supportedFeatures` lists: the features whose conformance tests pass, sorted. */
export const SUPPORTED_FEATURES: readonly string[] = Object.freeze([
  'Gateway',
  'HTTPRoute',
  'HTTPRouteHostRewrite',
  'HTTPRouteMethodMatching',
  'HTTPRoutePathRedirect',
  'HTTPRoutePathRewrite',
  'HTTPRoutePortRedirect',
  'HTTPRouteQueryParamMatching',
  'HTTPRouteRequestMirror',
  'HTTPRouteResponseHeaderModification',
  'HTTPRouteSchemeRedirect',
  'ReferenceGrant',
]);

export interface ClassSelection {
  /** names of our accepted classes: their Gateways are ours */
  accepted: Set<string>;
  status: GatewayClassStatusReport[];
}

export function selectGatewayClasses(state: BuildState): ClassSelection {
  const controllerName = state.options.gatewayControllerName;
  const accepted = new Set<string>();
  const status: GatewayClassStatusReport[] = [];
  const classes = [...(state.snapshot.gatewayClasses ?? [])].filter(
    (c): c is GatewayClass =>
      typeof c?.metadata?.name === 'string' && c.spec?.controllerName === controllerName,
  );
  classes.sort((a, b) => compareNames(a.metadata?.name as string, b.metadata?.name as string));
  for (const gatewayClass of classes) {
    const name = gatewayClass.metadata?.name as string;
    const generation = generationOf(gatewayClass);
    const parameters = gatewayClass.spec?.parametersRef;
    let accepting = condition('Accepted', 'True', 'Accepted', 'accepted by ingress-ts', generation);
    if (parameters !== undefined && parameters !== null) {
      const what = `${text(parameters.group ?? '')}/${text(parameters.kind ?? '')} ${text(parameters.name ?? '')}`;
      accepting = condition(
        'Accepted',
        'False',
        'InvalidParameters',
        `ingress-ts takes no GatewayClass parameters (parametersRef ${what}); the class's Gateways are not served`,
        generation,
      );
      state.diagnostics.report('GatewayClass', { namespace: '', name }, 'GATEWAY_INVALID', accepting.message);
    } else {
      accepted.add(name);
    }
    status.push({ name, generation, conditions: [accepting], supportedFeatures: [...SUPPORTED_FEATURES] });
  }
  return { accepted, status };
}

export const compareNames = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
