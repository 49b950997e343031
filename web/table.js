// table.js — the function table (Top tab): every function of
// /api/v1/top?limit=0, paged (PAGE rows a page, "first–last of N" always
// shown), sorted by any column (`tsort` in the URL: KEY or KEY:asc), filtered
// by a substring of the name (`tq`), self and total in the data's unit with
// their shares' 95% intervals as the API gives them. A row shows its full
// name on hover; clicking it selects the function (`fn`): the graph
// highlights it and the detail pane below reads its full name and figures,
// with buttons for the sandwich and the transforms.
import { KINDS } from './transforms.js';

const $ = (s) => document.querySelector(s);
export const PAGE = 100;

export function initTable(ctx) {
  const { commit, getState, fmtValue, pct, ci, esc, select, views } = ctx;
  let rows = [];            // the API's functions, in its order
  let answer = null;        // the top answer (total, samples, unit)
  let page = 0;
  let pageKey = '';

  function setData(top) {
    answer = top;
    rows = top ? top.functions : [];
    page = 0;
  }
  function sortOf(s) {
    if (!s.tsort) return { key: null, desc: true };
    const [key, dir] = s.tsort.split(':');
    return { key, desc: dir !== 'asc' };
  }
  function view() {
    const s = getState();
    const q = (s.tq || '').toLowerCase();
    let v = q ? rows.filter((f) => f.name.toLowerCase().includes(q)) : rows;
    const { key, desc } = sortOf(s);
    if (key) {
      v = [...v].sort((a, b) => {
        const x = a[key], y = b[key];
        const c = typeof x === 'string' ? x.localeCompare(y) : x - y;
        return (desc ? -c : c) || a.name.localeCompare(b.name);
      });
    }
    return v;
  }

  function render() {
    const s = getState();
    const unit = answer ? answer.unit : 'samples';
    const k = `${s.tq || ''}|${s.tsort || ''}|${rows.length}`;
    const all = view();
    if (k !== pageKey) {
      pageKey = k;
      // keep the selected function in view when it is in the list
      const at = s.fn ? all.findIndex((f) => f.name === s.fn) : -1;
      page = at >= 0 ? Math.floor(at / PAGE) : 0;
    }
    const pages = Math.max(1, Math.ceil(all.length / PAGE));
    page = Math.min(page, pages - 1);
    const shown = all.slice(page * PAGE, (page + 1) * PAGE);
    const tb = $('#top tbody');
    tb.innerHTML = shown.map((f) => `<tr data-name="${esc(f.name)}" class="${s.fn === f.name ? 'sel' : ''}">
      <td class="fn" title="${esc(f.name)}">${esc(f.name)}</td>
      <td class="num" data-v="${f.self}">${fmtValue(f.self, unit)}</td>
      <td class="num share" data-v="${f.self_share}" title="95% interval ${ci(f.self_ci95)}">${pct(f.self_share)}<small>${ci(f.self_ci95)}</small></td>
      <td class="num" data-v="${f.total}">${fmtValue(f.total, unit)}</td>
      <td class="num share" data-v="${f.total_share}" title="95% interval ${ci(f.total_ci95)}"><span class="bar" style="width:${(f.total_share * 100).toFixed(1)}%"></span>${pct(f.total_share)}<small>${ci(f.total_ci95)}</small></td>
    </tr>`).join('');
    const { key, desc } = sortOf(s);
    for (const th of document.querySelectorAll('#top th')) {
      th.classList.toggle('sorted', th.dataset.key === key);
      th.dataset.dir = th.dataset.key === key ? (desc ? 'desc' : 'asc') : '';
    }
    const c = $('#tcount');
    const first = all.length ? page * PAGE + 1 : 0, last = page * PAGE + shown.length;
    Object.assign(c.dataset, { first, last, of: all.length, all: rows.length });
    const n = (x) => x.toLocaleString('en-US');
    c.textContent = `${n(first)}–${n(last)} of ${n(all.length)}${s.tq ? ` matching (${n(rows.length)} functions)` : ' functions'}`;
    $('#tprev').disabled = page === 0;
    $('#tnext').disabled = page >= pages - 1;
    if ($('#tfilter').value !== (s.tq || '') && document.activeElement !== $('#tfilter')) $('#tfilter').value = s.tq || '';
    const note = $('#tnote');
    const derived = s.transforms || s.invert;
    note.hidden = !derived;
    note.textContent = derived ? 'Figures of the whole data, before the transforms and inversion applied to the graph.' : '';
    renderDetail(unit);
  }

  function renderDetail(unit) {
    const s = getState();
    const d = $('#detail');
    const f = s.fn ? rows.find((x) => x.name === s.fn) : null;
    d.hidden = !f;
    if (!f) { d.textContent = ''; delete d.dataset.name; return; }
    d.dataset.name = f.name;
    const samples = answer && answer.samples !== null && answer.samples !== undefined ? `${answer.samples.toLocaleString('en-US')} samples` : 'samples unknown: no intervals';
    d.innerHTML = `<div class="detail-name">${esc(f.name)}</div>
      <table><tr><th></th><th class="num">value</th><th class="num">share</th><th>95% interval</th></tr>
      <tr data-k="self"><td>self</td><td class="num">${fmtValue(f.self, unit)}</td><td class="num">${pct(f.self_share)}</td><td class="ci">${ci(f.self_ci95)}</td></tr>
      <tr data-k="total"><td>total</td><td class="num">${fmtValue(f.total, unit)}</td><td class="num">${pct(f.total_share)}</td><td class="ci">${ci(f.total_ci95)}</td></tr></table>
      <div class="muted">of ${fmtValue(answer.total, unit)} from ${samples}</div>
      <div class="detail-acts">
        <button data-act="sandwich" title="callers and callees of this function (s)">Sandwich</button>
        ${['ff', 'mf', 'rec', 'cf', 'df'].map((k) => `<button data-act="${k}" title="${esc(KINDS[k].title)}">${esc(KINDS[k].label)}</button>`).join('')}
      </div>`;
  }
  $('#detail').addEventListener('click', (e) => {
    const b = e.target.closest('button');
    if (b) views.act(b.dataset.act, $('#detail').dataset.name);
  });

  $('#top thead').addEventListener('click', (e) => {
    const th = e.target.closest('th');
    if (!th) return;
    const key = th.dataset.key;
    const cur = sortOf(getState());
    const desc = cur.key === key ? !cur.desc : key !== 'name';
    commit({ tsort: key + (desc ? '' : ':asc') }, { replace: true });
  });
  $('#top tbody').addEventListener('click', (e) => {
    const tr = e.target.closest('tr');
    if (tr) select(tr.dataset.name);
  });
  let timer = null;
  $('#tfilter').addEventListener('input', (e) => {
    clearTimeout(timer);
    const v = e.target.value;
    timer = setTimeout(() => commit({ tq: v || undefined }, { replace: true }), 150);
  });
  $('#tprev').onclick = () => { page = Math.max(0, page - 1); render(); };
  $('#tnext').onclick = () => { page++; render(); };

  return { setData, render, get rows() { return rows; } };
}
