// timeline.js — the chart above the flamegraph: totals per step over the
// range (/api/v1/timeline), drawn on a canvas, with a brush.
//
// Grouped (group by, or split by, a label) it draws one series per group:
// the 10 groups with the largest totals and "other" for the sum of the rest
// (so each step still adds up to the whole), stacked bars or lines
// (`tl=lines` in the URL). Groups in another unit than the largest group's
// are left out and said so. An answer marked keepOrder (the on-CPU and
// off-CPU series of wall.js) keeps its series' order, hence their colours.
//
// Brush: dragging selects a range. In the flamegraph it becomes the query's
// range (from, until); in the diff view it becomes the range of the side
// picked beside the chart (baseline or comparison), and both sides' ranges
// are drawn as bands (blue baseline, red comparison) so that two ranges are
// picked by two drags.
//
// The model of what is drawn (series, their points and colours, the bands)
// is kept in `model` for the tests and the legend.

const $ = (s) => document.querySelector(s);
export const TOP_GROUPS = 10;
// categorical colours, then grey for "other"
const PALETTE = ['#e8590c', '#1c7ed6', '#2f9e44', '#ae3ec9', '#f59f00', '#0c8599', '#e03131', '#5c940d', '#7048e8', '#c2255c'];
const OTHER_COLOUR = '#909296';

// The series of a grouped answer: top TOP_GROUPS by total, plus "other".
export function seriesOf(ans, label) {
  if (!ans.groups) return { unit: ans.unit, series: [{ name: 'total', points: ans.points || [], total: (ans.points || []).reduce((a, p) => a + p[1], 0), colour: null }], skipped: 0 };
  const withTotal = ans.groups.map((g) => ({ g, total: g.points.reduce((a, p) => a + p[1], 0) }));
  // keepOrder: series in the answer's order (on-CPU then off-CPU, wall.js), so their colours stay
  if (!ans.keepOrder) withTotal.sort((a, b) => b.total - a.total || labelText(a.g.labels, label).localeCompare(labelText(b.g.labels, label)));
  const unit = withTotal.length ? withTotal[0].g.unit : ans.unit;
  const same = withTotal.filter((x) => x.g.unit === unit && x.total > 0);
  const top = same.slice(0, TOP_GROUPS), rest = same.slice(TOP_GROUPS);
  const series = top.map((x, i) => ({ name: labelText(x.g.labels, label), points: x.g.points, total: x.total, colour: PALETTE[i] }));
  if (rest.length) {
    const pts = rest[0].g.points.map((p) => [p[0], 0]);
    for (const x of rest) x.g.points.forEach((p, i) => { pts[i][1] += p[1]; });
    series.push({ name: `other (${rest.length} groups)`, points: pts, total: rest.reduce((a, x) => a + x.total, 0), colour: OTHER_COLOUR, other: true });
  }
  return { unit, series, skipped: withTotal.length - same.length - withTotal.filter((x) => x.g.unit === unit && x.total === 0).length };
}
const labelText = (l, label) => `${label}=${l[label] === '' || l[label] === undefined ? '""' : l[label]}`;

export function initTimeline(ctx) {
  const { commit, getState, fmtValue, fmtTime, esc } = ctx;
  const c = $('#timeline');
  let model = null;

  // A selector the timeline cannot answer (one naming a sample label: a
  // timeline reads profile totals, not stacks): an empty strip saying why.
  function refuse(why) {
    model = null;
    c.getContext('2d').clearRect(0, 0, c.width, c.height);
    c.title = why;
    c.dataset.refused = '1';
    $('#timeline-label').textContent = 'no timeline: a selector naming a sample label filters stacks, and a timeline reads profile totals';
    $('#tl-legend').hidden = true;
    $('#tl-mode').hidden = true;
  }

  function draw(ans, opts = {}) {
    delete c.dataset.refused;
    c.title = '';
    const s = getState();
    const { unit, series, skipped } = seriesOf(ans, opts.label);
    const mode = s.tl === 'lines' && ans.groups ? 'lines' : 'stacked';
    model = { from: ans.from, until: ans.until, step: ans.step, unit, series, mode, grouped: !!ans.groups, label: opts.label, bands: opts.bands || [], skipped };
    render();
  }

  function render() {
    if (!model) return;
    const w = c.parentElement.clientWidth - 16, h = model.grouped ? 84 : 56;
    const dpr = devicePixelRatio || 1;
    c.width = w * dpr; c.height = h * dpr; c.style.width = w + 'px'; c.style.height = h + 'px';
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    const { from, until, step, series, mode } = model;
    const span = Math.max(1e-9, until - from);
    const cs = getComputedStyle(document.body);
    const n = series.length ? series[0].points.length : 0;
    const X = (t) => ((t - from) / span) * w;
    const bw = Math.max(1, (step / span) * w - 1);
    const plotH = h - 14;
    // bands of the diff view, under the data
    for (const b of model.bands) {
      g.fillStyle = b.colour + '26';
      g.fillRect(X(b.from), 0, Math.max(2, X(b.until) - X(b.from)), plotH + 2);
      g.fillStyle = b.colour;
      g.fillRect(X(b.from), 0, Math.max(2, X(b.until) - X(b.from)), 2);
    }
    let max = 1;
    if (mode === 'stacked') {
      for (let i = 0; i < n; i++) { let sum = 0; for (const se of series) sum += se.points[i][1]; max = Math.max(max, sum); }
    } else for (const se of series) for (const p of se.points) max = Math.max(max, p[1]);
    model.max = max;
    const Y = (v) => plotH - (v / max) * (plotH - 2);
    model.xOf = null;
    if (mode === 'stacked') {
      for (let i = 0; i < n; i++) {
        let base = 0;
        const x = X(series[0].points[i][0]);
        for (const se of series) {
          const v = se.points[i][1];
          if (!v) continue;
          g.fillStyle = se.colour || cs.getPropertyValue('--accent');
          g.fillRect(x, Y(base + v), bw, Y(base) - Y(base + v));
          base += v;
        }
      }
    } else {
      g.lineWidth = 1.5;
      for (const se of series) {
        g.strokeStyle = se.colour;
        g.beginPath();
        se.points.forEach(([t, v], i) => { const x = X(t) + bw / 2; if (i) g.lineTo(x, Y(v)); else g.moveTo(x, Y(v)); });
        g.stroke();
      }
    }
    g.fillStyle = cs.getPropertyValue('--muted');
    g.font = '10px system-ui, sans-serif';
    g.textBaseline = 'bottom';
    for (let k = 0; k <= 4; k++) {
      const t = from + (span * k) / 4;
      const txt = new Date(t * 1000).toISOString().slice(span > 2 * 86400 ? 5 : 11, 16).replace('T', ' ');
      g.textAlign = k === 0 ? 'left' : k === 4 ? 'right' : 'center';
      g.fillText(txt, (w * k) / 4, h);
    }
    const total = series.reduce((a, se) => a + se.total, 0);
    const diff = model.bands.length > 0;
    $('#timeline-label').textContent = `${fmtTime(from)} → ${fmtTime(until)} · step ${step}s · ${fmtValue(total, model.unit)} · ` +
      (diff ? 'drag to pick the range of the side chosen on the right' : 'drag to select a range');
    renderLegend();
  }

  function renderLegend() {
    const el = $('#tl-legend'), modes = $('#tl-mode');
    modes.hidden = !model.grouped;
    for (const b of modes.querySelectorAll('button')) b.classList.toggle('on', b.dataset.mode === model.mode);
    el.hidden = !model.grouped;
    if (!model.grouped) { el.textContent = ''; return; }
    el.innerHTML = model.series.map((se) => `<span class="tl-key" data-name="${esc(se.name)}" data-total="${se.total}" title="${esc(se.name)}: ${esc(fmtValue(se.total, model.unit))}"><i style="background:${se.colour}"></i>${esc(se.name)}</span>`).join('') +
      (model.skipped ? `<span class="muted">${model.skipped} group${model.skipped === 1 ? '' : 's'} in another unit left out</span>` : '');
  }
  for (const b of document.querySelectorAll('#tl-mode button')) {
    b.onclick = () => commit({ tl: b.dataset.mode === 'lines' ? 'lines' : undefined }, { replace: true });
  }
  function setMode() { if (model && model.grouped && model.mode !== (getState().tl === 'lines' ? 'lines' : 'stacked')) { model.mode = getState().tl === 'lines' ? 'lines' : 'stacked'; render(); } }

  // ---------- brush ----------
  const sel = document.createElement('div');
  sel.className = 'tl-sel'; sel.hidden = true;
  c.parentElement.append(sel);
  let x0 = null;
  const xOf = (e) => Math.max(0, Math.min(c.clientWidth, e.clientX - c.getBoundingClientRect().left));
  c.addEventListener('mousedown', (e) => {
    x0 = xOf(e); sel.hidden = false;
    sel.className = 'tl-sel' + (getState().view === 'diff' ? ' ' + brushSide() : '');
    sel.style.left = c.offsetLeft + x0 + 'px'; sel.style.width = '0px'; sel.style.height = c.clientHeight - 12 + 'px';
    e.preventDefault();
  });
  addEventListener('mousemove', (e) => {
    if (x0 === null) return;
    const x = xOf(e);
    sel.style.left = c.offsetLeft + Math.min(x0, x) + 'px';
    sel.style.width = Math.abs(x - x0) + 'px';
  });
  addEventListener('mouseup', (e) => {
    if (x0 === null) return;
    const x = xOf(e), a = Math.min(x0, x), b = Math.max(x0, x);
    x0 = null; sel.hidden = true;
    if (!model || b - a < 3) return;
    const span = model.until - model.from, w = c.clientWidth;
    const f = Math.floor(model.from + (a / w) * span), u = Math.ceil(model.from + (b / w) * span);
    if (u <= f) return;
    if (getState().view === 'diff') {
      const side = brushSide();
      commit({ [side + '_from']: String(f), [side + '_until']: String(u), focus: undefined });
    } else commit({ from: String(f), until: String(u), focus: undefined });
  });
  const brushSide = () => (getState().brush === 'left' ? 'left' : 'right');
  for (const b of document.querySelectorAll('#tl-side button')) {
    b.onclick = () => commit({ brush: b.dataset.side === 'left' ? 'left' : undefined }, { replace: true });
  }
  function sync() {
    const s = getState();
    $('#tl-side').hidden = s.view !== 'diff';
    for (const b of document.querySelectorAll('#tl-side button')) b.classList.toggle('on', b.dataset.side === brushSide());
    setMode();
  }

  return { draw, refuse, render, sync, get model() { return model; } };
}
