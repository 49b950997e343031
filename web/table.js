// table.js — the function table (Top tab): every function of the query,
// PAGE rows a page, "first–last of N" always shown, sorted by any column
// (`tsort` in the URL: KEY or KEY:asc), filtered by a substring of the name
// (`tq`), self and total in the data's unit with their shares' 95%
// intervals as the API gives them. A row shows its full name on hover;
// clicking it selects the function (`fn`): the graph highlights it and the
// detail pane below reads its full name and figures, with buttons for the
// sandwich, the per-line table and the transforms.
//
// Two modes, chosen by the first answer (/api/v1/top?limit=ALL, which app.js
// asks with the other panels): when it holds every function (functions_total
// <= ALL) the table sorts, filters and pages in the browser; beyond, it is
// paged by the server: each page is /api/v1/top?offset=&limit=PAGE with
// order=self|total|name and match= for the filter, an ascending sort of a
// value (or a descending one of names) being the server's ranking read from
// its end (offset M − (page+1)·PAGE, rows reversed). So a profile of a
// million functions shows its first page at once and every row is reachable.
import { KINDS } from './transforms.js';

const $ = (s) => document.querySelector(s);
export const PAGE = 100;
export const ALL = 5000;   // up to this many functions, the table holds them all

export function initTable(ctx) {
  const { api, commit, getState, fmtValue, pct, ci, esc, select, views } = ctx;
  let rows = [];            // client mode: the API's functions, in its order; server mode: the page shown
  let answer = null;        // the top answer (total, samples, unit, functions_total)
  let base = null;          // server mode: {query, from, until} of the answer
  let page = 0;
  let pageKey = '';
  let server = null;        // server mode: {key, loading, first, count, M: Map(match -> functions_total)}
  let detailRow = null;     // server mode: the selected function's row when not on the page

  // note: what the rows are, when not the selection's own (the wall view)
  let dataNote = '';
  function setData(top, params, note) {
    answer = top;
    dataNote = note || '';
    base = params || null;
    page = 0;
    pageKey = '';
    detailRow = null;
    const all = !top || top.functions_total === undefined || top.functions_total <= top.functions.length;
    rows = top ? top.functions : [];
    server = all ? null : { key: null, loading: false, first: 0, count: 0, M: new Map([['', top.functions_total]]), seq: 0 };
    // the answer's first rows are the first page of the default order
    if (server) { rows = rows.slice(0, PAGE); server.key = '||0'; }
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

  // ---- server mode ----
  // The request for page p: the server's ranking and where to read it.
  function request(s, p, M) {
    const { key, desc } = sortOf(s);
    const order = key === 'name' ? 'name' : key === 'total' || key === 'total_share' ? 'total' : 'self';
    const reversed = order === 'name' ? desc : (key !== null && !desc);
    if (!reversed) return { order, offset: p * PAGE, limit: PAGE, reversed };
    const hi = M - p * PAGE, lo = Math.max(0, hi - PAGE);
    return { order, offset: lo, limit: Math.max(0, hi - lo), reversed };
  }
  async function fetchPage(s, p, key) {
    const match = s.tq || '';
    const seq = ++server.seq;
    server.loading = true;
    try {
      let M = server.M.get(match);
      if (M === undefined) {   // the length of a filtered ranking: one row asked
        const a = await api('/api/v1/top', { ...base, match, limit: 1 });
        M = a.functions_total;
        server.M.set(match, M);
      }
      const r = request(s, p, M);
      const a = r.limit ? await api('/api/v1/top', { ...base, order: r.order, offset: r.offset, limit: r.limit, match: match || undefined }) : { functions: [], functions_total: M };
      if (seq !== server.seq) return;
      server.M.set(match, a.functions_total);
      rows = r.reversed ? a.functions.slice().reverse() : a.functions;
      server.key = key;
      server.first = p * PAGE;
    } catch (e) {
      if (seq !== server.seq) return;
      rows = [];
      server.key = key;
      server.error = e;
    }
    server.loading = false;
    render();
  }
  // the selected function's figures when it is not on the page shown
  async function fetchDetail(name) {
    const a = await api('/api/v1/top', { ...base, match: name, limit: 1000 }).catch(() => null);
    detailRow = (a && a.functions.find((f) => f.name === name)) || { name, missing: true };
    if (getState().fn === name) renderDetail(answer.unit);
  }

  function render() {
    const s = getState();
    const unit = answer ? answer.unit : 'samples';
    const k = `${s.tq || ''}|${s.tsort || ''}|${rows.length}`;
    let all, shown, first, count, pages;
    const c = $('#tcount');
    if (server) {
      const sk = `${s.tq || ''}|${s.tsort || ''}`;
      if (sk !== pageKey) { pageKey = sk; page = 0; }
      count = server.M.get(s.tq || '');
      const key = `${sk}|${page}`;
      if (server.key !== key) {
        c.dataset.state = 'loading';
        if (!server.loading || server.want !== key) { server.want = key; fetchPage(s, page, key); }
        if (count === undefined) { c.textContent = 'counting…'; return; }
      } else c.dataset.state = 'ready';
      pages = Math.max(1, Math.ceil((count || 0) / PAGE));
      shown = server.key === key ? rows : [];
      first = page * PAGE;
    } else {
      all = view();
      if (k !== pageKey) {
        pageKey = k;
        // keep the selected function in view when it is in the list
        const at = s.fn ? all.findIndex((f) => f.name === s.fn) : -1;
        page = at >= 0 ? Math.floor(at / PAGE) : 0;
      }
      pages = Math.max(1, Math.ceil(all.length / PAGE));
      page = Math.min(page, pages - 1);
      shown = all.slice(page * PAGE, (page + 1) * PAGE);
      first = page * PAGE;
      count = all.length;
      c.dataset.state = 'ready';
    }
    const tb = $('#top tbody');
    tb.innerHTML = shown.map((f) => `<tr data-name="${esc(f.name)}" class="${s.fn === f.name ? 'sel' : ''}">
      <td class="fn" title="${esc(f.name)}">${esc(f.name)}</td>
      <td class="num" data-v="${f.self}">${fmtValue(f.self, unit)}</td>
      <td class="num share" data-v="${f.self_share}" title="${f.self_ci95 ? '95% interval ' + ci(f.self_ci95) : 'no interval: samples unknown'}">${pct(f.self_share)}<small>${ci(f.self_ci95)}</small></td>
      <td class="num" data-v="${f.total}">${fmtValue(f.total, unit)}</td>
      <td class="num share" data-v="${f.total_share}" title="${f.total_ci95 ? '95% interval ' + ci(f.total_ci95) : 'no interval: samples unknown'}"><span class="bar" style="width:${(f.total_share * 100).toFixed(1)}%"></span>${pct(f.total_share)}<small>${ci(f.total_ci95)}</small></td>
    </tr>`).join('');
    const { key, desc } = sortOf(s);
    for (const th of document.querySelectorAll('#top th')) {
      th.classList.toggle('sorted', th.dataset.key === key);
      th.dataset.dir = th.dataset.key === key ? (desc ? 'desc' : 'asc') : '';
    }
    const everything = server ? server.M.get('') : rows.length;
    const firstN = count ? first + 1 : 0, last = first + shown.length;
    Object.assign(c.dataset, { first: firstN, last, of: count, all: everything, mode: server ? 'server' : 'all', page });
    const n = (x) => x.toLocaleString('en-US');
    c.textContent = `${n(firstN)}–${n(last)} of ${n(count)}${s.tq ? ` matching (${n(everything)} functions)` : ' functions'}`;
    $('#tprev').disabled = page === 0;
    $('#tnext').disabled = page >= pages - 1;
    if ($('#tfilter').value !== (s.tq || '') && document.activeElement !== $('#tfilter')) $('#tfilter').value = s.tq || '';
    const note = $('#tnote');
    const derived = s.transforms || s.invert;
    note.hidden = !derived && !dataNote;
    note.textContent = [dataNote, derived ? 'Figures of the whole data, before the transforms and inversion applied to the graph.' : ''].filter(Boolean).join(' ');
    renderDetail(unit);
  }

  function renderDetail(unit) {
    const s = getState();
    const d = $('#detail');
    let f = s.fn ? rows.find((x) => x.name === s.fn) : null;
    if (!f && s.fn && server) {
      if (detailRow && detailRow.name === s.fn) f = detailRow.missing ? null : detailRow;
      else if (!detailRow || detailRow.name !== s.fn) { detailRow = { name: s.fn, pending: true }; fetchDetail(s.fn); }
      if (f && f.pending) f = null;
    }
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
        <button data-act="lines" title="its time per source line (file:line), when the profiles know them">Lines</button>
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

  return { setData, render, get rows() { return rows; }, get mode() { return server ? 'server' : 'all'; }, get page() { return page; } };
}
