// ReplacePrefixMatch and ReplaceFullPath as the Gateway API spec's table writes them
// (HTTPPathModifier in apis/v1/httproute_types.go), one row each.
import t from 'tap';
import { compilePathModifier, modifiedPath } from '../../../lib/dataplane/routing/gateway-paths.ts';

const prefixCases: Array<[request: string, prefix: string, replacement: string, modified: string]> = [
  ['/foo/bar', '/foo', '/xyz', '/xyz/bar'],
  ['/foo/bar', '/foo', '/xyz/', '/xyz/bar'],
  ['/foo/bar', '/foo/', '/xyz', '/xyz/bar'],
  ['/foo/bar', '/foo/', '/xyz/', '/xyz/bar'],
  ['/foo', '/foo', '/xyz', '/xyz'],
  ['/foo/', '/foo', '/xyz', '/xyz/'],
  ['/foo/bar', '/foo', '', '/bar'],
  ['/foo/', '/foo', '', '/'],
  ['/foo', '/foo', '', '/'],
  ['/foo/', '/foo', '/', '/'],
  ['/foo', '/foo', '/', '/'],
  // the task's example, and a prefix of `/`
  ['/prefix/one', '/prefix', '/', '/one'],
  ['/one/two', '/', '/xyz', '/xyz/one/two'],
  ['/', '/', '/xyz', '/xyz'],
];

t.test('ReplacePrefixMatch', async (t) => {
  for (const [request, prefix, value, modified] of prefixCases) {
    const modifier = compilePathModifier({ type: 'ReplacePrefixMatch', value }, prefix);
    t.equal(modifiedPath(modifier, request), modified, `${request} on ${prefix} with '${value}'`);
  }
});

t.test('ReplaceFullPath', async (t) => {
  const modifier = compilePathModifier({ type: 'ReplaceFullPath', value: '/full' }, '/foo');
  t.equal(modifiedPath(modifier, '/foo/bar'), '/full');
  t.equal(modifiedPath(modifier, '/foo'), '/full');
});
