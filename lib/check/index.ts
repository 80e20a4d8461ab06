// `ingress-ts check`: reads the objects once (a manifests folder or a cluster), builds the model as
// the controller would, and prints each Ingress's verdict and findings (lib/model/verdicts.ts). No
// listener, no watch, no write to the cluster. lib/cli.ts hands it the arguments after `check`.

import { ConfigError } from '../config/flags.ts';
import { buildModel, ingressVerdicts, redactText } from '../model/index.ts';
import { checkHelpText, parseCheckArgs } from './args.ts';
import { readObjects } from './read.ts';
import { checkReport, exitCodeOf, formatTable } from './report.ts';

export interface CheckIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
  version: string;
}

/** Runs the check; resolves with the exit status (0 served, 1 partly or not served, 2 usage, 3 unreadable). */
export async function runCheck(argv: readonly string[], io: CheckIo): Promise<number> {
  let args: ReturnType<typeof parseCheckArgs>;
  try {
    args = parseCheckArgs(argv);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    io.stderr.write(`ingress-ts check: ${error.message}\nRun ingress-ts check --help for the flags.\n`);
    return 2;
  }
  if (args.kind === 'help') {
    io.stdout.write(checkHelpText(io.version));
    return 0;
  }
  const { config, output, ignored } = args;
  if (ignored.length > 0) {
    io.stderr.write(
      `ingress-nginx flags with no effect in ingress-ts: ${ignored.map(({ flag }) => flag).join(', ')}\n`,
    );
  }
  let objects: Awaited<ReturnType<typeof readObjects>>;
  try {
    objects = await readObjects(config);
  } catch (error) {
    io.stderr.write(
      `ingress-ts check: ${redactText(error instanceof Error ? error.message : String(error))}\n`,
    );
    return 3;
  }
  const { snapshot, problems } = objects;
  const result = buildModel(snapshot, config.model);
  const verdicts = ingressVerdicts({
    ingresses: snapshot.ingresses,
    ingressClasses: snapshot.ingressClasses,
    result,
    options: config.model,
    sourceDiagnostics: problems,
  });
  const report = checkReport(verdicts, [...problems, ...result.diagnostics]);
  if (verdicts.length > 0 && verdicts.every((v) => v.verdict === 'ignored')) {
    // the usual first run on an ingress-nginx cluster: its Ingresses name its class
    io.stderr.write(
      'Every Ingress is of another class: pass the class flags the controller will run with, e.g. --ingress-class nginx --controller-class k8s.io/ingress-nginx for the Ingresses of ingress-nginx.\n',
    );
  }
  if (output === 'json') {
    io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    const colour = io.stdout.isTTY === true && io.env.NO_COLOR === undefined && io.env.TERM !== 'dumb';
    io.stdout.write(formatTable(report, objects.from, colour));
  }
  return exitCodeOf(verdicts);
}
