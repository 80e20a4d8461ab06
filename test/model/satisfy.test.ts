// The satisfy annotation in the model: any/all on every route of the Ingress and the host's default
// route; unset and "all" are the default; any other value falls back to "all" with a warning (the
// Ingress is kept, as ingress-nginx's parser ignores it).
import t from 'tap';
import { type Case, ingress, path, rule, runCases } from './helpers.ts';

const site = (name: string, nginx: Record<string, string>) =>
  ingress(name, { nginx, rules: [rule(`${name}.com`, path('/', 'web:80'), path('/api', 'web:80'))] });

runCases(t, [
  {
    name: 'satisfy: unset is all',
    ingresses: [site('plain', {})],
    check: (t, { model }) => t.strictSame(model.servers[0]?.routes[0]?.annotations.satisfy, { any: false }),
  },
  {
    name: 'satisfy: any on every path and on the host default route; all is the default',
    ingresses: [site('any', { satisfy: 'any' }), site('all', { satisfy: 'all' })],
    check: (t, { model }) => {
      const byHost = Object.fromEntries(model.servers.map((s) => [s.hostname, s]));
      for (const route of byHost['any.com']?.routes ?? [])
        t.strictSame(route.annotations.satisfy, { any: true });
      t.strictSame(byHost['any.com']?.defaultRoute.annotations.satisfy, { any: true });
      t.strictSame(byHost['all.com']?.routes[0]?.annotations.satisfy, { any: false });
    },
  },
  ...['ANY', 'some', 'any,all'].map(
    (value): Case => ({
      name: `satisfy=${JSON.stringify(value)}: the default (all), with a warning, the Ingress kept`,
      ingresses: [site('bad', { satisfy: value })],
      diagnostics: ['ANNOTATION_INVALID bad'],
      messages: ['the default is used'],
      check: (t, { model }) => {
        t.equal(model.servers[0]?.routes.length, 2);
        t.strictSame(model.servers[0]?.routes[0]?.annotations.satisfy, { any: false });
      },
    }),
  ),
]);
