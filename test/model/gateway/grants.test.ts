// ReferenceGrant: every field matches exactly (the seven wrong grants of the conformance tests
// GatewaySecretInvalidReferenceGrant and HTTPRouteInvalidReferenceGrant), a `to` without a name
// trusts the whole kind, same-namespace references need none.

import t from 'tap';
import { GrantIndex } from '../../../lib/model/gateway/grants.ts';
import { selectorMatches, selectorProblem } from '../../../lib/model/gateway/labels.ts';
import {
  APP,
  GROUP,
  INFRA,
  referenceGrant,
  secretGrant,
  serviceGrant,
  WEB,
  wrongSecretGrants,
  wrongServiceGrants,
} from './fixtures.ts';

const gatewayToSecret = [
  { group: GROUP, kind: 'Gateway', namespace: INFRA },
  { group: '', kind: 'Secret', namespace: WEB, name: 'certificate' },
] as const;
const routeToService = [
  { group: GROUP, kind: 'HTTPRoute', namespace: INFRA },
  { group: '', kind: 'Service', namespace: WEB, name: 'web-backend' },
] as const;

t.test('each of the seven wrong grants alone refuses the reference', async (t) => {
  for (const grant of wrongSecretGrants()) {
    t.notOk(new GrantIndex([grant]).permits(...gatewayToSecret), `Secret: ${grant.metadata?.name}`);
  }
  for (const grant of wrongServiceGrants()) {
    t.notOk(new GrantIndex([grant]).permits(...routeToService), `Service: ${grant.metadata?.name}`);
  }
  t.notOk(new GrantIndex(wrongSecretGrants()).permits(...gatewayToSecret), 'all seven together');
  t.notOk(new GrantIndex(wrongServiceGrants()).permits(...routeToService), 'all seven together');
});

t.test('the right grant permits; a to without a name trusts every object of the kind', async (t) => {
  t.ok(new GrantIndex([secretGrant('certificate')]).permits(...gatewayToSecret), 'named');
  t.ok(new GrantIndex([secretGrant()]).permits(...gatewayToSecret), 'the whole kind');
  t.notOk(new GrantIndex([secretGrant('other')]).permits(...gatewayToSecret), 'another name');
  t.ok(new GrantIndex([serviceGrant()]).permits(...routeToService));
  t.notOk(new GrantIndex([serviceGrant()]).permits(...gatewayToSecret), 'a Service grant is no Secret grant');
  t.notOk(new GrantIndex([serviceGrant(APP)]).permits(...routeToService), 'a grant in another namespace');
  t.notOk(new GrantIndex([]).permits(...routeToService), 'no grant');
});

t.test('from and to entries are ORed', async (t) => {
  const grant = referenceGrant(
    'many',
    WEB,
    [
      { group: GROUP, kind: 'Gateway', namespace: 'elsewhere' },
      { group: GROUP, kind: 'HTTPRoute', namespace: INFRA },
    ],
    [
      { group: '', kind: 'Secret' },
      { group: '', kind: 'Service', name: 'web-backend' },
    ],
  );
  t.ok(new GrantIndex([grant]).permits(...routeToService));
  t.notOk(new GrantIndex([grant]).permits(...gatewayToSecret), 'Gateways of infra are not trusted');
});

t.test('a reference within one namespace needs no grant', async (t) => {
  t.ok(new GrantIndex([]).permits({ group: GROUP, kind: 'HTTPRoute', namespace: WEB }, routeToService[1]));
});

t.test('label selectors: matchLabels and matchExpressions ANDed', async (t) => {
  const labels = { 'gateway-conformance': 'backend', 'kubernetes.io/metadata.name': WEB, tier: 'web' };
  const cases: Array<[Parameters<typeof selectorMatches>[0], boolean]> = [
    [{}, true],
    [{ matchLabels: { 'gateway-conformance': 'backend' } }, true],
    [{ matchLabels: { 'gateway-conformance': 'infra' } }, false],
    [{ matchLabels: { 'kubernetes.io/metadata.name': WEB } }, true],
    [{ matchExpressions: [{ key: 'tier', operator: 'In', values: ['web', 'api'] }] }, true],
    [{ matchExpressions: [{ key: 'tier', operator: 'In', values: ['api'] }] }, false],
    [{ matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['api'] }] }, true],
    [{ matchExpressions: [{ key: 'missing', operator: 'NotIn', values: ['api'] }] }, true],
    [{ matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, true],
    [{ matchExpressions: [{ key: 'missing', operator: 'Exists' }] }, false],
    [{ matchExpressions: [{ key: 'missing', operator: 'DoesNotExist' }] }, true],
    [{ matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }, false],
    [
      {
        matchLabels: { tier: 'web' },
        matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['web'] }],
      },
      false,
    ],
    // a selector that cannot be evaluated selects nothing
    [{ matchExpressions: [{ key: 'tier', operator: 'Matches', values: ['web'] }] }, false],
    [{ matchExpressions: [{ key: 'tier', operator: 'In', values: [] }] }, false],
  ];
  for (const [selector, expected] of cases)
    t.equal(selectorMatches(selector, labels), expected, JSON.stringify(selector));
  t.match(
    selectorProblem({ matchExpressions: [{ key: 'a', operator: 'Matches' }] }),
    /unknown operator Matches/,
  );
});
