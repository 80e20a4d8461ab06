// check's output on its own: colours only when asked for, other objects' findings, the exit status.
import t from 'tap';
import { checkReport, exitCodeOf, formatTable } from '../../lib/check/report.ts';
import type { Diagnostic, IngressVerdict } from '../../lib/model/index.ts';

const VERDICTS: IngressVerdict[] = [
  { namespace: 'a', name: 'ok', verdict: 'served', findings: [] },
  {
    namespace: 'a',
    name: 'half',
    verdict: 'partly-served',
    findings: [
      {
        code: 'PATH_INVALID',
        severity: 'error',
        message: 'bad path',
        effect: 'drops-part',
        host: 'h',
        path: 'p',
      },
    ],
  },
];
const DIAGNOSTICS: Diagnostic[] = [
  {
    kind: 'ConfigMap',
    namespace: 'i',
    name: 'c',
    severity: 'warning',
    code: 'CONFIG_KEY_UNSUPPORTED',
    message: 'k',
  },
  {
    kind: 'Secret',
    namespace: 'i',
    name: 'default-cert',
    severity: 'warning',
    code: 'DEFAULT_CERTIFICATE_UNUSABLE',
    message: 'missing',
  },
  {
    kind: 'Manifest',
    namespace: '',
    name: 'bad.yaml',
    severity: 'error',
    code: 'MANIFEST_INVALID',
    message: 'does not parse, see http://user:pw@example.com/x',
    file: 'bad.yaml',
    line: 3,
  },
];

t.test('colours only when asked for', async (t) => {
  const report = checkReport(VERDICTS, DIAGNOSTICS);
  t.ok(formatTable(report, 'x', true).includes('\u001b['), 'a terminal');
  t.notOk(formatTable(report, 'x', false).includes('\u001b['), 'not a terminal');
});

t.test('findings on other objects: listed apart, with the file and line, credentials redacted', async (t) => {
  const report = checkReport(VERDICTS, DIAGNOSTICS);
  t.strictSame(report.configMap.findings, [
    { namespace: 'i', name: 'c', code: 'CONFIG_KEY_UNSUPPORTED', severity: 'warning', message: 'k' },
  ]);
  t.match(report.other?.findings, [
    { kind: 'Secret', name: 'default-cert', code: 'DEFAULT_CERTIFICATE_UNUSABLE' },
    { kind: 'Manifest', name: 'bad.yaml', file: 'bad.yaml', line: 3 },
  ]);
  const table = formatTable(report, 'x', false);
  t.match(
    table,
    /^Other objects\n +warning DEFAULT_CERTIFICATE_UNUSABLE \(Secret i\/default-cert\): missing\n +error +MANIFEST_INVALID \(bad\.yaml:3\): /m,
  );
  t.notMatch(table, 'pw@', 'no URL credentials');
  t.match(table, /^a\/half +partly-served\n +error +PATH_INVALID \(p\): bad path$/m);
  t.match(
    table,
    /^2 Ingresses: 1 served, 0 served-with-differences, 1 partly-served, 0 not-served, 0 ignored$/m,
  );
});

t.test('exit status: 1 for partly or not served, else 0', async (t) => {
  t.equal(exitCodeOf(VERDICTS), 1);
  t.equal(exitCodeOf([{ namespace: 'a', name: 'b', verdict: 'not-served', findings: [] }]), 1);
  t.equal(
    exitCodeOf([
      { namespace: 'a', name: 'b', verdict: 'served-with-differences', findings: [] },
      { namespace: 'a', name: 'c', verdict: 'ignored', findings: [] },
    ]),
    0,
  );
  t.equal(exitCodeOf([]), 0);
});
