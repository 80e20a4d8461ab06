#!/usr/bin/env node
// ingress-ts command line. Today it only describes itself: the routing model exists (lib/model),
// serving traffic arrives with the data plane and standalone mode (issue #3).

import { readFileSync } from 'node:fs';
import { argv, exit, stderr, stdout } from 'node:process';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

const HELP = `ingress-ts ${version}: a Kubernetes Ingress controller and reverse proxy in one Node.js process.

Usage: ingress-ts [--help | --version]

  --help       print this help
  --version    print the version

Not available yet: serving traffic (listeners, standalone mode over a folder of manifests, the
Kubernetes controller) lands with the data plane. What exists today is the routing model,
lib/model, used by the tests and by npm run bench:model.
`;

const args = argv.slice(2);
if (args.length === 0 || args.includes('--help') || args.includes('-h')) {
  stdout.write(HELP);
} else if (args.includes('--version')) {
  stdout.write(`${version}\n`);
} else {
  stderr.write(`ingress-ts: unknown or not yet supported arguments: ${args.join(' ')}\n\n${HELP}`);
  exit(2);
}
