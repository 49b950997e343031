// lines.js — the per-line table of one function (`linesof=NAME` in the URL),
// as `pprof -list` and Parca's source view: where in its source the
// function's time is, when the profiles know where their frames are (pprof
// input, or folded text pushed with locations=1).
//
// It reads /api/v1/query?lines=1 (a node per source location, nodes with
// "file" and "line") with the flamegraph's max_nodes, over the whole data
// (no transforms, like the table), and sums the nodes of the function per
// file:line: self is the sum of their self; total counts a stack once per
// location, at its outermost frame of that location (recursion through
// one line counts once), so a line's total is what /api/v1/top's total is
// for a function. Frames of the function without a location are one row,
// "(no line)". Shares are of the answer's total with their 95% Wilson
// interval from its samples, as in the table. Opened from the table's
// detail pane (Lines) or the flamegraph's right-click menu.
import { wilson } from './flame.js';

const $ = (s) => document.querySelector(s);

// The rows of `name` in a lines=1 tree: [{file, line, self, total, frames}],
// by self descending, then total, then file:line; plus the function's
// total (each stack once) and whether any of its frames has a location.
export function lineRows(tree, name) {
  const rows = new Map(), open = new Map();
  let fnOpen = 0, fnTotal = 0, located = false;
  const stack = [[tree, false]];
  while (stack.length) {
    const [n, exit] = stack.pop();
    const hit = n !== tree && n.name === name;
    const k = hit ? (n.file !== undefined ? `${n.file}:${n.line ?? ''}` : '') : null;
    if (exit) {
      if (hit) { open.set(k, open.get(k) - 1); fnOpen--; }
      continue;
    }
    if (hit) {
      let r = rows.get(k);
      if (!r) rows.set(k, (r = { file: n.file ?? null, line: n.line ?? null, self: 0, total: 0, frames: 0 }));
      if (n.file !== undefined) located = true;
      r.self += n.self;
      r.frames++;
      if (!open.get(k)) r.total += n.total;
      if (!fnOpen) fnTotal += n.total;
      open.set(k, (open.get(k) || 0) + 1);
      fnOpen++;
    }
    stack.push([n, true]);
    const ch = n.children || [];
    for (let i = ch.length - 1; i >= 0; i--) stack.push([ch[i], false]);
  }
  const where = (r) => (r.file === null ? '' : `${r.file}:${String(r.line).padStart(9, '0')}`);
  const list = [...rows.values()].sort((a, b) => b.self - a.self || b.total - a.total || where(a).localeCompare(where(b)));
  return { rows: list, total: fnTotal, located };
}

// A path's last part: mheap.go (the whole path is the row's title)
const shortFile = (f) => f.split('/').pop();

export function initLines(ctx) {
  const { api, commit, getState, fmtValue, pct, ci, esc } = ctx;
  let key = null, answer = null, pending = null, error = null, shown = null;

  function dataKey(s) {
    return JSON.stringify([s.query || '{}', s.from || 'now-1h', s.until || 'now', s.max_nodes || '8192']);
  }
  async function load(k, s) {
    try {
      answer = await api('/api/v1/query', { query: s.query || '{}', from: s.from || 'now-1h', until: s.until || 'now', max_nodes: s.max_nodes || '8192', lines: 1 });
      error = null;
    } catch (e) { answer = null; error = e; }
    if (k === key) { pending = null; render(); }
  }

  function render() {
    const s = getState();
    const el = $('#lines');
    const name = s.view === 'diff' ? null : s.linesof;
    el.hidden = !name;
    if (!name) { el.textContent = ''; delete el.dataset.state; shown = null; return; }
    const k = dataKey(s);
    if (k !== key) { key = k; answer = null; error = null; pending = load(k, s); }
    el.dataset.name = name;
    const head = `<div class="lines-head"><b title="${esc(name)}">${esc(name)}</b> <span class="muted">by source line</span><span class="grow"></span><button id="lines-close" title="close the per-line table">✕</button></div>`;
    if (pending || (!answer && !error)) {
      el.dataset.state = 'loading';
      el.innerHTML = head + '<div class="muted">loading…</div>';
      return bindClose();
    }
    if (error) {
      el.dataset.state = 'error';
      el.innerHTML = head + `<div class="note">${esc(error.message || error)}</div>`;
      return bindClose();
    }
    const unit = answer.unit, T = answer.total, N = answer.samples;
    const { rows, total, located } = lineRows(answer.tree, name);
    el.dataset.state = 'ready';
    el.dataset.rows = rows.length;
    const cut = answer.truncated && answer.truncated.nodes;
    let body;
    if (!rows.length) {
      body = `<div class="muted">No frame of this function in this range${cut ? ' among the nodes kept by max_nodes' : ''}.</div>`;
    } else if (!located) {
      body = '<div class="muted" data-none="1">The profiles do not say where this function\'s frames are (no file and line). Lines come with pprof profiles, and with folded text pushed with <code>locations=1</code> (the agent does when it knows them).</div>';
    } else {
      const cell = (v) => {
        const sh = T ? v / T : 0, c = wilson(sh, N);
        return `<td class="num" data-v="${v}">${fmtValue(v, unit)}</td><td class="num share" data-v="${sh}" title="95% interval ${ci(c)}">${pct(sh)}<small>${ci(c)}</small></td>`;
      };
      body = `<table class="grid" id="lines-table"><thead><tr><th>file:line</th><th class="num">self</th><th class="num">self %</th><th class="num">total</th><th class="num">total %</th></tr></thead><tbody>` +
        rows.map((r) => {
          const at = r.file === null ? '(no line)' : `${shortFile(r.file)}:${r.line ?? '?'}`;
          const full = r.file === null ? 'frames without a location' : `${r.file}:${r.line ?? '?'}`;
          return `<tr data-at="${esc(r.file === null ? '' : `${r.file}:${r.line ?? ''}`)}"><td class="fn" title="${esc(full)} · ${r.frames} frame${r.frames === 1 ? '' : 's'}">${esc(at)}</td>${cell(r.self)}${cell(r.total)}</tr>`;
        }).join('') + '</tbody></table>' +
        `<div class="muted">${rows.length} line${rows.length === 1 ? '' : 's'} · the function's total ${fmtValue(total, unit)} (${pct(T ? total / T : 0)}): a stack through two of its lines counts in both lines' totals, once in the function's · shares of ${fmtValue(T, unit)} from ${N === null || N === undefined ? 'unknown samples (no intervals)' : N.toLocaleString('en-US') + ' samples'}</div>`;
    }
    const note = cut ? `<div class="note">max_nodes=${esc(s.max_nodes || '8192')} left out ${cut.toLocaleString('en-US')} nodes: the figures are partial. <a href="#" id="lines-all">Show every node</a></div>` : '';
    el.innerHTML = head + note + body;
    const all = $('#lines-all');
    if (all) all.onclick = (e) => { e.preventDefault(); commit({ max_nodes: '0' }); };
    bindClose();
    // the table is long: bring a newly opened one into view
    if (shown !== name) { shown = name; el.scrollIntoView({ block: 'nearest' }); }
  }
  function bindClose() { $('#lines-close').onclick = () => commit({ linesof: undefined }); }

  return { render, get model() { const a = answer; return a && getState().linesof ? lineRows(a.tree, getState().linesof) : null; } };
}
