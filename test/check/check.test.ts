// `ingress-ts check` through the real binary: a folder with each verdict (table, JSON, exit status),
// the output of `kubectl get ... -A -o yaml`, usage errors, and no Secret value in what it prints.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import type { CheckReport } from '../../lib/check/report.ts';

const run = promisify(execFile);
// each run starts a process (a few seconds on a loaded machine): tap's 30 s default is too short
t.setTimeout(120_000);
const bin = new URL('../../bin/ingress-ts.ts', import.meta.url).pathname;
const fixtures = new URL('../fixtures/check/', import.meta.url).pathname;
const verdicts = `${fixtures}verdicts`;
const kubectl = `${fixtures}kubectl`;
const NGINX_CLASS = ['--ingress-class', 'nginx', '--controller-class', 'k8s.io/ingress-nginx'];
// values of the fixtures' Secrets, as written and as stored
const SECRET_VALUES = ['s3cr3t-do-not-print', 'hunter2-do-not-print', 'aHVudGVyMi1kby1ub3QtcHJpbnQ='];

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the binary; resolves with its exit status and output whatever the status. */
async function check(...args: string[]): Promise<Ran> {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, 'check', ...args], {
      // without tap's per-module hook (NODE_OPTIONS): it triples the CPU of a run, and is only coverage
      env: { ...process.env, NO_COLOR: '', NODE_OPTIONS: '' },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}

t.test('a folder with each verdict: the table, its summary and exit 1', async (t) => {
  const ran = await check('--manifests', verdicts, '--configmap', 'ingress/ingress-ts');
  t.equal(ran.code, 1, 'an Ingress is partly or not served');
  const lines = ran.stdout.split('\n');
  const row = (name: string) => lines.find((line) => line.startsWith(`shop/${name} `))?.split(/\s+/)[1];
  t.equal(row('served'), 'served');
  t.equal(row('differs'), 'served-with-differences');
  t.equal(row('part'), 'partly-served');
  t.equal(row('snippet'), 'not-served');
  t.equal(row('locked'), 'not-served', 'its paths answer 503');
  t.equal(row('legacy'), 'not-served', 'an extensions/v1beta1 Ingress is not read');
  t.equal(row('other-class'), 'ignored');
  t.match(
    ran.stdout,
    /^shop\/differs +served-with-differences\n +warning ANNOTATION_UNSUPPORTED: annotation nginx\.ingress\.kubernetes\.io\/fastcgi-index/m,
  );
  t.match(
    ran.stdout,
    /^shop\/part +partly-served\n +error +PATH_INVALID \(relative\): /m,
    'the path it is about',
  );
  t.match(
    ran.stdout,
    /^ConfigMap ingress\/ingress-ts\n +info +CONFIG_KEY_NOT_APPLICABLE: ConfigMap key use-geoip2/m,
  );
  t.match(
    ran.stdout,
    /^7 Ingresses: 1 served, 1 served-with-differences, 1 partly-served, 3 not-served, 1 ignored$/m,
  );
  t.notOk(ran.stdout.includes('\u001b['), 'no colours when not a terminal');
  for (const value of SECRET_VALUES) t.notMatch(ran.stdout + ran.stderr, value, 'no Secret value');
});

t.test('the same folder as JSON', async (t) => {
  const ran = await check('--manifests', verdicts, '--configmap', 'ingress/ingress-ts', '--output', 'json');
  t.equal(ran.code, 1);
  const report = JSON.parse(ran.stdout) as CheckReport;
  t.strictSame(Object.keys(report), ['ingresses', 'configMap'], 'nothing on other objects here');
  t.strictSame(
    report.ingresses.map((i) => [i.name, i.verdict]),
    [
      ['differs', 'served-with-differences'],
      ['legacy', 'not-served'],
      ['locked', 'not-served'],
      ['other-class', 'ignored'],
      ['part', 'partly-served'],
      ['served', 'served'],
      ['snippet', 'not-served'],
    ],
  );
  const part = report.ingresses.find((i) => i.name === 'part');
  t.strictSame(part?.findings, [
    {
      code: 'PATH_INVALID',
      severity: 'error',
      message:
        'spec.rules[0].http.paths[1].path "relative" must be an absolute path (start with "/") for pathType Exact; the path is ignored',
      path: 'relative',
    },
  ]);
  t.strictSame(Object.keys(report.ingresses.find((i) => i.name === 'snippet')?.findings[0] ?? {}), [
    'code',
    'severity',
    'message',
  ]);
  t.match(report.ingresses.find((i) => i.name === 'legacy')?.findings, [
    { code: 'MANIFEST_API_VERSION_IGNORED' },
  ]);
  t.match(report.configMap.findings, [{ code: 'CONFIG_KEY_NOT_APPLICABLE', severity: 'info' }]);
  for (const value of SECRET_VALUES) t.notMatch(ran.stdout, value, 'no Secret value');
});

t.test('only served Ingresses (differences allowed): exit 0', async (t) => {
  const dir = t.testdir({
    'all.yaml': [
      'apiVersion: networking.k8s.io/v1',
      'kind: Ingress',
      'metadata: { name: a, namespace: shop, annotations: { nginx.ingress.kubernetes.io/fastcgi-index: x } }',
      'spec:',
      '  rules:',
      '    - host: a.example.com',
      '      http: { paths: [ { path: /, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } } ] }',
    ].join('\n'),
  });
  const ran = await check('--manifests', dir, '--watch-ingress-without-class');
  t.equal(ran.code, 0);
  t.match(ran.stdout, /^shop\/a +served-with-differences$/m);
  t.match(ran.stdout, /1 Ingress: 0 served, 1 served-with-differences/);
});

t.test(
  'a header snippet where ingress-nginx accepts snippets: served, the same build as the proxy',
  async (t) => {
    const ingress = (name: string, snippet: string) =>
      [
        '---',
        'apiVersion: networking.k8s.io/v1',
        'kind: Ingress',
        `metadata: { name: ${name}, namespace: shop, annotations: { nginx.ingress.kubernetes.io/configuration-snippet: ${JSON.stringify(snippet)} } }`,
        'spec:',
        '  rules:',
        `    - host: ${name}.example.com`,
        '      http: { paths: [ { path: /, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } } ] }',
      ].join('\n');
    const manifests = [
      ingress(
        'headers',
        'more_set_headers "X-Frame-Options: DENY";\nadd_header Cache-Control no-store always;',
      ),
      ingress('lua', 'more_set_headers "X-A: 1";\naccess_by_lua_block { ngx.exit(403) }'),
    ].join('\n');
    const config = (data: string) =>
      `---\napiVersion: v1\nkind: ConfigMap\nmetadata: { name: ingress-ts, namespace: ingress }\ndata: { ${data} }\n`;
    const dir = t.testdir({
      'ingresses.yaml': manifests,
      'config.yaml': config('allow-snippet-annotations: "true", annotations-risk-level: Critical'),
    });
    const ran = await check(
      '--manifests',
      dir,
      '--watch-ingress-without-class',
      '--configmap',
      'ingress/ingress-ts',
      '-o',
      'json',
    );
    t.equal(ran.code, 1, 'the Lua one is not served');
    const report = JSON.parse(ran.stdout) as CheckReport;
    const of = (name: string) => report.ingresses.find((i) => i.name === name);
    t.match(of('headers'), { verdict: 'served', findings: [{ code: 'SNIPPET_READ', severity: 'info' }] });
    t.match(of('lua'), {
      verdict: 'not-served',
      findings: [{ code: 'SNIPPET_REFUSED', message: /access_by_lua_block/ }],
    });

    const before = t.testdir({
      'ingresses.yaml': manifests,
      'config.yaml': config('allow-snippet-annotations: "true"'),
    });
    const refused = await check(
      '--manifests',
      before,
      '--watch-ingress-without-class',
      '--configmap',
      'ingress/ingress-ts',
      '-o',
      'json',
    );
    const all = (JSON.parse(refused.stdout) as CheckReport).ingresses;
    t.match(
      all,
      [{ verdict: 'not-served' }, { verdict: 'not-served' }],
      'without the Critical risk level: as before',
    );
  },
);

t.test('the output of kubectl get ... -A -o yaml: a List of every kind', async (t) => {
  const ignored = await check('--manifests', kubectl);
  t.equal(ignored.code, 0, 'nothing of the class to fail');
  t.match(ignored.stdout, /^shop\/shop +ignored$/m);
  t.match(ignored.stderr, /Every Ingress is of another class: pass the class flags.*--ingress-class nginx/);

  const ran = await check(
    '--manifests',
    kubectl,
    ...NGINX_CLASS,
    '--configmap',
    'ingress-nginx/ingress-nginx-controller',
    '-o',
    'json',
  );
  t.equal(ran.code, 1);
  const report = JSON.parse(ran.stdout) as CheckReport;
  t.match(report.ingresses, [
    { namespace: 'shop', name: 'admin', verdict: 'not-served', findings: [{ code: 'SNIPPET_REFUSED' }] },
    {
      namespace: 'shop',
      name: 'shop',
      verdict: 'served-with-differences',
      findings: [{ code: 'TLS_SECRET_NOT_FOUND' }],
    },
  ]);
  t.equal(
    report.ingresses[1]?.findings.length,
    1,
    'its Service, EndpointSlice and class were read from the List',
  );
  t.strictSame(report.configMap.findings, [], 'the ConfigMap was read from the List');
  for (const value of SECRET_VALUES) t.notMatch(ran.stdout + ran.stderr, value, 'no Secret value');
});

t.test('usage errors exit 2; an unreadable folder exits 3', async (t) => {
  const unknown = await check('--manifests', verdicts, '--no-such-flag');
  t.match(unknown, {
    code: 2,
    stdout: '',
    stderr: /Unknown option '--no-such-flag'.*\nRun ingress-ts check --help/s,
  });
  t.match(await check('--manifests', verdicts, '--output', 'yaml'), {
    code: 2,
    stderr: /--output must be one of table, json, got "yaml"/,
  });
  t.match(await check('--manifests', verdicts, '-o'), { code: 2, stderr: /needs a value/ });
  t.match(await check('--manifests', verdicts, '--kubeconfig', '/x'), {
    code: 2,
    stderr: /--kubeconfig has no meaning with --manifests/,
  });
  t.match(await check('--manifests', verdicts, '--default-backend-service', 'no-slash'), { code: 2 });
  t.match(await check('--manifests', `${fixtures}no-such-folder`), {
    code: 3,
    stderr: /cannot read the manifest directory/,
  });
});

t.test('--help: the subcommand has its own, and the main help names it', async (t) => {
  const help = await check('--help');
  t.equal(help.code, 0);
  for (const flag of [
    '--manifests DIR',
    '--kubeconfig FILE',
    '--output',
    '--ingress-class',
    '--controller-class',
    '--watch-ingress-without-class',
    '--ingress-class-by-name',
    '--configmap',
    '--watch-namespace',
    '--default-backend-service',
    '--default-ssl-certificate',
  ]) {
    t.match(help.stdout, flag);
  }
  t.match(help.stdout, /Exit status: 0 .* 1 .*\n.* 2 a usage error/);
  const { stdout } = await run(process.execPath, [bin, '--help']);
  t.match(stdout, /ingress-ts check \[flags\]/);
});
