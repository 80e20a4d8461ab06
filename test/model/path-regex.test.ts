// Regex-mode paths are compiled once and shared between a build and the runtime compiled from it,
// and from one build to the next; patterns no build looked up for a generation are released.
import t from 'tap';
import { compilePathRegex, newPathRegexGeneration } from '../../lib/model/path-regex.ts';

t.test('one compiled object per pattern, kept for two generations', async (t) => {
  newPathRegexGeneration();
  const first = compilePathRegex('/api/v[0-9]+');
  t.equal(compilePathRegex('/api/v[0-9]+'), first, 'the same object within a generation');
  t.ok(first.matcher('/API/v12/x').lookingAt(), 'anchored at the start, case-insensitive');
  t.notOk(first.matcher('/x/api/v1').lookingAt());
  newPathRegexGeneration();
  t.equal(compilePathRegex('/api/v[0-9]+'), first, 'the next build reuses it');
  newPathRegexGeneration();
  newPathRegexGeneration();
  t.not(compilePathRegex('/api/v[0-9]+'), first, 'unused for a whole generation: compiled again');
});

t.test("RE2's refusal is kept too, and thrown every time", async (t) => {
  newPathRegexGeneration();
  let firstError: unknown;
  try {
    compilePathRegex('/(a)\\1');
  } catch (error) {
    firstError = error;
  }
  t.ok(firstError instanceof Error, 'a backreference is not RE2');
  t.throws(() => compilePathRegex('/(a)\\1'), firstError as Error, 'the same error again');
  try {
    compilePathRegex('/(a)\\1');
  } catch (error) {
    t.equal(error, firstError, 'without compiling again');
  }
});
