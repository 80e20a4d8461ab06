// A strict reader of the Prometheus text exposition format 0.0.4, for tests: it throws on anything
// Prometheus would refuse (bad names, bad label syntax, bad values, samples before their TYPE, a
// family declared twice, duplicate series, histograms whose buckets are not cumulative or whose
// +Inf bucket differs from _count). The npm parser tried first accepted garbage lines and dropped
// histogram labels, so this one checks what the tests rely on.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseValue(text: string, line: number): number {
  if (text === '+Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  // Prometheus parses values with Go's strconv.ParseFloat, which takes NaN in any case; prom-client
  // writes "Nan" (its default event-loop-lag gauges before their first sample)
  if (text.toLowerCase() === 'nan') return Number.NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) {
    throw new Error(`line ${line}: invalid value "${text}"`);
  }
  return Number(text);
}

/** `{a="x",b="y"}` starting at `text[0] === '{'`: the labels and the rest of the line. */
function parseLabels(text: string, line: number): { labels: Record<string, string>; rest: string } {
  const labels: Record<string, string> = {};
  let i = 1;
  for (;;) {
    if (text[i] === '}') return { labels, rest: text.slice(i + 1) };
    const eq = text.indexOf('=', i);
    if (eq === -1) throw new Error(`line ${line}: label without "="`);
    const name = text.slice(i, eq);
    if (!LABEL_NAME.test(name)) throw new Error(`line ${line}: invalid label name "${name}"`);
    if (name in labels) throw new Error(`line ${line}: label "${name}" twice`);
    if (text[eq + 1] !== '"') throw new Error(`line ${line}: label value not quoted`);
    let value = '';
    let j = eq + 2;
    for (;;) {
      const c = text[j];
      if (c === undefined) throw new Error(`line ${line}: unterminated label value`);
      if (c === '"') break;
      if (c === '\\') {
        const next = text[j + 1];
        if (next === 'n') value += '\n';
        else if (next === '\\' || next === '"') value += next;
        else throw new Error(`line ${line}: invalid escape in label value`);
        j += 2;
        continue;
      }
      if (c === '\n') throw new Error(`line ${line}: newline in label value`);
      value += c;
      j++;
    }
    labels[name] = value;
    i = j + 1;
    if (text[i] === ',') i++;
    else if (text[i] !== '}') throw new Error(`line ${line}: expected "," or "}" after a label`);
  }
}

/** The family a sample name belongs to (`x_bucket` → `x` when `x` is a histogram...). */
function familyOf(name: string, families: Map<string, Family>): Family | undefined {
  const direct = families.get(name);
  if (direct !== undefined) return direct;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!name.endsWith(suffix)) continue;
    const family = families.get(name.slice(0, -suffix.length));
    if (
      family !== undefined &&
      (family.type === 'histogram' || (family.type === 'summary' && suffix !== '_bucket'))
    ) {
      return family;
    }
  }
  return undefined;
}

const seriesKey = (name: string, labels: Record<string, string>) =>
  `${name}{${Object.keys(labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`)
    .join(',')}}`;

function checkHistogram(family: Family): void {
  const groups = new Map<string, { buckets: Array<[number, number]>; count?: number }>();
  for (const s of family.samples) {
    const { le, ...rest } = s.labels;
    const key = seriesKey('', rest);
    let group = groups.get(key);
    if (group === undefined) {
      group = { buckets: [] };
      groups.set(key, group);
    }
    if (s.name.endsWith('_bucket')) {
      if (le === undefined) throw new Error(`${family.name}: bucket without le`);
      group.buckets.push([le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le), s.value]);
    } else if (s.name.endsWith('_count')) {
      group.count = s.value;
    }
  }
  for (const [key, group] of groups) {
    const sorted = [...group.buckets].sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < sorted.length; i++) {
      if ((sorted[i] as [number, number])[1] < (sorted[i - 1] as [number, number])[1]) {
        throw new Error(`${family.name}${key}: buckets are not cumulative`);
      }
    }
    const inf = sorted[sorted.length - 1];
    if (inf === undefined || inf[0] !== Number.POSITIVE_INFINITY) {
      throw new Error(`${family.name}${key}: no +Inf bucket`);
    }
    if (inf[1] !== group.count) throw new Error(`${family.name}${key}: +Inf bucket differs from _count`);
  }
}

/** Parses and checks an exposition; throws with the line number on the first problem. */
export function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const seen = new Set<string>();
  const lines = text.split('\n');
  if (lines[lines.length - 1] !== '') throw new Error('the exposition must end with a newline');
  lines.forEach((raw, index) => {
    const line = index + 1;
    if (raw === '') return;
    if (raw.startsWith('#')) {
      const match = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(raw);
      if (match === null) return; // a comment
      const [, keyword, name, rest] = match as unknown as [string, string, string, string];
      if (!NAME.test(name)) throw new Error(`line ${line}: invalid metric name "${name}"`);
      let family = families.get(name);
      if (keyword === 'TYPE') {
        if (!TYPES.has(rest)) throw new Error(`line ${line}: invalid type "${rest}"`);
        if (family?.samples.length) throw new Error(`line ${line}: TYPE of ${name} after its samples`);
        if (family !== undefined && family.type !== 'untyped')
          throw new Error(`line ${line}: ${name} typed twice`);
      }
      if (family === undefined) {
        family = { name, type: 'untyped', help: '', samples: [] };
        families.set(name, family);
      }
      if (keyword === 'TYPE') family.type = rest;
      else family.help = rest;
      return;
    }
    const nameEnd = raw.search(/[{ ]/);
    if (nameEnd <= 0) throw new Error(`line ${line}: no metric name`);
    const name = raw.slice(0, nameEnd);
    if (!NAME.test(name)) throw new Error(`line ${line}: invalid metric name "${name}"`);
    let labels: Record<string, string> = {};
    let rest = raw.slice(nameEnd);
    if (rest.startsWith('{')) ({ labels, rest } = parseLabels(rest, line));
    const parts = rest.trim().split(/ +/);
    if (!rest.startsWith(' ') || parts.length < 1 || parts.length > 2) {
      throw new Error(`line ${line}: expected " value [timestamp]"`);
    }
    const value = parseValue(parts[0] as string, line);
    const key = seriesKey(name, labels);
    if (seen.has(key)) throw new Error(`line ${line}: duplicate series ${key}`);
    seen.add(key);
    let family = familyOf(name, families);
    if (family === undefined) {
      family = { name, type: 'untyped', help: '', samples: [] };
      families.set(name, family);
    }
    family.samples.push({ name, labels, value });
  });
  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family);
  return families;
}

/** The value of one sample: `name` and a subset of its labels that picks exactly one series. */
export function sampleValue(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string>,
): number | undefined {
  const matches: Sample[] = [];
  for (const family of families.values()) {
    for (const s of family.samples) {
      if (s.name !== name) continue;
      if (Object.entries(labels).every(([k, v]) => s.labels[k] === v)) matches.push(s);
    }
  }
  if (matches.length > 1)
    throw new Error(`${name} ${JSON.stringify(labels)} matches ${matches.length} series`);
  return matches[0]?.value;
}

/** Every sample of `name` (any labels). */
export function samplesOf(families: Map<string, Family>, name: string): Sample[] {
  const out: Sample[] = [];
  for (const family of families.values()) for (const s of family.samples) if (s.name === name) out.push(s);
  return out;
}
