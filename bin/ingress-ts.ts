#!/usr/bin/env node
// ingress-ts: turns on Node's on-disk compile cache, then runs the command line (lib/cli.ts), or
// `ingress-ts check` (lib/check/cli.ts).
//
// The cache holds V8 code and the type-stripped source of every module; with it, start-up (module
// loading, before any manifest is read) is much shorter (the start-up results in bench/README.md).
// It lives in $NODE_COMPILE_CACHE, else <tmpdir>/node-compile-cache; a read-only or missing directory
// only means no cache (enableCompileCache reports it and never throws), and
// NODE_DISABLE_COMPILE_CACHE=1 turns it off. Static imports would load before this line runs, hence
// the dynamic import.

import { enableCompileCache } from 'node:module';

enableCompileCache();
// `ingress-ts check` (lib/check/) reads and reports once; anything else runs the controller
await import(process.argv[2] === 'check' ? '../lib/check/cli.ts' : '../lib/cli.ts');
