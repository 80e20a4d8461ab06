// Listener × route hostnames (gateway-api httproute_types.go, Hostnames; gateway_types.go, Listener
// hostname): the intersection of two names, and the names a route answers on a listener.

import t from 'tap';
import {
  effectiveHostnames,
  hostnameProblem,
  intersectHostname,
} from '../../../lib/model/gateway/hostnames.ts';

// [listener, route, the names both match as one name, or null]
const PAIRS: Array<[string, string, string | null]> = [
  ['test.example.com', 'test.example.com', 'test.example.com'],
  ['test.example.com', '*.example.com', 'test.example.com'],
  ['*.example.com', 'test.example.com', 'test.example.com'],
  ['*.example.com', 'foo.test.example.com', 'foo.test.example.com'],
  ['*.example.com', '*.example.com', '*.example.com'],
  ['*.example.com', '*.test.example.com', '*.test.example.com'],
  ['*.test.example.com', '*.example.com', '*.test.example.com'],
  ['*.example.com', 'example.com', null],
  ['*.example.com', 'test.example.net', null],
  ['example.com', '*.example.com', null],
  ['very.specific.com', '*.specific.com', 'very.specific.com'],
  ['*.wildcard.io', 'wildcard.io', null],
  ['*.wildcard.io', 'foo.bar.wildcard.io', 'foo.bar.wildcard.io'],
  ['*.anotherwildcard.io', '*.anotherwildcard.io', '*.anotherwildcard.io'],
  // a suffix match is on whole labels
  ['*.example.com', 'testexample.com', null],
  ['*.ample.com', 'test.example.com', null],
  ['*.a.com', '*.b.com', null],
];

t.test('intersectHostname: the names both match, the more specific', async (t) => {
  for (const [listener, route, expected] of PAIRS) {
    t.equal(intersectHostname(listener, route), expected, `${listener} × ${route}`);
  }
});

// [listener hostname, route hostnames, effective: [] any host, null none]
const EFFECTIVE: Array<[string | null, string[], string[] | null]> = [
  [null, [], []],
  [null, ['a.example.com', '*.example.net'], ['a.example.com', '*.example.net']],
  ['test.example.com', [], ['test.example.com']],
  ['*.example.com', ['test.example.com', 'test.example.net'], ['test.example.com']],
  [
    'very.specific.com',
    ['non.matching.com', '*.nonmatchingwildcard.io', 'very.specific.com'],
    ['very.specific.com'],
  ],
  ['very.specific.com', ['non.matching.com', '*.specific.com'], ['very.specific.com']],
  [
    '*.wildcard.io',
    ['non.matching.com', 'wildcard.io', 'foo.wildcard.io', 'bar.wildcard.io', 'foo.bar.wildcard.io'],
    ['foo.wildcard.io', 'bar.wildcard.io', 'foo.bar.wildcard.io'],
  ],
  ['*.anotherwildcard.io', ['*.anotherwildcard.io'], ['*.anotherwildcard.io']],
  ['very.specific.com', ['specific.but.wrong.com', 'wildcard.io'], null],
  // two route names narrowed to one listener name: listed once
  ['a.example.com', ['a.example.com', '*.example.com'], ['a.example.com']],
];

t.test('effectiveHostnames: the names a route answers on a listener', async (t) => {
  for (const [listener, route, expected] of EFFECTIVE) {
    t.strictSame(
      effectiveHostnames(listener, route, route.length > 0),
      expected,
      `${listener} × [${route.join(', ')}]`,
    );
  }
});

t.test('a route whose every hostname was invalid is not a catch-all', async (t) => {
  t.strictSame(effectiveHostnames(null, [], true), null);
  t.strictSame(effectiveHostnames('a.example.com', [], true), null);
});

t.test('hostnameProblem: DNS names and a leading wildcard label only', async (t) => {
  const cases: Array<[string, boolean]> = [
    ['example.com', true],
    ['*.example.com', true],
    ['*.a.b.example.com', true],
    ['', false],
    ['*', false],
    ['a.*.example.com', false],
    ['10.0.0.1', false],
    ['under_score.com', false],
    ['-leading.example.com', false],
  ];
  for (const [name, ok] of cases) t.equal(hostnameProblem(name) === null, ok, name);
});
