// The command line: flags → config, logger, start, graceful stop on SIGTERM/SIGINT. bin/ingress-ts.ts
// loads it once the compile cache is on.

import { readFileSync } from 'node:fs';
import { argv, exit, stderr, stdout } from 'node:process';
import { ConfigError, helpText, parseFlags } from './config/flags.ts';
import { createLogger, wantsPrettyLogs } from './log.ts';
import { start } from './main.ts';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

let parsed: ReturnType<typeof parseFlags>;
try {
  parsed = parseFlags(argv.slice(2));
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  stderr.write(`ingress-ts: ${error.message}\nRun ingress-ts --help for the flags.\n`);
  exit(2);
}
if (parsed.kind === 'help') {
  stdout.write(helpText(version));
  exit(0);
}
if (parsed.kind === 'version') {
  stdout.write(`${version}\n`);
  exit(0);
}

const { config, ignored } = parsed;
const prettyLogs = wantsPrettyLogs();
const log = createLogger(config.logLevel, undefined, prettyLogs);
if (ignored.length > 0) {
  // names and reasons only: a value may be a secret (--maxmind-license-key)
  log.warn(
    { flags: Object.fromEntries(ignored.map(({ flag, reason }) => [flag, reason])) },
    `ingress-nginx flags with no effect in ingress-ts: ${ignored.map(({ flag }) => flag).join(', ')}`,
  );
}
try {
  const controller = await start(config, log, { version, prettyLogs });
  log.info(
    {
      http: controller.http.port,
      https: controller.https.port,
      healthz: controller.healthz.port,
      manifests: config.manifests,
    },
    `ingress-ts ${version} serving`,
  );
  // The first SIGTERM or SIGINT starts the graceful stop; exit 0 once drained. Another SIGTERM during
  // the stop is ignored, as ingress-nginx does (the kubelet's SIGKILL after terminationGracePeriodSeconds
  // is the hard stop); another SIGINT (a second Ctrl-C at a terminal) exits at once with 130.
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      if (signal === 'SIGINT') {
        log.warn({ signal }, 'second interrupt: exiting without waiting for the drain');
        exit(130);
      }
      log.info({ signal }, 'already shutting down; the graceful stop continues');
      return;
    }
    stopping = true;
    log.info({ signal, gracePeriodSeconds: config.shutdownGracePeriod }, 'shutting down');
    controller.stop().then(
      () => {
        log.info('stopped');
        exit(0);
      },
      (error: unknown) => {
        log.error({ err: error }, 'shutdown failed');
        exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
} catch (error) {
  log.fatal({ err: error }, 'ingress-ts could not start');
  exit(1);
}
