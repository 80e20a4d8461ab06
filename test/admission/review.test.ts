// The review of one Ingress as a table: a stored cluster, the Ingress under review, the verdict,
// the reasons and the warnings. No sockets: reviewIngress is a function of its inputs.

import t from 'tap';
import { admissionResponse, readAdmissionReview } from '../../lib/admission/admission-review.ts';
import { type ReviewInput, reviewIngress } from '../../lib/admission/review.ts';
import { DEFAULT_MODEL_OPTIONS, type Ingress, type ModelOptions } from '../../lib/model/index.ts';
import { ingress, path, rule, snapshotOf } from '../model/helpers.ts';

const STORED = [
  ingress('main', { rules: [rule('a.test', path('/', 'web'), path('/exact', 'web', 'Exact'))] }),
  ingress('lone-canary', {
    created: 1,
    nginx: { canary: 'true' },
    rules: [rule('b.test', path('/', 'web'))],
  }),
  ingress('a-canary', { created: 2, nginx: { canary: 'true' }, rules: [rule('c.test', path('/', 'v2'))] }),
  ingress('c-main', { created: 3, rules: [rule('c.test', path('/', 'web'))] }),
  ingress('flagged', { created: 4, nginx: { canary: 'false' }, rules: [rule('d.test', path('/', 'web'))] }),
  ingress('catch-all', { created: 5, defaultBackend: 'web' }),
  ingress('e-main', { created: 1, rules: [rule('e.test', path('/', 'web'))] }),
  ingress('e-canary', { created: 2, nginx: { canary: 'true' }, rules: [rule('e.test', path('/', 'v2'))] }),
];

interface Case {
  candidate: Ingress;
  operation?: ReviewInput['operation'];
  options?: Partial<ModelOptions>;
  watchNamespace?: string;
  allowed: boolean;
  outcome?: 'ignored' | 'reviewed';
  reasons?: RegExp[];
  warnings?: RegExp[];
}

const NEW = 100;

const CASES: Record<string, Case> = {
  'a new host': {
    candidate: ingress('new', { created: NEW, rules: [rule('new.test', path('/', 'web'))] }),
    allowed: true,
    reasons: [],
    warnings: [],
  },
  'another class: not looked at': {
    candidate: ingress('theirs', {
      className: 'nginx',
      nginx: { 'configuration-snippet': 'return 200;' },
      rules: [rule('a.test', path('/', 'web'))],
    }),
    allowed: true,
    outcome: 'ignored',
  },
  'outside --watch-namespace: not looked at': {
    candidate: ingress('elsewhere', {
      created: NEW,
      namespace: 'team',
      nginx: { 'configuration-snippet': 'return 200;' },
      rules: [rule('a.test', path('/', 'web'))],
    }),
    watchNamespace: 'default',
    allowed: true,
    outcome: 'ignored',
  },
  'inside --watch-namespace': {
    candidate: ingress('inside', { created: NEW, rules: [rule('a.test', path('/', 'web'))] }),
    watchNamespace: 'default',
    allowed: false,
  },
  'a delete': {
    candidate: ingress('main', { rules: [rule('a.test', path('/', 'web'))] }),
    operation: 'DELETE',
    allowed: true,
    outcome: 'ignored',
  },
  'a refused snippet, an unknown auth-type and a bad allow-list: every reason': {
    candidate: ingress('bad', {
      created: NEW,
      nginx: {
        'configuration-snippet': 'lua_need_request_body on;',
        'auth-type': 'ldap',
        'whitelist-source-range': 'nope',
      },
      rules: [rule('bad.test', path('/', 'web'))],
    }),
    allowed: false,
    reasons: [
      /^SNIPPET_REFUSED: .*configuration-snippet/,
      /^ANNOTATION_INVALID: .*whitelist-source-range/,
      /^ANNOTATION_INVALID: .*auth-type="ldap"/,
    ],
  },
  'a bad path': {
    candidate: ingress('bad-path', { created: NEW, rules: [rule('p.test', path('api', 'web', 'Exact'))] }),
    allowed: false,
    reasons: [/^PATH_INVALID: .*"api" must be an absolute path/],
  },
  "a host and path another Ingress serves: ingress-nginx's message first": {
    candidate: ingress('dup', { created: NEW, rules: [rule('a.test', path('/', 'other'))] }),
    allowed: false,
    reasons: [
      /^host "a\.test" and path "\/" is already defined in ingress default\/main$/,
      /^PATH_CONFLICT: /,
    ],
  },
  'the same path with another pathType: ingress-nginx compares paths only': {
    candidate: ingress('dup-type', { created: NEW, rules: [rule('a.test', path('/exact', 'other'))] }),
    allowed: false,
    reasons: [/^host "a\.test" and path "\/exact" is already defined in ingress default\/main$/],
  },
  'a canary of a main route': {
    candidate: ingress('canary', {
      created: NEW,
      nginx: { canary: 'true' },
      rules: [rule('a.test', path('/', 'v2'))],
    }),
    allowed: true,
    reasons: [],
  },
  'a second canary of a main route: it would get no traffic': {
    candidate: ingress('canary-2', {
      created: NEW,
      nginx: { canary: 'true' },
      rules: [rule('e.test', path('/', 'v3'))],
    }),
    allowed: false,
    reasons: [/^CANARY_CONFLICT: .*default\/e-canary/],
  },
  'a second canary where the first is older than the main: it owns the location': {
    candidate: ingress('canary-3', {
      created: NEW,
      nginx: { canary: 'true' },
      rules: [rule('c.test', path('/', 'v3'))],
    }),
    allowed: false,
    reasons: [
      /^host "c\.test" and path "\/" is already defined in ingress default\/a-canary$/,
      /^CANARY_CONFLICT: /,
    ],
  },
  'two canaries and no main: the older owns the location': {
    candidate: ingress('canary-b', {
      created: NEW,
      nginx: { canary: 'true' },
      rules: [rule('b.test', path('/', 'v2'))],
    }),
    allowed: false,
    reasons: [/^host "b\.test" and path "\/" is already defined in ingress default\/lone-canary$/],
    warnings: [/^CANARY_NO_MAIN: /],
  },
  'a main on a path a canary took first: allowed, the canary now shadows it': {
    candidate: ingress('main-b', { created: NEW, rules: [rule('b.test', path('/', 'v2'))] }),
    allowed: true,
  },
  'canary "false" against a main: not both missing, as ingress-nginx': {
    candidate: ingress('not-canary', {
      created: NEW,
      nginx: { canary: 'false' },
      rules: [rule('a.test', path('/v', 'web'))],
    }),
    allowed: true,
  },
  'a main against canary "false"': {
    candidate: ingress('vs-flagged', { created: NEW, rules: [rule('d.test', path('/', 'other'))] }),
    allowed: false,
    reasons: [/^PATH_CONFLICT: .*default\/flagged/],
  },
  'an update of the owner keeps its paths': {
    candidate: ingress('main', {
      nginx: { 'proxy-read-timeout': '30' },
      rules: [rule('a.test', path('/', 'web'))],
    }),
    operation: 'UPDATE',
    allowed: true,
    reasons: [],
  },
  'a second catch-all': {
    candidate: ingress('catch-all-2', { created: NEW, defaultBackend: 'other' }),
    allowed: false,
    reasons: [/^DEFAULT_BACKEND_CONFLICT: .*default\/catch-all/],
  },
  'a catch-all with --disable-catch-all': {
    candidate: ingress('catch-all', { created: 5, defaultBackend: 'web' }),
    operation: 'UPDATE',
    options: { disableCatchAll: true },
    allowed: false,
    reasons: [/^CATCH_ALL_DISABLED: /],
  },
  'findings that drop nothing are warnings': {
    candidate: ingress('warned', {
      created: NEW,
      nginx: { 'fastcgi-index': 'index.php' },
      tls: [{ hosts: ['w.test'], secretName: 'missing' }],
      rules: [rule('w.test', path('/', 'web'))],
    }),
    allowed: true,
    reasons: [],
    warnings: [/^ANNOTATION_UNSUPPORTED: .*fastcgi-index/, /^TLS_SECRET_NOT_FOUND: .*default\/missing/],
  },
  'a regex RE2 refuses': {
    candidate: ingress('regex', {
      created: NEW,
      nginx: { 'use-regex': 'true' },
      rules: [rule('r.test', path('/(a)\\1', 'web', 'ImplementationSpecific'))],
    }),
    allowed: false,
    reasons: [/^PATH_REGEX_INVALID: /],
  },
  'credentials in a refused value are not echoed': {
    candidate: ingress('secret-url', {
      created: NEW,
      nginx: { 'auth-url': 'http://user:hunter2@auth.test/check?token=abc', 'auth-type': 'ldap' },
      rules: [rule('s.test', path('/', 'web'))],
    }),
    allowed: false,
    reasons: [
      /^ANNOTATION_INVALID: .*auth-type/,
      /^ANNOTATION_INVALID: .*auth-url="http:\/\/\*\*\*@auth\.test/,
    ],
  },
};

t.test('verdicts', async (t) => {
  const snapshot = snapshotOf({ ingresses: STORED });
  for (const [name, c] of Object.entries(CASES)) {
    const operation = c.operation ?? 'CREATE';
    const old = STORED.find((i) => i.metadata?.name === c.candidate.metadata?.name) ?? null;
    const verdict = reviewIngress(
      {
        operation,
        object: operation === 'DELETE' ? null : c.candidate,
        oldObject: operation === 'CREATE' ? null : old,
        namespace: 'default',
      },
      {
        snapshot,
        options: { ...DEFAULT_MODEL_OPTIONS, ...c.options },
        now: '2026-02-01T00:00:00Z',
        watchNamespace: c.watchNamespace ?? null,
      },
    );
    t.equal(verdict.allowed, c.allowed, `${name}: allowed`);
    t.equal(verdict.outcome, c.outcome ?? 'reviewed', `${name}: outcome`);
    if (c.reasons !== undefined) {
      t.equal(
        verdict.reasons.length,
        c.reasons.length,
        `${name}: reasons ${JSON.stringify(verdict.reasons)}`,
      );
      for (const [i, re] of c.reasons.entries()) t.match(verdict.reasons[i], re, `${name}: reason ${i}`);
    }
    if (c.warnings !== undefined) {
      t.equal(
        verdict.warnings.length,
        c.warnings.length,
        `${name}: warnings ${JSON.stringify(verdict.warnings)}`,
      );
      for (const [i, re] of c.warnings.entries()) t.match(verdict.warnings[i], re, `${name}: warning ${i}`);
    }
    for (const text of [...verdict.reasons, ...verdict.warnings]) {
      t.notMatch(text, /hunter2|token=abc/, `${name}: no credential`);
    }
  }
});

t.test(
  'an Ingress written without creationTimestamp is the newest (as the API server stamps it)',
  async (t) => {
    const snapshot = snapshotOf({ ingresses: STORED });
    const candidate = ingress('fresh', { rules: [rule('a.test', path('/', 'other'))] });
    delete candidate.metadata?.creationTimestamp;
    delete candidate.metadata?.namespace;
    const verdict = reviewIngress(
      { operation: 'CREATE', object: candidate, oldObject: null, namespace: 'default' },
      { snapshot, options: DEFAULT_MODEL_OPTIONS, now: '2026-02-01T00:00:00Z' },
    );
    t.equal(verdict.allowed, false);
    t.match(verdict.reasons[0], /already defined in ingress default\/main/);
    t.equal(verdict.ingresses, STORED.length + 1, 'the Ingresses of the class with it');
    t.equal(verdict.tested, 2, 'built: main and the candidate');
  },
);

t.test('AdmissionReview in and out', async (t) => {
  const review = (request: unknown, extra: object = {}) =>
    JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request, ...extra });
  const kind = { group: 'networking.k8s.io', version: 'v1', kind: 'Ingress' };
  const object = ingress('x');
  const bad: Array<[string, RegExp]> = [
    ['{', /not JSON/],
    ['[]', /not an admission.k8s.io\/v1 AdmissionReview/],
    [JSON.stringify({ apiVersion: 'admission.k8s.io/v1beta1', kind: 'AdmissionReview' }), /not an admission/],
    [review(null), /no request with a uid/],
    [review({ uid: '', kind, operation: 'CREATE', object }), /no request with a uid/],
    [
      review({ uid: 'u', kind: { ...kind, kind: 'Service' }, operation: 'CREATE', object }),
      /not about a networking.k8s.io\/v1 Ingress/,
    ],
    [review({ uid: 'u', kind: { ...kind, version: 'v1beta1' }, operation: 'CREATE', object }), /not about/],
    [review({ uid: 'u', kind, operation: 'PATCH', object }), /no known operation/],
    [review({ uid: 'u', kind, operation: 'CREATE', object: 'text' }), /not an object/],
    [review({ uid: 'u', kind, operation: 'CREATE' }), /CREATE has no object/],
  ];
  for (const [body, message] of bad) {
    const read = readAdmissionReview(body);
    t.ok('error' in read && message.test(read.error), `${body.slice(0, 60)} → ${JSON.stringify(read)}`);
  }
  const good = readAdmissionReview(
    review({ uid: 'u-1', kind, operation: 'DELETE', namespace: 'ns', name: 'x', oldObject: object }),
  );
  t.strictSame(good, {
    request: { uid: 'u-1', operation: 'DELETE', namespace: 'ns', name: 'x', object: null, oldObject: object },
  });
  const named = readAdmissionReview(review({ uid: 'u-2', kind, operation: 'CREATE', object }));
  t.equal('request' in named && named.request.name, 'x', 'the name from the object (generateName)');

  t.strictSame(admissionResponse('u-1', { allowed: true, reasons: [], warnings: [] }), {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: { uid: 'u-1', allowed: true },
  });
  t.strictSame(
    admissionResponse('u-2', { allowed: false, reasons: ['one', 'two'], warnings: ['w'] }).response,
    {
      uid: 'u-2',
      allowed: false,
      status: { status: 'Failure', code: 400, reason: 'BadRequest', message: 'one; two' },
      warnings: ['w'],
    },
  );
});
