// The controller flags the model depends on. Names follow ingress-nginx's flags.

export interface ModelOptions {
  /** --controller-class: IngressClass spec.controller values we own */
  controllerClass: string;
  /** --ingress-class: the legacy kubernetes.io/ingress.class annotation value (and class name with byName) */
  ingressClass: string;
  /** --ingress-class-by-name: also own the IngressClass named --ingress-class */
  ingressClassByName: boolean;
  /** --watch-ingress-without-class */
  watchIngressWithoutClass: boolean;
  /** --default-backend-service: `namespace/name`, or null for the built-in 404 */
  defaultBackendService: string | null;
  /** --default-ssl-certificate: `namespace/name` of a TLS Secret, or null for a generated one */
  defaultSSLCertificate: string | null;
  /** --annotations-prefix */
  annotationsPrefix: string;
  /** --disable-catch-all: ignore every Ingress that has a spec.defaultBackend */
  disableCatchAll: boolean;
  /** --disable-svc-external-name: ExternalName Services get no endpoints */
  disableSvcExternalName: boolean;
  /** --configmap: `namespace/name` of the global ConfigMap, or null for the defaults */
  configMap: string | null;
  /** --enable-ssl-passthrough: the ssl-passthrough annotation takes effect */
  enableSslPassthrough: boolean;
  /** --tcp-services-configmap: `namespace/name` of the TCP services ConfigMap, or null */
  tcpServicesConfigMap?: string | null;
  /** --udp-services-configmap: `namespace/name` of the UDP services ConfigMap, or null */
  udpServicesConfigMap?: string | null;
  /** --http-port, --https-port, --healthz-port: the controller's own ports, never a TCP/UDP service's */
  reservedPorts?: readonly number[];
  /** --gateway-controller-name: the GatewayClasses whose spec.controllerName is this are ours */
  gatewayControllerName?: string;
  /** --http-port and --https-port: a Gateway listener on 80/443 or on these attaches to them */
  httpPort?: number;
  httpsPort?: number;
}

export const DEFAULT_MODEL_OPTIONS: Readonly<ModelOptions> = Object.freeze({
  controllerClass: 'ingress-ts.dev/controller',
  ingressClass: 'ingress-ts',
  ingressClassByName: false,
  watchIngressWithoutClass: false,
  defaultBackendService: null,
  defaultSSLCertificate: null,
  annotationsPrefix: 'nginx.ingress.kubernetes.io',
  disableCatchAll: false,
  disableSvcExternalName: false,
  configMap: null,
  enableSslPassthrough: false,
  gatewayControllerName: 'ingress-ts.dev/gateway-controller',
  httpPort: 80,
  httpsPort: 443,
});
