// `ingress-ts check`'s entry: bin/ingress-ts.ts loads it instead of lib/cli.ts when the first
// argument is `check`, so the controller's modules (data plane, metrics) are never loaded for it.

import { readFileSync } from 'node:fs';
import { argv, env, exit, stderr, stdout } from 'node:process';
import { runCheck } from './index.ts';

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

const code = await runCheck(argv.slice(3), { stdout, stderr, env, version });
// once what was written has left: a kept-alive connection to the API server must not hold the exit
stdout.write('', () => exit(code));
