// labels.js — the label browser (after Grafana's): a pop-up under "Labels"
// with one type-ahead box over label names and their values in the current
// range. Empty box: the label names with their number of values; a click on
// a name lists its values. Typing: the names and the `name = value` pairs
// that contain the text (values of every label are fetched once per range,
// at most MAX_LABELS labels). A click on a value puts name="value" into the
// selector (replacing a matcher of that name) and runs the query.
//
// Sample labels (pprof Sample.label, OTLP sample attributes: span_id,
// endpoint, ...) live in the stacks, not in series, so finding them reads
// the stacks as a merge does: they are listed only when asked (the "list
// sample labels" entry, /api/v1/labels?sample_labels=1 under the page's
// selector and range), never on load. A sample label's values come from
// /api/v1/label/NAME/values (at most MAX_SAMPLE_VALUES, the answer saying
// when it cut); a value filters as a series label's does (the selector
// keeps the stacks carrying it), and "split" draws one root per value
// (split=sample:NAME, split.js). The split picker lists the same names
// (sampleLabels). Every sample label name listed is remembered
// (isSampleLabel), so the page need not ask for a timeline the API refuses
// for a selector naming one.
import { SAMPLE_SPLIT } from './split.js';

const $ = (s) => document.querySelector(s);
const MAX_LABELS = 64, MAX_ITEMS = 200, MAX_SAMPLE_VALUES = 1000;

export function initLabels(ctx) {
  const { api, commit, getState, selectorOfLabels, esc } = ctx;
  const pop = $('#labels-pop'), input = $('#labels-q'), listEl = $('#labels-list');
  let rangeKey = null, names = null, values = new Map(), current = null, seq = 0;
  // sample labels: asked for (shown), their answer per selector and range
  let sampleShown = false, sampleKey = null, sampleP = null, sampleValues = new Map();
  const sampleNames = new Set();

  const range = () => { const s = getState(); return { from: s.from || 'now-1h', until: s.until || 'now' }; };
  async function load() {
    const r = range(), k = r.from + '|' + r.until;
    if (k !== rangeKey) { rangeKey = k; names = null; values = new Map(); }
    if (!names) names = (await api('/api/v1/labels', r)).labels;
    return names;
  }
  const selection = () => { const s = getState(), r = range(); return { query: s.query || '{}', ...r }; };
  function sampleLabels() {
    const q = selection(), k = `${q.query}|${q.from}|${q.until}`;
    if (k !== sampleKey || !sampleP) {
      sampleKey = k;
      sampleValues = new Map();
      sampleP = api('/api/v1/labels', { ...q, sample_labels: 1 }).then((x) => {
        for (const l of x.sample_labels || []) sampleNames.add(l.name);
        return x.sample_labels || [];
      });
      sampleP.catch(() => { if (sampleKey === k) sampleP = null; });   // asked again next time
    }
    return sampleP;
  }
  // {values, truncated} of a sample label under the page's selector
  function sampleValuesOf(name) {
    if (!sampleValues.has(name)) {
      sampleValues.set(name, api(`/api/v1/label/${encodeURIComponent(name)}/values`, { ...selection(), limit: MAX_SAMPLE_VALUES })
        .catch((e) => ({ values: [], error: String(e.message || e) })));
    }
    return sampleValues.get(name);
  }
  function valuesOf(name) {
    if (!values.has(name)) values.set(name, api(`/api/v1/label/${encodeURIComponent(name)}/values`, range()).then((x) => x.values).catch(() => []));
    return values.get(name);
  }

  async function refresh() {
    const mine = ++seq;
    const q = input.value.trim().toLowerCase();
    let items = [];
    try {
      const ls = await load();
      const sls = sampleShown ? await sampleLabels() : null;
      if (current && current.sample) {
        const a = await sampleValuesOf(current.name);
        const vs = q ? a.values.filter((v) => v.toLowerCase().includes(q)) : a.values;
        const note = a.error ? ` (${a.error})` : a.truncated ? ` (the first ${a.values.length})` : '';
        items = [{ head: `${current.name} (sample label): ${vs.length} ${q ? 'matching' : `value${vs.length === 1 ? '' : 's'}`}${note}`, back: true, split: current.name },
          ...vs.slice(0, MAX_ITEMS).map((v) => ({ name: current.name, value: v }))];
      } else if (current && !q) {
        const vs = await valuesOf(current);
        items = [{ head: `${current}: ${vs.length} value${vs.length === 1 ? '' : 's'}`, back: true },
          ...vs.slice(0, MAX_ITEMS).map((v) => ({ name: current, value: v }))];
      } else if (current) {
        const vs = (await valuesOf(current)).filter((v) => v.toLowerCase().includes(q));
        items = [{ head: `${current}: ${vs.length} matching`, back: true }, ...vs.slice(0, MAX_ITEMS).map((v) => ({ name: current, value: v }))];
      } else if (!q) {
        items = [{ head: `${ls.length} labels` }, ...ls.map((l) => ({ label: l.name, count: l.values })), ...sampleItems(sls, null)];
      } else {
        const all = await Promise.all(ls.slice(0, MAX_LABELS).map(async (l) => [l.name, await valuesOf(l.name)]));
        const nm = ls.filter((l) => l.name.toLowerCase().includes(q));
        const vm = [];
        for (const [n, vs] of all) for (const v of vs) if (v.toLowerCase().includes(q)) vm.push({ name: n, value: v });
        items = [{ head: `${nm.length} label${nm.length === 1 ? '' : 's'}` }, ...nm.map((l) => ({ label: l.name, count: l.values })),
          { head: `${vm.length} value${vm.length === 1 ? '' : 's'}` }, ...vm.slice(0, MAX_ITEMS), ...sampleItems(sls, q)];
      }
    } catch (e) { items = [{ head: String(e.message || e) }]; }
    if (mine !== seq) return;
    const splitLink = (n) => `<a href="#" class="pop-split" data-split="${esc(n)}" title="one root frame per value of ${esc(n)}">split by it</a>`;
    listEl.innerHTML = items.map((it, i) => it.head !== undefined
      ? `<div class="pop-head">${it.back ? '<a href="#" data-back="1">‹ all labels</a> ' : ''}${esc(it.head)}${it.split ? ' ' + splitLink(it.split) : ''}</div>`
      : it.loadSample
        ? '<div class="pop-item" data-sample-load="1"><b>sample labels…</b> <span class="muted">span_id, endpoint, … of the stacks (reads them, as a query does)</span></div>'
      : it.label !== undefined
        ? `<div class="pop-item" data-i="${i}" data-label="${esc(it.label)}"${it.sample ? ' data-sample="1"' : ''}><b>${esc(it.label)}</b> <span class="muted">${it.count} value${it.count === 1 ? '' : 's'}${it.sample ? ' · sample label' : ''}</span>${it.sample ? ' ' + splitLink(it.label) : ''}</div>`
        : `<div class="pop-item" data-i="${i}" data-name="${esc(it.name)}" data-value="${esc(it.value)}"><span class="muted">${esc(it.name)} =</span> ${esc(it.value === '' ? '""' : it.value)}</div>`).join('');
    listEl.dataset.ready = String(seq);
  }

  // The sample label part of a list: the entry that asks for them, or their
  // names (those containing q when typing).
  function sampleItems(sls, q) {
    if (!sls) return q ? [] : [{ loadSample: true }];
    const nm = q ? sls.filter((l) => l.name.toLowerCase().includes(q)) : sls;
    return [{ head: `${nm.length} sample label${nm.length === 1 ? '' : 's'} of the selector's stacks` }, ...nm.map((l) => ({ label: l.name, count: l.values, sample: true }))];
  }

  function open() {
    const b = $('#labels-btn').getBoundingClientRect();
    pop.style.left = Math.max(4, Math.min(b.left, innerWidth - 420)) + 'px';
    pop.style.top = b.bottom + 4 + 'px';
    pop.hidden = false;
    current = null;
    input.value = '';
    input.focus();
    refresh();
  }
  const close = () => { pop.hidden = true; seq++; };
  $('#labels-btn').onclick = (e) => { e.stopPropagation(); if (pop.hidden) open(); else close(); };
  input.addEventListener('input', refresh);
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') { e.stopPropagation(); close(); }
    if (e.key === 'Enter') {
      const first = listEl.querySelector('.pop-item');
      if (first) first.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    }
  });
  pop.addEventListener('click', (e) => {
    e.stopPropagation();
    if (e.target.closest('[data-back]')) { e.preventDefault(); current = null; input.value = ''; input.focus(); refresh(); return; }
    const sp = e.target.closest('[data-split]');
    if (sp) { e.preventDefault(); close(); commit({ split: SAMPLE_SPLIT + sp.dataset.split, focus: undefined }); return; }
    const it = e.target.closest('.pop-item');
    if (!it) return;
    if (it.dataset.sampleLoad) { sampleShown = true; input.focus(); refresh(); return; }
    if (it.dataset.label !== undefined) {
      current = it.dataset.sample ? { name: it.dataset.label, sample: true } : it.dataset.label;
      input.value = ''; input.focus(); refresh(); return;
    }
    const s = getState();
    close();
    commit({ query: selectorOfLabels(s.query || '{}', { [it.dataset.name]: it.dataset.value }), focus: undefined, groups: undefined });
  });
  addEventListener('click', (e) => { if (!pop.hidden && !pop.contains(e.target)) close(); });

  const isSampleLabel = (name) => sampleNames.has(name);
  return { open, close, sampleLabels, isSampleLabel, get isOpen() { return !pop.hidden; } };
}
