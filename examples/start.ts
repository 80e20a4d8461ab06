// `npm start`: ingress-ts in standalone mode over examples/manifests, with the demo backends, on
// unprivileged ports. Extra arguments are passed on as flags (e.g. `npm start -- --log-level debug`).

import { argv, exit, stdout } from 'node:process';
import { ConfigError, parseFlags } from '../lib/config/flags.ts';
import { createLogger, wantsPrettyLogs } from '../lib/log.ts';
import { start } from '../lib/main.ts';
import { startDemoBackends } from './demo-backends.ts';

const manifests = new URL('./manifests', import.meta.url).pathname;
let parsed: ReturnType<typeof parseFlags>;
try {
  parsed = parseFlags([
    '--manifests',
    manifests,
    '--http-port',
    '8080',
    '--https-port',
    '8443',
    '--healthz-port',
    '10254',
    ...argv.slice(2),
  ]);
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`npm start: ${error.message}\n`);
  exit(2);
}
if (parsed.kind !== 'run') exit(0);

const backends = await startDemoBackends();
const prettyLogs = wantsPrettyLogs();
const log = createLogger(parsed.config.logLevel, undefined, prettyLogs);
const controller = await start(parsed.config, log, { prettyLogs });
const http = controller.http.port;
const https = controller.https.port;
stdout.write(`
ingress-ts is serving examples/manifests on http :${http}, https :${https}, health :${controller.healthz.port}
Try:
  curl -H 'Host: app.example.test' http://127.0.0.1:${http}/              # app (round robin over 2 backends)
  curl -H 'Host: app.example.test' http://127.0.0.1:${http}/api/users     # api
  curl -H 'Host: pr-42.preview.example.test' http://127.0.0.1:${http}/    # wildcard host
  curl -i -H 'Host: secure.example.test' http://127.0.0.1:${http}/        # 308 to HTTPS
  curl -k --resolve secure.example.test:${https}:127.0.0.1 https://secure.example.test:${https}/
  curl -H 'Host: unknown.example.test' http://127.0.0.1:${http}/          # catch-all default backend
  curl -H 'Host: gw.example.test' http://127.0.0.1:${http}/               # HTTPRoute: app 9 in 10, api 1 in 10
  curl -H 'Host: gw.example.test' -H 'x-version: v2' http://127.0.0.1:${http}/   # HTTPRoute: api
  curl http://127.0.0.1:${controller.healthz.port}/healthz
Edit examples/manifests/*.yaml and the change applies within a second. Ctrl-C stops.

`);
const shutdown = () => {
  controller.stop().then(async () => {
    await backends.close();
    exit(0);
  });
};
process.once('SIGINT', shutdown);
process.once('SIGTERM', shutdown);
