// The canary a route description shows on /debug/model: the header's name stays, its value and
// pattern are `***` (teams use them as a shared secret for beta access), the rest as in the model.
import t from 'tap';
import { canaryOf } from '../../lib/dataplane/describe/route-settings.ts';
import type { Canary } from '../../lib/model/index.ts';

const canary = (fields: Partial<Canary>): Canary => ({
  ingress: { namespace: 'ns', name: 'beta' },
  upstream: 'ns-web-v2-80',
  weight: 5,
  weightTotal: 100,
  header: null,
  headerValue: null,
  headerPattern: null,
  cookie: null,
  ...fields,
});

const cases: Array<[string, Canary | null, Record<string, unknown> | null]> = [
  ['no canary', null, null],
  [
    'a header value is hidden, the name stays',
    canary({ header: 'x-beta', headerValue: 'beta-s3cr3t' }),
    { header: 'x-beta', headerValue: '***', headerPattern: null },
  ],
  [
    'a pattern is hidden too',
    canary({ header: 'x-beta', headerPattern: '^(beta-s3cr3t|other)$' }),
    { header: 'x-beta', headerValue: null, headerPattern: '***' },
  ],
  [
    'always/never (no value) and the cookie as they are',
    canary({ header: 'x-beta', cookie: 'beta' }),
    {
      ingress: 'ns/beta',
      backend: 'ns-web-v2-80',
      weight: 5,
      weightTotal: 100,
      header: 'x-beta',
      headerValue: null,
      headerPattern: null,
      cookie: 'beta',
    },
  ],
];

for (const [name, given, shown] of cases) {
  const described = canaryOf(given);
  if (shown === null) t.equal(described, null, name);
  else t.match(described, shown, name);
  t.notMatch(JSON.stringify(described), /s3cr3t/, `${name}: no secret`);
}
