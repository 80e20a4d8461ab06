// --validating-webhook and its files, as ingress-nginx's manifests pass them.

import t from 'tap';
import { helpText, parseFlags } from '../../lib/config/flags.ts';

function run(args: string[]) {
  const parsed = parseFlags(args);
  if (parsed.kind !== 'run') throw new Error(`expected run, got ${parsed.kind}`);
  return parsed;
}

t.test('the listen address as Go takes it', async (t) => {
  const cases: Array<[string, { host: string; port: number }]> = [
    [':8443', { host: '', port: 8443 }],
    ['0.0.0.0:8443', { host: '0.0.0.0', port: 8443 }],
    ['127.0.0.1:0', { host: '127.0.0.1', port: 0 }],
    ['[::1]:9443', { host: '::1', port: 9443 }],
  ];
  for (const [value, expected] of cases) {
    t.strictSame(run([`--validating-webhook=${value}`]).config.webhook, { ...expected, files: null }, value);
  }
  t.equal(run([]).config.webhook, null, 'off by default');
  t.equal(run(['--validating-webhook=']).config.webhook, null, 'empty: off');
});

t.test('the certificate and key files', async (t) => {
  const { config, ignored } = run([
    '--validating-webhook=:8443',
    '--validating-webhook-certificate=/certs/cert',
    '--validating-webhook-key',
    '/certs/key',
  ]);
  t.strictSame(config.webhook?.files, { cert: '/certs/cert', key: '/certs/key' });
  t.strictSame(ignored, []);
  t.ok(Object.isFrozen(config.webhook), 'frozen with the rest');
  const alone = run(['--validating-webhook-certificate=/c', '--validating-webhook-key=/k']);
  t.equal(alone.config.webhook, null);
  t.strictSame(
    alone.ignored.map((i) => i.flag),
    ['--validating-webhook-certificate', '--validating-webhook-key'],
    'named in the warning without --validating-webhook',
  );
});

t.test('refused', async (t) => {
  const bad: Array<[string[], RegExp]> = [
    [['--validating-webhook=8443'], /--validating-webhook must be ADDR:PORT such as :8443, got "8443"/],
    [['--validating-webhook=:https'], /--validating-webhook must be a port number/],
    [['--validating-webhook=:70000'], /--validating-webhook must be a port number/],
    [
      ['--validating-webhook=:8443', '--validating-webhook-certificate=/c'],
      /--validating-webhook-certificate and --validating-webhook-key go together/,
    ],
  ];
  for (const [argv, message] of bad) {
    t.throws(() => parseFlags(argv), { code: 'ERR_INGRESS_TS_CONFIG', message }, argv.join(' '));
  }
});

t.test('--help names them', async (t) => {
  const help = helpText('test');
  for (const flag of [
    '--validating-webhook VALUE',
    '--validating-webhook-certificate',
    '--validating-webhook-key',
  ]) {
    t.match(help, flag);
  }
  t.match(help, /--disable-full-test/, 'the no-effect one is listed with the others');
});
