// Which Ingresses the controller serves: IngressClass, legacy annotation, without class.
import t from 'tap';
import { ingress, ingressClass, path, rule, runCases } from './helpers.ts';

const web = (name: string, extra: Parameters<typeof ingress>[1] = {}) =>
  ingress(name, { rules: [rule('a.com', path('/', 'web:80'))], ...extra });
const LEGACY = 'kubernetes.io/ingress.class';

runCases(t, [
  {
    name: 'class: ingressClassName naming an IngressClass of our controller is served',
    ingresses: [web('mine')],
    routes: ['a.com Prefix / -> default-web-80 (mine)'],
  },
  {
    name: 'class: ingressClassName naming another controller’s IngressClass is ignored silently',
    ingresses: [web('theirs', { className: 'nginx' })],
    classes: [ingressClass('ingress-ts'), ingressClass('nginx', 'k8s.io/ingress-nginx')],
    routes: [],
  },
  {
    name: 'class: ingressClassName naming an IngressClass that does not exist is ignored',
    ingresses: [web('ghost', { className: 'missing' })],
    routes: [],
  },
  {
    name: 'class: an IngressClass named like --ingress-class but of another controller is not ours',
    ingresses: [web('x')],
    classes: [ingressClass('ingress-ts', 'example.com/other')],
    routes: [],
  },
  {
    name: 'class: --ingress-class-by-name also owns the IngressClass named --ingress-class',
    ingresses: [web('x')],
    classes: [ingressClass('ingress-ts', 'example.com/other')],
    options: { ingressClassByName: true },
    routes: ['a.com Prefix / -> default-web-80 (x)'],
  },
  {
    name: 'class: legacy annotation equal to --ingress-class is served',
    ingresses: [web('legacy', { className: null, annotations: { [LEGACY]: 'ingress-ts' } })],
    routes: ['a.com Prefix / -> default-web-80 (legacy)'],
  },
  {
    name: 'class: legacy annotation of another class is ignored',
    ingresses: [web('legacy', { className: null, annotations: { [LEGACY]: 'nginx' } })],
    routes: [],
  },
  {
    name: 'class: ingressClassName wins over the legacy annotation',
    ingresses: [web('both', { className: 'nginx', annotations: { [LEGACY]: 'ingress-ts' } })],
    classes: [ingressClass('ingress-ts'), ingressClass('nginx', 'k8s.io/ingress-nginx')],
    routes: [],
  },
  {
    name: 'class: an Ingress without class is ignored by default',
    ingresses: [web('classless', { className: null })],
    routes: [],
  },
  {
    name: 'class: --watch-ingress-without-class serves an Ingress without class',
    ingresses: [web('classless', { className: null })],
    options: { watchIngressWithoutClass: true },
    routes: ['a.com Prefix / -> default-web-80 (classless)'],
  },
  {
    name: 'class: --watch-ingress-without-class does not take Ingresses of another class',
    ingresses: [web('other', { className: null, annotations: { [LEGACY]: 'nginx' } })],
    options: { watchIngressWithoutClass: true },
    routes: [],
  },
  {
    name: 'class: a cluster hands over its nginx class with --controller-class and --ingress-class',
    ingresses: [
      web('by-class', { className: 'nginx' }),
      ingress('by-annotation', {
        className: null,
        annotations: { [LEGACY]: 'nginx' },
        rules: [rule('b.com', path('/', 'web:80'))],
      }),
    ],
    classes: [ingressClass('nginx', 'k8s.io/ingress-nginx')],
    options: { controllerClass: 'k8s.io/ingress-nginx', ingressClass: 'nginx' },
    routes: [
      'a.com Prefix / -> default-web-80 (by-class)',
      'b.com Prefix / -> default-web-80 (by-annotation)',
    ],
  },

  {
    name: 'class: an empty ingressClassName is set (to no class): the legacy annotation is not consulted',
    ingresses: [web('empty', { className: '', annotations: { [LEGACY]: 'ingress-ts' } })],
    routes: [],
  },

  {
    name: 'class: an empty ingressClassName is not "without class", even with --watch-ingress-without-class',
    ingresses: [web('empty', { className: '' })],
    options: { watchIngressWithoutClass: true },
    routes: [],
  },
]);
