// A standalone controller serving one host, site.test, from a local backend, with the ConfigMap
// data the test gives (e.g. `{ worker-processes: "2" }`): what the e2e tests of data-plane threads
// start. The caller passes the streams its logs go to.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { Test } from 'tap';
import { createLogger } from '../../lib/log.ts';
import { type Controller, start } from '../../lib/main.ts';
import { listen, testConfig } from './http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from './manifests.ts';

export const configMap = (data: string) => `apiVersion: v1
kind: ConfigMap
metadata: { name: config, namespace: e2e }
data: ${data}
`;

export interface SiteStreams {
  /** the access log's output */
  accessLog: Writable;
  /** the process log's output (level info); default: dropped (level warn) */
  log?: Writable;
}

export interface ThreadsSite {
  controller: Controller;
  /** the manifests folder: config.yaml (the ConfigMap) and site.yaml */
  dir: string;
  /** set `stopped` when the test stops the controller itself */
  running: { stopped: boolean };
}

export async function startSite(
  t: Test,
  config: string,
  streams: SiteStreams,
  handler?: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<ThreadsSite> {
  const backend = createServer(
    handler ??
      ((req, res) => {
        req.resume();
        res.end('hello');
      }),
  );
  const backendPort = await listen(backend);
  t.teardown(() => {
    backend.closeAllConnections();
    return new Promise<void>((resolve) => backend.close(() => resolve()));
  });
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-threads-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'config.yaml'), configMap(config));
  await writeFile(
    join(dir, 'site.yaml'),
    `${INGRESS_CLASS}${serviceYaml('web', [backendPort])}${ingressYaml({ name: 'site', host: 'site.test', service: 'web' })}`,
  );
  const logger =
    streams.log === undefined
      ? createLogger('warn', new Writable({ write: (_chunk, _encoding, done) => done() }))
      : createLogger('info', streams.log);
  const controller = await start(testConfig(dir, '--configmap', 'e2e/config'), logger, {
    accessLogStdout: streams.accessLog,
  });
  const running = { stopped: false };
  t.teardown(() => (running.stopped ? undefined : controller.stop(0)));
  return { controller, dir, running };
}
