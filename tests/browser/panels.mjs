// panels.mjs — browser tests of viewer v2's last round (issue 16): the
// per-line table of a function, whole-node views split by process by
// default, the table paged by the server (offset) for a million functions,
// and the Insights view (stability, outliers, variance, what changed
// between builds). Registered by run.mjs. Each test drives the page as a
// user would and checks what is drawn against a reference computed from
// the pushed stacks or the API's own answer.
import assert from 'node:assert/strict';
import { getJSON, ingest } from './lib.mjs';

const US = '\x1f';
// src: frames with file and line (folded text pushed with locations=1);
// work runs through two lines, once recursively through one of them, and
// once without a location
const loc = (name, file, line) => [name, file, line].join(US);
const SRC = [
  [[loc('main', 'app/main.c', 10), loc('work', 'app/work.c', 42)], 50],
  [[loc('main', 'app/main.c', 10), loc('work', 'app/work.c', 43)], 20],
  [[loc('main', 'app/main.c', 11), loc('work', 'app/work.c', 42), loc('work', 'app/work.c', 42)], 5],
  [[loc('main', 'app/main.c', 11), loc('work', 'app/work.c', 43), loc('helper', 'lib/help.c', 7)], 30],
  [[loc('main', 'app/main.c', 12), 'work'], 4],
];

// The reference per-line figures of function `fn` from the stacks
// themselves: self where it is the leaf, total once per stack and location.
function refLines(stacks, fn) {
  const rows = new Map();
  let fnTotal = 0;
  for (const [frames, v] of stacks) {
    const mine = frames.map((f) => f.split(US)).filter((p) => p[0] === fn);
    if (!mine.length) continue;
    fnTotal += v;
    const at = (p) => (p.length > 1 ? `${p[1]}:${p[2]}` : '');
    for (const k of new Set(mine.map(at))) {
      const r = rows.get(k) || { self: 0, total: 0 };
      r.total += v;
      rows.set(k, r);
    }
    const leaf = frames[frames.length - 1].split(US);
    if (leaf[0] === fn) rows.get(at(leaf)).self += v;
  }
  return { rows, fnTotal };
}

// node n1: what `flamedb-agent --all` pushes, one series per program, each
// with its own `main`
const NODE = {
  nginx: 'main;ngx_worker_process_cycle;ngx_process_events;epoll_wait 120\nmain;ngx_worker_process_cycle;ngx_http_handler 60\n',
  postgres: 'main;PostmasterMain;ServerLoop;ExecutorRun 90\nmain;PostmasterMain;ServerLoop;WaitEventSetWait 30\n',
  python3: 'main;Py_RunMain;PyEval_EvalFrame 40\n',
};

const WIDE = 6000;

export async function loadPanelsFixtures(url, T) {
  const w = (t) => ({ from: String(t), until: String(t + 10) });
  await ingest(url, { service: 'src', locations: '1', ...w(T + 100) }, SRC.map(([f, v]) => `${f.join(';')} ${v}`).join('\n') + '\n');
  // wide: more functions than the table holds (table.js ALL = 5000): paged by the server
  let wide = '';
  for (let i = 1; i <= WIDE; i++) wide += `main;mod${i % 13};fn${String(i).padStart(5, '0')} ${1 + (i * 7919) % 500}\n`;
  await ingest(url, { service: 'wide', ...w(T + 700) }, wide);
  for (const [svc, text] of Object.entries(NODE)) {
    for (const dt of [0, 60]) await ingest(url, { service: svc, node: 'n1', instance: 'n1', rate: '99', ...w(T + 500 + dt) }, text);
  }
}

export function registerPanelsTests({ test, open, ready, shot, FROM, UNTIL, T }) {
  const range = { from: FROM, until: UNTIL };
  const at = (url, q, extra = {}) => `${url}/?${new URLSearchParams({ query: q, from: FROM, until: UNTIL, ...extra })}`;

  // the per-line table as drawn: [at, self, total, self share, total share, self interval title]
  const drawnLines = (page) => page.$$eval('#lines-table tbody tr', (trs) => trs.map((tr) => {
    const td = tr.querySelectorAll('td');
    return { at: tr.dataset.at, text: td[0].textContent, self: Number(td[1].dataset.v), selfShare: Number(td[2].dataset.v), total: Number(td[3].dataset.v), totalShare: Number(td[4].dataset.v), ci: td[2].title };
  }));

  test('lines: a per-line table of the selected function from the table and the right-click menu; in the URL', async (ctx, url) => {
    const page = await open(ctx, at(url, 'src{}'));
    await ready(page);
    const q = await getJSON(url, '/api/v1/query', { query: 'src{}', ...range });
    // from the table: select work, then its Lines button
    await page.click('#top tbody tr[data-name="work"]');
    await page.click('#detail button[data-act="lines"]');
    await page.waitForSelector('#lines[data-state="ready"]');
    assert.equal(new URL(page.url()).searchParams.get('linesof'), 'work');
    const ref = refLines(SRC, 'work');
    const got = await drawnLines(page);
    assert.deepEqual(got.map((r) => [r.at, r.self, r.total]).sort(),
      [...ref.rows].map(([k, r]) => [k, r.self, r.total]).sort(), 'file:line, self, total of every line of work');
    // by self descending; shares of the answer's total with Wilson intervals from its samples
    assert.deepEqual(got.map((r) => r.self), [...got.map((r) => r.self)].sort((a, b) => b - a));
    for (const r of got) {
      assert.equal(r.selfShare, r.self / q.total);
      assert.equal(r.totalShare, r.total / q.total);
      const p = r.self / q.total, n = q.samples, z = 1.96, d = 1 + z * z / n;
      const c = (p + z * z / (2 * n)) / d, h = (z * Math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / d;
      assert.ok(r.ci.includes(`${(Math.max(0, c - h) * 100).toFixed(2)}–${(Math.min(1, c + h) * 100).toFixed(2)}%`), `interval of ${r.at}: ${r.ci}`);
    }
    assert.deepEqual(got.map((r) => r.text).sort(), ['(no line)', 'work.c:42', 'work.c:43']);
    const foot = await page.textContent('#lines');
    const top = await getJSON(url, '/api/v1/top', { query: 'src{}', ...range, limit: 0 });
    assert.equal(ref.fnTotal, top.functions.find((f) => f.name === 'work').total, 'the reference agrees with /api/v1/top');
    assert.ok(foot.includes(`function's total ${ref.fnTotal}`), foot);
    await shot(page, '60-lines');
    // a copied link opens the same table
    const again = await open(ctx, page.url());
    await ready(again);
    await again.waitForSelector('#lines[data-state="ready"]');
    assert.deepEqual(await drawnLines(again), got);
    // from the flamegraph's right-click menu: helper's one line
    const b = await again.evaluate(() => window.__flamedb.layoutOf('helper'));
    await again.mouse.click(b.cx, b.cy, { button: 'right' });
    await again.click('#ctxmenu a[data-act="lines"]');
    await again.waitForFunction(() => new URL(location.href).searchParams.get('linesof') === 'helper');
    await again.waitForSelector('#lines[data-state="ready"][data-name="helper"]');
    assert.deepEqual((await drawnLines(again)).map((r) => [r.text, r.self, r.total]), [['help.c:7', 30, 30]]);
    // close: gone from the page and the URL
    await again.click('#lines-close');
    await again.waitForFunction(() => !new URL(location.href).searchParams.get('linesof'));
    assert.equal(await again.isHidden('#lines'), true);
  });

  test('lines: profiles without locations say so; a Go pprof profile gives its lines', async (ctx, url) => {
    const page = await open(ctx, at(url, 'shop{}', { linesof: 'render' }));
    await ready(page);
    await page.waitForSelector('#lines[data-state="ready"]');
    assert.ok((await page.textContent('#lines')).includes('no file and line'));
    assert.equal(await page.$$eval('#lines-table', (x) => x.length), 0);
    const gq = await getJSON(url, '/api/v1/query', { query: 'gojs{}', ...range, lines: 1, max_nodes: 8192 }).catch(() => null);
    if (!gq || !gq.total) return;  // the Go profile is not in ../shared/data
    const g = await open(ctx, at(url, 'gojs{}', { linesof: 'runtime.spanOf' }));
    await ready(g);
    await g.waitForSelector('#lines[data-state="ready"]');
    // reference: every spanOf node of the API's lines=1 tree, self summed per line
    const want = new Map();
    const walk = (n) => { if (n.name === 'runtime.spanOf') want.set(`${n.file}:${n.line}`, (want.get(`${n.file}:${n.line}`) || 0) + n.self); (n.children || []).forEach(walk); };
    walk(gq.tree);
    const got = await drawnLines(g);
    assert.ok(got.length >= 2, 'spanOf has two lines');
    assert.deepEqual(new Map(got.map((r) => [r.at, r.self])), want);
    await shot(g, '61-lines-go');
  });

  test('whole node: split by process (service) by default, off with none (split=-), kept in the URL', async (ctx, url) => {
    const page = await open(ctx, at(url, '{node="n1"}'));
    await ready(page);
    const g = await getJSON(url, '/api/v1/query', { query: '{node="n1"}', ...range, group_by: 'service', max_nodes: 0 });
    assert.equal(g.groups.length, 3);
    assert.equal(await page.inputValue('#split'), 'service', 'the picker shows the default');
    assert.equal(await page.$eval('#split', (e) => e.dataset.auto), 'service');
    assert.equal(new URL(page.url()).searchParams.get('split'), null, 'a default is not written into the URL');
    const roots = () => page.evaluate(() => window.__flamedb.graph.allNodes().filter((n) => n.depth === 1).map((n) => [n.name, n.total]));
    assert.deepEqual(await roots(), g.groups.map((x) => [`service=${x.labels.service}`, x.total]), 'one root frame per process, the API\'s totals');
    assert.ok((await page.textContent('#summary')).includes('split by service (whole node: by default): 3 values'));
    const tl = await page.evaluate(() => window.__flamedb.timeline);
    assert.equal(tl.label, 'service');
    assert.deepEqual(tl.series.map((x) => x.name).sort(), Object.keys(NODE).map((k) => `service=${k}`).sort(), 'the timeline is grouped alike');
    await shot(page, '62-node-split-default');
    // none turns it off: one main, in the URL as split=-
    await page.selectOption('#split', '');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('split') === '-');
    await ready(page);
    const whole = await getJSON(url, '/api/v1/query', { query: '{node="n1"}', ...range });
    assert.deepEqual(await roots(), [['main', whole.total]], 'every process\'s main merged, as asked');
    assert.equal(await page.inputValue('#split'), '');
    const again = await open(ctx, page.url());
    await ready(again);
    assert.deepEqual(await again.evaluate(() => window.__flamedb.graph.allNodes().filter((n) => n.depth === 1).map((n) => n.name)), ['main'], 'a copied link stays unsplit');
    // back: split again
    await page.goBack();
    await page.waitForFunction(() => !new URL(location.href).searchParams.get('split'));
    await ready(page);
    assert.equal((await roots()).length, 3);
    // a selector naming a service is one process: no default
    const one = await open(ctx, at(url, '{node="n1", service="nginx"}'));
    await ready(one);
    assert.equal(await one.inputValue('#split'), '');
    assert.deepEqual(await one.evaluate(() => window.__flamedb.graph.allNodes().filter((n) => n.depth === 1).map((n) => n.name)), ['main']);
    // an explicit split wins over the default
    const inst = await open(ctx, at(url, '{node="n1"}', { split: 'instance' }));
    await ready(inst);
    assert.deepEqual(await inst.evaluate(() => window.__flamedb.graph.allNodes().filter((n) => n.depth === 1).map((n) => n.name)), ['instance=n1']);
  });

  test('table: every one of 6,014 functions reachable, paged by the server (offset), "N of M", sorts and filter', async (ctx, url) => {
    const page = await open(ctx, at(url, 'wide{}'));
    await ready(page);
    const q = { query: 'wide{}', ...range };
    const all = (await getJSON(url, '/api/v1/top', { ...q, limit: 0 })).functions.map((f) => f.name);
    const M = all.length;
    assert.equal(M, WIDE + 13 + 1, 'fn*, mod*, main');
    const n = (x) => x.toLocaleString('en-US');
    const shownRows = () => page.$$eval('#top tbody tr', (t) => t.map((x) => x.dataset.name));
    const settled = async (first) => {
      await page.waitForFunction((f) => { const c = document.querySelector('#tcount'); return c.dataset.state === 'ready' && c.dataset.first === String(f); }, first);
      return page.$eval('#tcount', (c) => ({ ...c.dataset, text: c.textContent }));
    };
    let c = await settled(1);
    assert.equal(c.mode, 'server');
    assert.equal(c.text, `1–100 of ${n(M)} functions`);
    assert.deepEqual(await shownRows(), all.slice(0, 100));
    // walk every page with ›: each function once, in the API's order
    const seen = [...await shownRows()];
    for (let p = 1; p * 100 < M; p++) {
      await page.click('#tnext');
      c = await settled(p * 100 + 1);
      assert.equal(c.text, `${n(p * 100 + 1)}–${n(Math.min(M, (p + 1) * 100))} of ${n(M)} functions`);
      seen.push(...await shownRows());
    }
    assert.deepEqual(seen, all, 'the pages are the whole ranking');
    assert.equal(await page.isDisabled('#tnext'), true, 'the last page');
    await shot(page, '63-table-last-page');
    // self ascending: the server's ranking read from its end
    await page.click('#top th[data-key="self"]');
    await page.click('#top th[data-key="self"]');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('tsort') === 'self:asc');
    await settled(1);
    assert.deepEqual(await shownRows(), all.slice(-100).reverse(), 'ascending self: the last 100, reversed');
    const selfs = await page.$$eval('#top tbody tr td:nth-child(2)', (t) => t.map((x) => Number(x.dataset.v)));
    assert.deepEqual(selfs, [...selfs].sort((a, b) => a - b));
    // names descending
    const byName = (await getJSON(url, '/api/v1/top', { ...q, limit: 0, order: 'name' })).functions.map((f) => f.name);
    await page.click('#top th[data-key="name"]');
    await page.click('#top th[data-key="name"]');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('tsort') === 'name');
    await settled(1);
    assert.deepEqual(await shownRows(), byName.slice(-100).reverse());
    // the filter asks the server (match): "N of K matching (M functions)"
    await page.fill('#tfilter', 'FN001');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('tq') === 'FN001');
    c = await settled(1);
    const want = all.filter((x) => x.toLowerCase().includes('fn001'));
    assert.equal(c.text, `1–${n(Math.min(100, want.length))} of ${n(want.length)} matching (${n(M)} functions)`);
    assert.deepEqual(await shownRows(), byName.filter((x) => want.includes(x)).reverse().slice(0, 100));
    await shot(page, '64-table-filter');
    // a function of a later page, selected by a link: its detail pane all the same
    const far = all[4321];
    const link = await open(ctx, at(url, 'wide{}', { fn: far, search: far }));
    await ready(link);
    await link.waitForSelector(`#detail[data-name="${far}"]`);
    const top1 = (await getJSON(url, '/api/v1/top', { ...q, match: far, limit: 0 })).functions.find((f) => f.name === far);
    assert.ok((await link.textContent('#detail')).includes(`${top1.self}`), 'its self value');
  });

  test('insights: stability per window, outliers with intervals, variance attribution; drawn from the API', async (ctx, url, browser) => {
    const page = await open(ctx, at(url, 'fleet{}', { view: 'insights' }));
    await ready(page);
    const m = await page.evaluate(() => window.__flamedb.insights);
    const q = { query: 'fleet{}', ...range };
    // stability: every non-empty window's entropy, Manhattan and JSD is a point of its chart
    const st = await getJSON(url, '/api/v1/stability', { ...q, step: m.step });
    for (const [key, chart] of [['entropy', 'entropy'], ['manhattan', 'manhattan'], ['jsd', 'jsd']]) {
      const pts = await page.$$eval(`#ins-stability [data-chart="${chart}"] circle.pt`, (c) => c.map((x) => [Number(x.dataset.t), Number(x.dataset.v)]));
      assert.deepEqual(pts, st.windows.filter((w) => w[key] !== null).map((w) => [w.from, w[key]]), key);
    }
    assert.equal(await page.$eval('#ins-stability .verdict-tag', (e) => e.dataset.stable), String(st.summary.stable));
    assert.equal(await page.$$eval('#ins-stability .limit', (l) => l.length), 2, 'the Manhattan and JSD thresholds');
    // outliers by instance (the default label): ranked by the interval's lower end, too few samples apart
    assert.equal(await page.inputValue('#ins-label'), 'instance');
    const sg = await getJSON(url, '/api/v1/stability', { ...q, group_by: 'instance' });
    const K = 1.96 * Math.sqrt(Math.PI / 2);
    const lo = (g) => Math.max(0, g.manhattan - K * g.manhattan_noise);
    const name = (g) => `instance=${g.labels.instance}`;
    const big = sg.groups.filter((g) => g.samples >= 100).sort((a, b) => lo(b) - lo(a) || b.manhattan - a.manhattan).map(name);
    const few = sg.groups.filter((g) => g.samples < 100).sort((a, b) => b.manhattan - a.manhattan).map(name);
    const rows = await page.$$eval('#ins-outliers .ins-row', (r) => r.map((x) => [x.dataset.group, x.className.split(' ')[1], Number(x.dataset.lo)]));
    assert.deepEqual(rows.map((r) => r[0]), [...big, ...few]);
    assert.deepEqual(rows.filter((r) => r[1] === 'few').map((r) => r[0]), ['instance=f-tiny'], 'four samples are not ranked');
    assert.equal(rows[0][0], 'instance=f-big', 'the group that moved leads');
    // its interval bar spans lo..hi of the scale
    const bar = await page.$eval('#ins-outliers .ins-row.ranked .ins-track', (t) => { const r = t.getBoundingClientRect(), b = t.querySelector('.ivl-bar').getBoundingClientRect(); return { x0: (b.left - r.left) / r.width, x1: (b.right - r.left) / r.width }; });
    const g0 = sg.groups.find((g) => name(g) === 'instance=f-big');
    const m2 = await page.evaluate(() => window.__flamedb.insights.outliers);
    assert.ok(Math.abs(bar.x0 - lo(g0) / m2.scale) < 0.01 && Math.abs(bar.x1 - Math.min(2, g0.manhattan + K * g0.manhattan_noise) / m2.scale) < 0.01, JSON.stringify(bar));
    // variance attribution: the API's ranking, bars as long as the contributions
    const va = await getJSON(url, '/api/v1/variance', { ...q, step: m.step, k: 15 });
    const vrows = await page.$$eval('#ins-variance .ins-row', (r) => r.map((x) => { const t = x.querySelector('.ins-track').getBoundingClientRect(), b = x.querySelector('.bar').getBoundingClientRect(); return [x.dataset.name, Number(x.dataset.c), b.width / t.width]; }));
    const want = va.functions.filter((f) => f.contribution !== null);
    assert.ok(want.length >= 2, 'variance has functions');
    assert.deepEqual(vrows.map((r) => [r[0], r[1]]), want.map((f) => [f.name, f.contribution]));
    const [a, b] = vrows.filter((r) => r[1] > 0);
    if (a && b) assert.ok(Math.abs(a[2] / b[2] - a[1] / b[1]) < 0.02, `bar lengths ${a[2]}/${b[2]} vs ${a[1]}/${b[1]}`);
    // no build label: the changes card says so
    assert.ok((await page.textContent('#ins-changes')).includes('No build label'));
    await shot(page, '65-insights');
    // dark mode: the same page, readable (the card text is light on dark)
    const dark = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'dark' });
    try {
      const d = await open(dark, at(url, 'shop{}', { view: 'insights' }));
      await ready(d);
      const [fg, bg] = await d.$eval('#ins-changes', (e) => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]);
      const lum = (c) => { const [r, g, b] = c.match(/\d+/g).map(Number); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
      assert.ok(lum(fg) - lum(bg) > 120, `dark: text ${fg} on ${bg}`);
      await shot(d, '66-insights-dark');
      for (const e of [...d.errors, ...d.consoleErrors]) throw new Error(e);
    } finally { await dark.close(); }
  });

  test('insights: what changed between two builds, ranked by significance; pick the builds; open as a diff', async (ctx, url) => {
    const page = await open(ctx, at(url, 'shop{}', { view: 'insights' }));
    await ready(page);
    const m = await page.evaluate(() => window.__flamedb.insights.changes);
    assert.deepEqual(m.pair, ['v1', 'v2'], 'the two builds, older (first seen) as the baseline');
    const c = await getJSON(url, '/api/v1/compare', { left: '{build="v1", service="shop"}', right: '{build="v2", service="shop"}', ...range, limit: 0 });
    const n1 = c.left.samples, n2 = c.right.samples;
    const z = (f) => { const p = (f.left_share * n1 + f.right_share * n2) / (n1 + n2); const se = Math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2)); return (f.right_share - f.left_share) / se; };
    const want = [...c.functions].sort((a, b) => Math.abs(z(b)) - Math.abs(z(a)) || Math.abs(b.delta) - Math.abs(a.delta) || a.name.localeCompare(b.name));
    const rows = await page.$$eval('#ins-changes .ins-row', (r) => r.map((x) => ({ name: x.dataset.name, z: Number(x.dataset.z), delta: Number(x.dataset.delta), sig: x.dataset.significant, cls: x.className.split(' ')[1], colour: getComputedStyle(x.querySelector('.bar')).backgroundColor })));
    assert.deepEqual(rows.map((r) => r.name), want.map((f) => f.name), 'ranked by |z|');
    for (const r of rows) {
      const f = c.functions.find((x) => x.name === r.name);
      assert.ok(Math.abs(r.z - z(f)) < 1e-9, r.name);
      assert.equal(r.sig, String(f.significant));
      // the API's verdict is |z| > 1.96
      assert.equal(f.significant, Math.abs(z(f)) > 1.96, `${r.name}: the API's test is the z shown`);
      assert.equal(r.cls, f.significant ? (f.delta > 0 ? 'grew' : 'shrank') : 'noise');
    }
    assert.ok(rows.some((r) => r.cls === 'grew') && rows.some((r) => r.cls === 'noise'), 'both kinds in the fixture');
    const grew = rows.find((r) => r.cls === 'grew'), noise = rows.find((r) => r.cls === 'noise');
    assert.notEqual(grew.colour, noise.colour, 'significant changes are coloured, noise is not');
    assert.equal(rows[0].name, 'json', 'json, new in v2, leads');
    await shot(page, '67-insights-builds');
    // swap the builds: every change reverses
    await page.selectOption('#ins-b0', 'v2');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('builds') === 'v2,v1');
    await ready(page);
    await page.waitForFunction(() => (window.__flamedb.insights.changes || {}).pair?.join() === 'v2,v1');
    const back = await page.$$eval('#ins-changes .ins-row', (r) => r.map((x) => [x.dataset.name, Number(x.dataset.delta)]));
    for (const [n, d] of back) assert.ok(Math.abs(d + rows.find((r) => r.name === n).delta) < 1e-12, n);
    // outliers by another label, in the URL
    assert.deepEqual(await page.$$eval('#ins-label option', (o) => o.map((x) => x.value)).then((v) => v.sort()), ['build', 'instance']);
    await page.selectOption('#ins-label', 'build');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('ilabel') === 'build');
    await ready(page);
    await page.waitForFunction(() => window.__flamedb.insights.outliers?.label === 'build');
    assert.deepEqual((await page.$$eval('#ins-outliers .ins-row', (r) => r.map((x) => x.dataset.group))).sort(), ['build=v1', 'build=v2']);
    // open as a diff: the two selectors as its sides
    await page.click('#ins-diff');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('view') === 'diff');
    await ready(page);
    const sp = new URL(page.url()).searchParams;
    assert.equal(sp.get('left'), '{build="v2", service="shop"}');
    assert.equal(sp.get('right'), '{build="v1", service="shop"}');
  });
}
