// labels.js — the label browser (after Grafana's): a pop-up under "Labels"
// with one type-ahead box over label names and their values in the current
// range. Empty box: the label names with their number of values; a click on
// a name lists its values. Typing: the names and the `name = value` pairs
// that contain the text (values of every label are fetched once per range,
// at most MAX_LABELS labels). A click on a value puts name="value" into the
// selector (replacing a matcher of that name) and runs the query.
const $ = (s) => document.querySelector(s);
const MAX_LABELS = 64, MAX_ITEMS = 200;

export function initLabels(ctx) {
  const { api, commit, getState, selectorOfLabels, esc } = ctx;
  const pop = $('#labels-pop'), input = $('#labels-q'), listEl = $('#labels-list');
  let rangeKey = null, names = null, values = new Map(), current = null, seq = 0;

  const range = () => { const s = getState(); return { from: s.from || 'now-1h', until: s.until || 'now' }; };
  async function load() {
    const r = range(), k = r.from + '|' + r.until;
    if (k !== rangeKey) { rangeKey = k; names = null; values = new Map(); }
    if (!names) names = (await api('/api/v1/labels', r)).labels;
    return names;
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
      if (current && !q) {
        const vs = await valuesOf(current);
        items = [{ head: `${current}: ${vs.length} value${vs.length === 1 ? '' : 's'}`, back: true },
          ...vs.slice(0, MAX_ITEMS).map((v) => ({ name: current, value: v }))];
      } else if (current) {
        const vs = (await valuesOf(current)).filter((v) => v.toLowerCase().includes(q));
        items = [{ head: `${current}: ${vs.length} matching`, back: true }, ...vs.slice(0, MAX_ITEMS).map((v) => ({ name: current, value: v }))];
      } else if (!q) {
        items = [{ head: `${ls.length} labels` }, ...ls.map((l) => ({ label: l.name, count: l.values }))];
      } else {
        const all = await Promise.all(ls.slice(0, MAX_LABELS).map(async (l) => [l.name, await valuesOf(l.name)]));
        const nm = ls.filter((l) => l.name.toLowerCase().includes(q));
        const vm = [];
        for (const [n, vs] of all) for (const v of vs) if (v.toLowerCase().includes(q)) vm.push({ name: n, value: v });
        items = [{ head: `${nm.length} label${nm.length === 1 ? '' : 's'}` }, ...nm.map((l) => ({ label: l.name, count: l.values })),
          { head: `${vm.length} value${vm.length === 1 ? '' : 's'}` }, ...vm.slice(0, MAX_ITEMS)];
      }
    } catch (e) { items = [{ head: String(e.message || e) }]; }
    if (mine !== seq) return;
    listEl.innerHTML = items.map((it, i) => it.head !== undefined
      ? `<div class="pop-head">${it.back ? '<a href="#" data-back="1">‹ all labels</a> ' : ''}${esc(it.head)}</div>`
      : it.label !== undefined
        ? `<div class="pop-item" data-i="${i}" data-label="${esc(it.label)}"><b>${esc(it.label)}</b> <span class="muted">${it.count} value${it.count === 1 ? '' : 's'}</span></div>`
        : `<div class="pop-item" data-i="${i}" data-name="${esc(it.name)}" data-value="${esc(it.value)}"><span class="muted">${esc(it.name)} =</span> ${esc(it.value === '' ? '""' : it.value)}</div>`).join('');
    listEl.dataset.ready = String(seq);
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
    const it = e.target.closest('.pop-item');
    if (!it) return;
    if (it.dataset.label !== undefined) { current = it.dataset.label; input.value = ''; input.focus(); refresh(); return; }
    const s = getState();
    close();
    commit({ query: selectorOfLabels(s.query || '{}', { [it.dataset.name]: it.dataset.value }), focus: undefined, groups: undefined });
  });
  addEventListener('click', (e) => { if (!pop.hidden && !pop.contains(e.target)) close(); });

  return { open, close, get isOpen() { return !pop.hidden; } };
}
