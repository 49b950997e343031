// pair.js — on-CPU and off-CPU flamegraphs side by side (`pair=side`,
// issue 13): the left pane is the viewer's main graph, drawn from the
// selection with type="cpu", the right pane a second graph of the same
// selection and range with type="offcpu". Each pane has its own unit and
// total in its head, its own search box and breadcrumb (zoom): the left
// pane's are the usual `search` and `focus` of the URL, the right pane's
// `osearch` and `ofocus`. The transforms and the inverted tree of the URL
// apply to both panes (computed in the browser, transforms.js); the
// sandwich, the table and the per-line table are the left pane's (the
// table says so). app.js fetches the two trees (and for the wall view
// merges them, wall.js); this module draws the right pane and both heads.
import { FlameGraph } from './flame.js';
import { parseTransforms, transformTree } from './transforms.js';

const $ = (s) => document.querySelector(s);

// The breadcrumb of a graph's zoom path into nav (the main graph's and
// each pane's): a button per frame from "all" to the focused one.
export function crumbsOf(nav, gr) {
  nav.textContent = '';
  if (!gr || !gr.count) return;
  const path = gr.path();
  path.forEach((i, k) => {
    const b = document.createElement('button');
    b.textContent = k === 0 ? 'all' : gr.nameOf(i);
    b.title = gr.nameOf(i);
    if (k === path.length - 1) b.className = 'cur';
    b.onclick = () => gr.zoom(i);
    nav.append(b);
    if (k < path.length - 1) nav.append(Object.assign(document.createElement('span'), { textContent: '›', className: 'sep' }));
  });
  nav.dataset.root = gr.nameOf(gr.focus);
}

export function initPair(ctx) {
  const { graph, commit, getState, fmtValue, pct, esc, showTooltip, fmtSamples } = ctx;
  const onHead = $('#pane-on .pane-head'), offPane = $('#pane-off'), offEl = $('#flame-off');
  let g = null;              // the right pane's FlameGraph, made on first use
  let raw = null;            // {tree, meta, empty} of the right pane
  let shownKey = null;
  let figures = null;        // {on, off}: {unit, total, samples} of each pane

  const side = () => getState().pair === 'side' && getState().view === 'flame';

  function make() {
    if (g) return g;
    g = new FlameGraph(offEl, {
      onZoom: (path) => {
        const names = path.slice(1).map((i) => g.nameOf(i));
        crumbs();
        commit({ ofocus: names.length ? names.join(';') : undefined });
      },
      onHover: (n, e) => showTooltip(n, e, g),
    });
    return g;
  }

  /* The right pane's tree (type="offcpu"), or null to leave side by side. */
  function setOff(tree, meta, empty, figs) {
    raw = tree ? { tree, meta, empty } : null;
    figures = figs || null;
    shownKey = null;
  }

  function head(el, f, label) {
    const fig = el.querySelector('.pane-fig');
    if (!f) { fig.textContent = ''; return; }
    fig.textContent = `${fmtValue(f.total, f.unit)} · ${fmtSamples(f.samples)}${f.samples === null || f.samples === undefined ? ' (no intervals)' : ''}`;
    el.dataset.total = f.total;
    el.dataset.unit = f.unit;
    el.title = `${label}: ${f.total.toLocaleString('en-US')} ${f.unit}`;
  }

  function searchResult(el, r) {
    el.textContent = r ? (r.count ? `${r.count} · ${pct(r.share)}` : 'no match') : '';
    if (r) el.dataset.share = r.share; else delete el.dataset.share;
  }

  function crumbs() {
    if (!side()) return;
    crumbsOf(onHead.querySelector('.pane-crumbs'), graph);
    crumbsOf(offPane.querySelector('.pane-crumbs'), g);
  }

  // Called on every change of the state, after the main graph is drawn.
  function apply() {
    const on = side() && !!raw;
    onHead.hidden = !on;
    offPane.hidden = !on;
    if (!on) return;
    const s = getState();
    head(onHead, figures && figures.on, 'on-CPU');
    head(offPane.querySelector('.pane-head'), figures && figures.off, 'off-CPU');
    const inOn = onHead.querySelector('.pane-search');
    if (document.activeElement !== inOn && inOn.value !== (s.search || '')) inOn.value = s.search || '';
    searchResult(onHead.querySelector('.pane-result'), graph.searchResult);
    const gr = make();
    offEl.classList.toggle('empty', !!raw.empty);
    offEl.dataset.empty = raw.empty || '';
    const key = `${s.transforms || ''}|${s.invert ? 1 : 0}`;
    if (key !== shownKey) {
      const tf = parseTransforms(s.transforms);
      let t = tf.length ? transformTree(raw.tree, tf) : raw.tree;
      if (s.invert) t = transformTree(t, [], { invert: true });
      gr.setData(t, { ...raw.meta, inverted: !!s.invert });
      gr.hoverIdx = -1;
      shownKey = key;
    }
    gr.icicle = graph.icicle;
    gr.searchText = s.osearch || '';
    gr.exact = false;
    gr.applySearch();
    const inOff = offPane.querySelector('.pane-search');
    if (document.activeElement !== inOff && inOff.value !== (s.osearch || '')) inOff.value = s.osearch || '';
    searchResult(offPane.querySelector('.pane-result'), gr.searchResult);
    if (gr.count) {
      gr.zoomToNames(s.ofocus ? s.ofocus.split(';') : []);
      offEl.style.maxHeight = $('#flame').style.maxHeight;
      gr.draw();
      if (gr.width !== Math.max(50, offEl.clientWidth)) gr.draw();
      offEl.scrollTop = gr.icicle ? 0 : offEl.scrollHeight;
    }
    crumbs();
  }

  // the panes' search boxes: typing replaces the URL entry, as the main one
  const timers = {};
  function onSearch(input, key, gr, result) {
    input.addEventListener('input', () => {
      clearTimeout(timers[key]);
      const v = input.value, target = gr();
      if (target) { target.setSearch(v, false); searchResult(result, target.searchResult); }
      timers[key] = setTimeout(() => commit({ [key]: v || undefined }, { replace: true }), 300);
    });
  }
  onSearch(onHead.querySelector('.pane-search'), 'search', () => graph, onHead.querySelector('.pane-result'));
  onSearch(offPane.querySelector('.pane-search'), 'osearch', () => g, offPane.querySelector('.pane-result'));

  function redraw() {
    if (!g || offPane.hidden) return;
    offEl.style.maxHeight = $('#flame').style.maxHeight;
    g.computeColours();
    g.draw();
  }

  return {
    setOff, apply, crumbs, redraw,
    focusSearch: () => onHead.querySelector('.pane-search').focus(),
    get side() { return side() && !!raw; },
    get graph() { return g; },
  };
}
