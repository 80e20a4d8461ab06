// The request side of HTTPRoute conditions as tables: a header's lines joined with `,` (names in any
// case), a query parameter's first value decoded as Go's url.ParseQuery does.
import t from 'tap';
import { joinedHeader, queryValue } from '../../../lib/dataplane/routing/gateway-conditions.ts';

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
