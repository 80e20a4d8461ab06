// The Gateway API flags. ingress-nginx has neither (it does not implement the Gateway API): the
// names follow the other Gateway controllers' habit of a controller name flag, and the switch lets
// a cluster that has the CRDs for another implementation keep ingress-ts out of them.

import { DEFAULT_MODEL_OPTIONS, type ModelOptions } from '../model/index.ts';
import { ConfigError } from './config-error.ts';

export const GATEWAY_FLAGS = {
  'enable-gateway-api': {
    type: 'boolean',
    default: true,
    help: 'serve the Gateway API (GatewayClass, Gateway, HTTPRoute, ReferenceGrant) when its CRDs are installed; --enable-gateway-api=false: never watched, never read from --manifests',
  },
  'gateway-controller-name': {
    type: 'string',
    default: DEFAULT_MODEL_OPTIONS.gatewayControllerName as string,
    help: 'GatewayClass spec.controllerName to serve; also the controllerName in HTTPRoute status',
  },
} as const;

/** A GatewayClass controllerName is a domain-prefixed path (`example.net/gateway-controller`). */
export function gatewayControllerName(value: string): string {
  if (
    !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$/.test(
      value,
    )
  ) {
    throw new ConfigError(
      `--gateway-controller-name must be a domain-prefixed path such as example.net/gateway-controller, got "${value}"`,
    );
  }
  return value;
}

type GatewayValues = { 'gateway-controller-name': string };

/** The model options the Gateway API half of the build reads: our controller name and our ports. */
export function gatewayModelFlags(
  values: GatewayValues,
  ports: { httpPort: number; httpsPort: number },
): Pick<ModelOptions, 'gatewayControllerName' | 'httpPort' | 'httpsPort'> {
  return {
    gatewayControllerName: gatewayControllerName(values['gateway-controller-name']),
    httpPort: ports.httpPort,
    httpsPort: ports.httpsPort,
  };
}
