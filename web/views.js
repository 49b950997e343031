// views.js — what the viewer draws from the merged tree it has, beyond the
// plain flamegraph: transforms (removable chips, `transforms` in the URL),
// the inverted tree (`invert=1`), the sandwich of one function
// (`sandwich=NAME`) and the right-click menu on frames that opens them.
// The trees come from transforms.js; nothing here asks the server again, so
// when max_nodes cut the tree the numbers are partial and the chip bar says so.
import { FlameGraph, wilson } from './flame.js';
import { KINDS, parseTransforms, formatTransforms, transformTree, sandwich, isCut } from './transforms.js';
import { emptyTree } from './tree.js';

const $ = (s) => document.querySelector(s);

export function initViews(ctx) {
  const { graph, commit, getState, fmtValue, pct, esc, showTooltip, filterSplit } = ctx;
  let raw = null;            // {tree, meta}: the API's tree (a Tree of tree.js) behind the main graph
  let shownKey = null;       // transforms|invert of what the main graph shows
  let transformed = null;    // the tree after transforms (not inverted)
  let cut = false;
  let swKey = null;
  let sw = null;             // {callers, callees} FlameGraphs
  let swData = null;

  const list = () => parseTransforms(getState().transforms);
  const keyOf = (s) => `${s.transforms || ''}|${s.invert ? 1 : 0}`;

  function show() {
    const s = getState();
    const tf = list();
    transformed = tf.length ? transformTree(raw.tree, tf) : raw.tree;
    const tree = s.invert ? transformTree(transformed, [], { invert: true }) : transformed;
    graph.setData(tree, { ...raw.meta, inverted: !!s.invert });
    graph.hoverIdx = -1;          // an index into the old nodes
    shownKey = keyOf(s);
    swKey = null;
  }

  // The main graph's data: the API's tree, drawn after the URL's transforms.
  function setMain(tree, meta) {
    raw = { tree, meta };
    cut = isCut(tree);
    show();
  }

  function addTransform(kind, name) {
    const tf = list();
    if (tf.some((t) => t.kind === kind && t.name === name)) return;
    tf.push({ kind, name });
    commit({ transforms: formatTransforms(tf), focus: undefined });
  }
  function removeTransform(i) {
    const tf = list();
    tf.splice(i, 1);
    commit({ transforms: tf.length ? formatTransforms(tf) : undefined, focus: undefined });
  }
  const openSandwich = (name) => commit({ sandwich: name });
  const toggleInvert = () => commit({ invert: getState().invert ? undefined : '1', focus: undefined });

  function renderChips() {
    const s = getState();
    const tf = list();
    const el = $('#chips');
    $('#invert').classList.toggle('on', !!s.invert);
    $('#invert').setAttribute('aria-pressed', s.invert ? 'true' : 'false');
    const derived = tf.length || s.invert || (s.sandwich && cut);
    el.hidden = !derived;
    if (!derived) { el.textContent = ''; return; }
    el.innerHTML = tf.map((t, i) => `<span class="chip" data-kind="${t.kind}" data-name="${esc(t.name)}" title="${esc(KINDS[t.kind].title)}">
      <b>${esc(KINDS[t.kind].label)}</b> <span class="chip-name">${esc(t.name)}</span><button data-i="${i}" title="remove this transform" aria-label="remove">×</button></span>`).join('') +
      (s.invert ? '<span class="chip inv" data-kind="invert"><b>inverted</b><button data-inv="1" title="back to top-down" aria-label="remove">×</button></span>' : '') +
      (cut ? `<span class="partial" id="partial" title="Transforms, the inverted tree and the sandwich are computed in the browser from the tree received">partial: computed from a tree cut by max_nodes (hatched <i>other</i> frames cannot be looked into) — <a href="#" id="partial-all">show every node</a></span>` : '');
    const all = $('#partial-all');
    if (all) all.onclick = (e) => { e.preventDefault(); commit({ max_nodes: '0' }); };
  }
  $('#chips').addEventListener('click', (e) => {
    const b = e.target.closest('button');
    if (!b) return;
    if (b.dataset.inv) toggleInvert(); else removeTransform(Number(b.dataset.i));
  });
  $('#invert').onclick = toggleInvert;

  // ---------- sandwich ----------
  function figures(d) {
    const m = raw.meta;
    if (m.diff) {
      const L = m.leftTotal, R = m.rightTotal;
      return `left: total ${fmtValue(d.total.left, m.leftUnit)} (${pct(L ? d.total.left / L : 0)}), self ${fmtValue(d.self.left, m.leftUnit)} · right: total ${fmtValue(d.total.right, m.rightUnit)} (${pct(R ? d.total.right / R : 0)}), self ${fmtValue(d.self.right, m.rightUnit)}`;
    }
    if (m.wall) {
      // the wall view: on-CPU + off-CPU (wall.js); no sample count, no interval
      const T = m.total || 0, one = (o) => `${fmtValue(o.left + o.right, m.unit)} · ${pct(T ? (o.left + o.right) / T : 0)} (on-CPU ${fmtValue(o.left, m.unit)}, off-CPU ${fmtValue(o.right, m.unit)})`;
      return `total ${one(d.total)} · self ${one(d.self)} · ${d.count} frame${d.count === 1 ? '' : 's'}`;
    }
    const T = m.total || 0, N = m.samples;
    const one = (v) => {
      const sh = T ? v / T : 0, w = wilson(sh, N);
      return `${fmtValue(v, m.unit)} · ${pct(sh)}${w ? ` <span class="ci">(95% ${pct(w[0])}–${pct(w[1])})</span>` : ''}`;
    };
    return `total ${one(d.total)} · self ${one(d.self)} · ${d.count} frame${d.count === 1 ? '' : 's'}`;
  }
  function renderSandwich() {
    const s = getState();
    const on = !!(s.sandwich && raw);
    $('#sandwich').hidden = !on;
    $('#flame').hidden = on;
    if (!on) return;
    const key = shownKey + '|' + s.sandwich;
    if (!sw) {
      const mk = (el, icicle) => {
        const g = new FlameGraph(el, { onHover: (n, e) => showTooltip(n, e, g), onZoom: () => {} });
        g.icicle = icicle;
        g.overlay.addEventListener('contextmenu', (e) => frameMenu(e, g));
        return g;
      };
      sw = { callers: mk($('#sw-callers'), false), callees: mk($('#sw-callees'), true) };
    }
    if (key !== swKey) {
      swKey = key;
      swData = sandwich(transformed, s.sandwich);
      $('#sw-name').textContent = s.sandwich;
      $('#sandwich').dataset.name = s.sandwich;
      $('#sandwich').classList.toggle('none', !swData.count);
      $('#sw-figures').innerHTML = swData.count ? figures(swData) : 'does not occur in this tree';
      for (const [g, t] of [[sw.callers, swData.callers], [sw.callees, swData.callees]]) {
        g.setData(t || emptyTree(s.sandwich, raw.meta.diff || raw.meta.wall ? 2 : 1), raw.meta);
      }
    }
    for (const g of [sw.callers, sw.callees]) { g.draw(); if (g.width !== Math.max(50, g.container.clientWidth)) g.draw(); }
    const c = $('#sw-callers');
    c.scrollTop = c.scrollHeight;
  }
  $('#sw-close').onclick = () => commit({ sandwich: undefined });

  // ---------- right-click menu ----------
  const menu = $('#ctxmenu');
  function frameMenu(e, g) {
    e.preventDefault();
    const i = g.frameAtEvent(e);
    if (i <= 0 || g.t.other[i]) { menu.hidden = true; return; }
    openMenu(g.nameOf(i), e.clientX, e.clientY, g.meta && g.meta.split);
  }
  // split: the label the graph is split by; its `label=value` frames offer
  // to filter the selector to that value
  function openMenu(name, x, y, split) {
    const only = split && name.startsWith(split + '=') ? [['only', `Filter: only ${name}`, '']] : [];
    const items = [...only, ['sandwich', 'Sandwich: callers and callees', 's'], ['ff', KINDS.ff.title, 'f'], ['mf', KINDS.mf.title, 'm'],
      ['rec', KINDS.rec.title, 'r'], ['drec', KINDS.drec.title, ''], ['cf', KINDS.cf.title, 'c'], ['df', KINDS.df.title, 'd'], ['lines', 'Lines: its time per source line', ''], ['copy', 'Copy the function name', '']];
    menu.innerHTML = `<div class="ctx-head">${esc(name)}</div>` + items.map(([k, t, key]) =>
      `<a href="#" data-act="${k}">${esc(t)}${key ? `<kbd>${key}</kbd>` : ''}</a>`).join('');
    menu.dataset.name = name;
    menu.hidden = false;
    const w = menu.offsetWidth, h = menu.offsetHeight;
    menu.style.left = Math.max(4, Math.min(x, innerWidth - w - 4)) + 'px';
    menu.style.top = Math.max(4, Math.min(y, innerHeight - h - 4)) + 'px';
  }
  menu.addEventListener('click', (e) => {
    const a = e.target.closest('a');
    if (!a) return;
    e.preventDefault();
    e.stopPropagation();
    const name = menu.dataset.name;
    menu.hidden = true;
    act(a.dataset.act, name);
  });
  function act(what, name) {
    if (what === 'sandwich') openSandwich(name);
    else if (what === 'only') filterSplit(name);
    else if (what === 'lines') commit({ linesof: name, tab: 'top' });
    else if (what === 'copy') navigator.clipboard?.writeText(name).catch(() => {});
    else if (KINDS[what]) addTransform(what, name);
  }
  addEventListener('click', () => { menu.hidden = true; });
  graph.overlay.addEventListener('contextmenu', (e) => frameMenu(e, graph));

  // The function under the mouse in any drawn graph, for the shortcuts.
  function hovered() {
    for (const g of [graph, ...(sw ? [sw.callers, sw.callees] : [])]) {
      if (g.hoverIdx > 0 && g.hoverIdx < g.count && !g.t.other[g.hoverIdx] && g.container.offsetParent) return g.nameOf(g.hoverIdx);
    }
    return null;
  }

  function escape() {
    if (!menu.hidden) { menu.hidden = true; return true; }
    if (getState().sandwich) { commit({ sandwich: undefined }); return true; }
    return false;
  }

  // Called on every change of the state, before the main graph is drawn.
  function apply() {
    if (raw && keyOf(getState()) !== shownKey) show();
    renderChips();
    renderSandwich();
  }
  function redraw() { if (sw && !$('#sandwich').hidden) { sw.callers.computeColours(); sw.callees.computeColours(); renderSandwich(); } }

  return {
    setMain, apply, escape, addTransform, openSandwich, toggleInvert, hovered, act, redraw,
    get sandwich() { return sw && { callers: sw.callers, callees: sw.callees, data: swData }; },
    get cut() { return cut; },
  };
}
