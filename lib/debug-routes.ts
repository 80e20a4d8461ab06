// The status port's debug answers (healthz.ts routes them; --enable-debug-pages=false: none):
// - GET /debug/model: the live configuration (debug-model.ts), made once per version and kept: an
//   ETag names the version (the model's hash and a count of applied builds and source findings,
//   which also moves when only not-ready endpoints or annotations changed), If-None-Match gets 304
//   without describing anything, and the pretty, compact (?compact=1) and gzip forms are each made
//   once per version. A description with live counters (ewma scores, the threads' and TCP/UDP
//   services' counts) is made again once it is 5 seconds old, or 10 times what making it took when
//   that is longer (a large model: at most a tenth of the time describing); its ETag also names
//   when it was made. Between versions, an expensive describe holds too: builds can follow each
//   other every few seconds (endpoint churn) and each describe costs ~1 s of CPU at 10,000
//   Ingresses, so after a describe that took EXPENSIVE_DESCRIBE_MS or more a new version waits
//   until 10 times that has passed, the previous answer (and its ETag) served meanwhile. A cheap
//   describe (a small model) holds nothing back: a new version is described at once. The first
//   request after start is answered at once.
// - GET /debug/traffic: each route's rate, error rate and p99 over the last minute
//   (metrics/traffic.ts), made once per sample tick (5 s) and kept: at 10,000 routes an answer costs
//   ~30 ms of CPU and a 1.5 MB gzip on the loop that may be the proxy's own, so a client asking
//   often must not make it again. The first request after a tick makes it (with a sample taken
//   then), requests arriving meanwhile wait for that one, the ETag names the tick (304 on a match),
//   and each form (pretty, compact, gzip) is made once per tick. An answer is at most one tick old.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';

const gzip = promisify(gzipCallback);

/** The /debug/model answer's source: its version (cheap) and its description (a JSON value). */
export interface DebugModelSource {
  /** changes whenever the description may; null before the first model */
  version(): string | null;
  /** the description (or its Promise); null or undefined before the first model */
  describe(): unknown;
}

/** The /debug/traffic answer (a JSON value, or its Promise), and what to stop with the port. */
export interface DebugTrafficSource {
  /** changes when a new answer is due (each sample tick) */
  version(): string;
  describe(): unknown;
  close?(): void;
}

const JSON_TYPE = 'application/json; charset=utf-8';
/** milliseconds a description with live counters is served for, at least */
export const LIVE_DESCRIPTION_MS = 5000;
/** a describe this long (~1,000 Ingresses) or longer holds the next version back 10 times as long */
export const EXPENSIVE_DESCRIBE_MS = 250;
/** bodies smaller than this are sent as they are */
const GZIP_MIN_BYTES = 1024;

/** The client takes gzip: `gzip` or `*` listed without q=0. */
export function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  for (const part of header.split(',')) {
    const [coding = '', ...params] = part.split(';').map((p) => p.trim().toLowerCase());
    if (coding !== 'gzip' && coding !== '*') continue;
    const q = params.find((p) => p.startsWith('q='));
    if (q === undefined || Number(q.slice(2)) > 0) return true;
  }
  return false;
}

/** `If-None-Match` names `etag` (weak comparison, as for GET). */
function matches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  const opaque = etag.replace(/^W\//, '');
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === opaque);
}

const isCompact = (url: string): boolean => {
  const query = url.indexOf('?');
  return query !== -1 && new URLSearchParams(url.slice(query + 1)).get('compact') === '1';
};

/** A description has counters that move without a new version: scores, threads, stream counts. */
function isLive(description: unknown): boolean {
  if (typeof description !== 'object' || description === null) return false;
  const d = description as { threads?: unknown; streams?: unknown; backends?: unknown };
  if (d.threads !== undefined || d.streams !== undefined) return true;
  return (
    Array.isArray(d.backends) && d.backends.some((b) => (b as { scores?: unknown }).scores !== undefined)
  );
}

/**
 * One version's answer: its forms, each made when first asked for. The description itself is only
 * kept until the first form is made (at 10,000 Ingresses it is ~35 MiB of heap, its compact JSON
 * 27 MiB outside it): another plain form is then made from that one.
 */
interface Answer {
  etag: string;
  version: string;
  live: boolean;
  /** clock() when it was asked for */
  made: number;
  /** milliseconds from asking to the first form made; null before */
  cost: number | null;
  /** null once a form is made */
  description: { value: unknown } | null;
  bodies: Map<string, Promise<Buffer>>;
}

const serialize = (value: unknown, compact: boolean): Buffer =>
  Buffer.from(`${JSON.stringify(value, null, compact ? undefined : 2)}\n`);

/** every answer's: a browser may keep it but asks again (with its ETag) */
const ANSWER_HEADERS = { 'Cache-Control': 'no-cache', Vary: 'Accept-Encoding' };

/** Sends `answer` (`plain`: its uncompressed form asked for), gzipped when accepted and worth it. */
async function sendAnswer(
  req: IncomingMessage,
  res: ServerResponse,
  answer: Answer,
  compact: boolean,
  plain: Buffer,
): Promise<void> {
  const gzipped = plain.length >= GZIP_MIN_BYTES && acceptsGzip(req.headers['accept-encoding']);
  const body = gzipped ? await bodyOf(answer, compact, true) : plain;
  res
    .writeHead(200, {
      ...ANSWER_HEADERS,
      'Content-Type': JSON_TYPE,
      ETag: answer.etag,
      'Content-Length': body.length,
      ...(gzipped ? { 'Content-Encoding': 'gzip' } : {}),
    })
    .end(body);
}

function bodyOf(answer: Answer, compact: boolean, gzipped: boolean): Promise<Buffer> {
  const key = `${compact ? 'c' : 'p'}${gzipped ? 'z' : ''}`;
  let body = answer.bodies.get(key);
  if (body !== undefined) return body;
  if (gzipped) {
    body = bodyOf(answer, compact, false).then((plain) => gzip(plain));
  } else if (answer.description !== null) {
    const { value } = answer.description;
    answer.description = null;
    body = new Promise<Buffer>((resolve) => resolve(serialize(value, compact)));
  } else {
    const other = answer.bodies.get(compact ? 'p' : 'c') as Promise<Buffer>;
    body = other.then((made) => serialize(JSON.parse(made.toString('utf8')), compact));
  }
  answer.bodies.set(key, body);
  return body;
}

const sendJson = (res: ServerResponse, status: number, value: unknown): void => {
  res
    .writeHead(status, { 'Content-Type': JSON_TYPE, 'Cache-Control': 'no-store' })
    .end(`${JSON.stringify(value)}\n`);
};

export interface DebugModelRouteOptions {
  /** milliseconds (default Date.now) */
  clock?: () => number;
  /** describe each new version at once, without the floor (tests that follow changes) */
  everyVersion?: boolean;
}

/** Serves GET /debug/model from `source`, keeping the last version's answer. */
export function createDebugModelRoute(
  source: DebugModelSource,
  options: DebugModelRouteOptions = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  const clock = options.clock ?? Date.now;
  const everyVersion = options.everyVersion === true;
  let last: Answer | null = null;
  let pending: { version: string; answer: Promise<Answer | null> } | null = null;
  /** the least time between two describes: 5 s, or 10 times what the last one took */
  let floor = LIVE_DESCRIPTION_MS;

  /** `last` when it answers for `version` now: its own, or another one's while an expensive describe holds. */
  const current = (version: string): Answer | null => {
    if (last === null) return null;
    const recent = clock() < last.made + floor;
    if (last.version === version) return !last.live || recent ? last : null;
    if (everyVersion || last.cost === null || last.cost < EXPENSIVE_DESCRIBE_MS) return null;
    return clock() < last.made + 10 * last.cost ? last : null;
  };

  const answerFor = (version: string): Promise<Answer | null> => {
    const kept = current(version);
    if (kept !== null) return Promise.resolve(kept);
    // one describe at a time: the one under way is the newest answer there is
    if (pending !== null && (pending.version === version || !everyVersion)) return pending.answer;
    const made = clock();
    const answer = new Promise<unknown>((resolve) => resolve(source.describe())).then((description) => {
      if (description === null || description === undefined) return null;
      const live = isLive(description);
      const fresh: Answer = {
        // a live answer is named by when it was made too
        etag: live ? `W/"${version}.${made}"` : `W/"${version}"`,
        version,
        live,
        made,
        cost: null,
        description: { value: description },
        bodies: new Map(),
      };
      last = fresh;
      return fresh;
    });
    const started = { version, answer };
    pending = started;
    const settle = () => {
      if (pending === started) pending = null;
    };
    answer.then(settle, settle);
    return answer;
  };

  return (req, res) => {
    const version = source.version();
    if (version === null) {
      sendJson(res, 503, { error: 'no configuration has been applied yet' });
      return;
    }
    // a client polling an unchanged version costs a string comparison
    const kept = current(version);
    if (kept !== null && matches(req.headers['if-none-match'], kept.etag)) {
      res.writeHead(304, { ...ANSWER_HEADERS, ETag: kept.etag }).end();
      return;
    }
    const compact = isCompact(req.url ?? '');
    answerFor(version)
      .then(async (answer) => {
        if (answer === null) {
          sendJson(res, 503, { error: 'no configuration has been applied yet' });
          return;
        }
        const plain = await bodyOf(answer, compact, false);
        if (answer.cost === null) {
          // a large model is not described more often than it costs 10% of the time
          answer.cost = clock() - answer.made;
          floor = Math.max(LIVE_DESCRIPTION_MS, 10 * answer.cost);
        }
        await sendAnswer(req, res, answer, compact, plain);
      })
      .catch((error: unknown) =>
        sendJson(res, 500, { error: `describing the model failed: ${String(error)}` }),
      );
  };
}

/** Serves GET /debug/traffic from `source`, keeping one answer per version. */
export function createDebugTrafficRoute(
  source: DebugTrafficSource,
): (req: IncomingMessage, res: ServerResponse) => void {
  let last: Answer | null = null;
  // one answer made at a time: a tick passing meanwhile is seen by the next request after it
  let pending: Promise<Answer> | null = null;

  const answerFor = (version: string): Promise<Answer> => {
    if (last !== null && last.version === version) return Promise.resolve(last);
    if (pending !== null) return pending;
    const made = new Promise<unknown>((resolve) => resolve(source.describe())).then((traffic) => {
      last = {
        etag: `W/"${version}"`,
        version,
        live: false,
        made: 0,
        cost: 0,
        description: { value: traffic },
        bodies: new Map(),
      };
      return last;
    });
    pending = made;
    const settle = () => {
      if (pending === made) pending = null;
    };
    made.then(settle, settle);
    return made;
  };

  return (req, res) => {
    const version = source.version();
    if (last !== null && last.version === version && matches(req.headers['if-none-match'], last.etag)) {
      res.writeHead(304, { ...ANSWER_HEADERS, ETag: last.etag }).end();
      return;
    }
    const compact = isCompact(req.url ?? '');
    answerFor(version)
      .then(async (answer) => {
        const plain = await bodyOf(answer, compact, false);
        await sendAnswer(req, res, answer, compact, plain);
      })
      .catch((error: unknown) =>
        sendJson(res, 500, { error: `describing the traffic failed: ${String(error)}` }),
      );
  };
}
