// The page's loop: poll /debug/model (If-None-Match: an unchanged model costs one 304) and
// /debug/traffic every few seconds, rebuild the view only when the model changed, render the first
// pages of the hosts that match the search, and refresh the traffic figures in place. `?refresh=N`
// sets the period in seconds (default 5, from 1 s to an hour).

import { buildView, filterEntries, indexTraffic, queryTerms, refreshPeriod } from './data.js';
import { fillTraffic, hostCard, hostDetails, otherCard } from './render.js';

const PAGE = 50;
const params = new URLSearchParams(location.search);
const period = refreshPeriod(params.get('refresh'));

const $ = (id) => document.getElementById(id);
const search = $('search');
const withProblems = $('with-problems');
const list = $('hosts');
const more = $('more');
const summary = $('summary');
const status = $('status');
const trafficNote = $('traffic-note');

const state = {
  view: null,
  etag: null,
  text: null,
  traffic: null,
  matches: [],
  shown: 0,
  cells: [],
  expanded: new Set(),
  updatedAt: null,
};

// Timings for the developer tools and bench/routing-page.ts: one mark per name, the latest (a page
// left open for days must not pile them up).
function mark(name, detail) {
  performance.clearMarks(name);
  performance.mark(name, { detail });
}

const clock = (date) => date.toLocaleTimeString([], { hour12: false });

const updated = $('updated');

// The live region changes only when the state does; the time of the last answer is plain text.
function setStatus(ok) {
  if (ok) state.updatedAt = new Date();
  const text = ok
    ? 'Live'
    : state.updatedAt === null
      ? 'Stale: the status port does not answer'
      : `Stale: no answer since ${clock(state.updatedAt)}`;
  if (status.textContent !== text) status.textContent = text;
  status.className = ok ? 'status fresh' : 'status stale';
  updated.textContent = state.updatedAt === null ? '' : `updated ${clock(state.updatedAt)}`;
}

function appendPage() {
  const fragment = document.createDocumentFragment();
  const cells = [];
  const options = { now: Date.now(), cells, expanded: state.expanded, ingresses: state.view.ingresses };
  const end = Math.min(state.matches.length, state.shown + PAGE);
  for (let i = state.shown; i < end; i++) {
    const entry = state.matches[i];
    fragment.append(entry.object === undefined ? hostCard(entry, options) : otherCard(entry));
  }
  state.shown = end;
  fillTraffic(cells, state.traffic);
  state.cells.push(...cells);
  list.append(fragment);
  const left = state.matches.length - state.shown;
  more.hidden = left === 0;
  more.textContent = `Show ${Math.min(left, PAGE)} more (${left} not shown)`;
  const hosts = state.view.hosts.length;
  summary.textContent = `Showing ${state.shown} of ${state.matches.length} matching · ${hosts} ${hosts === 1 ? 'host' : 'hosts'} in the model`;
}

/** Filters the view by the search and the problems box and renders the first page. */
function render() {
  if (state.view === null) return;
  const terms = queryTerms(search.value);
  state.matches = [
    ...filterEntries(state.view.hosts, terms, withProblems.checked),
    ...filterEntries(state.view.others, terms, withProblems.checked),
  ];
  state.shown = 0;
  state.cells = [];
  list.replaceChildren();
  appendPage();
  mark('routing:rendered', state.matches.length);
}

async function pollModel() {
  const headers = state.etag === null ? {} : { 'If-None-Match': state.etag };
  const response = await fetch('model?compact=1', { headers, cache: 'no-store' });
  if (response.status === 304) return false;
  if (!response.ok) throw new Error(`/debug/model answered ${response.status}`);
  const text = await response.text();
  state.etag = response.headers.get('ETag');
  // without an ETag (an older controller), an identical answer is still no change; with one, the
  // text is not kept (41 MB at 10,000 Ingresses)
  if (text === state.text) return false;
  state.text = state.etag === null ? text : null;
  mark('routing:model-fetched', text.length);
  const model = JSON.parse(text);
  mark('routing:model-parsed');
  state.view = buildView(model);
  mark('routing:view-built', state.view.hosts.length);
  return true;
}

async function pollTraffic() {
  const response = await fetch('traffic', { cache: 'no-store' });
  if (response.status === 404) {
    trafficNote.textContent = 'Traffic figures are not available from this controller.';
    return null;
  }
  if (!response.ok) throw new Error(`/debug/traffic answered ${response.status}`);
  const traffic = await response.json();
  trafficNote.textContent =
    traffic.metricsEnabled === false
      ? 'No traffic figures: this controller runs with --enable-metrics=false.'
      : `Rate, errors (5xx share) and p99 per route over the last ${Math.round(traffic.windowSeconds ?? 0)} s.`;
  return indexTraffic(traffic);
}

async function refresh() {
  mark('routing:refresh-start');
  const started = performance.now();
  let changed = false;
  try {
    const [modelChanged, traffic] = await Promise.all([pollModel(), pollTraffic()]);
    changed = modelChanged;
    state.traffic = traffic;
    if (changed) render();
    else fillTraffic(state.cells, state.traffic);
    setStatus(true);
  } catch {
    setStatus(false);
  } finally {
    mark('routing:refresh-end', changed);
    // A controller that answers slowly (a large model described in full, without an ETag) is asked
    // less often: the page never keeps it busy more than a quarter of the time.
    setTimeout(refresh, Math.max(period, 3 * (performance.now() - started)));
  }
}

list.addEventListener('click', (event) => {
  const toggle = event.target.closest('button.toggle');
  if (toggle === null) return;
  const card = toggle.closest('li.host');
  const panel = document.getElementById(toggle.getAttribute('aria-controls'));
  const open = toggle.getAttribute('aria-expanded') !== 'true';
  toggle.setAttribute('aria-expanded', String(open));
  panel.hidden = !open;
  const name = card.dataset.host;
  if (open) {
    state.expanded.add(name);
    const entry = state.matches.find((e) => e.host?.host === name);
    if (entry !== undefined && panel.childElementCount === 0)
      panel.append(hostDetails(entry, state.view.ingresses));
  } else {
    state.expanded.delete(name);
  }
});

let pending = 0;
const schedule = () => {
  cancelAnimationFrame(pending);
  pending = requestAnimationFrame(render);
};
search.addEventListener('input', schedule);
withProblems.addEventListener('change', render);
more.addEventListener('click', () => {
  const first = list.childElementCount;
  appendPage();
  // keyboard users continue where the new hosts start, not back at the button
  list.children[first]?.querySelector('button.toggle, h2.object')?.focus();
});
search.addEventListener('keydown', (event) => {
  if (event.key === 'Escape' && search.value !== '') {
    search.value = '';
    render();
  }
});
document.addEventListener('keydown', (event) => {
  if (event.key !== '/' || event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (
    target instanceof HTMLInputElement ||
    target instanceof HTMLTextAreaElement ||
    target?.isContentEditable
  )
    return;
  event.preventDefault();
  search.focus();
  search.select();
});

// a bookmarked search: /debug/routing?q=...
search.value = params.get('q') ?? '';
refresh();
