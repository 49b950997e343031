// flame.js — a canvas flamegraph that stays fast on large trees.
//
// The tree is flattened once per data set into per-depth rows: for each depth
// a Float64Array of frame start offsets (in value units, from the root's left
// edge) and an Int32Array of node indices, in increasing x. Frames of one row
// never overlap and a frame's descendants lie inside its [x, x+total), so a
// zoom is only a new value window [X0, X0+W): each row is entered with one
// binary search, and hover is one binary search in the row under the mouse.
// Frames narrower than MIN_PX are not drawn one by one: consecutive narrow
// frames merge into one grey block, so nothing vanishes and nothing costs.
// What max_nodes left out (parent.total − self − Σ children) becomes a
// hatched "other" frame after the children, with its value, never dropped.

const MIN_PX = 0.5;

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

function lowerBound(xs, n, v) {
  let lo = 0, hi = n;
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
    this.matchRe = null;
    this.exact = null;
    this.hoverIdx = -1;
    this.draws = 0;
    this.overlay.addEventListener('mousemove', (e) => this.onMove(e));
    this.overlay.addEventListener('mouseleave', () => this.setHover(-1, null));
    this.overlay.addEventListener('click', (e) => {
      const i = this.frameAtEvent(e);
      if (i >= 0 && !this.nodes[i].other) this.zoom(i);
    });
  }

  // tree: {name, self, total, children}; for diff: {left_self, left_total, ...}
  setData(tree, meta = {}) {
    this.meta = meta;
    this.diff = !!meta.diff;
    const nodes = [];
    const rows = [];
    const L = meta.leftTotal || 1, R = meta.rightTotal || 1;
    // iterative preorder; children already sorted by the server
    const stack = [[tree, -1, 0, 0]];
    while (stack.length) {
      const [t, parent, depth, x] = stack.pop();
      let total, self;
      if (t.other) { total = t.total; self = 0; }
      else if (this.diff) {
        total = t.left_total / L + t.right_total / R;
        self = t.left_self / L + t.right_self / R;
      } else { total = t.total; self = t.self; }
      if (!(total > 0) && parent >= 0) continue;
      const idx = nodes.length;
      const n = { name: t.name, total, self, depth, x, parent, src: t, other: !!t.other, colour: null };
      nodes.push(n);
      (rows[depth] || (rows[depth] = [])).push(idx);
      if (t.other || !t.children) continue;
      // push in reverse so that children are visited left to right
      let cx = x, sum = 0;
      const kids = [];
      for (const c of t.children) {
        const ct = this.diff ? c.left_total / L + c.right_total / R : c.total;
        if (!(ct > 0)) continue;
        kids.push([c, idx, depth + 1, cx]);
        cx += ct; sum += ct;
      }
      if (!this.diff) {
        const missing = t.total - t.self - sum;
        if (missing > 0) kids.push([{ name: 'other (left out by max_nodes)', other: true, total: missing }, idx, depth + 1, cx]);
      }
      for (let k = kids.length - 1; k >= 0; k--) stack.push(kids[k]);
    }
    this.nodes = nodes;
    this.rowsX = rows.map((r) => Float64Array.from(r, (i) => nodes[i].x));
    this.rowsN = rows.map((r) => Int32Array.from(r));
    this.maxDepth = rows.length;
    this.matched = new Uint8Array(nodes.length);
    this.computeColours();
    this.focus = 0;
    this.applySearch();
  }

  computeColours() {
    const dark = matchMedia('(prefers-color-scheme: dark)').matches;
    this.dark = dark;
    if (!this.diff) {
      // split by a label: its value frames (`label=value`) in one cool hue
      const sp = this.meta.split ? this.meta.split + '=' : null;
      const splitColour = dark ? 'hsl(195,28%,36%)' : 'hsl(195,38%,80%)';
      for (const n of this.nodes) n.colour = n.other ? null : sp && n.name.startsWith(sp) ? splitColour : moduleColour(n.name, dark);
      return;
    }
    const L = this.meta.leftTotal || 1, R = this.meta.rightTotal || 1;
    let maxAbs = 0;
    for (const n of this.nodes) {
      n.delta = n.src.right_total / R - n.src.left_total / L;
      if (n.parent >= 0) maxAbs = Math.max(maxAbs, Math.abs(n.delta));
    }
    const neutral = dark ? [75, 80, 90] : [222, 224, 228];
    // with both sides' samples known, only a significant change is coloured
    const nL = this.meta.leftSamples, nR = this.meta.rightSamples;
    const testable = nL > 0 && nR > 0;
    for (const n of this.nodes) {
      const t = maxAbs > 0 ? Math.min(1, Math.sqrt(Math.abs(n.delta) / maxAbs)) : 0;
      n.z = testable ? zTest(n.src.left_total / L, nL, n.src.right_total / R, nR) : null;
      n.significant = n.z === null ? null : Math.abs(n.z) > Z95;
      n.colour = Math.abs(n.delta) < 1e-12 || n.significant === false ? mix(neutral, neutral, 0)
        : mix(neutral, n.delta > 0 ? GREW_RGB : SHRANK_RGB, 0.25 + 0.75 * t);
    }
  }

  // Search: a case-insensitive substring, or an exact function name.
  setSearch(text, exact = false) {
    this.searchText = text || '';
    this.exact = exact;
    this.applySearch();
    this.draw();
  }

  applySearch() {
    const m = this.matched;
    m.fill(0);
    const q = (this.searchText || '').toLowerCase();
    let sum = 0, count = 0;
    if (q) {
      const inMatch = new Uint8Array(this.nodes.length);
      for (let i = 0; i < this.nodes.length; i++) {
        const n = this.nodes[i];
        if (n.other || i === 0) continue;
        const hit = this.exact ? n.name === this.searchText : n.name.toLowerCase().includes(q);
        const under = n.parent >= 0 && (inMatch[n.parent] || m[n.parent]);
        if (hit) { m[i] = 1; count++; if (!under) sum += n.total; }
        inMatch[i] = under ? 1 : 0;
      }
    }
    const root = this.nodes[0] ? this.nodes[0].total : 0;
    this.searchResult = q ? { count, total: sum, share: root > 0 ? sum / root : 0 } : null;
  }

  zoom(i) {
    this.focus = i;
    this.draw();
    if (this.opts.onZoom) this.opts.onZoom(this.path());
  }

  zoomOut() {
    if (this.focus === 0) return false;
    this.zoom(this.nodes[this.focus].parent);
    return true;
  }

  path(i = this.focus) {
    const p = [];
    for (; i >= 0; i = this.nodes[i].parent) p.push(i);
    return p.reverse();
  }

  // Zoom to a frame given as the names from the root's child down.
  zoomToNames(names) {
    let i = 0;
    for (const name of names) {
      const d = this.nodes[i].depth + 1;
      const xs = this.rowsX[d], ns = this.rowsN[d];
      if (!xs) break;
      const n0 = this.nodes[i];
      let found = -1;
      for (let k = lowerBound(xs, xs.length, n0.x); k < xs.length && xs[k] < n0.x + n0.total; k++) {
        if (this.nodes[ns[k]].name === name) { found = ns[k]; break; }
      }
      if (found < 0) break;
      i = found;
    }
    this.focus = i;
  }

  visibleDepth() {
    const f = this.nodes[this.focus];
    const X0 = f.x, X1 = f.x + f.total;
    let d = f.depth;
    while (d + 1 < this.maxDepth) {
      const xs = this.rowsX[d + 1];
      const k = lowerBound(xs, xs.length, X0);
      if (k >= xs.length || xs[k] >= X1) break;
      d++;
    }
    return d + 1;
  }

  rowY(d) { return this.icicle ? d * this.rowH : (this.rows - 1 - d) * this.rowH; }

  draw() {
    if (!this.nodes || !this.nodes.length) return;
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
    const fillOf = (n, idx) => (n.other ? hatch : searching ? (this.matched[idx] ? highlight : dimColour) : n.colour);
    this.layout((kind, n, idx, px, pw, y, alpha) => {
      if (kind === 'narrow') { ctx.fillStyle = narrowColour; ctx.fillRect(px, y, pw, rh); return; }
      ctx.globalAlpha = alpha;
      ctx.fillStyle = fillOf(n, idx);
      ctx.fillRect(px, y, pw - (pw > 2 ? 1 : 0), rh);
      const label = this.labelOf(n, pw);
      if (label) {
        ctx.fillStyle = searching && this.matched[idx] ? '#fff' : textColour;
        ctx.fillText(label, px + 3, y + rh / 2 + 0.5);
      }
      ctx.globalAlpha = 1;
    });
    this.draws++;
    this.lastDrawMs = performance.now() - t0;
    this.drawOverlay();
    if (this.opts.onDraw) this.opts.onDraw();
  }

  // The text drawn in a frame pw pixels wide: its name, cut with "…", or
  // null when fewer than three characters fit.
  labelOf(n, pw) {
    const cw = this.cw || 7.2;
    if (pw <= cw * 3) return null;
    const max = Math.floor((pw - 6) / cw);
    return n.name.length > max ? n.name.slice(0, Math.max(1, max - 1)) + '…' : n.name;
  }

  // What the current view draws, in drawing order: the focus's ancestors
  // across the whole width (alpha .65), then each row from the focus down,
  // frames narrower than MIN_PX merged into grey runs. Calls
  //   fn('frame', node, idx, x, w, y, alpha)  or  fn('narrow', null, -1, x, w, y, 1)
  // in CSS pixels. draw() and toSVG() share it, so an export is what is seen.
  layout(fn) {
    const width = this.width;
    const f = this.nodes[this.focus];
    const X0 = f.x, X1 = f.x + f.total, scale = width / f.total;
    for (let i = f.parent; i >= 0; i = this.nodes[i].parent) fn('frame', this.nodes[i], i, 0, width, this.rowY(this.nodes[i].depth), 0.65);
    for (let d = f.depth; d < this.rows; d++) {
      const xs = this.rowsX[d], ns = this.rowsN[d];
      const y = this.rowY(d);
      let runA = -1, runB = -1;
      const flush = () => {
        if (runA >= 0) fn('narrow', null, -1, runA, Math.max(runB - runA, 1), y, 1);
        runA = -1;
      };
      for (let k = lowerBound(xs, xs.length, X0); k < xs.length && xs[k] < X1; k++) {
        const idx = ns[k], n = this.nodes[idx];
        const px = (xs[k] - X0) * scale, pw = n.total * scale;
        if (pw < MIN_PX) {
          if (runA >= 0 && px <= runB + 1) runB = Math.max(runB, px + pw);
          else { flush(); runA = px; runB = px + pw; }
          continue;
        }
        flush();
        fn('frame', n, idx, px, pw, y, 1);
      }
      flush();
    }
  }

  // The current view as a standalone SVG document (the same frames, colours,
  // labels and search highlight as the canvas; a <title> per frame with its
  // name and values). `describe(node)` gives the title's text.
  toSVG(describe = (n) => n.name) {
    if (!this.nodes || !this.nodes.length) return '';
    const xml = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
    const w = this.width, h = this.rows * this.rowH, rh = this.rowH - 1;
    const searching = !!this.searchResult;
    const highlight = getComputedStyle(this.container).getPropertyValue('--match').trim() || '#c026d3';
    const textColour = this.dark ? '#f1f1f1' : '#1b1b1b';
    const out = [`<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" font-family="ui-monospace, SFMono-Regular, Menlo, Consolas, monospace" font-size="12">`,
      `<defs><pattern id="hatch" width="8" height="8" patternUnits="userSpaceOnUse"><rect width="8" height="8" fill="${this.dark ? '#2b2d33' : '#f3f3f5'}"/><path d="M0 8L8 0M-2 2L2 -2M6 10L10 6" stroke="${this.dark ? '#777' : '#9a9aa3'}" stroke-width="1.2"/></pattern></defs>`,
      `<rect width="${w}" height="${h}" fill="${this.dark ? '#17181c' : '#ffffff'}"/>`];
    const r2 = (v) => Math.round(v * 100) / 100;
    this.layout((kind, n, idx, px, pw, y, alpha) => {
      if (kind === 'narrow') { out.push(`<rect class="narrow" x="${r2(px)}" y="${y}" width="${r2(pw)}" height="${rh}" fill="${this.dark ? '#a0a0aa' : '#787882'}" fill-opacity="${this.dark ? 0.45 : 0.35}"/>`); return; }
      const fill = n.other ? 'url(#hatch)' : searching ? (this.matched[idx] ? highlight : (this.dark ? '#3a3d44' : '#e6e6e9')) : n.colour;
      const label = this.labelOf(n, pw);
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
    if (!this.nodes || !this.nodes.length) return -1;
    let d = Math.floor(y / this.rowH);
    if (!this.icicle) d = this.rows - 1 - d;
    if (d < 0 || d >= this.rows) return -1;
    const f = this.nodes[this.focus];
    if (d < f.depth) { let i = this.focus; while (this.nodes[i].depth > d) i = this.nodes[i].parent; return i; }
    const xs = this.rowsX[d], ns = this.rowsN[d];
    const scale = this.width / f.total;
    const xv = f.x + x / scale;
    if (xv < f.x || xv >= f.x + f.total) return -1;
    const k = lowerBound(xs, xs.length, xv + 1e-12 * f.total) - 1;  // last start <= xv
    if (k < 0) return -1;
    const n = this.nodes[ns[k]];
    if (xs[k] < f.x || xv >= xs[k] + n.total) return -1;
    return ns[k];
  }

  frameAtEvent(e) {
    const r = this.overlay.getBoundingClientRect();
    return this.frameAt(e.clientX - r.left, e.clientY - r.top);
  }

  // Where frame i is drawn, in CSS pixels relative to the canvas.
  rectOf(i) {
    const n = this.nodes[i], f = this.nodes[this.focus];
    const scale = this.width / f.total;
    if (n.depth < f.depth) return { x: 0, y: this.rowY(n.depth), w: this.width, h: this.rowH - 1 };
    return { x: (n.x - f.x) * scale, y: this.rowY(n.depth), w: n.total * scale, h: this.rowH - 1 };
  }

  onMove(e) {
    const i = this.frameAtEvent(e);
    this.setHover(i, e);
  }

  setHover(i, e) {
    this.hoverIdx = i;
    this.drawOverlay();
    if (this.opts.onHover) this.opts.onHover(i >= 0 ? this.nodes[i] : null, e, i);
  }

  drawOverlay() {
    const dpr = window.devicePixelRatio || 1;
    const ctx = this.overlay.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, this.overlay.width, this.overlay.height);
    if (this.hoverIdx < 0 || !this.nodes || this.hoverIdx >= this.nodes.length) return;
    const r = this.rectOf(this.hoverIdx);
    ctx.strokeStyle = this.dark ? '#fff' : '#111';
    ctx.lineWidth = 1.5;
    ctx.strokeRect(r.x + 0.75, r.y + 0.75, Math.max(r.w - 1.5, 1), r.h - 1.5);
  }
}
