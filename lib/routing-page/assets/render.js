// DOM for the page's entries. Every string from the model goes in as a text node or an attribute
// value, never as markup: an Ingress name or annotation value holding `<script>` shows as those
// characters. Nodes are built detached and inserted once per change, so a render writes the document
// without reading layout in between.

import {
  certificateState,
  formatRate,
  formatSeconds,
  formatShare,
  gatewayConditions,
  routeTraffic,
  weightedText,
} from './data.js';

/** An element with properties (`class`, `text`, attributes) and children (nodes or strings as text). */
export function h(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') node.className = value;
    else if (name === 'text') node.textContent = value;
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return node;
}

const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

function problemBadges(entry) {
  const badges = h('span', { class: 'badges' });
  if (entry.errors > 0)
    badges.append(h('span', { class: 'badge error', text: plural(entry.errors, 'error', 'errors') }));
  if (entry.warnings > 0) {
    badges.append(h('span', { class: 'badge warning', text: plural(entry.warnings, 'warning', 'warnings') }));
  }
  return badges;
}

function certificateBadge(host, now) {
  const state = certificateState(host.tls, now);
  if (state === null) return h('span', { class: 'cert none', text: 'no TLS of its own' });
  if (state.level === 'error') {
    return h('span', { class: 'cert expired' }, `TLS ${state.secret}: certificate unreadable ${state.error}`);
  }
  const when =
    state.level !== 'expired'
      ? `${plural(state.days, 'day', 'days')} left`
      : state.days === 0
        ? 'expired today'
        : `expired ${plural(-state.days, 'day', 'days')} ago`;
  return h(
    'span',
    { class: `cert ${state.level}`, 'data-days': state.days },
    `TLS ${state.secret} · issuer ${state.issuer} · expires ${state.notAfter.slice(0, 10)} · `,
    h('strong', { text: when }),
  );
}

function canaryText(canary) {
  const rules = [];
  if (canary.header) {
    const value = canary.headerValue ?? (canary.headerPattern ? `~ ${canary.headerPattern}` : null);
    rules.push(`header ${canary.header}${value === null ? '' : `: ${value}`}`);
  }
  if (canary.cookie) rules.push(`cookie ${canary.cookie}`);
  rules.push(`weight ${canary.weight}/${Math.max(100, canary.weightTotal ?? 100)}`);
  return rules.join(' · ');
}

/** A row's three traffic cells, registered so a traffic poll can refresh their text in place. */
function trafficCells(row, cells, lookup) {
  const rate = h('td', { class: 'num' });
  const errors = h('td', { class: 'num' });
  const p99 = h('td', { class: 'num' });
  row.append(rate, errors, p99);
  cells.push({ lookup, rate, errors, p99 });
}

/** Writes traffic figures into the registered cells ('–' where a route has none). */
export function fillTraffic(cells, index) {
  for (const cell of cells) {
    const figures = index === null ? undefined : cell.lookup(index);
    cell.rate.textContent = figures === undefined ? '–' : formatRate(figures.rate);
    cell.errors.textContent = figures === undefined ? '–' : formatShare(figures.errorRate);
    cell.errors.classList.toggle('bad', figures !== undefined && figures.errorRate >= 0.05);
    cell.p99.textContent = figures === undefined ? '–' : formatSeconds(figures.p99);
  }
}

function routesTable(entry, cells) {
  const host = entry.host;
  const body = h('tbody');
  const hostName = host.host;
  for (const route of host.routes) {
    const row = h(
      'tr',
      null,
      h('td', { class: 'path', text: route.path }),
      h('td', {
        text: route.pathTypeAsWritten ? `${route.pathType} (${route.pathTypeAsWritten})` : route.pathType,
      }),
      h('td', { text: route.backends ? weightedText(route.backends) : route.backend }),
      // the canary's rules are on its own row below
      h('td'),
      h('td', {
        text: route.kind
          ? `${route.kind} ${route.ingress} · rule ${route.gateway?.rule ?? 0}`
          : route.ingress,
      }),
    );
    trafficCells(row, cells, (index) => routeTraffic(index, hostName, route.ingress, route.path, false));
    body.append(row);
    // an HTTPRoute rule's conditions and filters: on a row of their own, like a canary's rules
    const conditions = gatewayConditions(route);
    if (conditions.length > 0) {
      body.append(
        h(
          'tr',
          { class: 'conditions' },
          h('td', { class: 'path' }, h('span', { class: 'muted', text: '↳ when' })),
          h('td', { colspan: 7, text: conditions.join(' · ') }),
        ),
      );
    }
    if (route.canary) {
      const canary = route.canary;
      const canaryRow = h(
        'tr',
        { class: 'canary' },
        h('td', { class: 'path' }, h('span', { class: 'muted', text: '↳ canary' })),
        h('td'),
        h('td', { text: canary.backend }),
        h('td', { class: 'weight', text: canaryText(canary) }),
        h('td', { text: canary.ingress }),
      );
      trafficCells(canaryRow, cells, (index) =>
        routeTraffic(index, hostName, route.ingress, route.path, true),
      );
      body.append(canaryRow);
    }
  }
  const fallback = host.defaultRoute;
  if (fallback && (host.routes.length === 0 || fallback.backend !== 'default-backend')) {
    const row = h(
      'tr',
      { class: 'fallback' },
      h('td', { class: 'path' }, h('span', { class: 'muted', text: 'no path matches' })),
      h('td'),
      h('td', { text: fallback.backend }),
      h('td', { text: fallback.canary ? canaryText(fallback.canary) : '' }),
      h('td', { text: fallback.ingress ?? '' }),
    );
    row.append(h('td', { class: 'num', text: '' }), h('td', { class: 'num' }), h('td', { class: 'num' }));
    body.append(row);
  }
  const head = h('tr');
  for (const title of ['Path', 'Path type', 'Backend', 'Canary', 'Ingress', 'Rate', 'Errors', 'p99']) {
    head.append(
      h('th', { scope: 'col', class: ['Rate', 'Errors', 'p99'].includes(title) ? 'num' : null, text: title }),
    );
  }
  return h(
    'table',
    { class: 'routes' },
    h('caption', { class: 'visually-hidden', text: `Paths of ${hostName}` }),
    h('thead', null, head),
    body,
  );
}

function findingsList(findings) {
  const list = h('ul', { class: 'findings' });
  for (const f of findings) {
    const where = f.file ? ` (${f.file}${f.line ? `:${f.line}` : ''})` : '';
    list.append(
      h(
        'li',
        { class: f.severity },
        h('span', { class: `badge ${f.severity}`, text: f.severity }),
        ' ',
        h('code', { text: f.code }),
        ` ${f.object}${where}: `,
        h('span', { class: 'message', text: f.message }),
      ),
    );
  }
  return list;
}

function endpointList(backend) {
  const list = h('ul', { class: 'endpoints' });
  const scores = backend.scores ?? {};
  const notReady = new Set(backend.notReady ?? []);
  for (const address of backend.endpoints ?? []) {
    if (notReady.has(address)) continue;
    const score = scores[address];
    list.append(
      h(
        'li',
        { class: 'ready' },
        h('span', { class: 'state', text: 'ready' }),
        ` ${address}`,
        typeof score === 'number'
          ? h('span', { class: 'score', text: ` EWMA ${score.toPrecision(3)}` })
          : null,
      ),
    );
  }
  for (const address of notReady) {
    list.append(
      h('li', { class: 'not-ready' }, h('span', { class: 'state', text: 'not ready' }), ` ${address}`),
    );
  }
  if (list.childElementCount === 0)
    list.append(h('li', { class: 'not-ready', text: 'no endpoints: requests get 503' }));
  return list;
}

/** The expanded part of a host: backends with endpoints, the annotations of its Ingresses. */
export function hostDetails(entry, ingresses) {
  const details = h('div', { class: 'details' });
  const backends = h('section', null, h('h3', { text: 'Backends' }));
  for (const backend of entry.backends) {
    const balancer = backend.balancer ?? 'none';
    const configured =
      backend.loadBalance && backend.loadBalance !== balancer ? ` (load-balance ${backend.loadBalance})` : '';
    backends.append(
      h(
        'div',
        { class: 'backend' },
        h(
          'p',
          null,
          h('strong', { text: backend.name }),
          ` → ${backend.service || 'built-in'} · balancer ${balancer}${configured}`,
        ),
        endpointList(backend),
      ),
    );
  }
  details.append(backends);
  const notes = h('section', null, h('h3', { text: 'Annotations in effect' }));
  for (const name of entry.ingresses) {
    const info = ingresses[name];
    const pairs = Object.entries(info?.annotations ?? {});
    const list = h('dl', { class: 'annotations' });
    for (const [key, value] of pairs) list.append(h('dt', { text: key }), h('dd', { text: value }));
    const created = info?.created ? ` · created ${info.created}` : '';
    notes.append(
      h('h4', null, `Ingress ${name}`, h('span', { class: 'muted', text: created })),
      info === undefined
        ? h('p', { class: 'muted', text: 'annotations not reported by this version' })
        : pairs.length === 0
          ? h('p', { class: 'muted', text: 'none' })
          : list,
    );
  }
  // Gateway API objects have no annotations: their routes take the ConfigMap's settings
  for (const object of entry.gatewayObjects ?? []) {
    notes.append(
      h('h4', null, object),
      h('p', {
        class: 'muted',
        text: object.startsWith('Gateway ')
          ? 'its HTTPS listener decides the certificate of this host'
          : "none: the ConfigMap's settings, never redirected to HTTPS",
      }),
    );
  }
  details.append(notes);
  return details;
}

/** A host's card; `cells` collects its traffic cells. The details render when first expanded. */
export function hostCard(entry, options) {
  const { now, cells, expanded, ingresses } = options;
  const host = entry.host;
  const id = `details-${entry.key}`;
  const isOpen = expanded.has(host.host);
  const toggle = h(
    'button',
    { type: 'button', class: 'toggle', 'aria-expanded': String(isOpen), 'aria-controls': id },
    h('span', { class: 'host-name', text: host.host === '_' ? '_ (catch-all)' : host.host }),
  );
  const aliases = host.aliases?.length
    ? h('span', { class: 'muted', text: `also ${host.aliases.join(', ')}` })
    : null;
  const card = h(
    'li',
    { class: 'host', 'data-host': host.host },
    h(
      'div',
      { class: 'host-head' },
      h('h2', null, toggle),
      aliases,
      problemBadges(entry),
      certificateBadge(host, now),
    ),
    routesTable(entry, cells),
  );
  if (entry.findings.length > 0) card.append(findingsList(entry.findings));
  const panel = h('div', { id, class: 'panel', hidden: !isOpen });
  if (isOpen) panel.append(hostDetails(entry, ingresses));
  card.append(panel);
  return card;
}

/** An object with findings that no host shows. */
export function otherCard(entry) {
  return h(
    'li',
    { class: 'host other', 'data-object': entry.object },
    h(
      'div',
      { class: 'host-head' },
      h('h2', { class: 'object', tabindex: '-1', text: entry.object }),
      problemBadges(entry),
    ),
    findingsList(entry.findings),
  );
}
