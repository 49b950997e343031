// insights.js — the Insights view (`view=insights`): four pictures of what
// only flamedb answers, each from one endpoint, over the query and range:
//
//  * stability over time (/api/v1/stability?step): entropy, Manhattan and
//    Jensen-Shannon distance of each window to the previous one, with the
//    thresholds and the verdict;
//  * outliers (/api/v1/stability?group_by=LABEL, `ilabel`): each group's
//    Manhattan distance to the whole with its 95% interval, ranked by the
//    interval's lower end (outliers.js), groups of too few samples apart;
//  * variance attribution (/api/v1/variance?step): which functions make the
//    total swing from window to window, a ranked bar per function with its
//    ±1.96 standard error;
//  * what changed between two builds (/api/v1/compare, the selector with
//    build="A" against build="B", `builds=A,B`; by default the two builds
//    that appeared last in the range, older as the baseline): every
//    function's change of self share ranked by significance, |z| of the
//    two-proportion test (pooled standard error, as the API's
//    `significant`), significant ones coloured, the rest grey.
//
// Charts are SVG and HTML drawn with the page's colour variables, so dark
// mode reads as well as light. load() asks the endpoints; render() draws
// them and keeps in `model` what it drew, for the tests.
import { rankGroups, MIN_SAMPLES } from './outliers.js';

const $ = (s) => document.querySelector(s);
const Z95 = 1.96;

// z of a change of share between two sides of n1 and n2 samples (pooled)
export function zOf(p1, n1, p2, n2) {
  if (!(n1 > 0) || !(n2 > 0)) return null;
  const p = (p1 * n1 + p2 * n2) / (n1 + n2);
  const se = Math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2));
  if (se === 0) return p2 === p1 ? 0 : (p2 > p1 ? Infinity : -Infinity);
  return (p2 - p1) / se;
}

// The builds of the selector in the range, in the order they appeared
// (first step with a value), from a timeline grouped by build.
export function buildsByFirstSeen(tl) {
  return (tl.groups || []).map((g) => ({ build: g.labels.build, first: (g.points.find((p) => p[1] > 0) || [Infinity])[0] }))
    .filter((b) => b.build !== '' && b.build !== undefined && b.first !== Infinity)
    .sort((a, b) => a.first - b.first || a.build.localeCompare(b.build));
}

export function initInsights(ctx) {
  const { api, commit, getState, esc, fmtTime, setMatcher, num } = ctx;
  let model = null;

  async function load(base, step) {
    const s = getState();
    const labels = (await api('/api/v1/labels', base).catch(() => ({ labels: [] }))).labels;
    const multi = labels.filter((l) => l.values >= 2 && l.name !== 'type').map((l) => l.name);
    const label = s.ilabel && multi.includes(s.ilabel) ? s.ilabel : ['instance', 'process', 'service', 'node'].find((n) => multi.includes(n)) || multi[0] || null;
    const tlBuild = multi.includes('build') ? await api('/api/v1/timeline', { ...base, group_by: 'build' }) : null;
    const builds = tlBuild ? buildsByFirstSeen(tlBuild).map((b) => b.build) : [];
    let pair = (s.builds || '').split(',').filter((b) => builds.includes(b));
    if (pair.length !== 2 || pair[0] === pair[1]) pair = builds.length >= 2 ? builds.slice(-2) : [];
    const side = (b) => setMatcher(base.query, 'build', b);
    const [stab, groups, variance, compare] = await Promise.all([
      api('/api/v1/stability', { ...base, step }),
      label ? api('/api/v1/stability', { ...base, group_by: label }) : null,
      api('/api/v1/variance', { ...base, step, k: 15 }),
      pair.length ? api('/api/v1/compare', { left: side(pair[0]), right: side(pair[1]), from: base.from, until: base.until, limit: 0 }) : null,
    ]);
    return { base, step, stab, groups, label, multi, variance, builds, pair, compare, sides: pair.map(side) };
  }

  // ---------- the charts ----------
  // A line chart of windows: [[t, v|null]], from..until, optional limit line.
  function lineChart(key, title, pts, from, until, opts = {}) {
    const W = 600, H = 90, L = 44, R = 8, T = 8, B = 18;
    const vals = pts.filter((p) => p[1] !== null).map((p) => p[1]);
    const max = Math.max(opts.limit || 0, ...vals, 1e-9) * 1.1;
    const X = (t) => L + ((t - from) / Math.max(1, until - from)) * (W - L - R);
    const Y = (v) => T + (1 - v / max) * (H - T - B);
    const drawn = pts.filter((p) => p[1] !== null);
    const path = drawn.map((p, i) => `${i ? 'L' : 'M'}${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join('');
    const fmt = (v) => (v >= 10 ? v.toFixed(0) : v.toPrecision(2));
    return `<div class="ins-line" data-chart="${key}"><div class="chart-title">${esc(title)}</div>
      <svg viewBox="0 0 ${W} ${H}" preserveAspectRatio="none" role="img" aria-label="${esc(title)}">
      <line class="axis" x1="${L}" x2="${W - R}" y1="${Y(0)}" y2="${Y(0)}"/>
      <text class="tick" x="${L - 4}" y="${Y(max / 1.1) + 3}" text-anchor="end">${fmt(max / 1.1)}</text>
      <text class="tick" x="${L - 4}" y="${Y(0) + 3}" text-anchor="end">0</text>
      <text class="tick" x="${L}" y="${H - 4}">${esc(fmtTime(from))}</text>
      <text class="tick" x="${W - R}" y="${H - 4}" text-anchor="end">${esc(fmtTime(until))}</text>
      ${opts.limit !== undefined ? `<line class="limit" x1="${L}" x2="${W - R}" y1="${Y(opts.limit)}" y2="${Y(opts.limit)}"><title>stable up to ${opts.limit}</title></line>` : ''}
      <path class="series" d="${path}"/>
      ${drawn.map((p) => `<circle class="pt" cx="${X(p[0]).toFixed(1)}" cy="${Y(p[1]).toFixed(1)}" r="2.5" data-t="${p[0]}" data-v="${p[1]}"><title>${esc(fmtTime(p[0]))}: ${p[1].toFixed(4)}</title></circle>`).join('')}
      </svg></div>`;
  }

  function stabilityCard(st) {
    const s = st.summary;
    const verdict = s.stable === true ? 'stable' : s.stable === false ? 'unstable' : 'unknown';
    const pts = (k) => st.windows.map((w) => [w.from, w[k]]);
    return `<div class="ins-card" id="ins-stability"><div class="ins-head"><b>Stability over time</b> <span class="verdict-tag ${verdict}" data-stable="${s.stable}">${verdict}</span></div>
      <div class="muted ins-sub">Each window of ${st.step}s against the previous one: a stable profile keeps its entropy and moves little (Manhattan ≤ ${s.max_manhattan}, JSD ≤ ${s.max_jsd}, dashed), so one window is as good as another.</div>
      ${lineChart('entropy', 'entropy (bits)', pts('entropy'), st.from, st.until)}
      ${lineChart('manhattan', 'Manhattan distance to the previous window', pts('manhattan'), st.from, st.until, { limit: s.max_manhattan })}
      ${lineChart('jsd', 'Jensen-Shannon divergence to the previous window', pts('jsd'), st.from, st.until, { limit: s.max_jsd })}
      <div class="muted ins-foot">${st.windows.length} windows · entropy ${num(s.entropy_mean, 2)} ± ${num(s.entropy_stddev, 2)} bits · Manhattan max ${num(s.manhattan_max)} · JSD max ${num(s.jsd_max)}</div></div>`;
  }

  function outliersCard(d) {
    const labelPick = `<select id="ins-label" aria-label="outliers by">${d.multi.map((n) => `<option${n === d.label ? ' selected' : ''}>${esc(n)}</option>`).join('')}</select>`;
    if (!d.groups) return `<div class="ins-card" id="ins-outliers"><div class="ins-head"><b>Outliers</b></div><div class="muted">No label has two values or more in this range: nothing to compare.</div></div>`;
    const min = Number(getState().minsamples) > 0 ? Number(getState().minsamples) : MIN_SAMPLES;
    const { ranked, few, unknown } = rankGroups(d.groups.groups, min);
    // the scale: the ranked groups' largest upper end (a group of too few samples may run off it)
    const scale = Math.max(1e-9, ...(ranked.length ? ranked.map((e) => e.ci[1]) : [...few, ...unknown].map((e) => (e.ci ? e.ci[1] : e.g.manhattan || 0))));
    const P = (v) => (Math.min(1, v / scale) * 100).toFixed(2);
    const text = (l) => Object.entries(l).map(([k, v]) => `${k}=${v === '' ? '""' : v}`).join(', ');
    const row = (e, cls) => `<div class="ins-row ${cls}" data-group="${esc(text(e.g.labels))}" data-m="${e.g.manhattan}" data-lo="${e.ci ? e.ci[0] : ''}" data-hi="${e.ci ? e.ci[1] : ''}">
      <span class="ins-name" title="${esc(text(e.g.labels))} · ${e.g.samples ?? '?'} samples">${e.outlier ? '<span class="out">●</span> ' : ''}${esc(text(e.g.labels))}</span>
      <span class="ins-track">${e.ci ? `<i class="ivl-bar" style="left:${P(e.ci[0])}%;width:${(P(e.ci[1]) - P(e.ci[0])).toFixed(2)}%"></i>` : ''}<b class="pt-mark" style="left:${P(e.g.manhattan || 0)}%"></b></span>
      <span class="ins-val num">${num(e.g.manhattan)}${e.ci ? ` <small>${num(e.ci[0])}–${num(e.ci[1])}</small>` : ' <small>no interval</small>'}</span></div>`;
    const sect = (t, n) => (n ? `<div class="ins-sect muted">${t}</div>` : '');
    model.outliers = { label: d.label, order: [...ranked, ...few, ...unknown].map((e) => text(e.g.labels)), ranked: ranked.length, few: few.length, scale };
    return `<div class="ins-card" id="ins-outliers"><div class="ins-head"><b>Outliers</b> <span class="muted">by</span> ${labelPick}</div>
      <div class="muted ins-sub">Each ${esc(d.label)}'s Manhattan distance to the whole query, the bar its 95% interval from its samples; ranked by the interval's lower end (how far it is at least). ● is farther than chance explains.</div>
      <div class="ins-axis muted"><span></span><span class="ins-ticks"><span>0</span><span>${num(scale)}</span></span><span></span></div>
      ${ranked.map((e) => row(e, 'ranked')).join('')}
      ${sect(`too few samples (under ${min.toLocaleString('en-US')}): not ranked`, few.length)}${few.map((e) => row(e, 'few')).join('')}
      ${sect('samples unknown: no interval', unknown.length)}${unknown.map((e) => row(e, 'unknown')).join('')}</div>`;
  }

  function varianceCard(v) {
    const fs = v.functions || [];
    const have = fs.filter((f) => f.contribution !== null);
    model.variance = { units: v.units, functions: have.map((f) => [f.name, f.contribution]) };
    if (!have.length) {
      return `<div class="ins-card" id="ins-variance"><div class="ins-head"><b>What makes the total swing</b></div><div class="muted">${v.units < 2 ? 'One window only: nothing swings.' : 'Every window has the same total: nothing swings.'}</div></div>`;
    }
    const ext = Math.max(1e-9, ...have.map((f) => Math.abs(f.contribution) + (f.contribution_se ? Z95 * f.contribution_se : 0)));
    const neg = have.some((f) => f.contribution - (f.contribution_se ? Z95 * f.contribution_se : 0) < 0);
    const lo = neg ? -ext : 0, span = ext - lo;
    const P = (x) => (((Math.max(lo, Math.min(ext, x)) - lo) / span) * 100).toFixed(2);
    const rows = have.map((f) => {
      const a = Math.min(0, f.contribution), b = Math.max(0, f.contribution);
      const se = f.contribution_se;
      return `<div class="ins-row" data-name="${esc(f.name)}" data-c="${f.contribution}" data-se="${se ?? ''}">
        <span class="ins-name" title="${esc(f.name)}">${esc(f.name)}</span>
        <span class="ins-track">${neg ? `<b class="zero" style="left:${P(0)}%"></b>` : ''}<i class="bar ${f.contribution < 0 ? 'neg' : 'pos'}" style="left:${P(a)}%;width:${(P(b) - P(a)).toFixed(2)}%"></i>${se !== null && se !== undefined ? `<s class="whisker" style="left:${P(f.contribution - Z95 * se)}%;width:${(P(f.contribution + Z95 * se) - P(f.contribution - Z95 * se)).toFixed(2)}%"></s>` : ''}</span>
        <span class="ins-val num">${(f.contribution * 100).toFixed(1)}%${se !== null && se !== undefined ? ` <small>± ${(Z95 * se * 100).toFixed(1)}</small>` : ''}</span></div>`;
    }).join('');
    return `<div class="ins-card" id="ins-variance"><div class="ins-head"><b>What makes the total swing</b></div>
      <div class="muted ins-sub">Variance attribution over ${v.units} windows of ${v.step}s: each function's share of the total's variance (Cov(self, total) / Var(total); all functions add up to 100%), with its 95% interval from the samples. Negative: it moves against the total.</div>
      ${rows}</div>`;
  }

  function changesCard(d) {
    const pick = (id, cur) => `<select id="${id}" aria-label="${id === 'ins-b0' ? 'baseline build' : 'comparison build'}">${d.builds.map((b) => `<option${b === cur ? ' selected' : ''}>${esc(b)}</option>`).join('')}</select>`;
    if (!d.compare) {
      model.changes = null;
      return `<div class="ins-card" id="ins-changes"><div class="ins-head"><b>What changed between builds</b></div><div class="muted">${d.builds.length ? `One build (${esc(d.builds[0])}) in this range` : 'No <code>build</code> label in this range'}: nothing to compare. The agent sets <code>build</code> from the executable's build id.</div></div>`;
    }
    const c = d.compare, n1 = c.left.samples, n2 = c.right.samples;
    const fs = c.functions.map((f) => ({ ...f, z: zOf(f.left_share, n1, f.right_share, n2) }));
    fs.sort((a, b) => (b.z === null ? -1 : Math.abs(b.z)) - (a.z === null ? -1 : Math.abs(a.z)) || Math.abs(b.delta) - Math.abs(a.delta) || a.name.localeCompare(b.name));
    const shown = fs.slice(0, 20);
    const ext = Math.max(1e-9, ...shown.map((f) => Math.abs(f.delta)));
    const P = (x) => (50 + (x / ext) * 50).toFixed(2);
    const sig = fs.filter((f) => f.significant);
    model.changes = { pair: d.pair, order: shown.map((f) => f.name), z: shown.map((f) => f.z), significant: shown.map((f) => f.significant), total: fs.length, nsig: sig.length };
    const zs = (z) => (z === null ? '' : Number.isFinite(z) ? z.toFixed(1) : z > 0 ? '+∞' : '−∞');
    const rows = shown.map((f) => {
      const a = Math.min(0, f.delta), b = Math.max(0, f.delta);
      const cls = f.significant ? (f.delta > 0 ? 'grew' : 'shrank') : 'noise';
      return `<div class="ins-row ${cls}" data-name="${esc(f.name)}" data-delta="${f.delta}" data-z="${f.z ?? ''}" data-significant="${f.significant}">
        <span class="ins-name" title="${esc(f.name)} · ${(f.left_share * 100).toFixed(2)}% → ${(f.right_share * 100).toFixed(2)}%">${esc(f.name)}</span>
        <span class="ins-track"><b class="zero" style="left:50%"></b><i class="bar ${cls}" style="left:${P(a)}%;width:${(P(b) - P(a)).toFixed(2)}%"></i></span>
        <span class="ins-val num">${f.delta > 0 ? '+' : ''}${(f.delta * 100).toFixed(2)} pp <small>z ${zs(f.z)}</small></span></div>`;
    }).join('');
    return `<div class="ins-card" id="ins-changes"><div class="ins-head"><b>What changed between builds</b> ${pick('ins-b0', d.pair[0])} <span class="muted">→</span> ${pick('ins-b1', d.pair[1])}</div>
      <div class="muted ins-sub">Each function's self share in build ${esc(d.pair[1])} against build ${esc(d.pair[0])} (${n1 ?? '?'} and ${n2 ?? '?'} samples), ranked by significance (|z| of the two-proportion test); <span class="grew">grew</span> and <span class="shrank">shrank</span> where it passes 95%, grey within sampling noise. <b>${sig.length}</b> of ${fs.length} significant${fs.length > shown.length ? `; the first ${shown.length} shown` : ''}.
      <a href="#" id="ins-diff">Open as a diff</a></div>
      ${rows}</div>`;
  }

  function render(d) {
    const el = $('#insights');
    model = { step: d.step, stability: d.stab.windows.map((w) => [w.from, w.entropy, w.manhattan, w.jsd]) };
    el.innerHTML = `<div class="ins-grid">${stabilityCard(d.stab)}${outliersCard(d)}${varianceCard(d.variance)}${changesCard(d)}</div>`;
    const lp = $('#ins-label');
    if (lp) lp.onchange = (e) => commit({ ilabel: e.target.value });
    // picking one side's build as the other's swaps them
    for (const [id, me] of [['ins-b0', 0], ['ins-b1', 1]]) {
      const b = $('#' + id);
      if (!b) continue;
      b.onchange = () => {
        const p = [$('#ins-b0').value, $('#ins-b1').value];
        if (p[0] === p[1]) p[1 - me] = d.pair[me];
        commit({ builds: p.join(',') });
      };
    }
    const diff = $('#ins-diff');
    if (diff) diff.onclick = (e) => { e.preventDefault(); commit({ view: 'diff', left: d.sides[0], right: d.sides[1], left_from: undefined, left_until: undefined, right_from: undefined, right_until: undefined }); };
    for (const row of el.querySelectorAll('#ins-variance .ins-row, #ins-changes .ins-row')) {
      row.onclick = () => commit({ view: 'flame', search: row.dataset.name, fn: row.dataset.name });
    }
  }

  return { load, render, get model() { return model; } };
}
