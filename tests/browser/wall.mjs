// wall.mjs — browser tests of on-CPU and off-CPU together (issue 13, the
// viewer's part): the choice CPU | Off-CPU | side by side | Wall offered when
// a selection has both types, the two flamegraphs side by side (each in its
// own unit and total, with its own search and zoom), and the wall view (the
// two trees merged by path, on-CPU + off-CPU). Registered by run.mjs. The
// pushed stacks are known here, so every expected figure is computed from
// them (counts × 1e9 / rate for the CPU profiles), not from the viewer.
import assert from 'node:assert/strict';
import { ingest } from './lib.mjs';

const RATE = 100, NS = 1e9 / RATE;          // a CPU sample at 100 Hz is 10 ms
// on-CPU (folded counts, pushed with rate=100), twice
const CPU = 'main;serve;handle;parse 30\nmain;serve;handle;compute 50\nmain;serve;read_req 10\nmain;gc 7\nworker;work;crunch 23\n';
// off-CPU (nanoseconds), two different profiles: read under read_req and a
// lock under handle overlap the CPU stacks; main;idle;epoll_wait and the
// worker's queue wait are off-CPU only
const OFF1 = 'main;serve;read_req;read 400000000\nmain;serve;handle;lock;futex_wait 250000000\nmain;serve;handle 50000000\nmain;idle;epoll_wait 300000000\nworker;queue_pop;futex_wait 120000000\n';
const OFF2 = 'main;serve;read_req;read 100000000\nmain;idle;epoll_wait 1700000000\nworker;work 30000000\n';
// a service whose CPU profiles were pushed without a rate (unit samples)
const RAW_CPU = 'main;spin 40\n', RAW_OFF = 'main;sleep 5000000\n';

// [[frames], value in ns]
const stacks = (text, scale = 1) => text.trim().split('\n').map((l) => { const i = l.lastIndexOf(' '); return [l.slice(0, i).split(';'), Number(l.slice(i + 1)) * scale]; });
const REF_CPU = [...stacks(CPU, NS), ...stacks(CPU, NS)];
const REF_OFF = [...stacks(OFF1), ...stacks(OFF2)];
const sum = (s) => s.reduce((a, [, v]) => a + v, 0);
// path "a;b" -> total, for every node of the stacks
function totalsOf(...lists) {
  const m = new Map();
  for (const s of lists) for (const [p, v] of s) for (let k = 1; k <= p.length; k++) { const key = p.slice(0, k).join(';'); m.set(key, (m.get(key) || 0) + v); }
  return m;
}
// a function's self (leaf) and total (once per stack) over stacks
function fnOf(name, ...lists) {
  let self = 0, total = 0;
  for (const s of lists) for (const [p, v] of s) { if (p.includes(name)) total += v; if (p[p.length - 1] === name) self += v; }
  return { self, total };
}
const close = (a, b, what) => assert.ok(Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(b)), `${what}: ${a} != ${b}`);
function sameTotals(drawn, ref, what) {
  const keys = [...new Set([...drawn.keys(), ...ref.keys()])].sort();
  for (const k of keys) close(drawn.get(k) || 0, ref.get(k) || 0, `${what} ${k}`);
}

export async function loadWallFixtures(url, T) {
  const w = (t) => ({ from: String(t), until: String(t + 10) });
  for (const dt of [0, 60]) await ingest(url, { service: 'waits', instance: 'w-1', rate: String(RATE), ...w(T + 420 + dt) }, CPU);
  await ingest(url, { service: 'waits', instance: 'w-1', type: 'offcpu', unit: 'nanoseconds', ...w(T + 420) }, OFF1);
  await ingest(url, { service: 'waits', instance: 'w-1', type: 'offcpu', unit: 'nanoseconds', ...w(T + 480) }, OFF2);
  await ingest(url, { service: 'waitsraw', ...w(T + 420) }, RAW_CPU);
  await ingest(url, { service: 'waitsraw', type: 'offcpu', unit: 'nanoseconds', ...w(T + 420) }, RAW_OFF);
}

// WCAG contrast ratio of two css colours "rgb(r, g, b)"
function contrast(a, b) {
  const L = (c) => {
    const [r, g, bl] = c.match(/[\d.]+/g).slice(0, 3).map(Number).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const x = L(a), y = L(b);
  return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
}

export function registerWallTests({ test, open, ready, shot, FROM, UNTIL }) {
  const at = (url, q, extra = {}) => `${url}/?${new URLSearchParams({ query: q, from: FROM, until: UNTIL, ...extra })}`;
  const CPU_NS = sum(REF_CPU), OFF_NS = sum(REF_OFF);
  // what a graph holds, as path -> total ('main' the main graph, 'off' the off-CPU pane's)
  const drawn = async (page, which = 'main') => new Map(await page.evaluate((which) => {
    const g = which === 'off' ? window.__flamedb.pair.graph : window.__flamedb.graph;
    const N = g.allNodes(), out = [];
    N.forEach((n, i) => {
      if (i === 0) return;
      const p = [];
      for (let j = i; j > 0; j = N[j].parent) p.unshift(N[j].name);
      out.push([p.join(';'), n.total]);
    });
    return out;
  }, which));
  const rootTotal = (page, which = 'main') => page.evaluate((which) => (which === 'off' ? window.__flamedb.pair.graph : window.__flamedb.graph).w[0], which);
  const param = (page, k) => new URL(page.url()).searchParams.get(k);

  test('wall: CPU | Off-CPU | side by side | Wall offered only when the selection has both types', async (ctx, url) => {
    const page = await open(ctx, at(url, 'waits{}'));
    await ready(page);
    assert.ok(await page.isVisible('#pair'), 'the choice is shown for a service with cpu and offcpu profiles');
    assert.equal(await page.getAttribute('#pair', 'data-mode'), 'cpu', 'no type matcher: the API picks cpu');
    assert.deepEqual(await page.$$eval('#pair button', (bs) => bs.map((b) => b.textContent)), ['CPU', 'Off-CPU', 'side by side', 'Wall']);
    close(await rootTotal(page), CPU_NS, 'the CPU flamegraph total');
    await page.click('#pair button[data-pair="offcpu"]');
    await ready(page);
    assert.equal(param(page, 'query'), '{type="offcpu", service="waits"}');
    assert.equal(await page.getAttribute('#pair', 'data-mode'), 'offcpu');
    close(await rootTotal(page), OFF_NS, 'the off-CPU flamegraph total');
    // a service with on-CPU profiles only: no choice
    const p2 = await open(ctx, at(url, 'shop{}'));
    await ready(p2);
    assert.ok(await p2.isHidden('#pair'), 'shop has only cpu profiles');
  });

  test('wall: side by side draws both trees, each in its own total, with its own search and zoom; in the URL', async (ctx, url) => {
    const page = await open(ctx, at(url, 'waits{}'));
    await ready(page);
    await page.click('#pair button[data-pair="side"]');
    await ready(page);
    assert.equal(param(page, 'pair'), 'side');
    assert.ok(await page.isVisible('#pane-off') && await page.isVisible('#pane-on .pane-head'), 'two panes');
    // each pane's total in its head, against the pushed data
    close(Number(await page.getAttribute('#pane-on .pane-head', 'data-total')), CPU_NS, 'on-CPU head');
    close(Number(await page.getAttribute('#pane-off .pane-head', 'data-total')), OFF_NS, 'off-CPU head');
    const onText = await page.textContent('#pane-on .pane-fig'), offText = await page.textContent('#pane-off .pane-fig');
    assert.ok(onText.includes('2.40 s') && onText.includes(`${REF_CPU.reduce((a, [, v]) => a + v / NS, 0)} samples`), onText);
    assert.ok(offText.includes('2.95 s') && offText.includes('samples unknown'), offText);
    // both trees, every node (root children included), against the stacks
    sameTotals(await drawn(page, 'main'), totalsOf(REF_CPU), 'on-CPU pane');
    sameTotals(await drawn(page, 'off'), totalsOf(REF_OFF), 'off-CPU pane');
    const kids = await page.evaluate(() => { const g = window.__flamedb.pair.graph, t = g.t; const out = []; for (let c = t.first[0]; c < t.first[0] + t.nkids[0]; c++) out.push(g.nameOf(c)); return out; });
    assert.deepEqual(kids.sort(), ['main', 'worker']);
    // narrower: the two panes share the column
    const wOn = await page.evaluate(() => window.__flamedb.graph.width), wOff = await page.evaluate(() => window.__flamedb.pair.graph.width);
    const col = await page.evaluate(() => document.querySelector('#graph-col').clientWidth);
    assert.ok(wOn < col * 0.55 && wOff < col * 0.55 && Math.abs(wOn - wOff) < 4, `${wOn} ${wOff} of ${col}`);
    // the off-CPU pane's own search: its share of the off-CPU total; the on-CPU pane untouched
    await page.fill('#pane-off .pane-search', 'futex');
    await page.waitForFunction(() => new URL(location).searchParams.get('osearch') === 'futex');
    close(Number(await page.getAttribute('#pane-off .pane-result', 'data-share')), fnOf('futex_wait', REF_OFF).total / OFF_NS, 'off-CPU search share');
    assert.equal(await page.getAttribute('#pane-on .pane-result', 'data-share'), null);
    // the on-CPU pane's own search
    await page.fill('#pane-on .pane-search', 'compute');
    await page.waitForFunction(() => new URL(location).searchParams.get('search') === 'compute');
    close(Number(await page.getAttribute('#pane-on .pane-result', 'data-share')), fnOf('compute', REF_CPU).total / CPU_NS, 'on-CPU search share');
    // zoom the off-CPU pane into worker: its own focus, the on-CPU pane stays whole
    const wk = await page.evaluate(() => window.__flamedb.layoutOf('worker', 'off'));
    await page.mouse.click(wk.cx, wk.cy);
    await page.waitForFunction(() => new URL(location).searchParams.get('ofocus') === 'worker');
    assert.equal(param(page, 'focus'), null);
    assert.equal(await page.getAttribute('#pane-off .pane-crumbs', 'data-root'), 'worker');
    await shot(page, '70-side-by-side');
    // Esc with the mouse over the off-CPU pane zooms that pane out
    await page.hover('#pane-off .pane-title');
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !new URL(location).searchParams.get('ofocus'));
    await page.mouse.click(wk.cx, wk.cy);
    await page.waitForFunction(() => new URL(location).searchParams.get('ofocus') === 'worker');
    // the link opens the same picture
    const link = page.url();
    const p2 = await open(ctx, link);
    await ready(p2);
    assert.equal(await p2.getAttribute('#pair', 'data-mode'), 'side');
    assert.equal(await p2.inputValue('#pane-off .pane-search'), 'futex');
    assert.equal(await p2.getAttribute('#pane-off .pane-crumbs', 'data-root'), 'worker');
    assert.equal(await p2.evaluate(() => window.__flamedb.pair.graph.nameOf(window.__flamedb.pair.graph.focus)), 'worker');
    // the inverted tree applies to both panes: each root child a leaf function with its self time
    const p3 = await open(ctx, at(url, 'waits{}', { pair: 'side', invert: '1' }));
    await ready(p3);
    const leaves = (list) => { const m = new Map(); for (const [p, v] of list) m.set(p[p.length - 1], (m.get(p[p.length - 1]) || 0) + v); return m; };
    const top = (m) => new Map([...m].filter(([k]) => !k.includes(';')));
    sameTotals(top(await drawn(p3, 'main')), leaves(REF_CPU), 'inverted on-CPU pane');
    sameTotals(top(await drawn(p3, 'off')), leaves(REF_OFF), 'inverted off-CPU pane');
    // back leaves side by side
    await page.goBack();   // the zoom (a search typed replaces its entry)
    await page.waitForFunction(() => !new URL(location).searchParams.get('ofocus'));
    assert.equal(await page.evaluate(() => window.__flamedb.pair.graph.focus), 0);
    for (let k = 0; k < 3; k++) await page.goBack();   // Esc's and the click's zooms, then the choice
    await page.waitForFunction(() => !new URL(location).searchParams.get('pair'));
    await ready(page);
    assert.equal(param(page, 'pair'), null);
    assert.ok(await page.isHidden('#pane-off'));
  });

  test('wall: one flamegraph of on-CPU + off-CPU merged by path; tooltip parts, table, timeline, no interval; in the URL', async (ctx, url) => {
    const page = await open(ctx, at(url, 'waits{}'));
    await ready(page);
    await page.click('#pair button[data-pair="wall"]');
    await ready(page);
    assert.equal(param(page, 'pair'), 'wall');
    // the total is the sum, computed here from the pushed stacks
    close(await rootTotal(page), CPU_NS + OFF_NS, 'wall total');
    close(Number(await page.getAttribute('#wall-note', 'data-total')), CPU_NS + OFF_NS, 'wall note');
    const note = await page.textContent('#wall-note');
    assert.ok(note.includes('5.35 s') && note.includes('nanoseconds') && note.includes('No intervals'), note);
    // every node is its on-CPU total + its off-CPU total
    sameTotals(await drawn(page), totalsOf(REF_CPU, REF_OFF), 'wall');
    // stacks only in off-CPU are there with their value
    const ep = await page.evaluate(() => window.__flamedb.layoutOf('epoll_wait'));
    close(ep.total, fnOf('epoll_wait', REF_OFF).total, 'epoll_wait (off-CPU only)');
    const qp = await page.evaluate(() => window.__flamedb.layoutOf('queue_pop'));
    close(qp.total, fnOf('queue_pop', REF_OFF).total, 'queue_pop (off-CPU only)');
    // the tooltip gives a frame's two parts
    const h = await page.evaluate(() => window.__flamedb.layoutOf('handle'));
    await page.mouse.move(h.cx, h.cy);
    await page.waitForSelector('#tooltip:not([hidden])');
    const ds = await page.evaluate(() => ({ ...document.querySelector('#tooltip').dataset }));
    assert.equal(ds.name, 'handle');
    const hOn = fnOf('handle', REF_CPU), hOff = fnOf('handle', REF_OFF);
    close(Number(ds.onTotal), hOn.total, 'handle on-CPU'); close(Number(ds.offTotal), hOff.total, 'handle off-CPU');
    close(Number(ds.total), hOn.total + hOff.total, 'handle wall'); close(Number(ds.offSelf), hOff.self, 'handle off-CPU self');
    const tt = await page.textContent('#tooltip');
    assert.ok(tt.includes('on-CPU') && tt.includes('off-CPU') && tt.includes('no intervals'), tt);
    await shot(page, '71-wall-tooltip');
    // the table is the wall's: on + off per function, no interval
    await page.waitForFunction(() => document.querySelector('#tcount').dataset.state === 'ready' && document.querySelectorAll('#top tbody tr').length > 0);
    const rows = new Map(await page.$$eval('#top tbody tr', (trs) => trs.map((tr) => [tr.dataset.name, { self: Number(tr.children[1].dataset.v), total: Number(tr.children[3].dataset.v), ci: tr.children[2].title }])));
    for (const fn of ['handle', 'futex_wait', 'read', 'crunch', 'main', 'work']) {
      const r = fnOf(fn, REF_CPU, REF_OFF);
      assert.ok(rows.has(fn), fn);
      close(rows.get(fn).self, r.self, `table self ${fn}`); close(rows.get(fn).total, r.total, `table total ${fn}`);
    }
    assert.equal(rows.get('handle').ci, 'no interval: samples unknown');
    assert.ok((await page.textContent('#tnote')).startsWith('Wall'));
    // the timeline: on-CPU and off-CPU stacked, each its total, on-CPU first
    // (its colour) though off-CPU is the larger here
    const tl = await page.evaluate(() => window.__flamedb.timeline.series.map((s) => [s.name, s.total]));
    assert.deepEqual(tl.map((s) => s[0]), ['type=cpu', 'type=offcpu']);
    close(tl[0][1], CPU_NS, 'timeline cpu'); close(tl[1][1], OFF_NS, 'timeline offcpu');
    // the link opens the wall again
    const p2 = await open(ctx, page.url());
    await ready(p2);
    assert.equal(await p2.getAttribute('#pair', 'data-mode'), 'wall');
    close(await rootTotal(p2), CPU_NS + OFF_NS, 'wall total after reload');
    // transforms carry both parts: drop epoll_wait removes off-CPU time only
    const p3 = await open(ctx, at(url, 'waits{}', { pair: 'wall', transforms: 'df:epoll_wait' }));
    await ready(p3);
    close(await rootTotal(p3), CPU_NS + OFF_NS - fnOf('epoll_wait', REF_OFF).total, 'wall total with epoll_wait dropped');
    // CPU leaves the wall view
    await page.click('#pair button[data-pair="cpu"]');
    await ready(page);
    assert.equal(param(page, 'pair'), null);
    assert.equal(param(page, 'query'), '{type="cpu", service="waits"}');
    close(await rootTotal(page), CPU_NS, 'back to CPU');
  });

  test('wall: refused with a clear message when on-CPU is not in nanoseconds; side by side still works', async (ctx, url) => {
    const page = await open(ctx, at(url, 'waitsraw{}', { pair: 'wall' }));
    assert.equal(await page.evaluate(() => document.body.dataset.state), 'error');
    const err = await page.textContent('#error');
    assert.ok(err.includes('both must be in nanoseconds') && err.includes('type="cpu") are in samples (pushed without a rate)'), err);
    assert.ok(await page.isVisible('#pair'), 'the choice stays, to leave the wall');
    await shot(page, '72-wall-refused');
    await page.click('#pair button[data-pair="side"]');
    await ready(page);
    assert.equal(await page.getAttribute('#pane-on .pane-head', 'data-unit'), 'samples');
    assert.equal(Number(await page.getAttribute('#pane-on .pane-head', 'data-total')), 40);
    assert.equal(await page.getAttribute('#pane-off .pane-head', 'data-unit'), 'nanoseconds');
    assert.equal(Number(await page.getAttribute('#pane-off .pane-head', 'data-total')), 5000000);
    assert.ok(await page.isHidden('#error'));
  });

  test('wall: side by side and wall readable in dark mode', async (ctx, url, browser) => {
    const dctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'dark' });
    try {
      const page = await open(dctx, at(url, 'waits{}', { pair: 'side' }));
      await ready(page);
      const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
      assert.equal(bg, 'rgb(23, 24, 28)');
      for (const sel of ['#pane-on .pane-title', '#pane-off .pane-title', '#pane-off .pane-fig', '#side-note']) {
        const fg = await page.evaluate((s) => getComputedStyle(document.querySelector(s)).color, sel);
        assert.ok(contrast(fg, bg) >= 4.5, `${sel}: ${fg} on ${bg}: contrast ${contrast(fg, bg).toFixed(2)}`);
      }
      // the off-CPU canvas is painted in dark colours (its background is not white)
      const px = await page.evaluate(() => { const c = window.__flamedb.pair.graph.canvas; return Array.from(c.getContext('2d').getImageData(2, c.height - 4, 1, 1).data); });
      assert.ok(px[3] > 0 && px[0] + px[1] + px[2] < 600, `root frame pixel ${px}`);
      await shot(page, '73-side-by-side-dark');
      const p2 = await open(dctx, at(url, 'waits{}', { pair: 'wall' }));
      await ready(p2);
      const fg = await p2.evaluate(() => getComputedStyle(document.querySelector('#wall-note')).color);
      assert.ok(contrast(fg, bg) >= 4.5, `wall note ${fg}`);
      await shot(p2, '74-wall-dark');
    } finally { await dctx.close(); }
  });
}
