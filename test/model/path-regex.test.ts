// Regex-mode paths are compiled once and shared between a build and the runtime compiled from it,
// and from one build to the next; patterns no build looked up for a generation are released. The
// cache is an object its owner holds: two caches never share an entry.
import t from 'tap';
import { compilePathRegex, PathRegexCache } from '../../lib/model/path-regex.ts';

t.test('one compiled object per pattern, kept for two generations', async (t) => {
  const cache = new PathRegexCache();
  cache.rotate();
  const first = cache.compile('/api/v[0-9]+');
  t.equal(cache.compile('/api/v[0-9]+'), first, 'the same object within a generation');
  t.ok(first.matcher('/API/v12/x').lookingAt(), 'anchored at the start, case-insensitive');
  t.notOk(first.matcher('/x/api/v1').lookingAt());
  cache.rotate();
  t.equal(cache.compile('/api/v[0-9]+'), first, 'the next build reuses it');
  cache.rotate();
  cache.rotate();
  t.not(cache.compile('/api/v[0-9]+'), first, 'unused for a whole generation: compiled again');
});

t.test("RE2's refusal is kept too, and thrown every time", async (t) => {
  const cache = new PathRegexCache();
  cache.rotate();
  let firstError: unknown;
  try {
    cache.compile('/(a)\\1');
  } catch (error) {
    firstError = error;
  }
  t.ok(firstError instanceof Error, 'a backreference is not RE2');
  t.throws(() => cache.compile('/(a)\\1'), firstError as Error, 'the same error again');
  try {
    cache.compile('/(a)\\1');
  } catch (error) {
    t.equal(error, firstError, 'without compiling again');
  }
});

t.test('two caches share nothing; rotation releases what was not looked up', async (t) => {
  const a = new PathRegexCache();
  const b = new PathRegexCache();
  const fromA = a.compile('/shared/[a-z]+');
  t.equal(b.size, 0, 'compiling in one cache puts nothing in the other');
  const fromB = b.compile('/shared/[a-z]+');
  t.not(fromB, fromA, 'each cache compiles its own object');
  t.equal(a.compile('/shared/[a-z]+'), fromA, 'and keeps returning it');

  a.compile('/gone');
  t.equal(a.size, 2);
  a.rotate();
  a.compile('/shared/[a-z]+');
  t.equal(a.size, 2, 'the generation before is still held');
  a.rotate();
  t.equal(a.size, 1, 'a pattern not looked up since the last rotation is released');
  a.rotate();
  a.rotate();
  t.equal(a.size, 0, 'everything goes once nothing is looked up');
  t.equal(b.size, 1, "the other cache's rotations are its owner's");
});

t.test('compilePathRegex compiles every time, as ingress-nginx renders the path', async (t) => {
  const one = compilePathRegex('/x');
  t.not(compilePathRegex('/x'), one, 'no cache behind it');
  t.ok(one.matcher('/X/y').lookingAt());
  t.throws(() => compilePathRegex('/(?=a)'), 'lookahead is not RE2');
});
