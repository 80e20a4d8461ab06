// What the page shows, computed from the JSON answers without touching the DOM: one entry per host
// with the objects it depends on, their findings and a lower-cased search text, built once per model
// change so a keystroke only scans strings. Pure functions: test/routing-page/data.test.ts runs them
// in Node.

const DAY_MS = 86_400_000;
/** certificates expiring sooner are highlighted */
export const EXPIRING_DAYS = 14;

/**
 * The certificate badge of a host: issuer, expiry, whole days left (negative: since it expired) and
 * the level it is shown at. null: the host has no TLS of its own.
 */
export function certificateState(tls, now) {
  if (tls === null || tls === undefined) return null;
  const cert = tls.certificate ?? {};
  if (typeof cert.notAfter !== 'string') {
    return {
      secret: tls.secret,
      issuer: '',
      notAfter: '',
      days: null,
      level: 'error',
      error: cert.error ?? '',
    };
  }
  const left = Date.parse(cert.notAfter) - now;
  // whole days either way: 5 days and 3 hours left is 5; expired 2 days and 3 hours ago is -2
  const days = left >= 0 ? Math.floor(left / DAY_MS) : -Math.floor(-left / DAY_MS);
  const level = left < 0 ? 'expired' : days < EXPIRING_DAYS ? 'expiring' : 'ok';
  return { secret: tls.secret, issuer: cert.issuer ?? '', notAfter: cert.notAfter, days, level, error: '' };
}

/** The Ingresses a host's routing comes from, oldest-first as the model lists them, without repeats. */
function hostIngresses(host) {
  const names = new Set();
  const add = (name) => {
    if (typeof name === 'string' && name !== '') names.add(name);
  };
  if (!host.ingressKind) add(host.ingress);
  if (!host.tls?.kind) add(host.tls?.ingress);
  add(host.clientAuth?.ingress);
  for (const route of host.routes) {
    if (!route.kind) add(route.ingress);
    add(route.canary?.ingress);
  }
  add(host.defaultRoute?.ingress);
  add(host.defaultRoute?.canary?.ingress);
  return [...names];
}

/**
 * The Gateway API objects a host's routing comes from, as the diagnostics name objects
 * (`HTTPRoute ns/name`, `Gateway ns/name`): its HTTPRoutes in route order, the Gateway of its
 * listener certificate.
 */
function hostGatewayObjects(host) {
  const objects = new Set();
  if (host.ingressKind) objects.add(`${host.ingressKind} ${host.ingress}`);
  for (const route of host.routes) if (route.kind) objects.add(`${route.kind} ${route.ingress}`);
  if (host.tls?.kind) objects.add(`${host.tls.kind} ${host.tls.ingress}`);
  return [...objects];
}

/** The upstream names a host's routes use (main, canary, an HTTPRoute rule's weighted ones). */
function hostBackends(host) {
  const names = new Set();
  for (const route of [...host.routes, host.defaultRoute]) {
    if (route === undefined) continue;
    if (route.backend) names.add(route.backend);
    if (route.canary?.backend) names.add(route.canary.backend);
    for (const entry of route.backends ?? []) if (entry.backend) names.add(entry.backend);
  }
  return [...names];
}

/** An HTTPRoute route's conditions and filters in words (match values as /debug/model shows them). */
export function gatewayConditions(route) {
  const match = route.gateway;
  if (!match) return [];
  const words = [];
  if (match.method) words.push(`method ${match.method}`);
  for (const header of match.headers ?? []) words.push(`header ${header.name}: ${header.value}`);
  for (const param of match.queryParams ?? []) words.push(`query ${param.name}: ${param.value}`);
  if (match.protocols === 'http') words.push('HTTP only');
  else if (match.protocols === 'https') words.push('HTTPS only');
  return [...words, ...(match.filters ?? [])];
}

/** An HTTPRoute rule's backends with their shares: `a-80 75% · 500 25%`; none: every request 500. */
export function weightedText(backends) {
  if (backends.length === 0) return '500 (no backends)';
  return backends
    .map((entry) => `${entry.backend ?? '500'} ${formatShare(Number(entry.share) || 0)}`)
    .join(' · ');
}

function countSeverities(findings) {
  let errors = 0;
  let warnings = 0;
  for (const f of findings) {
    if (f.severity === 'error') errors++;
    else if (f.severity === 'warning') warnings++;
  }
  return { errors, warnings };
}

/** `ns/name` of a backend's `ns/name:port` */
function serviceName(service) {
  const colon = service.lastIndexOf(':');
  return colon > 0 ? service.slice(0, colon) : service;
}

/**
 * The model's per-object findings by kind and name (`Ingress` → `ns/name` → findings), so a host
 * looks its objects up without making a key string for each.
 */
function findingsByKind(diagnostics) {
  const byKind = new Map();
  for (const [object, list] of Object.entries(diagnostics)) {
    const space = object.indexOf(' ');
    const kind = object.slice(0, space);
    let names = byKind.get(kind);
    if (names === undefined) {
      names = new Map();
      byKind.set(kind, names);
    }
    names.set(object.slice(space + 1), { object, list });
  }
  return byKind;
}

/**
 * The page's view of a /debug/model answer: `hosts` (each with its backends, Ingresses, findings and
 * search text) and `others`, the objects with findings that no host shows (a dropped Ingress, a
 * manifest that does not parse). The search text of a backend or an Ingress's annotations is made
 * once and shared by the hosts that use it: at 10,000 Ingresses this runs on every model change.
 */
export function buildView(model) {
  const backends = new Map();
  for (const backend of model.backends ?? []) {
    const words = [backend.service, ...(backend.endpoints ?? []), ...(backend.notReady ?? [])];
    backends.set(backend.name, {
      backend,
      service: serviceName(backend.service ?? ''),
      text: words.join('\n'),
    });
  }
  const ingresses = model.ingresses ?? {};
  const annotationTexts = new Map();
  const annotationText = (name) => {
    let text = annotationTexts.get(name);
    if (text === undefined) {
      text = Object.entries(ingresses[name]?.annotations ?? {})
        .map(([key, value]) => `${key}=${value}`)
        .join('\n');
      annotationTexts.set(name, text);
    }
    return text;
  };
  const byKind = findingsByKind(model.diagnostics ?? {});
  const noFindings = new Map();
  const ingressFindings = byKind.get('Ingress') ?? noFindings;
  const findingsOf = (object) => {
    const space = object.indexOf(' ');
    return byKind.get(object.slice(0, space))?.get(object.slice(space + 1));
  };
  const secretFindings = byKind.get('Secret') ?? noFindings;
  const serviceFindings = byKind.get('Service') ?? noFindings;
  const claimed = new Set();
  const hosts = (model.hosts ?? []).map((host, index) => {
    const ingressNames = hostIngresses(host);
    const gatewayObjects = hostGatewayObjects(host);
    const used = [];
    for (const name of hostBackends(host)) {
      // `default-backend` (the built-in 404) has no entry: nothing to show
      const entry = backends.get(name);
      if (entry !== undefined) used.push(entry);
    }
    const found = [];
    const collect = (entry) => {
      if (entry !== undefined && !found.includes(entry)) found.push(entry);
    };
    for (const name of ingressNames) collect(ingressFindings.get(name));
    for (const object of gatewayObjects) collect(findingsOf(object));
    if (host.tls?.secret) collect(secretFindings.get(host.tls.secret));
    if (host.clientAuth?.secret) collect(secretFindings.get(host.clientAuth.secret));
    for (const entry of used) collect(serviceFindings.get(entry.service));
    const findings = [];
    for (const { object, list } of found) {
      claimed.add(object);
      for (const d of list) findings.push({ object, ...d });
    }
    let text = host.host;
    for (const alias of host.aliases ?? []) text += `\n${alias}`;
    for (const name of ingressNames) text += `\n${name}`;
    for (const object of gatewayObjects) text += `\n${object}`;
    for (const route of host.routes) {
      text += `\n${route.path}\n${route.pathType}`;
      for (const words of gatewayConditions(route)) text += `\n${words}`;
    }
    for (const entry of used) text += `\n${entry.backend.name}\n${entry.text}`;
    for (const name of ingressNames) text += `\n${annotationText(name)}`;
    if (host.tls) text += `\n${host.tls.secret}\n${host.tls.certificate?.issuer ?? ''}`;
    for (const f of findings) text += `\n${f.object}\n${f.code}\n${f.message}`;
    return {
      key: `h${index}`,
      host,
      ingresses: ingressNames,
      gatewayObjects,
      backends: used.map((entry) => entry.backend),
      findings,
      ...countSeverities(findings),
      text: text.toLowerCase(),
    };
  });
  const others = [];
  for (const [object, list] of Object.entries(model.diagnostics ?? {})) {
    if (claimed.has(object)) continue;
    const findings = list.map((d) => ({ object, ...d }));
    const words = [object];
    for (const f of findings) words.push(f.code, f.message, f.file ?? '');
    others.push({ object, findings, ...countSeverities(findings), text: words.join('\n').toLowerCase() });
  }
  return { hosts, others, ingresses };
}

/** Search terms of a query: lower-cased words, every one of which must match. */
export function queryTerms(query) {
  return query.toLowerCase().split(/\s+/).filter(Boolean);
}

/** The entries (hosts or others) matching every term, and with problems only when asked. */
export function filterEntries(entries, terms, withProblems) {
  const matches = [];
  for (const entry of entries) {
    if (withProblems && entry.errors + entry.warnings === 0) continue;
    let all = true;
    for (const term of terms) {
      if (!entry.text.includes(term)) {
        all = false;
        break;
      }
    }
    if (all) matches.push(entry);
  }
  return matches;
}

/** The key a /debug/traffic route and a model route share. */
export function trafficKey(host, ingress, path, canary) {
  return `${host}\n${ingress}\n${path}\n${canary ? 'canary' : 'main'}`;
}

function addTraffic(sum, entry) {
  const requests = Number(entry.requests) || 0;
  sum.errors += (Number(entry.errorRate) || 0) * requests;
  sum.requests += requests;
  sum.rate += Number(entry.rate) || 0;
  if (typeof entry.p99 === 'number' && (sum.p99 === null || entry.p99 > sum.p99)) sum.p99 = entry.p99;
}

/**
 * /debug/traffic's routes summed per (host, Ingress, path, main or canary); without --metrics-per-host
 * the routes carry no host and are filed under host ''. Several entries for one key (several
 * services) add up; p99 is the largest.
 */
export function indexTraffic(traffic) {
  const sums = new Map();
  for (const entry of traffic?.routes ?? []) {
    const key = trafficKey(entry.host ?? '', entry.ingress, entry.path, Boolean(entry.canary));
    let sum = sums.get(key);
    if (sum === undefined) {
      sum = { requests: 0, rate: 0, errors: 0, p99: null };
      sums.set(key, sum);
    }
    addTraffic(sum, entry);
  }
  const index = new Map();
  for (const [key, sum] of sums) {
    index.set(key, {
      requests: sum.requests,
      rate: sum.rate,
      errorRate: sum.requests === 0 ? 0 : sum.errors / sum.requests,
      p99: sum.p99,
    });
  }
  return index;
}

/** A route's traffic: by its host, else (metrics without hosts) by Ingress and path alone. */
export function routeTraffic(index, host, ingress, path, canary) {
  return (
    index.get(trafficKey(host, ingress, path, canary)) ?? index.get(trafficKey('', ingress, path, canary))
  );
}

/** seconds between two refreshes without `?refresh=` */
export const DEFAULT_REFRESH_SECONDS = 5;
/** an hour: a longer delay overflows setTimeout, which then fires at once (a poll loop) */
export const MAX_REFRESH_SECONDS = 3600;

/**
 * The page's poll period in milliseconds from `?refresh=` (seconds): within 1 s and an hour;
 * missing, blank or not a number: the default.
 */
export function refreshPeriod(value) {
  const seconds = typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
  if (Number.isNaN(seconds)) return DEFAULT_REFRESH_SECONDS * 1000;
  return Math.min(MAX_REFRESH_SECONDS, Math.max(1, seconds)) * 1000;
}

/** Display forms of the traffic figures. */
export function formatRate(rate) {
  return rate >= 100 ? `${Math.round(rate)}/s` : `${rate.toFixed(rate >= 10 ? 1 : 2)}/s`;
}

export function formatShare(share) {
  return `${(share * 100).toFixed(share !== 0 && share < 0.01 ? 2 : 1)}%`;
}

export function formatSeconds(seconds) {
  if (seconds === null || seconds === undefined) return '–';
  return seconds < 1 ? `${Math.round(seconds * 1000)} ms` : `${seconds.toFixed(2)} s`;
}
