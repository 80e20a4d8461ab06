// The webhook's HTTPS server alone, with a review function of the test's: an exception in the review
// is a bare 500 (no stack) reported to onError, the server keeps answering, and close() ends
// keep-alive connections.

import { request } from 'node:https';
import { generate } from 'selfsigned';
import t from 'tap';
import { ADMISSION_PATH, startAdmissionServer } from '../../lib/admission/server.ts';

const kind = { group: 'networking.k8s.io', version: 'v1', kind: 'Ingress' };
const body = (uid: string) =>
  JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: { uid, kind, operation: 'CREATE', namespace: 'ns', object: { metadata: { name: 'x' } } },
  });

function post(port: number, text: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: ADMISSION_PATH,
        rejectUnauthorized: false,
        agent: false,
      },
      (res) => {
        let received = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          received += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: received }));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

t.test('an exception in the review is a bare 500, and the server goes on', async (t) => {
  const pems = await generate([{ name: 'commonName', value: 'webhook' }], {
    keyType: 'ec',
    algorithm: 'sha256',
  });
  const errors: unknown[] = [];
  const server = await startAdmissionServer(
    {
      review: (request) => {
        if (request.uid === 'boom') throw new Error('secret internals at lib/admission/review.ts:42');
        return {
          allowed: true,
          outcome: 'reviewed',
          reasons: [],
          warnings: [],
          ingresses: 1,
          tested: 1,
          selectMs: 0,
          buildMs: 0,
        };
      },
      onError: (error) => errors.push(error),
      certificate: { cert: pems.cert, key: pems.private },
    },
    0,
    '127.0.0.1',
  );
  t.teardown(() => server.close());
  const failed = await post(server.port, body('boom'));
  t.equal(failed.status, 500);
  t.equal(failed.body, 'the review failed\n', 'no stack, no message');
  t.equal(errors.length, 1, 'reported to the caller, who logs it');
  const fine = await post(server.port, body('fine'));
  t.equal(fine.status, 200);
  t.match(JSON.parse(fine.body), { response: { uid: 'fine', allowed: true } });
  t.throws(() => server.setCertificate(pems.cert, 'not a key'), /cannot be used/);
  t.throws(() => server.setCertificate('not a certificate', pems.private), /cannot be used/);
  const still = await post(server.port, body('still'));
  t.equal(still.status, 200, 'the pair in use stays');
});
