// One-thread mode's finished requests reach the metrics and the access log a run at a time, and
// never late for a reader: a scrape (`collected`), new settings and the close hand on what waits
// first; a quiet moment hands it on after the delay.
import { once } from 'node:events';
import t, { type Test } from 'tap';
import type { AccessLog, AccessLogSettings } from '../../lib/access-log.ts';
import { observeTraffic } from '../../lib/controller/traffic.ts';
import { requestLogged, requestRefused } from '../../lib/dataplane/events.ts';
import type { RequestRecord } from '../../lib/dataplane/request-record.ts';
import { createLogger } from '../../lib/log.ts';
import type { ControllerMetrics } from '../../lib/metrics/controller.ts';
import { DEFAULT_LOG_FORMAT_UPSTREAM } from '../../lib/model/configmap/log-format.ts';
import { record } from '../support/request-record.ts';

const SETTINGS: AccessLogSettings = {
  path: '',
  disabled: false,
  skipUrls: [],
  format: DEFAULT_LOG_FORMAT_UPSTREAM,
  escapeJson: false,
  escapeNone: false,
};

/** What the metrics and the access log were handed, in order. */
function setUp(t: Test, recordDelayMs: number) {
  const events: string[] = [];
  const metrics = { observe: (r: RequestRecord) => events.push(`measured ${r.uri}`) };
  const written = new EventTarget();
  const accessLog: AccessLog = {
    write: (r, time) => {
      events.push(`line ${r.uri}`);
      t.type(time, 'number');
      written.dispatchEvent(new Event('line'));
    },
    writeLines: () => {},
    configure: (settings) => events.push(`configured ${settings.disabled ? 'off' : 'on'}`),
    destination: 'stdout',
    close: async () => {
      events.push('closed');
    },
  };
  const traffic = observeTraffic(createLogger('silent'), metrics as unknown as ControllerMetrics, accessLog, {
    recordDelayMs,
  });
  traffic.configure(SETTINGS);
  events.length = 0;
  t.teardown(() => traffic.close());
  return { traffic, events, written };
}

t.test('a scrape hands on what waits first', async (t) => {
  // a delay no test waits for: only `collected` can hand the records on
  const { traffic, events } = setUp(t, 3_600_000);
  requestLogged.publish(record({ uri: '/a' }));
  requestRefused.publish(record({ uri: '/refused', status: 400, refused: true }));
  requestLogged.publish(record({ uri: '/b' }));
  t.strictSame(events, [], 'a run waits');
  await traffic.collected();
  t.strictSame(events, ['measured /a', 'line /a', 'line /refused', 'measured /b', 'line /b']);
});

t.test('new settings and the close hand on what waits first', async (t) => {
  const { traffic, events } = setUp(t, 3_600_000);
  requestLogged.publish(record({ uri: '/before' }));
  traffic.configure({ ...SETTINGS, disabled: true });
  t.strictSame(
    events,
    ['measured /before', 'line /before', 'configured off'],
    'under the settings it ended with',
  );
  requestLogged.publish(record({ uri: '/after' }));
  await traffic.close();
  t.strictSame(events.slice(3), ['measured /after', 'closed'], 'measured, and no line with the log off');
});

t.test('a quiet moment hands the run on after the delay', async (t) => {
  const { events, written } = setUp(t, 5);
  requestLogged.publish(record({ uri: '/alone' }));
  t.strictSame(events, []);
  await once(written, 'line');
  t.strictSame(events, ['measured /alone', 'line /alone']);
});
