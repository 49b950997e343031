// next.mjs — browser tests of viewer v2's second round (issue 16): split by
// a label, the timeline's brush and group lines, the diff's two ranges and
// significance colours, SVG and PNG export, outliers ranked by their
// intervals. Registered by run.mjs. Each test drives the page as a user
// would (select, drag, click) and checks what is drawn against the API's
// own answer: the page's model of the canvas, the DOM text, the URL.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getJSON, ingest } from './lib.mjs';
import { stacksOf, totalsOf, drawnTotals, eqTotals, frameBox } from './views.mjs';

// fleet: nine instances alike and two that are not, one of them with only
// a handful of samples (the outlier ranking's fixture)
export async function loadNextFixtures(url, T) {
  const w = (t) => ({ from: String(t), until: String(t + 10) });
  for (let i = 1; i <= 9; i++) {
    await ingest(url, { service: 'fleet', instance: `f-${i}`, ...w(T + 30 * i) },
      `main;serve;read ${300 + 7 * i}\nmain;serve;write ${200 + 3 * i}\nmain;gc ${100 + i}\n`);
  }
  // a large group that moved: half its time in compress
  await ingest(url, { service: 'fleet', instance: 'f-big', ...w(T + 400) }, 'main;serve;read 300\nmain;serve;write 200\nmain;gc 100\nmain;serve;compress 250\n');
  // four samples, half in an unusual function: far off by its point value, but four samples say little
  await ingest(url, { service: 'fleet', instance: 'f-tiny', ...w(T + 420) }, 'main;serve;sleep 2\nmain;serve;read 2\n');
}

export function registerNextTests({ test, open, ready, shot, flameURL, FROM, UNTIL, SHOP, T, artifacts }) {
  const range = { from: FROM, until: UNTIL };

  test('split by a label: one root frame per value under "all", each its own tree; in the URL', async (ctx, url) => {
    const page = await open(ctx, flameURL(url));
    await ready(page);
    const names = await page.$$eval('#split option', (o) => o.map((x) => x.value));
    const labels = await getJSON(url, '/api/v1/labels', range);
    assert.deepEqual(names, ['', ...labels.labels.map((l) => l.name).filter((n) => n !== 'type'), 'sample:'],
      'every label name is offered, then the entry listing sample labels');
    await page.selectOption('#split', 'instance');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('split') === 'instance');
    await ready(page);
    const g = await getJSON(url, '/api/v1/query', { query: SHOP, ...range, group_by: 'instance', max_nodes: 0 });
    // reference: each group's stacks under a frame instance=VALUE
    const want = totalsOf(g.groups.flatMap((x) => stacksOf(x.tree).map(([p, v]) => [[`instance=${x.labels.instance}`, ...p], v])));
    eqTotals(await drawnTotals(page), want, 'the split tree');
    const roots = await page.evaluate(() => { const G = window.__flamedb.graph; return G.allNodes().filter((n) => n.depth === 1).map((n) => [n.name, n.total]); });
    assert.deepEqual(roots, g.groups.map((x) => [`instance=${x.labels.instance}`, x.total]), 'root frames in the API order, with its totals');
    assert.equal(await page.evaluate(() => window.__flamedb.graph.node(0).total), g.groups.reduce((a, x) => a + x.total, 0));
    const summary = await page.textContent('#summary');
    assert.ok(summary.includes(`split by instance: ${g.groups.length} values`), summary);
    const samples = g.groups.reduce((a, x) => a + x.samples, 0);
    assert.ok(summary.includes(`${samples.toLocaleString('en-US')} samples`), summary);
    // every root frame is drawn where the model says, and its hue is the split one (not a flame hue)
    const b = await frameBox(page, 'instance=i-3', 1);
    assert.equal(b.hit, 'instance=i-3');
    await shot(page, '30-split');
    // a click zooms into one value; the breadcrumb reads all › instance=i-3
    await page.mouse.click(b.cx, b.cy);
    assert.deepEqual(await page.$$eval('#crumbs button', (x) => x.map((y) => y.textContent)), ['all', 'instance=i-3']);
    // a copied link draws the same
    const again = await open(ctx, page.url());
    await ready(again);
    assert.equal(await again.inputValue('#split'), 'instance');
    assert.equal(await again.getAttribute('#crumbs', 'data-root'), 'instance=i-3');
    eqTotals(await drawnTotals(again), want);
    // transforms apply to the split tree: merge main puts each value's functions right under it
    await again.goto(flameURL(url, { split: 'build', transforms: 'mf:main' }));
    await ready(again);
    const gb = await getJSON(url, '/api/v1/query', { query: SHOP, ...range, group_by: 'build', max_nodes: 0 });
    const wantB = totalsOf(gb.groups.flatMap((x) => stacksOf(x.tree).map(([p, v]) => [[`build=${x.labels.build}`, ...p.filter((f) => f !== 'main')], v])));
    eqTotals(await drawnTotals(again), wantB, 'split by build, main merged');
    // none: back to the one tree
    await page.selectOption('#split', '');
    await page.waitForFunction(() => !new URL(location.href).searchParams.get('split'));
    await ready(page);
    const q = await getJSON(url, '/api/v1/query', { query: SHOP, ...range });
    eqTotals(await drawnTotals(page), totalsOf(stacksOf(q.tree)));
  });

  test('timeline: with group by, one series per group (top 10 + other) adding up to the total; stacked or lines; brush', async (ctx, url) => {
    const page = await open(ctx, flameURL(url, { query: 'fleet{}', group_by: 'instance' }));
    await ready(page);
    const tg = await getJSON(url, '/api/v1/timeline', { query: 'fleet{}', ...range, group_by: 'instance' });
    const t1 = await getJSON(url, '/api/v1/timeline', { query: 'fleet{}', ...range });
    // reference: groups by their sum, the first ten, the rest as one
    const sums = tg.groups.map((g) => ({ name: `instance=${g.labels.instance}`, total: g.points.reduce((a, p) => a + p[1], 0), points: g.points }))
      .sort((a, b) => b.total - a.total || a.name.localeCompare(b.name));
    assert.equal(sums.length, 11, 'fixture: 11 instances');
    const want = [...sums.slice(0, 10).map((x) => [x.name, x.total]), ['other (1 groups)', sums[10].total]];
    const m = await page.evaluate(() => { const m = window.__flamedb.timeline; return { mode: m.mode, series: m.series.map((s) => ({ name: s.name, total: s.total, points: s.points, colour: s.colour })) }; });
    assert.equal(m.mode, 'stacked');
    assert.deepEqual(m.series.map((s) => [s.name, s.total]), want);
    assert.deepEqual(m.series[10].points, sums[10].points, '"other" holds the rest, step by step');
    // every step adds up to the ungrouped timeline (the query's total)
    const stepSums = t1.points.map((p, i) => [p[0], m.series.reduce((a, s) => a + s.points[i][1], 0)]);
    assert.deepEqual(stepSums, t1.points);
    // the legend names each series with its colour
    assert.deepEqual(await page.$$eval('#tl-legend .tl-key', (k) => k.map((x) => [x.dataset.name, Number(x.dataset.total)])), want);
    // drawn: at the step of f-big (the largest), its bar in its colour, from the bottom up to its value
    const probe = (name) => page.evaluate((name) => {
      const m = window.__flamedb.timeline, c = document.querySelector('#timeline');
      const s = m.series.find((x) => x.name === name);
      const [t, v] = s.points.find((p) => p[1] > 0);
      const w = c.clientWidth, h = c.clientHeight, plotH = h - 14, d = devicePixelRatio || 1;
      const x = ((t - m.from) / (m.until - m.from)) * w + Math.max(1, (m.step / (m.until - m.from)) * w - 1) / 2;
      const px = (y) => Array.from(c.getContext('2d').getImageData(Math.round(x * d), Math.round(y * d), 1, 1).data);
      const top = plotH - (v / m.max) * (plotH - 2);
      return { colour: s.colour, bottom: px(plotH - 1), mid: px((plotH + top) / 2), line: px(top), above: px(top - 6) };
    }, name);
    const hex = (p) => '#' + p.slice(0, 3).map((v) => v.toString(16).padStart(2, '0')).join('');
    const big = await probe('instance=f-big');
    assert.equal(hex(big.bottom), big.colour, 'stacked: the bar of f-big in its colour');
    assert.equal(hex(big.mid), big.colour);
    assert.equal(big.above[3], 0, 'nothing above the bar');
    await shot(page, '31-timeline-groups');
    // lines: the area under the line is empty, the line is drawn where the value is
    await page.click('#tl-mode button[data-mode="lines"]');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('tl') === 'lines' && window.__flamedb.timeline.mode === 'lines');
    const bl = await probe('instance=f-big');
    assert.equal(bl.mid[3], 0, 'lines: nothing drawn under the peak');
    assert.ok(bl.line[3] > 0, 'lines: the peak is drawn');
    await shot(page, '32-timeline-lines');
    // a copied link keeps the mode
    const again = await open(ctx, page.url());
    await ready(again);
    assert.equal(await again.evaluate(() => window.__flamedb.timeline.mode), 'lines');
    // brush: drag over the first third: the query's range, the URL, and the grouped timeline follow
    const box = await page.locator('#timeline').boundingBox();
    await page.mouse.move(box.x + box.width * 0.1, box.y + 20);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.4, box.y + 20, { steps: 4 });
    await page.mouse.up();
    await page.waitForFunction((f) => new URL(location.href).searchParams.get('from') !== f, FROM);
    await ready(page);
    const sp = new URL(page.url()).searchParams;
    const span = Number(UNTIL) - Number(FROM);
    assert.ok(Math.abs(Number(sp.get('from')) - (Number(FROM) + span * 0.1)) <= span * 0.02, `from ${sp.get('from')}`);
    assert.ok(Math.abs(Number(sp.get('until')) - (Number(FROM) + span * 0.4)) <= span * 0.02, `until ${sp.get('until')}`);
    assert.equal(sp.get('group_by'), 'instance');
    const tg2 = await getJSON(url, '/api/v1/timeline', { query: 'fleet{}', from: sp.get('from'), until: sp.get('until'), group_by: 'instance' });
    const m2 = await page.evaluate(() => { const m = window.__flamedb.timeline; return { from: m.from, until: m.until, names: m.series.map((s) => s.name) }; });
    assert.equal(m2.from, tg2.from);
    assert.deepEqual(m2.names.sort(), tg2.groups.filter((g) => g.points.some((p) => p[1] > 0)).map((g) => `instance=${g.labels.instance}`).sort());
    const q = await getJSON(url, '/api/v1/query', { query: 'fleet{}', from: sp.get('from'), until: sp.get('until') });
    assert.equal(await page.evaluate(() => window.__flamedb.current.total), q.total);
  });

  test('diff: opens on the previous period; two ranges brushed on the timeline; two selectors; colours by significance', async (ctx, url) => {
    const page = await open(ctx, flameURL(url));
    await ready(page);
    await page.click('#views button[data-view="diff"]');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('view') === 'diff');
    await ready(page);
    // the default: the previous period of the same length, never the same data
    const span = Number(UNTIL) - Number(FROM);
    let sp = new URL(page.url()).searchParams;
    assert.deepEqual(['left_from', 'left_until', 'right_from', 'right_until'].map((k) => sp.get(k)),
      [String(Number(FROM) - span), FROM, FROM, UNTIL]);
    assert.ok((await page.textContent('#diff-sides')).includes('the previous period, by default'));
    assert.equal(await page.inputValue('#left_from'), String(Number(FROM) - span));
    // the timeline shows both ranges as bands
    const bands = await page.evaluate(() => window.__flamedb.timeline.bands.map((b) => [b.side, b.from, b.until]));
    assert.deepEqual(bands, [['left', Number(FROM) - span, Number(FROM)], ['right', Number(FROM), Number(UNTIL)]]);
    // brush the baseline over T..T+200 (build v1 on i-1), then the comparison over T+250..T+500 (v2)
    const brush = async (side, a, b) => {
      await page.click(`#tl-side button[data-side="${side}"]`);
      const m = await page.evaluate(() => ({ from: window.__flamedb.timeline.from, until: window.__flamedb.timeline.until }));
      const box = await page.locator('#timeline').boundingBox();
      const X = (t) => box.x + ((t - m.from) / (m.until - m.from)) * box.width;
      const before = page.url();
      await page.mouse.move(X(a), box.y + 20);
      await page.mouse.down();
      await page.mouse.move(X(b), box.y + 20, { steps: 5 });
      await page.mouse.up();
      await page.waitForFunction((u) => location.href !== u, before);
      await ready(page);
    };
    await brush('left', T - 5, T + 200);
    await brush('right', T + 250, T + 500);
    sp = new URL(page.url()).searchParams;
    const lf = Number(sp.get('left_from')), lu = Number(sp.get('left_until')), rf = Number(sp.get('right_from')), ru = Number(sp.get('right_until'));
    const tol = (span * 2) / 100;
    assert.ok(Math.abs(lf - (T - 5)) < tol && Math.abs(lu - (T + 200)) < tol, `baseline ${lf}..${lu}`);
    assert.ok(Math.abs(rf - (T + 250)) < tol && Math.abs(ru - (T + 500)) < tol, `comparison ${rf}..${ru}`);
    const sides = { left: SHOP, right: SHOP, from: FROM, until: UNTIL, left_from: String(lf), left_until: String(lu), right_from: String(rf), right_until: String(ru) };
    const d = await getJSON(url, '/api/v1/diff', sides);
    const cmp = await getJSON(url, '/api/v1/compare', { ...sides, limit: 100 });
    assert.equal(await page.evaluate(() => window.__flamedb.current.diff.left_total), d.left_total);
    assert.equal(await page.evaluate(() => window.__flamedb.current.diff.right_total), d.right_total);
    assert.ok(d.left_total > 0 && d.right_total > 0);
    await shot(page, '33-diff-brushed');
    // two selectors, typed: build v1 against build v2 over the whole range
    for (const k of ['left_from', 'left_until', 'right_from', 'right_until']) await page.fill('#' + k, '');
    await page.fill('#left', 'shop{build="v1"}');
    await page.fill('#right', 'shop{build="v2"}');
    await page.press('#right', 'Enter');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('right') === 'shop{build="v2"}');
    await ready(page);
    const s2 = { left: 'shop{build="v1"}', right: 'shop{build="v2"}', from: FROM, until: UNTIL };
    const d2 = await getJSON(url, '/api/v1/diff', s2);
    const c2 = await getJSON(url, '/api/v1/compare', { ...s2, limit: 100 });
    // the significance of every frame: the API's z-test on its total share, computed here again
    const nodes = [];
    const walk = (n, path) => { nodes.push([path, n]); for (const c of n.children) walk(c, path + ';' + c.name); };
    walk(d2.tree, 'root');
    const nL = c2.left.samples, nR = c2.right.samples;
    const zOf = (n) => {
      const pL = n.left_total / d2.left_total, pR = n.right_total / d2.right_total;
      const p = (pL * nL + pR * nR) / (nL + nR), se = Math.sqrt(p * (1 - p) * (1 / nL + 1 / nR));
      return se > 0 ? (pR - pL) / se : 0;
    };
    const drawn = new Map(await page.evaluate(() => window.__flamedb.graph.allNodes().map((n, i, all) => {
      let p = n.name; for (let j = n.parent; j >= 0; j = all[j].parent) p = all[j].name + ';' + p;
      return [p, { z: n.z, sig: n.significant }];
    })));
    for (const [path, n] of nodes) {
      const g = drawn.get(path);
      assert.ok(g, `${path} drawn`);
      assert.ok(Math.abs(g.z - zOf(n)) < 1e-9, `${path}: z ${g.z} vs ${zOf(n)}`);
      assert.equal(g.sig, Math.abs(zOf(n)) > 1.96, path);
    }
    // and for a leaf function that occurs once, the verdict is the API's own (compare's self shares)
    for (const f of c2.functions) {
      const at = nodes.filter(([, n]) => n.name === f.name);
      if (at.length === 1 && at[0][1].children.length === 0) assert.equal(drawn.get(at[0][0]).sig, f.significant, f.name);
    }
    // escape barely moved: drawn neutral grey; json is new: red; parse shrank: blue
    const px = async (name) => { const b = await page.evaluate((n) => window.__flamedb.layoutOf(n), name); const p = await page.evaluate(([x, y]) => {
      const c = window.__flamedb.graph.canvas, r = c.getBoundingClientRect(), dd = devicePixelRatio || 1;
      return Array.from(c.getContext('2d').getImageData(Math.round((x - r.left) * dd), Math.round((y - r.top) * dd), 1, 1).data); }, [b.x + 2, b.y + 3]); return { b, p }; };
    const esc = await px('escape');
    assert.equal(drawn.get('root;main;handle;render;escape').sig, false, 'fixture: escape within noise');
    assert.deepEqual(esc.p.slice(0, 3), [222, 224, 228], 'a change within noise is neutral');
    const js = await px('json');
    assert.ok(js.p[0] > js.p[1] + 80, `json rgb ${js.p}`);
    const pa = await px('parse');
    assert.ok(pa.p[2] > pa.p[0] + 40, `parse rgb ${pa.p}`);
    // the tooltip: magnitude and the test's verdict
    await page.mouse.move(esc.b.cx, esc.b.cy);
    await page.waitForSelector('#tooltip:not([hidden])');
    const tt = await page.textContent('#tooltip');
    assert.ok(tt.includes('within sampling noise') && tt.includes('× '.trim()), tt);
    const en = nodes.find(([p]) => p === 'root;main;handle;render;escape')[1];
    assert.ok(tt.includes(`×${((en.right_total / d2.right_total) / (en.left_total / d2.left_total)).toFixed(2)} the baseline share`), tt);
    assert.ok(Math.abs(Number(await page.getAttribute('#tooltip', 'data-z')) - zOf(en)) < 1e-9);
    await page.mouse.move(js.b.cx, js.b.cy);
    await page.waitForFunction(() => document.querySelector('#tooltip').dataset.name === 'json');
    const tj = await page.textContent('#tooltip');
    assert.ok(tj.includes('significant') && tj.includes('new in the comparison'), tj);
    await shot(page, '34-diff-significance');
  });

  test('export: SVG of the flamegraph as drawn (zoom, search), PNG of the canvas, beside pprof/folded/speedscope', async (ctx, url) => {
    const page = await open(ctx, flameURL(url, { focus: 'main;handle', search: 'render' }));
    await ready(page);
    await page.click('#export-btn');
    const items = await page.$$eval('#export .menu-items a', (a) => a.map((x) => x.id));
    for (const id of ['exp-folded', 'exp-speedscope', 'exp-json', 'exp-pprof', 'exp-svg', 'exp-png']) assert.ok(items.includes(id), id);
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#exp-svg')]);
    assert.equal(dl.suggestedFilename(), 'flamedb-flamegraph.svg');
    const path = join(artifacts, 'export.svg');
    await dl.saveAs(path);
    const svg = readFileSync(path, 'utf8');
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="[\d.]+" height="\d+"/);
    const frames = [...svg.matchAll(/<g class="frame" data-name="([^"]*)"[^>]*><title>([^<]*)<\/title><rect x="([\d.]+)" y="(\d+)" width="([\d.]+)" height="\d+" fill="([^"]+)"\/>/g)]
      .map((m) => ({ name: m[1], title: m[2], x: Number(m[3]), y: Number(m[4]), w: Number(m[5]), fill: m[6] }));
    // reference from the page's model: the focus's ancestors across the width, then every frame inside the focus
    const want = await page.evaluate(() => {
      const g = window.__flamedb.graph, N = g.allNodes(), f = N[g.focus], scale = g.width / f.total;
      const out = [];
      for (let i = f.parent; i >= 0; i = N[i].parent) out.push({ name: N[i].name, x: 0, y: g.rowY(N[i].depth), w: g.width - 1 });
      N.forEach((n) => { if (n.depth >= f.depth && n.x >= f.x && n.x < f.x + f.total) out.push({ name: n.name, x: (n.x - f.x) * scale, y: g.rowY(n.depth), w: n.total * scale - 1 }); });
      return { out, width: g.width, match: getComputedStyle(document.documentElement).getPropertyValue('--match').trim(), total: g.meta.total };
    });
    const key = (f) => `${f.name}@${f.y}`;
    const got = new Map(frames.map((f) => [key(f), f]));
    assert.equal(frames.length, want.out.length, `${frames.length} frames in the SVG, ${want.out.length} drawn`);
    for (const f of want.out) {
      const s = got.get(key(f));
      assert.ok(s, `${key(f)} in the SVG`);
      assert.ok(Math.abs(s.x - f.x) < 0.01 && Math.abs(s.w - f.w) < 0.01, `${key(f)}: ${s.x}+${s.w} vs ${f.x}+${f.w}`);
    }
    assert.equal(got.get(key(want.out.find((f) => f.name === 'render'))).fill, want.match, 'the search highlight is exported');
    assert.notEqual(got.get(key(want.out.find((f) => f.name === 'parse'))).fill, want.match);
    assert.ok(frames.every((f) => f.x + f.w <= want.width + 0.01), 'within the width');
    const q = await getJSON(url, '/api/v1/query', { query: SHOP, ...range });
    const render = q.tree.children[0].children.find((c) => c.name === 'handle').children.find((c) => c.name === 'render');
    assert.ok(got.get(key(want.out.find((f) => f.name === 'render'))).title.includes(`(${(render.total / q.total * 100).toFixed(2)}%)`), 'the title carries the values');
    // PNG: the canvas itself, at its size
    await page.click('#export-btn');
    const [dp] = await Promise.all([page.waitForEvent('download'), page.click('#exp-png')]);
    const ppath = join(artifacts, 'export-2.png');
    await dp.saveAs(ppath);
    const png = readFileSync(ppath);
    assert.equal(png.subarray(1, 4).toString(), 'PNG');
    const dims = await page.evaluate(() => [window.__flamedb.graph.canvas.width, window.__flamedb.graph.canvas.height]);
    assert.deepEqual([png.readUInt32BE(16), png.readUInt32BE(20)], dims);
    // the SVG is a picture a browser draws: open it and look
    const sp = await ctx.newPage();
    await sp.setContent(`<body style="margin:0">${svg}</body>`);
    await sp.screenshot({ path: join(artifacts, '35-export-svg.png') });
    await sp.close();
  });

  test('outliers: groups under the minimum of samples listed apart as "too few samples"; the rest ranked by their intervals', async (ctx, url) => {
    const page = await open(ctx, flameURL(url, { query: 'fleet{}', group_by: 'instance' }));
    await ready(page);
    const st = await getJSON(url, '/api/v1/stability', { query: 'fleet{}', ...range, group_by: 'instance' });
    const K = 1.96 * Math.sqrt(Math.PI / 2);
    const ivl = (g) => [Math.max(0, g.manhattan - K * g.manhattan_noise), Math.min(2, g.manhattan + K * g.manhattan_noise)];
    const name = (g) => `instance=${g.labels.instance}`;
    const tiny = st.groups.find((g) => g.labels.instance === 'f-tiny');
    assert.ok(tiny.samples < 100, 'fixture: f-tiny has few samples');
    assert.equal(Math.max(...st.groups.map((g) => g.manhattan)), tiny.manhattan, 'fixture: f-tiny is the farthest by its point value');
    const rows = () => page.$$eval('#groups tbody tr', (r) => r.map((x) => x.classList.contains('sect') ? ['--', x.textContent.trim()] : [x.className, x.dataset.group, Number(x.dataset.lo), Number(x.dataset.hi), !!x.querySelector('.out')]));
    const rank = (min) => {
      const enough = st.groups.filter((g) => g.samples >= min).sort((a, b) => ivl(b)[0] - ivl(a)[0] || b.manhattan - a.manhattan);
      const few = st.groups.filter((g) => g.samples < min).sort((a, b) => b.manhattan - a.manhattan);
      return [...enough.map((g) => ['ranked', name(g), ...ivl(g), ivl(g)[0] > 0]),
        ...(few.length ? [['--', `too few samples (under ${min}): not ranked, their distance is mostly chance`]] : []),
        ...few.map((g) => ['few', name(g), ...ivl(g), false])];
    };
    const near = (got, want) => {
      assert.equal(got.length, want.length, JSON.stringify(got));
      got.forEach((r, i) => {
        assert.deepEqual([r[0], r[1], r[4]], [want[i][0], want[i][1], want[i][4]], `row ${i}: ${JSON.stringify(r)}`);
        if (r[0] !== '--') assert.ok(Math.abs(r[2] - want[i][2]) < 1e-12 && Math.abs(r[3] - want[i][3]) < 1e-12, `interval of ${r[1]}`);
      });
    };
    near(await rows(), rank(100));
    const got = await rows();
    assert.equal(got[0][1], 'instance=f-big', 'the large group that moved comes first');
    assert.ok(got[0][4], 'and is marked an outlier');
    assert.equal(got[got.length - 1][1], 'instance=f-tiny', 'f-tiny is listed apart, last');
    assert.ok((await page.textContent('#groups tr.few')).includes('f-tiny'));
    // the interval is drawn: the bar spans lo..hi on the scale of the largest upper end
    const bar = await page.$eval('#groups tr[data-group="instance=f-big"] .ivl i', (i) => [parseFloat(i.style.left), parseFloat(i.style.width)]);
    const scale = Math.max(...st.groups.filter((g) => g.samples >= 100).map((g) => ivl(g)[1]));
    const fb = ivl(st.groups.find((g) => g.labels.instance === 'f-big'));
    assert.ok(Math.abs(bar[0] - (fb[0] / scale) * 100) < 0.02 && Math.abs(bar[1] - ((fb[1] - fb[0]) / scale) * 100) < 0.05, `bar ${bar}`);
    await shot(page, '36-outliers');
    // a minimum of 1: f-tiny is ranked, by its interval, so below f-big although its point value is larger
    await page.fill('#minsamples', '1');
    await page.press('#minsamples', 'Enter');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('minsamples') === '1');
    await page.waitForFunction(() => !document.querySelector('#groups tr.few'));
    near(await rows(), rank(1));
    const r1 = await rows();
    assert.ok(r1.findIndex((r) => r[1] === 'instance=f-tiny') > r1.findIndex((r) => r[1] === 'instance=f-big'));
    // the minimum is in the URL
    const again = await open(ctx, page.url());
    await ready(again);
    assert.equal(await again.inputValue('#minsamples'), '1');
  });
}
