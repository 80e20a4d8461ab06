// End to end: a standalone controller with --validating-webhook, its certificate and key in a folder
// laid out as the kubelet lays out a Secret volume, real AdmissionReviews posted over TLS verified
// against a generated CA, and the certificate swapped the way the kubelet swaps it.

import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import t from 'tap';
import { ADMISSION_PATH, MAX_BODY_BYTES } from '../../lib/admission/server.ts';
import { parseFlags } from '../../lib/config/flags.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { startFakeApiServer } from '../support/fake-apiserver.ts';
import { get, LOOPBACK_PORT_0, testConfig } from '../support/http.ts';
import { logSink } from '../support/log-sink.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { testThreadsKube } from '../support/threads.ts';

const SERVER_NAME = 'ingress-ts-admission.ingress-ts.svc';

async function certificateAuthority() {
  const ca = await generate([{ name: 'commonName', value: 'webhook test CA' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ],
  });
  return { cert: ca.cert, key: ca.private };
}

async function servingPair(ca: { cert: string; key: string }) {
  const pair = await generate([{ name: 'commonName', value: SERVER_NAME }], {
    keyType: 'ec',
    algorithm: 'sha256',
    ca,
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: SERVER_NAME }] },
    ],
  });
  return { cert: pair.cert, key: pair.private };
}

/** The kubelet's atomic update: a new timestamped folder, `..data` renamed onto it. */
async function kubeletWrite(dir: string, version: string, pair: { cert: string; key: string }) {
  const folder = `..${version}`;
  await mkdir(join(dir, folder));
  await writeFile(join(dir, folder, 'tls.crt'), pair.cert);
  await writeFile(join(dir, folder, 'tls.key'), pair.key);
  await symlink(folder, join(dir, '..data_tmp'));
  await rename(join(dir, '..data_tmp'), join(dir, '..data'));
}

interface Posted {
  status: number;
  body: string;
  json: { response?: Record<string, unknown> } | null;
  fingerprint: string;
}

function post(
  port: number,
  ca: string,
  body: string | null,
  options: { path?: string; method?: string; chunked?: boolean } = {},
): Promise<Posted> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        servername: SERVER_NAME,
        ca,
        agent: false,
        method: options.method ?? 'POST',
        path: options.path ?? ADMISSION_PATH,
        headers: {
          'content-type': 'application/json',
          ...(body === null || options.chunked ? {} : { 'content-length': String(Buffer.byteLength(body)) }),
        },
      },
      (res) => {
        const fingerprint = (res.socket as import('node:tls').TLSSocket).getPeerCertificate().fingerprint256;
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => {
          let json: Posted['json'] = null;
          try {
            json = JSON.parse(text);
          } catch {}
          resolve({ status: res.statusCode ?? 0, body: text, json, fingerprint });
        });
      },
    );
    // the server may close while the rest of an oversized body is still being written
    req.on('error', (error) => {
      if (!req.writableEnded || (error as { code?: string }).code !== 'ECONNRESET') reject(error);
    });
    if (body !== null && options.chunked) {
      const chunk = 'x'.repeat(1024 * 1024);
      for (let written = 0; written < body.length; written += chunk.length) req.write(chunk);
      req.end();
    } else {
      req.end(body ?? undefined);
    }
  });
}

interface ReviewResponse {
  uid?: string;
  allowed?: boolean;
  warnings?: string[];
  status?: { code: number; reason: string; message: string };
}

const responseOf = (reply: Posted): ReviewResponse => (reply.json?.response ?? {}) as ReviewResponse;

function review(uid: string, object: unknown, operation = 'CREATE', extra: object = {}) {
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: 'networking.k8s.io', version: 'v1', kind: 'Ingress' },
      resource: { group: 'networking.k8s.io', version: 'v1', resource: 'ingresses' },
      operation,
      namespace: 'e2e',
      name: (object as { metadata?: { name?: string } } | null)?.metadata?.name ?? '',
      object,
      ...extra,
    },
  });
}

function ingressObject(
  name: string,
  host: string,
  options: {
    annotations?: Record<string, string>;
    className?: string;
    path?: string;
    pathType?: string;
    service?: string;
    tls?: string;
  } = {},
) {
  const annotations: Record<string, string> = {};
  for (const [key, value] of Object.entries(options.annotations ?? {})) {
    annotations[`nginx.ingress.kubernetes.io/${key}`] = value;
  }
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      name,
      namespace: 'e2e',
      uid: `uid-${name}`,
      creationTimestamp: '2026-06-01T00:00:00Z',
      annotations,
    },
    spec: {
      ingressClassName: options.className ?? 'ingress-ts',
      ...(options.tls === undefined ? {} : { tls: [{ hosts: [host], secretName: options.tls }] }),
      rules: [
        {
          host,
          http: {
            paths: [
              {
                path: options.path ?? '/',
                pathType: options.pathType ?? 'Prefix',
                backend: { service: { name: options.service ?? 'web', port: { number: 80 } } },
              },
            ],
          },
        },
      ],
    },
  };
}

/** Log lines as parsed objects; `next` waits for the first line from now on that matches. */
t.test('the validating admission webhook over TLS', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-webhook-'));
  const manifests = join(dir, 'manifests');
  const certs = join(dir, 'certs');
  await mkdir(manifests);
  await mkdir(certs);
  t.teardown(() => rm(dir, { recursive: true, force: true }));

  const ca = await certificateAuthority();
  const first = await servingPair(ca);
  await kubeletWrite(certs, '2026_06_01_00_00_00.1', first);
  await symlink('..data/tls.crt', join(certs, 'tls.crt'));
  await symlink('..data/tls.key', join(certs, 'tls.key'));

  await writeFile(
    join(manifests, 'objects.yaml'),
    `${INGRESS_CLASS}${serviceYaml('web', [1])}${serviceYaml('v2', [2])}${ingressYaml({ name: 'main', host: 'a.test', service: 'web' })}${ingressYaml({ name: 'lone-canary', host: 'b.test', service: 'v2', annotations: { canary: 'true' } })}`,
  );
  const log = logSink();
  const controller = await start(
    testConfig(
      manifests,
      '--validating-webhook=127.0.0.1:0',
      `--validating-webhook-certificate=${join(certs, 'tls.crt')}`,
      `--validating-webhook-key=${join(certs, 'tls.key')}`,
    ),
    createLogger('info', log.stream),
  );
  t.teardown(() => controller.stop(0));
  const port = controller.webhook?.port ?? 0;
  t.ok(port > 0, 'the webhook listens');
  const send = (body: string | null, options?: Parameters<typeof post>[3]) =>
    post(port, ca.cert, body, options);

  t.test('allowed', async (t) => {
    const reply = await send(review('uid-allowed', ingressObject('new', 'new.test')));
    t.equal(reply.status, 200);
    t.strictSame(reply.json, {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'uid-allowed', allowed: true },
    });
  });

  t.test('denied, with every reason', async (t) => {
    const reply = await send(
      review(
        'uid-denied',
        ingressObject('bad', 'bad.test', {
          annotations: {
            'configuration-snippet': 'lua_need_request_body on;',
            'auth-type': 'ldap',
            'proxy-body-size': '8 meters',
          },
        }),
      ),
    );
    t.equal(reply.status, 200);
    const response = responseOf(reply);
    t.equal(response.uid, 'uid-denied');
    t.equal(response.allowed, false);
    t.equal(response.status?.code, 400);
    t.equal(response.status?.reason, 'BadRequest');
    t.match(
      response.status?.message,
      /SNIPPET_REFUSED: annotation nginx\.ingress\.kubernetes\.io\/configuration-snippet/,
    );
    t.match(
      response.status?.message,
      /ANNOTATION_INVALID: annotation nginx\.ingress\.kubernetes\.io\/auth-type="ldap"/,
    );
    const path = await send(
      review('uid-path', ingressObject('bad-path', 'p.test', { path: 'api', pathType: 'Exact' })),
    );
    t.match(responseOf(path).status?.message, /^PATH_INVALID: .*"api"/);
  });

  t.test('warnings for what drops nothing', async (t) => {
    const reply = await send(
      review(
        'uid-warn',
        ingressObject('warned', 'w.test', {
          annotations: { 'fastcgi-index': 'index.php' },
          tls: 'missing',
        }),
      ),
    );
    const response = responseOf(reply);
    t.equal(response.allowed, true);
    t.match(response.warnings, [/^ANNOTATION_UNSUPPORTED: /, /^TLS_SECRET_NOT_FOUND: .*e2e\/missing/]);
  });

  t.test("a host and path served by another Ingress: ingress-nginx's message", async (t) => {
    const reply = await send(review('uid-dup', ingressObject('dup', 'a.test', { service: 'v2' })));
    const response = responseOf(reply);
    t.equal(response.allowed, false);
    t.match(
      response.status?.message,
      /^host "a\.test" and path "\/" is already defined in ingress e2e\/main; /,
    );
  });

  t.test('canaries: one canary and one main pass, two canaries do not', async (t) => {
    const pair = await send(
      review('uid-c1', ingressObject('canary', 'a.test', { service: 'v2', annotations: { canary: 'true' } })),
    );
    t.equal(responseOf(pair).allowed, true, 'a canary of a main');
    const main = await send(review('uid-c2', ingressObject('main-b', 'b.test', { service: 'web' })));
    t.equal(responseOf(main).allowed, true, 'a main under a canary');
    const two = await send(
      review(
        'uid-c3',
        ingressObject('canary-b', 'b.test', { service: 'web', annotations: { canary: 'true' } }),
      ),
    );
    t.match(responseOf(two).status?.message, /already defined in ingress e2e\/lone-canary/);
  });

  t.test('another class and a delete are allowed without a look', async (t) => {
    const other = await send(
      review(
        'uid-other',
        ingressObject('theirs', 'a.test', { className: 'nginx', annotations: { 'server-snippet': 'x' } }),
      ),
    );
    t.strictSame(other.json?.response, { uid: 'uid-other', allowed: true });
    const deleted = await send(
      review('uid-delete', null, 'DELETE', { name: 'main', oldObject: ingressObject('main', 'a.test') }),
    );
    t.strictSame(deleted.json?.response, { uid: 'uid-delete', allowed: true });
  });

  t.test('what is not a review gets 400, a body over the bound 413, never a crash', async (t) => {
    const malformed = await send('{"apiVersion": "admission.k8s.io/v1", "kind": ');
    t.equal(malformed.status, 400);
    t.equal(malformed.body, 'the body is not JSON\n', 'a reason, no stack');
    const service = JSON.parse(review('uid-svc', ingressObject('x', 'x.test'))) as {
      request: { kind: object };
    };
    service.request.kind = { group: '', version: 'v1', kind: 'Service' };
    t.equal((await send(JSON.stringify(service))).status, 400);
    t.equal((await send('null')).status, 400);
    const declared = await send('x'.repeat(MAX_BODY_BYTES + 1));
    t.equal(declared.status, 413, 'Content-Length over the bound');
    const streamed = await send('x'.repeat(MAX_BODY_BYTES + 1024 * 1024), { chunked: true });
    t.equal(streamed.status, 413, 'a chunked body that grows over the bound');
    const wrongPath = await send(review('u', ingressObject('x', 'x.test')), { path: '/validate' });
    t.equal(wrongPath.status, 404);
    const wrongMethod = await send(null, { method: 'GET' });
    t.equal(wrongMethod.status, 405);
    // still answering
    const after = await send(review('uid-after', ingressObject('after', 'after.test')));
    t.equal(responseOf(after).allowed, true);
  });

  t.test('the certificate swapped as the kubelet swaps a Secret volume', async (t) => {
    const before = await send(review('uid-before', ingressObject('n1', 'n1.test')));
    const second = await servingPair(ca);
    const loaded = log.next(/webhook certificate loaded/);
    await kubeletWrite(certs, '2026_06_02_00_00_00.2', second);
    await loaded;
    const after = await send(review('uid-swapped', ingressObject('n2', 'n2.test')));
    t.not(after.fingerprint, before.fingerprint, 'the next handshake presents the new certificate');
    t.equal(after.status, 200);

    // a key that is not the certificate's: the pair in use stays, and the key is never logged
    const mismatch = await servingPair(ca);
    const refused = log.next(/cannot be used/);
    await kubeletWrite(certs, '2026_06_03_00_00_00.3', { cert: mismatch.cert, key: second.key });
    await refused;
    const kept = await send(review('uid-kept', ingressObject('n3', 'n3.test')));
    t.equal(kept.fingerprint, after.fingerprint, 'the last good pair is still served');
    const logged = JSON.stringify(log.lines);
    for (const key of [first.key, second.key, mismatch.key]) {
      t.notOk(logged.includes(key.split('\n')[1] as string), 'no key material in the log');
    }
  });

  t.test('setCertificate, for the certificate provisioned from a Secret', async (t) => {
    const third = await servingPair(ca);
    controller.webhook?.setCertificate(third.cert, third.key);
    const reply = await send(review('uid-set', ingressObject('n4', 'n4.test')));
    t.equal(reply.status, 200);
    t.throws(() => controller.webhook?.setCertificate(third.cert, first.key), /cannot be used/);
    const still = await send(review('uid-set-2', ingressObject('n5', 'n5.test')));
    t.equal(still.fingerprint, reply.fingerprint);
  });

  t.test('metrics', async (t) => {
    const metrics = await get(controller.healthz.port, 'localhost', '/metrics');
    t.match(
      metrics.body,
      /nginx_ingress_controller_check_success\{[^}]*namespace="e2e",ingress="new"[^}]*\} 1\n/,
    );
    t.match(
      metrics.body,
      /nginx_ingress_controller_check_errors\{[^}]*namespace="e2e",ingress="dup"[^}]*\} 1\n/,
    );
    t.match(metrics.body, /ingress_ts_admission_reviews_total\{[^}]*result="invalid"[^}]*\} 3\n/);
    t.match(metrics.body, /ingress_ts_admission_reviews_total\{[^}]*result="ignored"[^}]*\} 2\n/);
    t.match(metrics.body, /nginx_ingress_controller_admission_tested_ingresses\{[^}]*\} \d+\n/);
    t.match(metrics.body, /nginx_ingress_controller_admission_render_ingresses\{[^}]*\} 3\n/);
    t.match(metrics.body, /nginx_ingress_controller_admission_roundtrip_duration\{[^}]*\} [0-9.e-]+\n/);
  });
});

t.test('without certificate files the webhook refuses handshakes until it is given a pair', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-webhook-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'class.yaml'), INGRESS_CLASS);
  const controller = await start(testConfig(dir, '--validating-webhook=127.0.0.1:0'), createLogger('silent'));
  t.teardown(() => controller.stop(0));
  const port = controller.webhook?.port ?? 0;
  const ca = await certificateAuthority();
  await t.rejects(post(port, ca.cert, review('u', ingressObject('x', 'x.test'))));
  const pair = await servingPair(ca);
  controller.webhook?.setCertificate(pair.cert, pair.key);
  const reply = await post(port, ca.cert, review('u', ingressObject('x', 'x.test')));
  t.equal(reply.status, 200);
});

t.test('Kubernetes mode: the webhook answers while the controller is still listing', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-webhook-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const ca = await certificateAuthority();
  const pair = await servingPair(ca);
  await writeFile(join(dir, 'cert'), pair.cert);
  await writeFile(join(dir, 'key'), pair.key);
  const flags = [
    ...LOOPBACK_PORT_0,
    '--disable-leader-election',
    '--validating-webhook=127.0.0.1:0',
    `--validating-webhook-certificate=${join(dir, 'cert')}`,
    `--validating-webhook-key=${join(dir, 'key')}`,
  ];
  const threads = testThreadsKube(flags);
  const main = { ...ingressObject('main', 'a.test'), metadata: { name: 'main', namespace: 'e2e' } };
  const api = await startFakeApiServer({
    objects: [
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'IngressClass',
        metadata: { name: 'ingress-ts' },
        spec: { controller: 'ingress-ts.dev/controller' },
      },
      main,
      ...threads.objects,
    ],
  });
  t.teardown(() => api.close());
  // the Secrets arrive late: until then the controller has not listed everything and builds nothing
  api.delayNext({ verb: 'list', resource: 'secrets' }, 5000);
  const parsed = parseFlags(['--kubeconfig', await api.writeKubeconfig(), ...flags, ...threads.flags]);
  if (parsed.kind !== 'run') throw new Error('expected run');
  const log = logSink();
  const listening = log.next(/validating admission webhook listening/);
  let started = false;
  const starting = start(parsed.config, createLogger('info', log.stream)).then((controller) => {
    started = true;
    return controller;
  });
  t.teardown(async () => (await starting).stop(0));
  const port = Number((await listening).port);
  await api.waitForRequest({ verb: 'list', resource: 'ingresses' });
  // created now, as the API server stamps it before asking: newer than main
  const early = ingressObject('dup', 'a.test');
  early.metadata.creationTimestamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  // the list is answered; the store has it once the client has read it: ask until it shows
  let reply = await post(port, ca.cert, review('uid-early', early));
  for (let i = 0; i < 200 && responseOf(reply).allowed !== false; i++) {
    reply = await post(port, ca.cert, review('uid-early', early));
  }
  const secretsListed = api.requests.some(
    (r) => r.verb === 'list' && r.resource === 'secrets' && r.status !== undefined,
  );
  t.equal(secretsListed, false, 'answered before the Secrets were listed');
  t.equal(started, false, 'answered before the controller started');
  t.match(responseOf(reply).status?.message, /already defined in ingress e2e\/main/, 'against what it has');
  await starting;
});
