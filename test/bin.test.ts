// The command line answers --help and --version, and refuses what it does not support.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import t from 'tap';

const run = promisify(execFile);
const bin = new URL('../bin/ingress-ts.ts', import.meta.url).pathname;
const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

t.test('--version prints the package version', async (t) => {
  const { stdout } = await run(process.execPath, [bin, '--version']);
  t.equal(stdout.trim(), version);
});

t.test('--help lists the options', async (t) => {
  const { stdout } = await run(process.execPath, [bin, '--help']);
  t.match(stdout, /--version/);
  t.match(stdout, /--help/);
});

t.test('an unknown flag exits 2 with a message', async (t) => {
  const error = await run(process.execPath, [bin, '--no-such-flag']).catch((e: unknown) => e);
  t.match(error, { code: 2, stderr: /unknown or not yet supported arguments: --no-such-flag/ });
});
