// The layout keeps lib/ readable: no file over 500 lines and no function over 120, as
// scripts/sizes.ts measures them (`npm run sizes` lists the largest). A file or function that
// grows past the bound fails here, with its size, so it is split while its author still knows it.

import { fileURLToPath } from 'node:url';
import t from 'tap';
import { measure } from '../../scripts/sizes.ts';

const MAX_FILE_LINES = 500;
const MAX_FUNCTION_LINES = 120;

const root = fileURLToPath(new URL('../../', import.meta.url));

t.test('no file in lib/ is over the bound', async (t) => {
  const { files } = measure(`${root}lib`);
  t.ok(files.length > 50, 'lib/ is read');
  const over = files
    .filter((f) => f.lines > MAX_FILE_LINES)
    .map((f) => `${f.file.slice(root.length)}: ${f.lines} lines`);
  t.same(over, [], `files over ${MAX_FILE_LINES} lines`);
});

t.test('no function in lib/ is over the bound', async (t) => {
  const { functions } = measure(`${root}lib`);
  t.ok(functions.length > 500, 'functions are found');
  const over = functions
    .filter((f) => f.lines > MAX_FUNCTION_LINES)
    .map((f) => `${f.file.slice(root.length)} ${f.name}: ${f.lines} lines`);
  t.same(over, [], `functions over ${MAX_FUNCTION_LINES} lines`);
});

t.test('the measure counts what a reader sees', async (t) => {
  const { functions } = measure(`${root}scripts`);
  const own = functions.find((f) => f.name === 'measure');
  t.ok(own && own.lines > 20 && own.lines < 60, 'measure() itself is measured by its span');
  t.ok(
    functions.some((f) => f.name === 'nameOf'),
    'functions are named as declared',
  );
});
