// flame.js — a canvas flamegraph that stays fast on a million nodes.
//
// It draws a Tree of tree.js (flat typed arrays, breadth-first, made from the
// API's levels answer): nodes of one depth are one contiguous run in drawing
// order, so a row is a subarray. setData computes each node's width (its
// total; in a diff its baseline share plus its comparison share) and start
// x (its parent's x plus its earlier siblings' widths) into two
// Float64Arrays: O(nodes) typed-array work, no object per node. Frames of
// one row never overlap and a frame's descendants lie inside its [x, x+w),
// so a zoom is only a new value window [X0, X0+W): each row is entered with
// one binary search, and hover is one binary search in the row under the
// mouse. Frames narrower than a pixel are not drawn one by one: a run of
// them merges into one grey block, and the loop jumps (binary search) to the
// first frame starting in the next pixel column, so a draw costs what is
// visible (about rows × width), not the tree's size. Colours are computed
// for the frames drawn only (per name, cached). What max_nodes left out is
// the tree's hatched "other" frames, with their value, never dropped.
// node(i) gives one node as an object, for a tooltip or a menu.
//
// Pan and zoom: the window is the focused frame's [x, x+w) (a click zooms
// to a frame), or a free window inside it: ctrl+wheel (a trackpad pinch)
// zooms around the mouse, shift+wheel or a horizontal wheel and a drag pan.
// The free window is not kept in the URL; a click, Esc or the breadcrumb
// goes back to a frame's window.

const MIN_PX = 1;
const OTHER_LABEL = 'other (left out by max_nodes)';

/* The 95% Wilson interval of share p from n samples; null when n is not
 * known (the API's samples: null). */
export function wilson(p, n, z = 1.96) {
  if (n === null || n === undefined) return null;
  if (!(n > 0)) return [0, 1];
  const z2 = z * z;
  const d = 1 + z2 / n;
  const c = (p + z2 / (2 * n)) / d;
  const h = (z * Math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))) / d;
  return [Math.max(0, c - h), Math.min(1, c + h)];
}

// The module of a frame: what its colour is derived from, so that every frame
// of one library, package or class shares a hue across views and reloads.
export function moduleOf(name) {
  if (name.endsWith('_[k]') || name.endsWith('[k]')) return '[kernel]';
  if (name.startsWith('[')) return '[unknown]';
  let m = /^(.*?)::/.exec(name);
  if (m) return m[1];
  m = /^(.*)\/[^/]*$/.exec(name.split('(')[0]);
  if (m) return m[1];
  m = /^([^.\s(]+)\.[^.]/.exec(name);
  if (m) return m[1];
  m = /^_*([A-Za-z0-9]+?)_/.exec(name);
  if (m) return m[1];
  return name;
}

function hash(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
  return h >>> 0;
}

const colourCache = new Map();
export function moduleColour(name, dark) {
  const mod = moduleOf(name);
  const key = (dark ? 'd' : 'l') + mod;
  let c = colourCache.get(key);
  if (c) return c;
  const h = hash(mod);
  let hue, sat, light;
  if (mod === '[kernel]') { hue = 205; sat = 45; light = dark ? 42 : 72; }
  else if (mod === '[unknown]') { hue = 0; sat = 0; light = dark ? 38 : 78; }
  else {
    hue = 8 + (h % 47);                       // reds to yellows: a flame
    sat = 62 + ((h >>> 8) % 25);
    light = (dark ? 40 : 58) + ((h >>> 16) % 12);
  }
  c = `hsl(${hue},${sat}%,${light}%)`;
  colourCache.set(key, c);
  return c;
}

// Diff colours: red grew, blue shrank, intensity by |delta| / largest |delta|.
export const GREW_RGB = [220, 38, 38];
export const SHRANK_RGB = [37, 99, 235];
function mix(a, b, t) {
  return `rgb(${Math.round(a[0] + (b[0] - a[0]) * t)},${Math.round(a[1] + (b[1] - a[1]) * t)},${Math.round(a[2] + (b[2] - a[2]) * t)})`;
}

/* The API's significance test (/api/v1/compare, docs/api.md): a
 * two-proportion z-test with pooled standard error, each share standing for
 * share × samples samples of its side. Here applied to a frame's total
 * share on each side; |z| > 1.96 is significant at 95%. */
export const Z95 = 1.96;
export function zTest(pL, nL, pR, nR) {
  const p = (pL * nL + pR * nR) / (nL + nR);
  const se = Math.sqrt(p * (1 - p) * (1 / nL + 1 / nR));
  if (!(se > 0)) return pR === pL ? 0 : Infinity * Math.sign(pR - pL);
  return (pR - pL) / se;
}

function lowerBound(xs, lo, hi, v) {
  while (lo < hi) { const m = (lo + hi) >> 1; if (xs[m] < v) lo = m + 1; else hi = m; }
  return lo;
}

export class FlameGraph {
  constructor(container, opts = {}) {
    this.opts = opts;
    this.rowH = opts.rowHeight || 18;
    this.container = container;
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'flame-canvas';
    this.overlay = document.createElement('canvas');
    this.overlay.className = 'flame-overlay';
    container.append(this.canvas, this.overlay);
    this.icicle = false;
    this.focus = 0;
    this.exact = null;
    this.hoverIdx = -1;
    this.draws = 0;
    this.count = 0;
    this.t = null;
    this.overlay.addEventListener('mousemove', (e) => this.onMove(e));
    this.overlay.addEventListener('mouseleave', () => this.setHover(-1, null));
    this.overlay.addEventListener('click', (e) => {
      if (this.dragged) { this.dragged = false; return; }
      const i = this.frameAtEvent(e);
      if (i >= 0 && !this.t.other[i]) this.zoom(i);
    });
    this.view = null;          // a free window {x0, w} inside the focus, or null
    this.overlay.addEventListener('wheel', (e) => this.onWheel(e), { passive: false });
    // drag to pan: listeners on the window while the button is down
    this.overlay.addEventListener('mousedown', (e) => {
      if (e.button !== 0 || !this.count) return;
      e.preventDefault();                       // no text selection
      const start = e.clientX, { x0, w } = this.window();
      this.dragged = false;
      const move = (ev) => {
        const dx = ev.clientX - start;
        if (!this.dragged && Math.abs(dx) < 4) return;
        this.dragged = true;
        this.setWindow(x0 - (dx * w) / this.width, w);
      };
      const up = () => { removeEventListener('mousemove', move); removeEventListener('mouseup', up); };
      addEventListener('mousemove', move);
      addEventListener('mouseup', up);
    });
  }

  // The value window drawn: {x0, w}.
  window() {
    if (this.view) return this.view;
    const f = this.focus;
    return { x0: this.x[f], w: this.w[f] };
  }

  // A free window, kept inside the focus (its whole width: none).
  setWindow(x0, w) {
    const f = this.focus, fx = this.x[f], fw = this.w[f];
    w = Math.min(fw, Math.max(w, fw * 1e-9, 1e-300));
    x0 = Math.min(fx + fw - w, Math.max(fx, x0));
    this.view = w >= fw ? null : { x0, w };
    if (!this.pending) {
      this.pending = true;
      requestAnimationFrame(() => { this.pending = false; this.draw(); });
    }
  }

  onWheel(e) {
    if (!this.count) return;
    const { x0, w } = this.window();
    const r = this.overlay.getBoundingClientRect();
    const mx = (e.clientX - r.left) / this.width;       // 0..1 across
    const px = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? this.width : 1;
    if (e.ctrlKey || e.metaKey) {
      e.preventDefault();
      const k = Math.exp(e.deltaY * px * 0.002);
      this.setWindow(x0 + mx * w * (1 - k), w * k);
    } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      e.preventDefault();
      const d = (e.shiftKey && !e.deltaX ? e.deltaY : e.deltaX) * px;
      this.setWindow(x0 + (d * w) / this.width, w);
    }
  }

  // tree: a Tree (tree.js); a diff's has two fields (left, right) and meta
  // {diff: true, leftTotal, rightTotal, leftSamples, rightSamples}; the wall
  // view's two fields (on-CPU, off-CPU, wall.js) and meta {wall: true}.
  setData(tree, meta = {}) {
    this.meta = meta;
    this.diff = !!meta.diff;
    this.wall = !this.diff && !!meta.wall && tree.k === 2;
    this.t = tree;
    const n = this.count = tree.n;
    const w = new Float64Array(n), x = new Float64Array(n);
    if (this.diff) {
      const L = meta.leftTotal || 1, R = meta.rightTotal || 1, l = tree.total[0], r = tree.total[1];
      for (let i = 0; i < n; i++) w[i] = l[i] / L + r[i] / R;
    } else if (meta.wall) {
      // the wall view (wall.js): field 0 on-CPU, field 1 off-CPU, both in nanoseconds
      const a = tree.total[0], b = tree.total[1];
      for (let i = 0; i < n; i++) w[i] = a[i] + b[i];
    } else w.set(tree.total[0]);
    const first = tree.first, nk = tree.nkids;
    for (let i = 0; i < n; i++) {
      let cx = x[i];
      for (let c = first[i], e = c + nk[i]; c < e; c++) { x[c] = cx; cx += w[c]; }
    }
    this.x = x; this.w = w;
    const rs = tree.rowStart;
    this.rowStart = rs;
    this.maxDepth = rs.length - 1;
    this.rowsX = [];
    for (let d = 0; d < this.maxDepth; d++) this.rowsX.push(x.subarray(rs[d], rs[d + 1]));
    this.matched = new Uint8Array(n);
    this.computeColours();
    this.focus = 0;
    this.view = null;
    this.applySearch();
  }

  nameOf(i) { return this.t.names[this.t.name[i]]; }

  // One node as an object: name, self, total (drawn width: in a diff the
  // sum of its two shares, in the wall view on-CPU + off-CPU), depth, x,
  // parent, other; a diff's also src (the API's four values), delta, z,
  // significant; the wall view's parts (on_self, on_total, off_self, off_total).
  node(i) {
    const t = this.t;
    if (!t || i < 0 || i >= this.count) return null;
    const o = { idx: i, name: this.nameOf(i), depth: t.depth[i], parent: t.parent[i], x: this.x[i], total: this.w[i], other: !!t.other[i] };
    if (this.diff) {
      const L = this.meta.leftTotal || 1, R = this.meta.rightTotal || 1;
      o.self = t.self[0][i] / L + t.self[1][i] / R;
      o.src = { left_self: t.self[0][i], left_total: t.total[0][i], right_self: t.self[1][i], right_total: t.total[1][i] };
      o.delta = this.delta[i];
      o.z = Number.isNaN(this.z[i]) ? null : this.z[i];
      o.significant = this.sig[i] < 0 ? null : this.sig[i] === 1;
    } else if (this.wall) {
      o.self = o.other ? 0 : t.self[0][i] + t.self[1][i];
      o.parts = { on_self: t.self[0][i], on_total: t.total[0][i], off_self: t.self[1][i], off_total: t.total[1][i] };
    } else o.self = o.other ? 0 : t.self[0][i];
    return o;
  }

  // Every node as an object, in index order: for tests and debugging only
  // (it makes what the graph itself never makes, an object per node).
  allNodes() {
    const out = new Array(this.count);
    for (let i = 0; i < this.count; i++) out[i] = this.node(i);
    return out;
  }

  computeColours() {
    const dark = matchMedia('(prefers-color-scheme: dark)').matches;
    this.dark = dark;
    this.nameColour = new Array(this.t.names.length);
    if (!this.diff) return;
    const t = this.t, n = this.count;
    const L = this.meta.leftTotal || 1, R = this.meta.rightTotal || 1;
    const delta = this.delta = new Float64Array(n);
    const z = this.z = new Float64Array(n);
    const sig = this.sig = new Int8Array(n);
    let maxAbs = 0;
    for (let i = 0; i < n; i++) {
      delta[i] = t.total[1][i] / R - t.total[0][i] / L;
      if (i > 0) maxAbs = Math.max(maxAbs, Math.abs(delta[i]));
    }
    this.maxAbs = maxAbs;
    // with both sides' samples known, only a significant change is coloured
    const nL = this.meta.leftSamples, nR = this.meta.rightSamples;
    const testable = nL > 0 && nR > 0;
    for (let i = 0; i < n; i++) {
      if (!testable) { z[i] = NaN; sig[i] = -1; continue; }
      z[i] = zTest(t.total[0][i] / L, nL, t.total[1][i] / R, nR);
      sig[i] = Math.abs(z[i]) > Z95 ? 1 : 0;
    }
  }

  // The fill of frame i (not "other"), computed when it is drawn.
  colourOf(i) {
    if (this.diff) {
      const neutral = this.dark ? [75, 80, 90] : [222, 224, 228];
      const d = this.delta[i];
      const t = this.maxAbs > 0 ? Math.min(1, Math.sqrt(Math.abs(d) / this.maxAbs)) : 0;
      return Math.abs(d) < 1e-12 || this.sig[i] === 0 ? mix(neutral, neutral, 0) : mix(neutral, d > 0 ? GREW_RGB : SHRANK_RGB, 0.25 + 0.75 * t);
    }
    const k = this.t.name[i];
    let c = this.nameColour[k];
    if (c === undefined) {
      const name = this.t.names[k];
      // split by a label: its value frames (`label=value`) in one cool hue
      const sp = this.meta.split ? this.meta.split + '=' : null;
      c = sp && name.startsWith(sp) ? (this.dark ? 'hsl(195,28%,36%)' : 'hsl(195,38%,80%)') : moduleColour(name, this.dark);
      this.nameColour[k] = c;
    }
    return c;
  }

  // Search: a case-insensitive substring, or an exact function name.
  setSearch(text, exact = false) {
    this.searchText = text || '';
    this.exact = exact;
    this.applySearch();
    this.draw();
  }

  // The matching names are found in the names table (one test per distinct
  // name), then one pass over the nodes in index order (a parent before its
  // children) sums the matched frames not under another match.
  applySearch() {
    const m = this.matched;
    m.fill(0);
    const q = (this.searchText || '').toLowerCase();
    let sum = 0, count = 0;
    const t = this.t;
    if (q && t) {
      const names = t.names, hitName = new Uint8Array(names.length);
      for (let k = 0; k < names.length; k++) hitName[k] = (this.exact ? names[k] === this.searchText : names[k].toLowerCase().includes(q)) ? 1 : 0;
      const under = new Uint8Array(this.count);   // a match at or above
      for (let i = 1; i < this.count; i++) {
        const p = t.parent[i];
        if (t.other[i]) { under[i] = under[p]; continue; }
        if (hitName[t.name[i]]) { m[i] = 1; count++; if (!under[p]) sum += this.w[i]; under[i] = 1; } else under[i] = under[p];
      }
    }
    const root = this.count ? this.w[0] : 0;
    this.searchResult = q ? { count, total: sum, share: root > 0 ? sum / root : 0 } : null;
  }

  zoom(i) {
    this.focus = i;
    this.view = null;
    this.draw();
    if (this.opts.onZoom) this.opts.onZoom(this.path());
  }

  zoomOut() {
    if (this.view) { this.view = null; this.draw(); return true; }
    if (this.focus === 0) return false;
    this.zoom(this.t.parent[this.focus]);
    return true;
  }

  path(i = this.focus) {
    const p = [];
    for (; i >= 0; i = this.t.parent[i]) p.push(i);
    return p.reverse();
  }

  // Zoom to a frame given as the names from the root's child down.
  zoomToNames(names) {
    let i = 0;
    const t = this.t;
    for (const name of names) {
      let found = -1;
      for (let c = t.first[i], e = c + t.nkids[i]; c < e; c++) {
        if (!t.other[c] && this.nameOf(c) === name) { found = c; break; }
      }
      if (found < 0) break;
      i = found;
    }
    if (i !== this.focus) this.view = null;
    this.focus = i;
  }

  visibleDepth() {
    const f = this.focus, X0 = this.x[f], X1 = X0 + this.w[f];
    let d = this.t.depth[f];
    while (d + 1 < this.maxDepth) {
      const xs = this.rowsX[d + 1];
      const k = lowerBound(xs, 0, xs.length, X0);
      if (k >= xs.length || xs[k] >= X1) break;
      d++;
    }
    return d + 1;
  }

  rowY(d) { return this.icicle ? d * this.rowH : (this.rows - 1 - d) * this.rowH; }

  draw() {
    if (!this.count) return;
    const t0 = performance.now();
    const width = Math.max(50, this.container.clientWidth);
    this.rows = this.visibleDepth();
    const height = this.rows * this.rowH;
    const dpr = window.devicePixelRatio || 1;
    for (const c of [this.canvas, this.overlay]) {
      if (c.width !== Math.round(width * dpr) || c.height !== Math.round(height * dpr)) {
        c.width = Math.round(width * dpr); c.height = Math.round(height * dpr);
        c.style.width = width + 'px'; c.style.height = height + 'px';
      }
    }
    this.width = width;
    const ctx = this.canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const css = getComputedStyle(this.container);
    const textColour = this.dark ? '#f1f1f1' : '#1b1b1b';
    const narrowColour = this.dark ? 'rgba(160,160,170,.45)' : 'rgba(120,120,130,.35)';
    const dimColour = this.dark ? '#3a3d44' : '#e6e6e9';
    const highlight = css.getPropertyValue('--match').trim() || '#c026d3';
    ctx.font = '12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace';
    ctx.textBaseline = 'middle';
    const cw = ctx.measureText('MMMMMMMMMM').width / 10;
    const hatch = this.hatchPattern(ctx);
    const searching = !!this.searchResult;
    const rh = this.rowH - 1;
    this.cw = cw;
    const fillOf = (idx) => (this.t.other[idx] ? hatch : searching ? (this.matched[idx] ? highlight : dimColour) : this.colourOf(idx));
    let frames = 0, narrow = 0;
    this.layout((kind, idx, px, pw, y, alpha) => {
      if (kind === 'narrow') { narrow++; ctx.fillStyle = narrowColour; ctx.fillRect(px, y, pw, rh); return; }
      frames++;
      ctx.globalAlpha = alpha;
      ctx.fillStyle = fillOf(idx);
      ctx.fillRect(px, y, pw - (pw > 2 ? 1 : 0), rh);
      const label = this.labelOf(idx, pw);
      if (label) {
        ctx.fillStyle = searching && this.matched[idx] ? '#fff' : textColour;
        ctx.fillText(label, px + 3, y + rh / 2 + 0.5);
      }
      ctx.globalAlpha = 1;
    });
    this.draws++;
    this.drawn = { frames, narrow };
    this.lastDrawMs = performance.now() - t0;
    this.drawOverlay();
    if (this.opts.onDraw) this.opts.onDraw();
  }

  // The text drawn in frame i, pw pixels wide: its name, cut with "…", or
  // null when fewer than three characters fit.
  labelOf(i, pw) {
    const cw = this.cw || 7.2;
    if (pw <= cw * 3) return null;
    const max = Math.floor((pw - 6) / cw);
    const name = this.t.other[i] ? OTHER_LABEL : this.nameOf(i);
    return name.length > max ? name.slice(0, Math.max(1, max - 1)) + '…' : name;
  }

  // What the current view draws, in drawing order: the focus's ancestors
  // across the whole width (alpha .65), then each row from the focus down.
  // Calls fn('frame', idx, x, w, y, alpha) or fn('narrow', -1, x, w, y, 1)
  // in CSS pixels. A frame narrower than MIN_PX starts a grey run; the loop
  // then jumps to the first frame starting in the next pixel column (the
  // frames between lie inside this one), except that the last frame
  // starting in this column may be wide and is drawn. draw() and toSVG()
  // share it, so an export is what is seen.
  layout(fn) {
    const width = this.width, t = this.t, x = this.x, w = this.w;
    const f = this.focus, win = this.window();
    const X0 = win.x0, X1 = X0 + win.w, scale = width / win.w;
    for (let i = t.parent[f]; i >= 0; i = t.parent[i]) fn('frame', i, 0, width, this.rowY(t.depth[i]), 0.65);
    for (let d = t.depth[f]; d < this.rows; d++) {
      const xs = this.rowsX[d], base = this.rowStart[d], m = xs.length;
      const y = this.rowY(d);
      let runA = -1, runB = -1;
      const flush = () => {
        const end = Math.min(Math.max(runB, runA + 1), width);
        if (runA >= 0 && end > runA) fn('narrow', -1, runA, end - runA, y, 1);
        runA = -1;
      };
      let k = lowerBound(xs, 0, m, X0);
      if (k > 0 && xs[k - 1] + w[base + k - 1] > X0) k--;    // begins left of a free window
      while (k < m && xs[k] < X1) {
        const idx = base + k;
        const wk = w[idx];
        if (!(wk > 0)) { k++; continue; }
        let px = (xs[k] - X0) * scale, pw = wk * scale;
        if (px < 0) { pw += px; px = 0; }                   // cut at the window's edges
        if (px + pw > width) pw = width - px;
        if (pw >= MIN_PX) { flush(); fn('frame', idx, px, pw, y, 1); k++; continue; }
        if (runA >= 0 && px <= runB + 1) runB = Math.max(runB, px + pw);
        else { flush(); runA = px; runB = px + pw; }
        // the first frame starting in the next pixel column
        const j = lowerBound(xs, k + 1, m, X0 + (Math.floor(px) + 1) / scale);
        if (j - 1 > k) {
          const last = base + j - 1;
          if (w[last] * scale >= MIN_PX) { k = j - 1; continue; }
          runB = Math.max(runB, (xs[j - 1] - X0 + w[last]) * scale);
        }
        k = j;
      }
      flush();
    }
  }

  // The current view as a standalone SVG document (the same frames, colours,
  // labels and search highlight as the canvas; a <title> per frame with its
  // name and values). `describe(node)` gives the title's text.
  toSVG(describe = (n) => n.name) {
    if (!this.count) return '';
    const xml = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
    const w = this.width, h = this.rows * this.rowH, rh = this.rowH - 1;
    const searching = !!this.searchResult;
    const highlight = getComputedStyle(this.container).getPropertyValue('--match').trim() || '#c026d3';
    const textColour = this.dark ? '#f1f1f1' : '#1b1b1b';
    const out = [`<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" font-family="ui-monospace, SFMono-Regular, Menlo, Consolas, monospace" font-size="12">`,
      `<defs><pattern id="hatch" width="8" height="8" patternUnits="userSpaceOnUse"><rect width="8" height="8" fill="${this.dark ? '#2b2d33' : '#f3f3f5'}"/><path d="M0 8L8 0M-2 2L2 -2M6 10L10 6" stroke="${this.dark ? '#777' : '#9a9aa3'}" stroke-width="1.2"/></pattern></defs>`,
      `<rect width="${w}" height="${h}" fill="${this.dark ? '#17181c' : '#ffffff'}"/>`];
    const r2 = (v) => Math.round(v * 100) / 100;
    this.layout((kind, idx, px, pw, y, alpha) => {
      if (kind === 'narrow') { out.push(`<rect class="narrow" x="${r2(px)}" y="${y}" width="${r2(pw)}" height="${rh}" fill="${this.dark ? '#a0a0aa' : '#787882'}" fill-opacity="${this.dark ? 0.45 : 0.35}"/>`); return; }
      const n = this.node(idx);
      const fill = n.other ? 'url(#hatch)' : searching ? (this.matched[idx] ? highlight : (this.dark ? '#3a3d44' : '#e6e6e9')) : this.colourOf(idx);
      const label = this.labelOf(idx, pw);
      out.push(`<g class="frame" data-name="${xml(n.name)}"${alpha < 1 ? ` opacity="${alpha}"` : ''}><title>${xml(describe(n))}</title>` +
        `<rect x="${r2(px)}" y="${y}" width="${r2(pw - (pw > 2 ? 1 : 0))}" height="${rh}" fill="${fill}"/>` +
        (label ? `<text x="${r2(px + 3)}" y="${y + rh / 2 + 4}" fill="${searching && this.matched[idx] ? '#fff' : textColour}">${xml(label)}</text>` : '') + '</g>');
    });
    out.push('</svg>');
    return out.join('\n');
  }

  hatchPattern(ctx) {
    const key = this.dark ? 'd' : 'l';
    if (this._hatch && this._hatchKey === key) return this._hatch;
    const p = document.createElement('canvas');
    p.width = p.height = 8;
    const c = p.getContext('2d');
    c.fillStyle = this.dark ? '#2b2d33' : '#f3f3f5';
    c.fillRect(0, 0, 8, 8);
    c.strokeStyle = this.dark ? '#777' : '#9a9aa3';
    c.lineWidth = 1.2;
    c.beginPath(); c.moveTo(0, 8); c.lineTo(8, 0); c.moveTo(-2, 2); c.lineTo(2, -2); c.moveTo(6, 10); c.lineTo(10, 6); c.stroke();
    this._hatch = ctx.createPattern(p, 'repeat');
    this._hatchKey = key;
    return this._hatch;
  }

  // The frame under canvas point (x, y) in CSS pixels: -1 when none.
  frameAt(x, y) {
    if (!this.count) return -1;
    const t = this.t;
    let d = Math.floor(y / this.rowH);
    if (!this.icicle) d = this.rows - 1 - d;
    if (d < 0 || d >= this.rows) return -1;
    const f = this.focus, fx = this.x[f], fw = this.w[f], win = this.window();
    if (d < t.depth[f]) { let i = f; while (t.depth[i] > d) i = t.parent[i]; return i; }
    const xs = this.rowsX[d];
    const scale = this.width / win.w;
    const xv = win.x0 + x / scale;
    if (xv < win.x0 || xv >= win.x0 + win.w) return -1;
    const k = lowerBound(xs, 0, xs.length, xv + 1e-12 * fw) - 1;  // last start <= xv
    if (k < 0) return -1;
    const i = this.rowStart[d] + k;
    if (xs[k] < fx || xv >= xs[k] + this.w[i]) return -1;
    return i;
  }

  frameAtEvent(e) {
    const r = this.overlay.getBoundingClientRect();
    return this.frameAt(e.clientX - r.left, e.clientY - r.top);
  }

  // Where frame i is drawn, in CSS pixels relative to the canvas.
  rectOf(i) {
    const f = this.focus, d = this.t.depth[i], win = this.window();
    const scale = this.width / win.w;
    if (d < this.t.depth[f]) return { x: 0, y: this.rowY(d), w: this.width, h: this.rowH - 1 };
    return { x: (this.x[i] - win.x0) * scale, y: this.rowY(d), w: this.w[i] * scale, h: this.rowH - 1 };
  }

  onMove(e) {
    const i = this.frameAtEvent(e);
    this.setHover(i, e);
  }

  setHover(i, e) {
    this.hoverIdx = i;
    this.drawOverlay();
    if (this.opts.onHover) this.opts.onHover(i >= 0 ? this.node(i) : null, e, i);
  }

  drawOverlay() {
    const dpr = window.devicePixelRatio || 1;
    const ctx = this.overlay.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, this.overlay.width, this.overlay.height);
    if (this.hoverIdx < 0 || this.hoverIdx >= this.count) return;
    const r = this.rectOf(this.hoverIdx);
    ctx.strokeStyle = this.dark ? '#fff' : '#111';
    ctx.lineWidth = 1.5;
    ctx.strokeRect(r.x + 0.75, r.y + 0.75, Math.max(r.w - 1.5, 1), r.h - 1.5);
  }
}
