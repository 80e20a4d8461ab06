// Which Ingresses this controller serves (ingress-nginx's GetIngressClass):
// 1. spec.ingressClassName set: it must name an IngressClass whose spec.controller is
//    --controller-class (or, with --ingress-class-by-name, whose name is --ingress-class);
// 2. else the legacy kubernetes.io/ingress.class annotation must equal --ingress-class;
// 3. else only with --watch-ingress-without-class.

import { type Ingress, type IngressClass, LEGACY_CLASS_ANNOTATION } from './k8s.ts';
import type { ModelOptions } from './options.ts';

type ClassOptions = Pick<
  ModelOptions,
  'controllerClass' | 'ingressClass' | 'ingressClassByName' | 'watchIngressWithoutClass'
>;

/** Names of the IngressClasses this controller owns. */
export function ownedClassNames(classes: readonly IngressClass[], options: ClassOptions): Set<string> {
  const owned = new Set<string>();
  for (const ingressClass of classes) {
    const name = ingressClass.metadata?.name;
    if (typeof name !== 'string') continue;
    if (
      ingressClass.spec?.controller === options.controllerClass ||
      (options.ingressClassByName && name === options.ingressClass)
    ) {
      owned.add(name);
    }
  }
  return owned;
}

export function isOurIngress(ingress: Ingress, owned: ReadonlySet<string>, options: ClassOptions): boolean {
  const className = ingress.spec?.ingressClassName;
  // set, even to '' (which names no IngressClass): the annotation is then not consulted
  if (typeof className === 'string') return owned.has(className);
  const legacy = ingress.metadata?.annotations?.[LEGACY_CLASS_ANNOTATION];
  if (legacy !== undefined) return legacy === options.ingressClass;
  return options.watchIngressWithoutClass;
}
