// The request side of HTTPRoute conditions as tables: a header's lines joined with `,` (names in any
// case, `host` read from HTTP/2's `:authority`), a query parameter's first value decoded as Go's
// url.ParseQuery does, among the first QUERY_PARAMS_LOOKED_AT; and the cost of many candidates with
// conditions: one read of the request per match, not one per condition.
import t from 'tap';
import {
  type ConditionInput,
  compileConditions,
  joinedHeader,
  QUERY_PARAMS_LOOKED_AT,
  queryValue,
} from '../../../lib/dataplane/routing/gateway-conditions.ts';
import { GatewayPathMatcher, type GatewayPathRule } from '../../../lib/dataplane/routing/gateway-matcher.ts';
import type { PathMatcher } from '../../../lib/dataplane/routing/router.ts';
import { gatewayMatch } from './plane.ts';

t.test('joinedHeader', async (t) => {
  const cases: Array<[raw: string[], name: string, joined: string | undefined]> = [
    [['Version', 'one'], 'version', 'one'],
    [['X-Multi', 'a', 'x-multi', 'b'], 'x-multi', 'a,b'],
    [['x-multi', 'a, b'], 'x-multi', 'a, b'],
    [['Other', 'x'], 'version', undefined],
    [['Versions', 'x'], 'version', undefined],
    [['version', ''], 'version', ''],
  ];
  for (const [raw, name, joined] of cases) t.equal(joinedHeader(raw, name), joined, `${raw} ${name}`);
});

t.test('queryValue', async (t) => {
  const cases: Array<[url: string, name: string, value: string | undefined]> = [
    ['/?animal=whale', 'animal', 'whale'],
    ['/?animal=dolphin&animal=whale', 'animal', 'dolphin'],
    ['/?a=1&animal=wh%61le', 'animal', 'whale'],
    ['/?animal=killer+whale', 'animal', 'killer whale'],
    ['/?an%69mal=whale', 'animal', 'whale'],
    ['/?animal', 'animal', ''],
    ['/?animal=bad%zz', 'animal', 'bad%zz'],
    ['/?Animal=whale', 'animal', undefined],
    ['/?x=1#animal=whale', 'animal', undefined],
    ['/path', 'animal', undefined],
  ];
  for (const [url, name, value] of cases) t.equal(queryValue(url, name), value, url);
});

t.test('queryValue looks at the first QUERY_PARAMS_LOOKED_AT pairs only', async (t) => {
  const url = `/?${Array.from({ length: QUERY_PARAMS_LOOKED_AT + 5 }, (_, i) => `p${i}=${i}`).join('&')}`;
  t.equal(QUERY_PARAMS_LOOKED_AT, 100);
  t.equal(queryValue(url, 'p0'), '0');
  t.equal(queryValue(url, `p${QUERY_PARAMS_LOOKED_AT - 1}`), String(QUERY_PARAMS_LOOKED_AT - 1));
  t.equal(queryValue(url, `p${QUERY_PARAMS_LOOKED_AT}`), undefined);
  // empty pairs (`&&`) are not counted
  t.equal(queryValue(`/?${'&'.repeat(500)}a=1`, 'a'), '1');
});

/** A request that counts how often its target and header lines are read. */
function countedRequest(url: string, rawHeaders: string[]): { request: ConditionInput; reads: () => number } {
  let reads = 0;
  const request = {
    method: 'GET',
    get url() {
      reads++;
      return url;
    },
    get rawHeaders() {
      reads++;
      return rawHeaders;
    },
  };
  return { request, reads: () => reads };
}

const NONE: PathMatcher<string> = {
  match: () => ({ value: 'none', locationPath: '/', captures: null }),
};

t.test('many candidates with conditions read the request once per match', async (t) => {
  const candidates = 64;
  const rules: GatewayPathRule<string>[] = [];
  for (let i = 0; i < candidates; i++) {
    const conditions = compileConditions(
      gatewayMatch({
        headers: [{ name: 'X-Variant', value: `v${i}` }],
        queryParams: [{ name: 'variant', value: `v${i}` }],
      }),
    );
    rules.push({
      path: '/',
      pathType: 'Prefix',
      protocols: 'both',
      conditions,
      values: [{ value: `c${i}`, weight: 1 }],
    });
  }
  const matcher = new GatewayPathMatcher(rules, NONE);
  const last = `v${candidates - 1}`;
  const { request, reads } = countedRequest(`/?${'%61=%62&'.repeat(700)}variant=${last}`, [
    'X-Variant',
    last,
  ]);
  // the query holds more than QUERY_PARAMS_LOOKED_AT pairs before `variant`: it is not looked at
  t.equal(matcher.match('/', request).value, 'none');
  t.ok(reads() <= 2, `the target and header lines read ${reads()} times`);
  const near = countedRequest(`/?a=1&variant=${last}`, ['X-Variant', last, 'x-variant', 'more']);
  t.equal(matcher.match('/a', near.request).value, 'none', 'repeated lines are joined: `v63,more`');
  t.ok(near.reads() <= 2, `the target and header lines read ${near.reads()} times`);
  const hit = countedRequest(`/?a=1&variant=${last}`, ['x-variant', last]);
  t.equal(matcher.match('/a', hit.request).value, `c${candidates - 1}`);
  t.ok(hit.reads() <= 2, `the target and header lines read ${hit.reads()} times`);
});
