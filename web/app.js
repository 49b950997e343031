// app.js — flamedb's viewer: query bar, flamegraph, groups, diff,
// stability and exports over the public HTTP API only; the function table
// is table.js, transforms, the inverted tree and the sandwich views.js, the
// label browser labels.js, the shortcuts keys.js, the timeline and its
// brush timeline.js, split by a label split.js, the outlier ranking
// outliers.js, the per-line table lines.js, the Insights view insights.js
// (docs/viewer.md). A selector naming no service over several processes
// (a whole node) is split by process by default (defaultSplit). A selection
// with on-CPU and off-CPU profiles offers CPU | Off-CPU | side by side |
// Wall (`pair`: pair.js draws the second pane, wall.js merges the trees).
// Sample labels (pprof Sample.label) are listed only when asked (labels.js,
// the split picker's "list them…"): split=sample:KEY splits by one
// (group_by_sample), a value filters as a series label's does.
//
// All state lives in the URL, with the API's own parameter names (query,
// from, until, group_by, left, right, left_from, ...), plus a few of the
// viewer's own (view, split, ilabel, builds, pair, search, layout, focus, tab, groups,
// transforms, invert, sandwich, fn, tq, tsort, tl, brush, minsamples, linesof,
// osearch, ofocus). Every change pushes a history entry
// (typing in a box replaces it); popstate re-reads the URL, and data is
// fetched again only when a data parameter changed.
//
// The flamegraph is fetched as levels (/api/v1/query?format=levels) and kept
// as flat typed arrays (tree.js): no object per node, so a 1,000,000-node
// tree opens. It is drawn as soon as its answer is in (body[data-flame] =
// "ready"); the panels (timeline, table, stability, groups) follow, then
// body[data-state] = "ready". Only the diff reads a nested tree
// (/api/v1/diff answers no other form), made flat on arrival.
import { FlameGraph, wilson } from './flame.js';
import { fromLevels, fromNested, emptyTree } from './tree.js';
import { initViews } from './views.js';
import { initTable, ALL as TABLE_ALL } from './table.js';
import { initLabels } from './labels.js';
import { initKeys } from './keys.js';
import { authFetch } from './auth.js';
import { splitAnswer, sampleSplitAnswer, nodesPerGroup, sampleKeyOf, splitLabel, splitTitle, SAMPLE_SPLIT } from './split.js';
import { initTimeline } from './timeline.js';
import { rankGroups, MIN_SAMPLES, K as NOISE_K } from './outliers.js';
import { initLines } from './lines.js';
import { initInsights } from './insights.js';
import { initPair, crumbsOf } from './pair.js';
import { ON, OFF, wallUnits, wallTree, wallTop, wallTimeline } from './wall.js';

const $ = (s) => document.querySelector(s);
const DATA_KEYS = ['query', 'from', 'until', 'group_by', 'split', 'max_nodes', 'view', 'left', 'right',
  'left_from', 'left_until', 'right_from', 'right_until', 'ilabel', 'builds', 'pair'];
const UI_KEYS = ['search', 'layout', 'focus', 'tab', 'groups', 'transforms', 'invert', 'sandwich', 'fn', 'tq', 'tsort', 'tl', 'brush', 'minsamples', 'linesof',
  'osearch', 'ofocus'];

let state = {};
let loadedKey = null;
let current = null;        // the answer behind the main graph
let exactSearch = false;
let groupAnswers = null, groupStab = null, groupsShown = null;
const miniGraphs = [];
let loads = 0;

// ---------- URL state ----------
function readURL() {
  const p = new URLSearchParams(location.search);
  const s = {};
  for (const k of [...DATA_KEYS, ...UI_KEYS]) if (p.get(k) !== null && p.get(k) !== '') s[k] = p.get(k);
  s.view = s.view === 'diff' || s.view === 'insights' ? s.view : 'flame';
  return s;
}
function urlOf(s) {
  const p = new URLSearchParams();
  for (const k of [...DATA_KEYS, ...UI_KEYS]) {
    if (s[k] === undefined || s[k] === '' || s[k] === null) continue;
    if (k === 'view' && s[k] === 'flame') continue;
    p.set(k, s[k]);
  }
  const q = p.toString();
  return '/' + (q ? '?' + q : '');
}
function commit(changes, { replace = false } = {}) {
  state = { ...state, ...changes };
  for (const k of Object.keys(state)) if (state[k] === undefined || state[k] === '') delete state[k];
  const url = urlOf(state);
  if (url !== location.pathname + location.search) history[replace ? 'replaceState' : 'pushState'](null, '', url);
  render();
}
const dataKey = (s) => JSON.stringify(DATA_KEYS.map((k) => s[k] ?? null));

// ---------- API ----------
async function api(path, params = {}) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') p.set(k, v);
  const r = await authFetch(path + '?' + p.toString());
  let body;
  try { body = await r.json(); } catch { throw new Error(`${path}: HTTP ${r.status} (not JSON)`); }
  if (!r.ok) throw new Error(body && body.error ? body.error : `${path}: HTTP ${r.status}`);
  return body;
}
function showError(e) {
  const el = $('#error');
  if (!e) { el.hidden = true; el.textContent = ''; return; }
  el.hidden = false;
  el.textContent = String(e.message || e);
}

// ---------- formatting ----------
export function fmtValue(v, unit) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  if (unit === 'nanoseconds') {
    const a = Math.abs(v);
    if (a < 1e3) return v.toFixed(0) + ' ns';
    if (a < 1e6) return (v / 1e3).toFixed(a < 1e4 ? 2 : 1) + ' µs';
    if (a < 1e9) return (v / 1e6).toFixed(a < 1e7 ? 2 : 1) + ' ms';
    if (a < 60e9) return (v / 1e9).toFixed(2) + ' s';
    if (a < 3600e9) return (v / 60e9).toFixed(1) + ' min';
    return (v / 3600e9).toFixed(1) + ' h';
  }
  if (unit === 'bytes') {
    const a = Math.abs(v);
    if (a < 1024) return (Number.isInteger(v) ? v : v.toFixed(1)) + ' B';
    if (a < 1048576) return (v / 1024).toFixed(1) + ' KiB';
    if (a < 1073741824) return (v / 1048576).toFixed(1) + ' MiB';
    return (v / 1073741824).toFixed(2) + ' GiB';
  }
  return Number.isInteger(v) ? v.toLocaleString('en-US') : v.toPrecision(4);
}
const pct = (p, d = 2) => (p * 100).toFixed(d) + '%';
// the magnitude of a change of share: right / left
const ratio = (l, r) => (l === 0 ? (r === 0 ? 'absent on both sides' : 'new in the comparison') : r === 0 ? 'gone in the comparison' : `×${(r / l).toFixed(r / l < 10 ? 2 : 1)} the baseline share`);
/* An interval, or what stands for none: the samples behind the shares are
 * not known (a profile in bytes or nanoseconds that did not say). */
const ci = (c) => (c ? `${(c[0] * 100).toFixed(2)}–${(c[1] * 100).toFixed(2)}%` : 'no interval');
const fmtSamples = (n) => (n === null || n === undefined ? 'samples unknown' : `${n.toLocaleString('en-US')} samples`);
const num = (x, d = 3) => (x === null || x === undefined ? '–' : Number(x).toFixed(d));
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
const labelsText = (l) => Object.entries(l).map(([k, v]) => `${k}=${v === '' ? '""' : v}`).join(', ');
function fmtTime(t) {
  const d = new Date(t * 1000);
  return d.toISOString().replace('T', ' ').replace(/\.000Z$/, 'Z').replace(/:00Z$/, 'Z');
}
function quote(v) { return '"' + v.replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"'; }

// ---------- selectors ----------
// Normalise the `svc{...}` shorthand to {service="svc",...}.
function normSel(sel) {
  sel = (sel || '').trim();
  const m = /^([^{}\s"]+)\s*(\{(.*)\})?$/.exec(sel);
  if (m) {
    const inner = (m[3] || '').trim();
    return `{service=${quote(m[1])}${inner ? ', ' + inner : ''}}`;
  }
  return sel || '{}';
}
const MATCHER = (name) => new RegExp(`\\s*${name}\\s*(=~|!~|!=|=)\\s*"(?:[^"\\\\]|\\\\.)*"\\s*,?`, 'g');
function matcherValue(sel, name) {
  const m = new RegExp(`(?:^|[{,\\s])${name}\\s*=\\s*"((?:[^"\\\\]|\\\\.)*)"`).exec(normSel(sel));
  return m ? m[1].replace(/\\(.)/g, '$1') : '';
}
function setMatcher(sel, name, value) {
  let s = normSel(sel);
  s = s.replace(MATCHER(name), '').replace(/,\s*}/, '}').replace(/{\s*,/, '{');
  if (value === '') return s;
  const inner = s.slice(1, -1).trim();
  return `{${name}=${quote(value)}${inner ? ', ' + inner : ''}}`;
}
// The names a selector's matchers are on (quoted values left out).
function matcherNames(sel) {
  const s = normSel(sel).replace(/"(?:[^"\\]|\\.)*"/g, '""');
  return [...s.matchAll(/([A-Za-z_][A-Za-z0-9_.]*)\s*(?:=~|!~|!=|=)/g)].map((m) => m[1]);
}
function selectorOfLabels(base, labels) {
  let s = base;
  for (const [k, v] of Object.entries(labels)) s = setMatcher(s, k, v === '' ? '\u0000' : v).replace(quote('\u0000'), '""');
  return s;
}

// ---------- time ----------
function parseTime(s, now = Date.now() / 1000) {
  if (!s || s === 'now') return now;
  const m = /^now-(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$/.exec(s);
  if (m) return now - Number(m[1]) * { ms: 1e-3, s: 1, m: 60, h: 3600, d: 86400, w: 604800 }[m[2]];
  if (/^\d+(\.\d+)?$/.test(s)) return Number(s);
  const t = Date.parse(s);
  return Number.isNaN(t) ? now : t / 1000;
}
function autoStep(from, until, windows) {
  const span = Math.max(1, parseTime(until) - parseTime(from));
  for (const st of [10, 20, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 604800]) {
    if (span / st <= windows) return st;
  }
  return Math.ceil(span / windows);
}

// ---------- main graph ----------
const tooltip = $('#tooltip');
const graph = new FlameGraph($('#flame'), {
  onZoom: (path) => {
    const names = path.slice(1).map((i) => graph.nameOf(i));
    renderCrumbs();
    commit({ focus: names.length ? names.join(';') : undefined });
  },
  onHover: (n, e) => showTooltip(n, e, graph),
  onDraw: () => { window.__flamedb.draws++; },
});

function showTooltip(n, e, g) {
  if (!n || !e) { tooltip.hidden = true; return; }
  const m = g.meta;
  let html;
  const ds = tooltip.dataset;
  for (const k of Object.keys(ds)) delete ds[k];
  ds.name = n.name;
  if (m.diff) {
    const s = n.src, L = m.leftTotal, R = m.rightTotal;
    const lp = L ? s.left_total / L : 0, rp = R ? s.right_total / R : 0;
    const d = rp - lp;
    ds.leftShare = lp; ds.rightShare = rp; ds.delta = d;
    html = `<div class="tt-name">${esc(n.name)}</div>
      <table><tr><th></th><th>total</th><th>share</th><th>self share</th></tr>
      <tr><td>left</td><td>${fmtValue(s.left_total, m.leftUnit)}</td><td>${pct(lp)}</td><td>${pct(L ? s.left_self / L : 0)}</td></tr>
      <tr><td>right</td><td>${fmtValue(s.right_total, m.rightUnit)}</td><td>${pct(rp)}</td><td>${pct(R ? s.right_self / R : 0)}</td></tr></table>
      <div class="${d > 0 ? 'grew' : d < 0 ? 'shrank' : ''}">change of share: ${d >= 0 ? '+' : ''}${(d * 100).toFixed(2)} pp ${d > 0 ? '(grew)' : d < 0 ? '(shrank)' : ''} · ${ratio(lp, rp)}</div>
      <div class="muted">${n.z === null || n.z === undefined ? 'no significance test (samples unknown)'
    : `z = ${Number.isFinite(n.z) ? n.z.toFixed(2) : n.z > 0 ? '+∞' : '−∞'}: ${n.significant ? '<b>significant</b> (|z| > 1.96, 95%)' : 'within sampling noise'}`}</div>`;
    ds.z = n.z === null || n.z === undefined ? '' : n.z;
    ds.significant = String(n.significant);
  } else if (m.wall && n.parts && !n.other) {
    // the wall view (wall.js): on-CPU + off-CPU, no sample count, no interval
    const p = n.parts, T = m.total;
    const ss = T ? n.self / T : 0, ts = T ? n.total / T : 0;
    Object.assign(ds, { self: n.self, total: n.total, selfShare: ss, totalShare: ts, onTotal: p.on_total, offTotal: p.off_total, onSelf: p.on_self, offSelf: p.off_self });
    const part = (v, of) => `${fmtValue(v, m.unit)} <span class="muted">${pct(of ? v / of : 0, 1)}</span>`;
    html = `<div class="tt-name">${esc(n.name)}</div>
      <table><tr><th></th><th>wall</th><th>share</th><th class="on">on-CPU</th><th class="off">off-CPU</th></tr>
      <tr><td>total</td><td class="num">${fmtValue(n.total, m.unit)}</td><td class="num">${pct(ts)}</td><td class="num" data-k="on-total">${part(p.on_total, n.total)}</td><td class="num" data-k="off-total">${part(p.off_total, n.total)}</td></tr>
      <tr><td>self</td><td class="num">${fmtValue(n.self, m.unit)}</td><td class="num">${pct(ss)}</td><td class="num" data-k="on-self">${part(p.on_self, n.self)}</td><td class="num" data-k="off-self">${part(p.off_self, n.self)}</td></tr></table>
      <div class="muted">shares of ${fmtValue(T, m.unit)} of wall time (on-CPU + off-CPU) · no intervals: off-CPU time has no sample count</div>`;
  } else if (n.other) {
    const sh = n.total / m.total;
    ds.total = n.total; ds.totalShare = sh;
    html = `<div class="tt-name">other: left out by max_nodes</div>
      <div>${fmtValue(n.total, m.unit)} (${pct(sh)} of all) in nodes smaller than the ones shown.
      Raise max_nodes (now ${m.maxNodes}) to see them.</div>`;
  } else {
    const N = m.samples, T = m.total;
    const ss = T ? n.self / T : 0, ts = T ? n.total / T : 0;
    const pt = g.node(n.parent);
    const ps = pt && pt.total ? n.total / pt.total : 1;
    const sci = wilson(ss, N), tci = wilson(ts, N);
    Object.assign(ds, { self: n.self, total: n.total, selfShare: ss, totalShare: ts, selfCi: sci ? sci.join(',') : '', totalCi: tci ? tci.join(',') : '' });
    html = `<div class="tt-name">${esc(n.name)}</div>
      <table>
      <tr><td>total</td><td class="num">${fmtValue(n.total, m.unit)}</td><td class="num">${pct(ts)}</td><td class="ci">${tci ? '95% ' + ci(tci) : ci(tci)}</td></tr>
      <tr><td>self</td><td class="num">${fmtValue(n.self, m.unit)}</td><td class="num">${pct(ss)}</td><td class="ci">${sci ? '95% ' + ci(sci) : ci(sci)}</td></tr>
      </table>
      <div class="muted">${pct(ps, 1)} of parent · shares of ${fmtValue(T, m.unit)} ${N === null || N === undefined ? '(samples unknown: no intervals)' : 'from ' + fmtSamples(N)}</div>${m.inverted ? `
      <div class="muted">inverted: ${n.depth === 1 ? 'its total is the time spent in this function itself (its self time)' : 'its total is the time of the leaf below spent through this caller'}</div>` : ''}`;
  }
  tooltip.innerHTML = html;
  tooltip.hidden = false;
  const w = tooltip.offsetWidth, h = tooltip.offsetHeight;
  let x = e.clientX + 14, y = e.clientY + 16;
  if (x + w > innerWidth - 8) x = e.clientX - w - 14;
  if (y + h > innerHeight - 8) y = e.clientY - h - 12;
  tooltip.style.left = Math.max(4, x) + 'px';
  tooltip.style.top = Math.max(4, y) + 'px';
}

function renderCrumbs() {
  crumbsOf($('#crumbs'), graph);
  pair.crumbs();
}

function renderSearchResult() {
  const el = $('#search-result');
  const r = graph.searchResult;
  if (!r) { el.textContent = ''; delete el.dataset.share; return; }
  el.dataset.share = r.share;
  el.dataset.count = r.count;
  el.textContent = r.count ? `${r.count} frame${r.count > 1 ? 's' : ''} · ${pct(r.share)} of total` : 'no match';
}

// ---------- timeline (timeline.js) ----------
const timeline = initTimeline({ commit, getState: () => state, fmtValue, fmtTime, esc });

// ---------- views, table, labels, keys (views.js, table.js, labels.js, keys.js) ----------
// A split frame `label=value` (right-click "Filter: only"): the selector
// keeps that value, a sample label's as a series label's.
function filterSplit(name) {
  const label = splitLabel(splitBy()), v = name.slice(label.length + 1);
  commit({ query: selectorOfLabels(state.query || '{}', { [label]: v === '""' ? '' : v }), focus: undefined, groups: undefined });
}
const views = initViews({ graph, commit, getState: () => state, fmtValue, pct, esc, showTooltip, filterSplit });
const pair = initPair({ graph, commit, getState: () => state, fmtValue, pct, esc, showTooltip, fmtSamples });
// A row of the table selects its function (fn) and highlights it in the graph.
function selectFunction(name) {
  if (exactSearch && state.search === name) { exactSearch = false; commit({ search: undefined, fn: undefined }); return; }
  exactSearch = true;
  commit({ search: name, fn: name });
}
const table = initTable({ api, commit, getState: () => state, fmtValue, pct, ci, esc, select: selectFunction, views });
const lines = initLines({ api, commit, getState: () => state, fmtValue, pct, ci, esc });
const insights = initInsights({ api, commit, getState: () => state, esc, fmtTime, setMatcher, num });
const labels = initLabels({ api, commit, getState: () => state, selectorOfLabels, esc });
initKeys({ views, labels, getState: () => state, commit });

// ---------- groups ----------
function renderGroups(stab, answers) {
  const tb = $('#groups tbody');
  const has = !!stab;
  $('#groups').hidden = !has;
  $('#groups-min').hidden = !has;
  const min = Number(state.minsamples) > 0 ? Number(state.minsamples) : MIN_SAMPLES;
  $('#groups-note').innerHTML = has
    ? `Each group against the merge of the whole query. Ranked by the interval of its Manhattan distance (the lower end: how far the group is <i>at least</i>, after what its number of samples explains by chance, ±${NOISE_K.toFixed(2)} × its sampling noise), so a group of a few samples far off does not hide a large one that moved; ● marks a group farther than chance explains. Groups under the minimum of samples are listed apart. Tick groups to see their flamegraphs.`
    : 'Pick a <b>group by</b> label to compare its groups against the whole.';
  $('#groups-graphs').textContent = '';
  miniGraphs.length = 0;
  groupStab = stab;
  groupsShown = (state.groups || '') + '|' + min;
  if (!has) { tb.textContent = ''; return; }
  if (document.activeElement !== $('#minsamples')) $('#minsamples').value = min;
  const keyOf = (l) => JSON.stringify(l);
  const { ranked, few, unknown } = rankGroups(stab.groups, min);
  const order = [...ranked, ...few, ...unknown];
  let selected = state.groups ? state.groups.split('|') : order.slice(0, 2).map((e) => labelsText(e.g.labels));
  const byKey = new Map((answers ? answers.groups : []).map((g) => [keyOf(g.labels), g]));
  // the bars' scale: the ranked groups' largest upper end (a group of too few samples may run off it)
  const scale = Math.max(1e-9, ...(ranked.length ? ranked : order).map((e) => (e.ci ? e.ci[1] : e.g.manhattan || 0)));
  const bar = (e) => {
    if (!e.ci) return '';
    const P = (v) => (Math.min(1, v / scale) * 100).toFixed(2);
    return `<span class="ivl" title="95% interval ${num(e.ci[0])}–${num(e.ci[1])}"><i style="left:${P(e.ci[0])}%;width:${(P(e.ci[1]) - P(e.ci[0])).toFixed(2)}%"></i><b style="left:${P(e.g.manhattan)}%"></b></span>`;
  };
  const row = (e, cls) => {
    const g = e.g, name = labelsText(g.labels);
    return `<tr data-group="${esc(name)}" class="${cls}" data-lo="${e.ci ? e.ci[0] : ''}" data-hi="${e.ci ? e.ci[1] : ''}"><td><input type="checkbox" ${selected.includes(name) ? 'checked' : ''}></td>
      <td class="fn" title="${esc(name)} · total ${esc(fmtValue(g.total, current ? current.unit : ''))} · entropy ${num(g.entropy, 2)} bits">${e.outlier ? '<span class="out" title="farther from the whole than its samples explain">●</span> ' : ''}${esc(name)}</td>
      <td class="num">${g.samples === null || g.samples === undefined ? '?' : g.samples.toLocaleString('en-US')}</td>
      <td class="num dist" data-v="${g.manhattan}">${num(g.manhattan)}${e.ci ? `<small>${num(e.ci[0])}–${num(e.ci[1])}</small>` : '<small>no interval</small>'}${bar(e)}</td><td class="num">${num(g.jsd)}</td></tr>`;
  };
  const sect = (text, n) => (n ? `<tr class="sect"><td colspan="5">${text}</td></tr>` : '');
  tb.innerHTML = ranked.map((e) => row(e, 'ranked')).join('') +
    sect(`too few samples (under ${min.toLocaleString('en-US')}): not ranked, their distance is mostly chance`, few.length) +
    few.map((e) => row(e, 'few')).join('') +
    sect('samples unknown: no interval, by distance', unknown.length) +
    unknown.map((e) => row(e, 'unknown')).join('');
  const grid = $('#groups-graphs');
  for (const { g } of order) {
    const name = labelsText(g.labels);
    if (!selected.includes(name)) continue;
    const a = byKey.get(keyOf(g.labels));
    if (!a) continue;
    const box = document.createElement('div');
    box.className = 'mini';
    const head = document.createElement('div');
    head.className = 'mini-head';
    head.innerHTML = `<a href="#">${esc(name)}</a> <span class="muted">${fmtSamples(a.samples)} · ${fmtValue(a.total, a.unit)} · Manhattan ${num(g.manhattan)} · JSD ${num(g.jsd)}</span>`;
    head.querySelector('a').onclick = (e) => {
      e.preventDefault();
      commit({ query: selectorOfLabels(state.query, g.labels), group_by: undefined, groups: undefined, focus: undefined });
    };
    const fl = document.createElement('div');
    fl.className = 'flame mini-flame';
    box.append(head, fl);
    grid.append(box);
    const mg = new FlameGraph(fl, { rowHeight: 13, onHover: (n, e) => showTooltip(n, e, mg), onZoom: () => {} });
    mg.icicle = graph.icicle;
    mg.setData(fromLevels(a), { unit: a.unit, total: a.total, samples: a.samples, maxNodes: 1000 });
    mg.draw();
    miniGraphs.push(mg);
  }
}
$('#minsamples').addEventListener('change', (e) => {
  const v = Math.max(0, Math.floor(Number(e.target.value) || 0));
  commit({ minsamples: v === MIN_SAMPLES ? undefined : String(v) }, { replace: true });
});
$('#groups tbody').addEventListener('change', () => {
  const names = [...document.querySelectorAll('#groups tbody tr[data-group]')].filter((tr) => tr.querySelector('input').checked).map((tr) => tr.dataset.group);
  commit({ groups: names.join('|') || '-' });
});

// ---------- stability ----------
function drawChart(canvas, pts, from, until, opts = {}) {
  const w = canvas.parentElement.clientWidth - 4, h = 54;
  const dpr = devicePixelRatio || 1;
  canvas.width = w * dpr; canvas.height = h * dpr; canvas.style.width = w + 'px'; canvas.style.height = h + 'px';
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  const cs = getComputedStyle(document.body);
  const vals = pts.filter((p) => p[1] !== null).map((p) => p[1]);
  let max = Math.max(opts.limit || 0, ...vals, 1e-9) * 1.1;
  const X = (t) => 30 + ((t - from) / Math.max(1, until - from)) * (w - 34);
  const Y = (v) => 4 + (1 - v / max) * (h - 10);
  ctx.strokeStyle = cs.getPropertyValue('--line'); ctx.lineWidth = 1;
  ctx.beginPath(); ctx.moveTo(30, Y(0)); ctx.lineTo(w, Y(0)); ctx.stroke();
  ctx.fillStyle = cs.getPropertyValue('--muted'); ctx.font = '10px system-ui, sans-serif'; ctx.textBaseline = 'middle';
  ctx.fillText(max / 1.1 >= 10 ? (max / 1.1).toFixed(0) : (max / 1.1).toPrecision(2), 0, Y(max / 1.1));
  ctx.fillText('0', 0, Y(0));
  if (opts.limit !== undefined) {
    ctx.strokeStyle = cs.getPropertyValue('--bad'); ctx.setLineDash([4, 3]);
    ctx.beginPath(); ctx.moveTo(30, Y(opts.limit)); ctx.lineTo(w, Y(opts.limit)); ctx.stroke(); ctx.setLineDash([]);
  }
  ctx.strokeStyle = cs.getPropertyValue('--accent'); ctx.fillStyle = ctx.strokeStyle; ctx.lineWidth = 1.5;
  ctx.beginPath();
  let pen = false;
  for (const [t, v] of pts) {
    if (v === null) continue;           // empty windows: join the neighbours
    if (pen) ctx.lineTo(X(t), Y(v)); else ctx.moveTo(X(t), Y(v));
    pen = true;
  }
  ctx.stroke();
  for (const [t, v] of pts) if (v !== null) { ctx.beginPath(); ctx.arc(X(t), Y(v), 2, 0, 7); ctx.fill(); }
}
function renderStability(st) {
  const s = st.summary;
  const v = $('#verdict');
  const verdict = s.stable === true ? 'stable' : s.stable === false ? 'unstable' : 'unknown';
  v.className = 'verdict ' + verdict;
  v.dataset.stable = String(s.stable);
  const sentence = s.stable === true
    ? `Every window's distribution stays within Manhattan ${s.max_manhattan} and JSD ${s.max_jsd} of the previous one: any window of this range shows the same hotspots, so this flamegraph can be trusted.`
    : s.stable === false
      ? `Some windows moved more than Manhattan ${s.max_manhattan} or JSD ${s.max_jsd} from the previous one: the profile changes over this range, so look at the windows (timeline) before trusting one flamegraph.`
      : 'Fewer than two non-empty windows: there is nothing to compare yet, widen the range.';
  v.innerHTML = `<b>${verdict}</b> <span>${sentence}</span>`;
  const pts = (k) => st.windows.map((w) => [w.from, w[k]]);
  drawChart($('#ch-entropy'), pts('entropy'), st.from, st.until);
  drawChart($('#ch-manhattan'), pts('manhattan'), st.from, st.until, { limit: s.max_manhattan });
  drawChart($('#ch-jsd'), pts('jsd'), st.from, st.until, { limit: s.max_jsd });
  $('#stab-summary').textContent = `${st.of ? st.of + ': ' : ''}${st.windows.length} windows of ${st.step}s · entropy ${num(s.entropy_mean, 2)} ± ${num(s.entropy_stddev, 2)} bits · Manhattan max ${num(s.manhattan_max)} · JSD max ${num(s.jsd_max)} · ${s.comparisons} comparisons`;
}

// ---------- compare ----------
function renderCompare(c) {
  const t = $('#compare');
  t.hidden = !c;
  if (!c) { $('#compare-summary').innerHTML = 'Open the <b>Diff</b> view to compare two selections.'; return; }
  const sig = c.functions.filter((f) => f.significant);
  $('#compare-summary').innerHTML = `Manhattan ${num(c.manhattan)} · JSD ${num(c.jsd)} · left ${fmtSamples(c.left.samples)}, right ${fmtSamples(c.right.samples)}.
    ${c.left.samples === null || c.right.samples === null
    ? 'No significance test: a side does not say how many samples are behind its values.'
    : `<b>${sig.length}</b> significant change${sig.length === 1 ? '' : 's'} (two-proportion z-test, 95%); others are within sampling noise.`}`;
  const rows = [...sig, ...c.functions.filter((f) => !f.significant)];
  t.querySelector('tbody').innerHTML = rows.map((f) => `<tr class="${f.significant ? 'sig' : 'noise'}" data-name="${esc(f.name)}">
    <td class="fn" title="${esc(f.name)}">${esc(f.name)}</td><td class="num">${pct(f.left_share)}</td><td class="num">${pct(f.right_share)}</td>
    <td class="num ${f.delta > 0 ? 'grew' : 'shrank'}">${f.delta > 0 ? '+' : ''}${(f.delta * 100).toFixed(2)}${f.significant ? ' ●' : ''}</td></tr>`).join('');
}
$('#compare tbody').addEventListener('click', (e) => {
  const tr = e.target.closest('tr');
  if (!tr) return;
  exactSearch = true;
  commit({ search: tr.dataset.name });
});

// ---------- pickers ----------
let pickersKey = null;
async function loadPickers() {
  const key = `${state.from}|${state.until}`;
  if (key === pickersKey) return syncPickers();
  pickersKey = key;
  const range = { from: state.from || 'now-1h', until: state.until || 'now' };
  const wide = { from: 'now-7d' };
  const [labels, services, types] = await Promise.all([
    api('/api/v1/labels', range).catch(() => ({ labels: [] })),
    api('/api/v1/label/service/values', wide).catch(() => ({ values: [] })),
    api('/api/v1/label/type/values', wide).catch(() => ({ values: [] })),
  ]);
  const fill = (sel, values, none) => {
    sel.innerHTML = (none !== undefined ? `<option value="">${none}</option>` : '') + values.map((v) => `<option>${esc(v)}</option>`).join('');
  };
  fill($('#service'), services.values, 'any');
  fill($('#type'), types.values, 'auto');
  fill($('#group_by'), labels.labels.map((l) => l.name).filter((n) => n !== 'type'), 'none');
  fill($('#split'), labels.labels.map((l) => l.name).filter((n) => n !== 'type'), 'none');
  sampleGroup = document.createElement('optgroup');
  sampleGroup.label = 'sample labels';
  $('#split').append(sampleGroup);
  fillSampleSplits(null);
  syncPickers();
}
// The split picker's sample labels (pprof Sample.label): listed when asked,
// since finding them reads the stacks (/api/v1/labels?sample_labels=1,
// labels.js keeps the answer); until then one entry that lists them.
let sampleGroup = null;
function fillSampleSplits(names) {
  if (!sampleGroup) return;
  sampleGroup.innerHTML = names === null ? `<option value="${SAMPLE_SPLIT}">list them… (reads the stacks)</option>`
    : names.length ? names.map((l) => `<option value="${esc(SAMPLE_SPLIT + l.name)}">${esc(l.name)} (${l.values})</option>`).join('')
      : '<option value="" disabled>none in this selection</option>';
  $('#split').dataset.samples = names === null ? '' : String(names.length);
}
function ensureOption(sel, v, text) {
  if (v && ![...sel.options].some((o) => o.value === v)) sel.append(new Option(text || v, v));
  sel.value = v || '';
}
function syncPickers() {
  ensureOption($('#service'), matcherValue(state.query, 'service'));
  ensureOption($('#type'), matcherValue(state.query, 'type'));
  ensureOption($('#group_by'), state.group_by || '');
  const sp = $('#split');
  ensureOption(sp, splitBy() || '', splitBy() ? splitTitle(splitBy()) : '');
  sp.dataset.auto = autoSplit ? autoSplit : '';
  sp.title = autoSplit ? `split by ${autoSplit} by default: the selector names no ${autoSplit} and its profiles are of ${autoSplitValues} ${autoSplit} values (a whole-node view); pick none to turn it off` : '';
}
// none while a default split is drawn is split=- (off, kept in the URL)
$('#split').onchange = (e) => {
  if (e.target.value === SAMPLE_SPLIT) {
    syncPickers();      // the choice stays what it was while they load
    labels.sampleLabels().then((names) => { fillSampleSplits(names); syncPickers(); }).catch(showError);
    return;
  }
  commit({ split: e.target.value || (autoSplit ? '-' : undefined), focus: undefined });
};
$('#service').onchange = (e) => commit({ query: setMatcher(state.query, 'service', e.target.value), focus: undefined, groups: undefined });
$('#type').onchange = (e) => commit({ query: setMatcher(state.query, 'type', e.target.value), focus: undefined });
$('#group_by').onchange = (e) => commit({ group_by: e.target.value || undefined, groups: undefined, tab: e.target.value ? 'groups' : undefined });

// ---------- autocomplete ----------
const ac = $('#ac');
let acItems = [], acActive = -1, acInput = null, acCtx = null, acSeq = 0;
const valueCache = new Map();
async function values(name) {
  const k = `${name}|${state.from}|${state.until}`;
  if (!valueCache.has(k)) {
    valueCache.set(k, name === '' ?
      api('/api/v1/labels', { from: state.from || 'now-1h', until: state.until }).then((r) => r.labels.map((l) => l.name)).catch(() => []) :
      api(`/api/v1/label/${encodeURIComponent(name)}/values`, { from: state.from || 'now-1h', until: state.until }).then((r) => r.values).catch(() => []));
  }
  return valueCache.get(k);
}
async function suggest(input) {
  const pos = input.selectionStart, before = input.value.slice(0, pos);
  let m, ctx = null;
  if ((m = /([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)$/.exec(before))) ctx = { kind: 'value', name: m[1], prefix: m[3] };
  else if ((m = /[{,]\s*([A-Za-z_][A-Za-z0-9_]*)?$/.exec(before))) ctx = { kind: 'name', prefix: m[1] || '' };
  else if ((m = /^([A-Za-z0-9_.\-]*)$/.exec(before))) ctx = { kind: 'value', name: 'service', prefix: m[1], bare: true };
  const seq = ++acSeq;
  if (!ctx) return hideAc();
  const all = await values(ctx.kind === 'name' ? '' : ctx.name);
  if (seq !== acSeq || document.activeElement !== input) return;   // a newer keystroke won
  const p = ctx.prefix.toLowerCase();
  acItems = all.filter((v) => v.toLowerCase().includes(p)).slice(0, 50);
  if (!acItems.length || (acItems.length === 1 && acItems[0] === ctx.prefix)) return hideAc();
  acInput = input; acCtx = { ...ctx, pos }; acActive = 0;
  const r = input.getBoundingClientRect();
  ac.style.left = r.left + 'px'; ac.style.top = r.bottom + 2 + 'px'; ac.style.minWidth = Math.min(r.width, 320) + 'px';
  ac.innerHTML = `<div class="ac-head">${ctx.kind === 'name' ? 'label' : esc(ctx.name) + ' value'}</div>` +
    acItems.map((v, i) => `<div class="ac-item${i === 0 ? ' on' : ''}" data-i="${i}">${esc(v)}</div>`).join('');
  ac.hidden = false;
}
function hideAc() { acSeq++; ac.hidden = true; acItems = []; acActive = -1; }
function acceptAc(i) {
  const input = acInput, c = acCtx, v = acItems[i];
  const pos = c.pos, start = pos - c.prefix.length;
  let ins = c.kind === 'name' ? v + '="' : c.bare ? v : v.replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"';
  let after = input.value.slice(pos);
  if (c.kind === 'value' && !c.bare && after.startsWith('"')) after = after.slice(1);
  input.value = input.value.slice(0, start) + ins + after;
  const np = start + ins.length;
  input.setSelectionRange(np, np);
  hideAc();
  input.focus();
  if (c.kind === 'name') suggest(input);
}
ac.addEventListener('mousedown', (e) => { const it = e.target.closest('.ac-item'); if (it) { e.preventDefault(); acceptAc(Number(it.dataset.i)); } });
for (const id of ['query', 'left', 'right']) {
  const input = $('#' + id);
  input.addEventListener('input', () => suggest(input));
  input.addEventListener('focus', () => suggest(input));
  input.addEventListener('blur', () => setTimeout(hideAc, 150));
  input.addEventListener('keydown', (e) => {
    if (!ac.hidden && acInput === input) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        acActive = (acActive + (e.key === 'ArrowDown' ? 1 : acItems.length - 1)) % acItems.length;
        ac.querySelectorAll('.ac-item').forEach((el, i) => el.classList.toggle('on', i === acActive));
        return;
      }
      if (e.key === 'Tab' || (e.key === 'Enter' && acActive >= 0)) { e.preventDefault(); acceptAc(acActive); return; }
      if (e.key === 'Escape') { hideAc(); e.stopPropagation(); return; }
    }
    if (e.key === 'Enter') { e.preventDefault(); hideAc(); runFromBar(); }
  });
}
for (const id of ['from', 'until', 'left_from', 'left_until', 'right_from', 'right_until']) {
  $('#' + id).addEventListener('keydown', (e) => { if (e.key === 'Enter') runFromBar(); });
}
function runFromBar() {
  const ch = { query: $('#query').value.trim() || '{}', from: $('#from').value.trim() || 'now-1h', until: $('#until').value.trim() || 'now', focus: undefined };
  if (state.view === 'diff') {
    for (const k of ['left', 'right', 'left_from', 'left_until', 'right_from', 'right_until']) ch[k] = $('#' + k).value.trim() || undefined;
  }
  commit(ch);
}
$('#run').onclick = runFromBar;
for (const b of document.querySelectorAll('#presets button')) {
  b.onclick = () => commit({ from: 'now-' + b.dataset.range, until: 'now', focus: undefined });
}
for (const b of document.querySelectorAll('#views button')) {
  b.onclick = () => {
    const v = b.dataset.view;
    if (v === state.view) return;
    // the diff opens on the query against its previous period (loadDiff)
    if (v === 'diff') commit({ view: 'diff', left: state.left || state.query, right: state.right || state.query, tab: 'compare', focus: undefined });
    else commit({ view: v === 'insights' ? 'insights' : 'flame', tab: undefined, focus: undefined });
  };
}
for (const b of document.querySelectorAll('#orient button')) {
  b.onclick = () => commit({ layout: b.dataset.layout === 'icicle' ? 'icicle' : undefined }, { replace: true });
}
for (const b of document.querySelectorAll('#tabs button')) {
  b.onclick = () => commit({ tab: b.dataset.tab }, { replace: true });
}
let searchTimer = null;
$('#search').addEventListener('input', (e) => {
  exactSearch = false;
  clearTimeout(searchTimer);
  const v = e.target.value;
  graph.setSearch(v, false);
  renderSearchResult();
  searchTimer = setTimeout(() => commit({ search: v || undefined }, { replace: true }), 300);
});

// ---------- export ----------
const exportMenu = $('#export .menu-items');
$('#export-btn').onclick = (e) => { e.stopPropagation(); exportMenu.hidden = !exportMenu.hidden; };
addEventListener('click', () => { exportMenu.hidden = true; });
function updateExports() {
  const base = { query: state.query || '{}', from: state.from || 'now-1h', until: state.until || 'now' };
  const q = (extra) => '/api/v1/query?' + new URLSearchParams({ ...base, ...extra }).toString();
  const stem = 'flamedb-' + (matcherValue(state.query, 'service') || 'profile');
  Object.assign($('#exp-folded'), { href: q({ format: 'folded' }), download: stem + '.folded' });
  Object.assign($('#exp-speedscope'), { href: q({ format: 'speedscope' }), download: stem + '.speedscope.json' });
  Object.assign($('#exp-json'), { href: q({ format: 'json', max_nodes: state.max_nodes || '0' }), download: stem + '.json' });
  Object.assign($('#exp-pprof'), { href: q({ format: 'pprof' }), download: stem + '.pb.gz' });
}
// SVG: the frames the canvas shows now (zoom, search, transforms), drawn
// again as vector shapes by the graph itself (FlameGraph.toSVG).
function exportSVG() {
  const m = graph.meta;
  const describe = (n) => {
    if (n.other) return `other (left out by max_nodes): ${fmtValue(n.total, m.unit)}`;
    if (m.diff) {
      const s = n.src;
      return `${n.name}\nbaseline ${fmtValue(s.left_total, m.leftUnit)} (${pct(m.leftTotal ? s.left_total / m.leftTotal : 0)}), comparison ${fmtValue(s.right_total, m.rightUnit)} (${pct(m.rightTotal ? s.right_total / m.rightTotal : 0)})`;
    }
    const wall = n.parts ? `\non-CPU ${fmtValue(n.parts.on_total, m.unit)}, off-CPU ${fmtValue(n.parts.off_total, m.unit)}` : '';
    return `${n.name}\ntotal ${fmtValue(n.total, m.unit)} (${pct(m.total ? n.total / m.total : 0)}), self ${fmtValue(n.self, m.unit)} (${pct(m.total ? n.self / m.total : 0)})${wall}`;
  };
  return graph.toSVG(describe);
}
function download(blob, name) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 5000);
}
$('#exp-svg').onclick = (e) => {
  e.preventDefault();
  download(new Blob([exportSVG()], { type: 'image/svg+xml' }), 'flamedb-flamegraph.svg');
};
$('#exp-png').onclick = (e) => {
  e.preventDefault();
  graph.canvas.toBlob((blob) => {
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = 'flamedb-flamegraph.png';
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 5000);
  }, 'image/png');
};
async function probePprof() {
  try {
    const r = await authFetch('/api/v1/query?format=pprof&from=now-5m&max_nodes=1');
    $('#exp-pprof').hidden = r.status !== 200;
  } catch { $('#exp-pprof').hidden = true; }
}

// ---------- keyboard ----------
addEventListener('keydown', (e) => {
  const inField = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement?.tagName);
  if (e.key === '/' && !inField) { e.preventDefault(); if (pair.side) pair.focusSearch(); else { $('#search').focus(); $('#search').select(); } return; }
  if (e.key === 'Escape') {
    if (!ac.hidden) { hideAc(); return; }
    if (views.escape()) return;
    if (inField) document.activeElement.blur();
    // side by side: the off-CPU pane when the mouse is over it
    if (pair.side && pair.graph && $('#pane-off').matches(':hover')) { pair.graph.zoomOut(); return; }
    graph.zoomOut();
  }
});
// The main graph scrolls inside the window's height, its root in view.
function fitFlame() {
  const fl = $('#flame');
  const top = fl.getBoundingClientRect().top + scrollY;
  fl.style.maxHeight = Math.max(220, innerHeight - top - 10) + 'px';
}
addEventListener('resize', () => {
  if (!current) return;
  fitFlame();
  graph.draw();
  if (graph.width !== Math.max(50, $('#flame').clientWidth)) graph.draw();
  for (const m of miniGraphs) m.draw();
  pair.redraw();
  timeline.render();
});
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
  graph.computeColours(); graph.draw();
  for (const m of miniGraphs) { m.computeColours(); m.draw(); }
  views.redraw();
  pair.redraw();
});

// ---------- render ----------
function syncBar() {
  $('#query').value = state.query || '';
  $('#from').value = state.from || 'now-1h';
  $('#until').value = state.until || 'now';
  for (const k of ['left', 'right', 'left_from', 'left_until', 'right_from', 'right_until']) $('#' + k).value = state[k] || '';
  $('#diffbar').hidden = state.view !== 'diff';
  document.body.dataset.view = state.view;
  $('#insights').hidden = state.view !== 'insights';
  for (const b of document.querySelectorAll('#views button')) b.classList.toggle('on', b.dataset.view === state.view);
  for (const b of document.querySelectorAll('#orient button')) b.classList.toggle('on', b.dataset.layout === (state.layout === 'icicle' ? 'icicle' : 'flame'));
  for (const b of document.querySelectorAll('#presets button')) b.classList.toggle('on', state.from === 'now-' + b.dataset.range && (state.until || 'now') === 'now');
  const tab = state.tab || (state.view === 'diff' ? 'compare' : state.group_by ? 'groups' : 'top');
  for (const b of document.querySelectorAll('#tabs button')) b.classList.toggle('on', b.dataset.tab === tab);
  for (const t of document.querySelectorAll('.tab')) t.hidden = t.id !== 'tab-' + tab;
  if (tab === 'stability' && lastStability) renderStability(lastStability);
  if ($('#search').value !== (state.search || '')) $('#search').value = state.search || '';
  syncPickers();
  syncPair();
  timeline.sync();
}
let lastStability = null;

// The main graph as the state says (views, search, zoom), with its
// breadcrumb: drawn as soon as the query's answer is in, before the panels.
function drawMain() {
  graph.icicle = state.layout === 'icicle';
  // a link with fn=NAME and search=NAME highlights that function only
  if (state.fn && state.search === state.fn) exactSearch = true;
  views.apply();
  graph.searchText = state.search || '';
  graph.exact = exactSearch;
  graph.applySearch();
  if (graph.count) {
    graph.zoomToNames(state.focus ? state.focus.split(';') : []);
    fitFlame();
    graph.draw();
    // a scrollbar that came or went with the new height changes the width
    if (graph.width !== Math.max(50, $('#flame').clientWidth)) graph.draw();
    $('#flame').scrollTop = graph.icicle ? 0 : $('#flame').scrollHeight;
  }
  renderCrumbs();
  renderSearchResult();
  pair.apply();
}

function applyUI() {
  if (state.view === 'insights') return;   // insights.js draws its own, on load
  drawMain();
  for (const m of miniGraphs) { m.icicle = graph.icicle; m.draw(); }
  if (groupStab && groupsShown !== (state.groups || '') + '|' + (Number(state.minsamples) > 0 ? Number(state.minsamples) : MIN_SAMPLES)) renderGroups(groupStab, groupAnswers);
  table.render();
  lines.render();
}

async function render() {
  syncBar();
  updateExports();
  const key = dataKey(state);
  if (key === loadedKey) { applyUI(); return; }
  loadedKey = key;
  const mine = ++loads;
  document.body.dataset.state = 'loading';
  document.body.dataset.flame = 'loading';
  $('#loading').hidden = false;
  showError(null);
  try {
    loadPickers().catch(showError);
    if (state.view === 'diff') await loadDiff(mine);
    else if (state.view === 'insights') await loadInsights(mine);
    else await loadFlame(mine);
    if (mine !== loads) return;
    applyUI();
    document.body.dataset.state = 'ready';
    document.body.dataset.flame = 'ready';
  } catch (e) {
    if (mine !== loads) return;
    showError(e);
    document.body.dataset.state = 'error';
  } finally {
    if (mine === loads) $('#loading').hidden = true;
    $('#summary').title = $('#summary').textContent;   // whole when cut
  }
}

function setMainData(tree, meta, empty) {
  const el = $('#flame');
  el.classList.toggle('empty', !!empty);
  el.dataset.empty = empty || '';
  views.setMain(tree, meta);
}

// An empty range whose selector has profiles elsewhere (the API's `latest`:
// profiles imported with their own timestamps miss the default hour) offers
// to move the range there: same length, ending where the newest profile ends.
function ago(s) {
  const a = Math.abs(s);
  const t = a < 90 ? `${Math.round(a)} s` : a < 5400 ? `${Math.round(a / 60)} min` : a < 172800 ? `${Math.round(a / 3600)} h` : `${Math.round(a / 86400)} days`;
  return s >= 0 ? t + ' ago' : 'in ' + t;
}
function renderLatest(q, base) {
  const el = $('#latest'), l = q && q.latest;
  el.hidden = !l;
  $('#flame').classList.toggle('offered', !!l);
  if (!l) { el.textContent = ''; delete el.dataset.from; delete el.dataset.until; return; }
  const now = Date.now() / 1000;
  const span = Math.max(1, Math.round(parseTime(base.until, now) - parseTime(base.from, now)));
  const until = Math.ceil(l.until), from = Math.min(Math.floor(l.from), until - span);
  Object.assign(el.dataset, { from: l.from, until: l.until });
  el.innerHTML = `No profiles in this range; the newest is at <b>${esc(fmtTime(l.from))}</b> (${ago(now - l.from)}) — <button class="primary" id="show-latest" title="${esc(fmtTime(from))} → ${esc(fmtTime(until))}">Show it</button>`;
  $('#show-latest').onclick = () => commit({ from: String(from), until: String(until), focus: undefined });
}

async function loadFlame(mine) {
  const base = { query: state.query || '{}', from: state.from || 'now-1h', until: state.until || 'now' };
  const maxNodes = state.max_nodes || '8192';
  const stepStab = autoStep(base.from, base.until, 60);
  const [auto, types] = await Promise.all([defaultSplit(base), typesOf(base)]);
  if (mine !== loads) return;
  autoSplit = auto ? auto.label : null;
  autoSplitValues = auto ? auto.values : 0;
  pairTypes = types;
  syncPickers();
  syncPair();
  const split = splitBy();
  if (pairMode()) return loadPair(mine, base, maxNodes, split, auto);
  pair.setOff(null);
  const qP = split ? querySplit(base, maxNodes, split, auto ? auto.values : undefined) : api('/api/v1/query', { ...base, max_nodes: maxNodes, format: 'levels' });
  const tlLabel = state.group_by || (sampleKeyOf(split) ? undefined : split);
  const restP = Promise.all([
    timelineOf({ ...base, group_by: tlLabel }),
    api('/api/v1/top', { ...base, limit: TABLE_ALL }),
    api('/api/v1/stability', { ...base, step: stepStab }),
    state.group_by ? api('/api/v1/stability', { ...base, group_by: state.group_by }) : null,
    state.group_by ? api('/api/v1/query', { ...base, group_by: state.group_by, max_nodes: 1000, format: 'levels' }) : null,
  ]);
  restP.catch(() => {});      // its error is thrown below, once the graph is drawn
  const q = await qP;
  if (mine !== loads) return;
  // the levels answer as flat arrays (tree.js); split.js already made its tree
  if (!q.tree) { q.tree = fromLevels(q); delete q.levels; delete q.names; }
  current = q;
  setMainData(q.tree, { unit: q.unit, total: q.total, samples: q.samples, maxNodes, split: splitLabel(split) }, q.total ? '' : 'No profiles match this selector in this range.');
  renderLatest(q, base);
  const tr = $('#truncated');
  tr.hidden = !(q.truncated && q.truncated.nodes);
  if (q.truncated && q.truncated.nodes) {
    tr.innerHTML = `max_nodes=${maxNodes} left out <b>${q.truncated.nodes.toLocaleString('en-US')}</b> nodes holding ${fmtValue(q.truncated.total, q.unit)} of self time (${pct(q.truncated.total / q.total)}); they are drawn as hatched <i>other</i> frames. <a href="#" id="show-all">Show every node</a>`;
    $('#show-all').onclick = (e) => { e.preventDefault(); commit({ max_nodes: '0' }); };
  }
  $('#legend').hidden = true;
  const others = q.other_types && q.other_types.length ? ` · other types: ${q.other_types.join(', ')}` : '';
  if (!q.type) $('#summary').textContent = 'no profiles in this range';
  else $('#summary').innerHTML = `<b>${esc(q.type)}</b>${q.groups !== undefined ? ` · split by ${esc(splitTitle(split))}${autoSplit ? ' (whole node: by default)' : ''}: ${q.groups} value${q.groups === 1 ? '' : 's'}${q.skipped.groups ? ` (${q.skipped.groups} in ${esc(q.skipped.units.join(', '))} left out)` : ''}` : ''} · ${fmtSamples(q.samples)} · ${fmtValue(q.total, q.unit)}${q.aggregation === 'average' ? ' (snapshots averaged over time)' : ''} · ${q.profiles} profiles · ${q.series} series${esc(others)}${q.skipped_profiles ? ` · ${q.skipped_profiles} profiles in ${esc((q.other_units || []).join(', '))} skipped` : ''}`;
  $('#type').dataset.answer = q.type;
  syncPair();
  // the flamegraph first: a big tree's table (/api/v1/top) can take longer
  drawMain();
  document.body.dataset.flame = 'ready';
  const [tlAns, top, stab, gstab, gq] = await restP;
  if (mine !== loads) return;
  drawTimeline(tlAns, { label: tlLabel });
  table.setData(top, base);
  lastStability = stab;
  renderStability(stab);
  groupAnswers = gq;
  renderGroups(gstab, gq);
  renderCompare(null);
}

// ---------- on-CPU and off-CPU: side by side and wall (pair.js, wall.js) ----------
// The selection's types in the range, whatever its own type matcher says:
// the choice CPU | Off-CPU | side by side | Wall is offered when they hold
// both `cpu` and `offcpu` (or a pair view is open, so it can be left).
let pairTypes = [];
const pairMode = () => (state.view === 'flame' && (state.pair === 'side' || state.pair === 'wall') ? state.pair : null);
async function typesOf(base) {
  const r = await api('/api/v1/label/type/values', { query: setMatcher(base.query, 'type', ''), from: base.from, until: base.until }).catch(() => ({ values: [] }));
  return r.values || [];
}
function syncPair() {
  const el = $('#pair');
  const both = pairTypes.includes(ON) && pairTypes.includes(OFF);
  el.hidden = state.view !== 'flame' || !(both || pairMode());
  const t = matcherValue(state.query, 'type') || $('#type').dataset.answer || '';
  const cur = pairMode() || (t === OFF ? 'offcpu' : t === ON ? 'cpu' : '');
  for (const b of el.querySelectorAll('button')) b.classList.toggle('on', b.dataset.pair === cur);
  el.dataset.mode = cur;
  document.body.dataset.pair = pairMode() || '';
}
for (const b of document.querySelectorAll('#pair button')) {
  b.onclick = () => {
    const v = b.dataset.pair;
    if (v === 'side' || v === 'wall') { if (state.pair !== v) commit({ pair: v, focus: undefined, ofocus: undefined, sandwich: undefined }); }
    else commit({ pair: undefined, query: setMatcher(state.query, 'type', v === 'offcpu' ? OFF : ON), focus: undefined, ofocus: undefined, osearch: undefined });
  };
}

// Both types of the selection over one absolute range (so that the two
// timelines have the same windows): side by side draws them in two panes,
// wall merges them (wall.js) when both are in nanoseconds, else refuses.
async function loadPair(mine, base, maxNodes, split, auto) {
  const wall = pairMode() === 'wall';
  const now = Date.now() / 1000;
  const range = { from: String(Math.floor(parseTime(base.from, now))), until: String(Math.ceil(parseTime(base.until, now))) };
  const onB = { query: setMatcher(base.query, 'type', ON), ...range }, offB = { query: setMatcher(base.query, 'type', OFF), ...range };
  const treeOf = (b) => (split ? querySplit(b, maxNodes, split, auto ? auto.values : undefined) : api('/api/v1/query', { ...b, max_nodes: maxNodes, format: 'levels' }));
  const restP = Promise.all([
    timelineOf({ ...onB, group_by: state.group_by }),
    state.group_by ? null : timelineOf(offB),
    api('/api/v1/top', { ...onB, limit: TABLE_ALL }),
    wall ? api('/api/v1/top', { ...offB, limit: TABLE_ALL }) : null,
    api('/api/v1/stability', { ...onB, step: autoStep(range.from, range.until, 60) }),
    state.group_by ? api('/api/v1/stability', { ...onB, group_by: state.group_by }) : null,
    state.group_by ? api('/api/v1/query', { ...onB, group_by: state.group_by, max_nodes: 1000, format: 'levels' }) : null,
  ]);
  restP.catch(() => {});
  const [a, b] = await Promise.all([treeOf(onB), treeOf(offB)]);
  if (mine !== loads) return;
  for (const q of [a, b]) if (!q.tree) { q.tree = fromLevels(q); delete q.levels; delete q.names; }
  const tr = $('#truncated'), lg = $('#legend');
  const cutOf = (q) => (q.truncated && q.truncated.nodes ? q.truncated : null);
  const cuts = [[a, 'on-CPU'], [b, 'off-CPU']].filter(([q]) => cutOf(q));
  tr.hidden = !cuts.length;
  if (cuts.length) {
    tr.innerHTML = cuts.map(([q, l]) => `${l}: max_nodes=${maxNodes} left out <b>${q.truncated.nodes.toLocaleString('en-US')}</b> nodes holding ${fmtValue(q.truncated.total, q.unit)} (${pct(q.truncated.total / q.total)})`).join(' · ') +
      `; they are drawn as hatched <i>other</i> frames. <a href="#" id="show-all">Show every node</a>`;
    $('#show-all').onclick = (e) => { e.preventDefault(); commit({ max_nodes: '0' }); };
  }
  renderLatest(a.total || b.total ? null : (a.latest ? a : b), base);
  const splitText = split ? ` · split by ${esc(splitTitle(split))}${autoSplit ? ' (whole node: by default)' : ''}` : '';
  const fig = (q) => `${fmtValue(q.total, q.unit)} · ${fmtSamples(q.samples)}`;
  lg.hidden = false;
  $('#type').dataset.answer = '';
  if (wall) {
    const why = wallUnits(a, b);
    if (why) {
      current = null;
      pair.setOff(null);
      setMainData(emptyTree('all'), { unit: a.unit, total: 0, samples: null, maxNodes }, 'Wall: the units differ (see above).');
      lg.innerHTML = `<span class="pair-note" id="wall-note">Wall: refused, the units differ.</span>`;
      $('#summary').innerHTML = `<b>wall</b> · on-CPU in ${esc(a.unit)}, off-CPU in ${esc(b.unit)}: not added`;
      drawMain();
      throw new Error(why);
    }
    const T = a.total + b.total;
    current = { type: 'wall', unit: 'nanoseconds', total: T, samples: null, wall: true, on: a, off: b, profiles: (a.profiles || 0) + (b.profiles || 0) };
    setMainData(wallTree(a.tree, b.tree), { unit: 'nanoseconds', total: T, samples: null, maxNodes, split: splitLabel(split), wall: true, onTotal: a.total, offTotal: b.total },
      T ? '' : 'No on-CPU or off-CPU profiles match this selector in this range.');
    pair.setOff(null);
    lg.innerHTML = `<span class="pair-note" id="wall-note" data-on="${a.total}" data-off="${b.total}" data-total="${T}">Wall time of the same stacks: <b class="on">on-CPU</b> ${fmtValue(a.total, 'nanoseconds')} + <b class="off">off-CPU</b> ${fmtValue(b.total, 'nanoseconds')} = <b>${fmtValue(T, 'nanoseconds')}</b> (both in nanoseconds, merged by path). <span class="muted">No intervals: off-CPU profiles have no sample count. Hover a frame for its two parts.</span></span>`;
    $('#summary').innerHTML = `<b>wall</b> (on-CPU + off-CPU)${splitText} · ${fmtValue(T, 'nanoseconds')} · no intervals · ${current.profiles} profiles`;
  } else {
    current = a;
    setMainData(a.tree, { unit: a.unit, total: a.total, samples: a.samples, maxNodes, split: splitLabel(split) }, a.total ? '' : `No on-CPU profiles (type="${ON}") match this selector in this range.`);
    pair.setOff(b.tree, { unit: b.unit, total: b.total, samples: b.samples, maxNodes, split: splitLabel(split) }, b.total ? '' : `No off-CPU profiles (type="${OFF}") match this selector in this range.`,
      { on: { unit: a.unit, total: a.total, samples: a.samples }, off: { unit: b.unit, total: b.total, samples: b.samples } });
    lg.innerHTML = `<span class="pair-note" id="side-note">Side by side: <b class="on">on-CPU</b> (type="${ON}") left, <b class="off">off-CPU</b> (type="${OFF}") right, same selector and range, each in its own unit and total; transforms and inverted apply to both, the table is the on-CPU side's.</span>`;
    $('#summary').innerHTML = `<b>on-CPU</b> ${fig(a)} | <b>off-CPU</b> ${fig(b)}${splitText}`;
  }
  drawMain();
  document.body.dataset.flame = 'ready';
  const [tlOn, tlOff, topOn, topOff, stab, gstab, gq] = await restP;
  if (mine !== loads) return;
  if (tlOff && !tlOn.refused && !tlOff.refused) timeline.draw(wallTimeline(tlOn, tlOff), { label: 'type' });
  else drawTimeline(tlOn, { label: state.group_by });
  const wt = wall ? wallTop(topOn, topOff) : null;
  if (wt) table.setData(wt, null, 'Wall: each function\'s on-CPU + off-CPU self and total; no intervals (off-CPU profiles have no sample count).');
  else table.setData(topOn, onB, wall ? 'The table shows the on-CPU profiles only: too many functions to merge the two tables in the browser.' : 'The table shows the on-CPU profiles (the left pane).');
  stab.of = 'on-CPU profiles';   // stability is not computed for off-CPU or wall here
  lastStability = stab;
  renderStability(stab);
  groupAnswers = gq;
  renderGroups(gstab, gq);
  renderCompare(null);
}

// Split by a label: the groups of one query as root frames (split.js). The
// nodes kept per group share the budget by the label's number of values.
async function querySplit(base, maxNodes, label, n) {
  const key = sampleKeyOf(label);
  if (key) return sampleSplitAnswer(await api('/api/v1/query', { ...base, group_by_sample: key, max_nodes: maxNodes, format: 'levels' }), key);
  let per = maxNodes;
  if (!state.max_nodes) {
    if (n === undefined) {
      const l = await api('/api/v1/labels', { query: base.query, from: base.from, until: base.until }).catch(() => ({ labels: [] }));
      n = (l.labels.find((x) => x.name === label) || {}).values;
    }
    per = String(nodesPerGroup(Number(maxNodes) * 2, n));
  }
  return splitAnswer(await api('/api/v1/query', { ...base, group_by: label, max_nodes: per, format: 'levels' }), label);
}

// A timeline reads profile totals, not stacks: the API refuses a selector
// naming a sample label (a filter the label browser makes). The strip then
// says so instead of the page showing an error.
// Names of sample labels the page has listed are known: no request then.
function timelineOf(params) {
  const named = matcherNames(params.query || '{}').filter((n) => labels.isSampleLabel(n) || n === sampleKeyOf(state.split));
  if (named.length) return Promise.resolve({ refused: `the selector names the sample label ${named.join(', ')}: a timeline reads profile totals, not stacks` });
  return api('/api/v1/timeline', params).catch((e) => {
    if (/names sample labels/.test(String(e.message || e))) return { refused: String(e.message || e) };
    throw e;
  });
}
function drawTimeline(ans, opts) {
  if (ans.refused) timeline.refuse(ans.refused);
  else timeline.draw(ans, opts);
}

// Whole-node views are split by process by default: a selector that names
// no service (nor process) over the profiles of several processes (the
// agent's --all pushes one `service` per program, docs/agent.md) would
// merge every process's `main` into one frame. Then the label `process`
// (when the profiles have one with two values or more), else `service`,
// splits the graph unless the URL says split=LABEL or split=- (off).
let autoSplit = null, autoSplitValues = 0;
const splitBy = () => (state.split === '-' ? null : state.split || autoSplit);
async function defaultSplit(base) {
  if (state.split || state.view === 'diff') return null;
  if (/(?:^|[{,\s])(service|process)\s*(=~|!~|!=|=)/.test(normSel(base.query))) return null;
  const l = await api('/api/v1/labels', { query: base.query, from: base.from, until: base.until }).catch(() => ({ labels: [] }));
  for (const label of ['process', 'service']) {
    const x = l.labels.find((y) => y.name === label);
    if (x && x.values >= 2) return { label, values: x.values };
  }
  return null;
}

// The two sides of a diff. Each side is a selector over a range (left_from,
// ... replace from and until for one side). Two sides that are the same
// data (same selector, same range) compare nothing: the baseline becomes the
// previous period of the same length, written into the URL.
function diffSides(s, now = Date.now() / 1000) {
  const from = s.from || 'now-1h', until = s.until || 'now';
  const d = { left: s.left || s.query || '{}', right: s.right || s.query || '{}', from, until };
  for (const k of ['left_from', 'left_until', 'right_from', 'right_until']) d[k] = s[k];
  const lf = parseTime(d.left_from || from, now), lu = parseTime(d.left_until || until, now);
  const rf = parseTime(d.right_from || from, now), ru = parseTime(d.right_until || until, now);
  let defaulted = false;
  if (normSel(d.left) === normSel(d.right) && Math.abs(lf - rf) < 1 && Math.abs(lu - ru) < 1) {
    const a = Math.floor(rf), b = Math.ceil(ru);
    Object.assign(d, { right_from: String(a), right_until: String(b), left_from: String(a - (b - a)), left_until: String(a) });
    defaulted = true;
  }
  const R = { left: [parseTime(d.left_from || from, now), parseTime(d.left_until || until, now)], right: [parseTime(d.right_from || from, now), parseTime(d.right_until || until, now)] };
  return { sides: d, defaulted, ranges: R };
}

async function loadDiff(mine) {
  autoSplit = null;
  const { sides, defaulted, ranges } = diffSides(state);
  if (defaulted) {
    // the URL says what is compared; no second load for it
    for (const k of ['left_from', 'left_until', 'right_from', 'right_until']) state[k] = sides[k];
    loadedKey = dataKey(state);
    history.replaceState(null, '', urlOf(state));
    syncBar();
  }
  // the timeline spans both sides, a little wider, so that either can be brushed again
  const lo = Math.min(ranges.left[0], ranges.right[0]), hi = Math.max(ranges.left[1], ranges.right[1]);
  const pad = Math.max(10, Math.round((hi - lo) * 0.1));
  const [d, c, tlAns] = await Promise.all([
    api('/api/v1/diff', sides),
    api('/api/v1/compare', { ...sides, limit: 100 }),
    timelineOf({ query: sides.right, from: String(Math.floor(lo - pad)), until: String(Math.ceil(hi + pad)) }),
  ]);
  if (mine !== loads) return;
  current = { unit: d.right_unit, diff: d, compare: c, defaulted };
  const testable = c.left.samples > 0 && c.right.samples > 0;
  // /api/v1/diff answers the nested tree only: made flat here
  setMainData(fromNested(d.tree), { diff: true, leftTotal: d.left_total, rightTotal: d.right_total, leftUnit: d.left_unit, rightUnit: d.right_unit,
    leftSamples: c.left.samples, rightSamples: c.right.samples },
  d.left_total || d.right_total ? '' : 'Neither side has profiles in its range.');
  renderLatest(null);
  $('#truncated').hidden = true;
  const lg = $('#legend');
  lg.hidden = false;
  const side = (sel, r) => `<code>${esc(sel)}</code> ${esc(fmtTime(r[0]))} → ${esc(fmtTime(r[1]))}`;
  lg.innerHTML = `<span class="sw grew"></span> share grew <span class="sw shrank"></span> share shrank ` +
    (testable ? '<span class="sw same"></span> within sampling noise <span class="muted" title="two-proportion z-test on each frame\'s total share, 95%, as /api/v1/compare; deeper for a larger change">· by significance (z-test, 95%)</span>'
      : '<span class="muted">· no significance test: a side does not say its samples; intensity by the size of the change</span>') +
    `<div class="muted sides" id="diff-sides"><span class="side left">baseline</span> ${side(sides.left, ranges.left)}${defaulted ? ' <i>(the previous period, by default)</i>' : ''} · ${fmtValue(d.left_total, d.left_unit)} · ${fmtSamples(c.left.samples)}
      &nbsp; <span class="side right">comparison</span> ${side(sides.right, ranges.right)} · ${fmtValue(d.right_total, d.right_unit)} · ${fmtSamples(c.right.samples)}</div>`;
  $('#summary').innerHTML = `diff · <b>${esc(d.left_type)}</b> vs <b>${esc(d.right_type)}</b> · Manhattan ${num(c.manhattan)} · JSD ${num(c.jsd)}`;
  drawTimeline(tlAns, { bands: [{ side: 'left', from: ranges.left[0], until: ranges.left[1], colour: '#2563eb' }, { side: 'right', from: ranges.right[0], until: ranges.right[1], colour: '#dc2626' }] });
  table.setData(null);
  renderCompare(c);
  renderGroups(null, null);
  lastStability = null;
}

// The Insights view (insights.js): its four charts over the query and range,
// with the query's timeline above them.
async function loadInsights(mine) {
  autoSplit = null;
  const base = { query: state.query || '{}', from: state.from || 'now-1h', until: state.until || 'now' };
  const [tlAns, d] = await Promise.all([
    timelineOf(base),
    insights.load(base, autoStep(base.from, base.until, 60)),
  ]);
  if (mine !== loads) return;
  drawTimeline(tlAns, {});
  insights.render(d);
  $('#summary').innerHTML = `insights · <b>${esc(d.stab.type || 'no profiles')}</b> · ${d.stab.windows.length} windows of ${d.stab.step}s`;
  current = null;
}

// ---------- test and bench hook ----------
window.__flamedb = {
  draws: 0,
  get state() { return { ...state }; },
  get graph() { return graph; },
  get current() { return current; },
  get views() { return views; },
  get table() { return table; },
  get lines() { return lines.model; },
  get insights() { return insights.model; },
  get timeline() { return timeline.model; },
  exportSVG,
  loads: () => loads,
  // the frame drawn at page point (x, y): {name, self, total, depth} or null
  frameAt(x, y) {
    const r = graph.canvas.getBoundingClientRect();
    const i = graph.frameAt(x - r.left, y - r.top);
    if (i < 0) return null;
    const n = graph.node(i);
    return { name: n.name, self: n.self, total: n.total, depth: n.depth, other: n.other };
  },
  get pair() { return pair; },
  // the page rectangle of the widest visible frame named `name` (of the
  // off-CPU pane's graph with which = 'off')
  layoutOf(name, which) {
    const g = which === 'off' ? pair.graph : graph;
    if (!g || !g.count) return null;
    const r = g.canvas.getBoundingClientRect();
    let best = -1;
    const t = g.t, f = g.focus, fx = g.x[f], fw = g.w[f];
    for (let i = 0; i < g.count; i++) {
      if (t.other[i] || g.nameOf(i) !== name) continue;
      if (t.depth[i] >= t.depth[f] && !(g.x[i] >= fx && g.x[i] < fx + fw)) continue;
      if (best < 0 || g.w[i] > g.w[best]) best = i;
    }
    if (best < 0) return null;
    const b = g.rectOf(best);
    return { x: r.left + b.x, y: r.top + b.y, w: b.w, h: b.h, cx: r.left + b.x + b.w / 2, cy: r.top + b.y + b.h / 2, total: g.w[best] };
  },
};

// ---------- start ----------
addEventListener('popstate', () => { state = readURL(); exactSearch = false; render(); });
async function start() {
  state = readURL();
  probePprof();
  if (!state.query && state.view !== 'diff') {
    try {
      const g = await api('/api/v1/query', { query: '{}', group_by: 'service', max_nodes: 1, from: 'now-1h' });
      const top = g.groups && g.groups.find((x) => x.total > 0);
      state.query = top ? `{service=${quote(top.labels.service)}}` : '{}';
    } catch (e) { state.query = '{}'; showError(e); }
    if (!state.from) state.from = 'now-1h';
    if (!state.until) state.until = 'now';
    history.replaceState(null, '', urlOf(state));
  }
  render();
}
start();
