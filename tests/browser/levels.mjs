// levels.mjs — browser tests of the viewer on the levels format (issue 16
// "size", issue 11 point 2): the flamegraph is drawn from
// /api/v1/query?format=levels as flat arrays (web/tree.js), and must hold
// the same frames and totals as the API's nested JSON answer for the same
// query; a tree of 200,000+ nodes opens and zooms, drawn as what is visible
// (sub-pixel frames merged). Registered by run.mjs. Checks what is drawn and
// what the page holds, never timings.
import assert from 'node:assert/strict';
import { getJSON, ingest, randomTree } from './lib.mjs';

// path -> [total, self] of every node of a nested answer, what max_nodes
// left out below a node as PATH;<other> (the viewer's hatched block)
function nestedModel(tree) {
  const m = new Map();
  const walk = (n, path) => {
    let miss = n.total - n.self;
    for (const c of n.children || []) {
      const p = path ? path + ';' + c.name : c.name;
      m.set(p, [c.total, c.self]);
      miss -= c.total;
      walk(c, p);
    }
    if (miss > 0) m.set((path ? path + ';' : '') + '<other>', [miss, 0]);
  };
  walk(tree, '');
  return m;
}
// the same from the page's graph (every node but the root)
async function pageModel(page) {
  return new Map(await page.evaluate(() => {
    const g = window.__flamedb.graph, N = g.allNodes();
    const path = new Array(N.length);
    const out = [];
    for (let i = 1; i < N.length; i++) {
      const n = N[i], me = n.other ? '<other>' : n.name;
      path[i] = n.parent > 0 ? path[n.parent] + ';' + me : me;
      out.push([path[i], [n.total, n.other ? 0 : n.self]]);
    }
    return out;
  }));
}
const sorted = (m) => [...m].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));

export function registerLevelsTests({ test, open, ready, shot, FROM, UNTIL }) {
  const range = { from: FROM, until: UNTIL };

  test('levels: the flamegraph drawn from format=levels holds the frames and totals of the nested JSON answer', async (ctx, url) => {
    for (const [query, maxNodes] of [['system{}', '0'], ['system{}', '300'], ['gojs{}', null], ['shop{}', null]]) {
      const params = { query, ...range, ...(maxNodes ? { max_nodes: maxNodes } : {}) };
      const page = await open(ctx, `${url}/?${new URLSearchParams(params)}`);
      await ready(page);
      const asked = (await page.evaluate(() => performance.getEntriesByType('resource').map((e) => e.name)))
        .filter((u) => new URL(u).pathname === '/api/v1/query').map((u) => new URL(u).searchParams);
      const q = await getJSON(url, '/api/v1/query', { ...params, max_nodes: maxNodes || '8192' });
      const lv = await getJSON(url, '/api/v1/query', { ...params, max_nodes: maxNodes || '8192', format: 'levels' });
      assert.ok(q.total > 0, `${query}: fixture has data`);
      // the page asked for levels, never for the nested tree
      const flame = asked.filter((p) => !p.get('group_by') && p.get('format') !== 'pprof');
      assert.ok(flame.length >= 1 && flame.every((p) => p.get('format') === 'levels'), `${query}: flamegraph fetched as levels: ${flame.map((p) => p.get('format'))}`);
      // the same nodes, totals and selves as the nested answer
      const want = nestedModel(q.tree), got = await pageModel(page);
      assert.deepEqual(sorted(got), sorted(want), `${query} max_nodes=${maxNodes}: frames and totals`);
      assert.equal(await page.evaluate(() => window.__flamedb.graph.node(0).total), q.total, 'root total');
      // one node of the page per levels entry, plus one "other" block per cut node
      const entries = lv.levels.reduce((a, l) => a + l.length / 4, 0);
      const others = [...want.keys()].filter((k) => k.endsWith('<other>')).length;
      assert.equal(await page.evaluate(() => window.__flamedb.graph.count), entries + others, 'node count');
      if (maxNodes === '300') assert.ok(others > 0 && q.truncated.nodes > 0, 'the cut tree has other blocks');
      // and it is drawn: the widest frames of depth 2, hit at their centres
      const kids = [...want].filter(([k]) => k.split(';').length === 2 && !k.endsWith('<other>')).sort((a, b) => b[1][0] - a[1][0]).slice(0, 3);
      for (const [path, [total]] of kids) {
        const name = path.split(';')[1];
        const box = await page.evaluate((n) => window.__flamedb.layoutOf(n), name);
        assert.ok(box && box.w > 0, `${path} drawn`);
        const at = await page.evaluate(([x, y]) => window.__flamedb.frameAt(x, y), [box.cx, box.cy]);
        assert.equal(at.name, name, `hit at the centre of ${path}`);
        if (box.total === total) assert.equal(at.total, total);
      }
      if (query === 'system{}' && maxNodes === '0') await shot(page, '40-levels-system');
    }
  });

  test('levels: a 200,000-node tree opens and zooms, sub-pixel frames merged, drawn as what is visible', async (ctx, url) => {
    const N = 200000;
    const t = Number(FROM) - 7200;   // outside the other tests' ranges and the last hour
    const { chunks } = randomTree(N, 16e6);
    for (let c = 0; c < chunks.length; c++) await ingest(url, { service: 'huge', from: String(t + 10 * c), until: String(t + 10 * c + 10), rate: '100' }, chunks[c]);
    const params = { query: 'huge{}', from: String(t - 60), until: String(t + 600), max_nodes: '0' };
    const page = await open(ctx, `${url}/?${new URLSearchParams(params)}`);
    await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 120000 });
    const lv = await getJSON(url, '/api/v1/query', { ...params, format: 'levels' });
    const entries = lv.levels.reduce((a, l) => a + l.length / 4, 0);
    assert.equal(entries, N + 1, 'every node of the tree in the answer (and the root)');
    const s = await page.evaluate(() => {
      const g = window.__flamedb.graph;
      return { count: g.count, root: g.node(0).total, rows: g.rows, width: g.width, drawn: g.drawn, depth: g.maxDepth };
    });
    assert.equal(s.count, N + 1, 'the page holds every node');
    assert.equal(s.root, lv.levels[0][1], 'root total');
    // what one draw paints: frames wider than a pixel one by one, the rest as
    // merged runs; never more blocks than pixels across the visible rows
    assert.ok(s.drawn.frames > 50, `frames drawn: ${s.drawn.frames}`);
    assert.ok(s.drawn.narrow > 50, `merged sub-pixel runs: ${s.drawn.narrow}`);
    assert.ok(s.drawn.frames + s.drawn.narrow <= s.rows * s.width, `${s.drawn.frames + s.drawn.narrow} blocks for ${s.rows} rows of ${s.width} px`);
    assert.ok(s.drawn.frames + s.drawn.narrow < N / 10, 'a draw costs what is visible, not the tree');
    // the canvas is painted over its width
    const painted = await page.evaluate(() => {
      const c = window.__flamedb.graph.canvas, d = c.getContext('2d').getImageData(0, c.height - 2, c.width, 1).data;
      let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
      return n / (d.length / 4);
    });
    assert.ok(painted > 0.9, `root row painted: ${painted}`);
    // the model agrees with the nested answer at the top of the tree
    const q = await getJSON(url, '/api/v1/query', { ...params, max_nodes: '200' });
    const top = q.tree.children[0];
    const first = await page.evaluate(() => { const g = window.__flamedb.graph, t = g.t, c = t.first[0]; return { name: g.nameOf(c), total: g.w[c], kids: t.nkids[c] }; });
    assert.deepEqual([first.name, first.total], [top.name, top.total], 'depth 1 as the API');
    await shot(page, '41-levels-200k');
    // zoom: click a frame at depth 3 that was wide enough to click; it fills the width,
    // and frames of its subtree that were merged are now drawn one by one
    const target = await page.evaluate(() => {
      const g = window.__flamedb.graph, t = g.t;
      let best = -1;
      for (let i = t.rowStart[3]; i < t.rowStart[4]; i++) if (best < 0 || g.w[i] > g.w[best]) best = i;
      const r = g.rectOf(best), c = g.canvas.getBoundingClientRect();
      return { name: g.nameOf(best), idx: best, cx: c.left + r.x + r.w / 2, cy: c.top + r.y + r.h / 2, w: r.w };
    });
    assert.ok(target.w > 20, `the widest depth-3 frame is ${target.w}px`);
    const before = await page.evaluate(() => window.__flamedb.graph.drawn);
    await page.mouse.click(target.cx, target.cy);
    await page.waitForFunction((n) => document.querySelector('#crumbs').dataset.root === n, target.name);
    const z = await page.evaluate((idx) => {
      const g = window.__flamedb.graph, r = g.rectOf(idx);
      // the frames under the focus: each drawn one is inside it
      let inside = 0, n = 0;
      for (let d = g.t.depth[idx] + 1; d < g.rows; d++) {
        for (let i = g.t.rowStart[d]; i < g.t.rowStart[d + 1]; i++) {
          if (g.x[i] >= g.x[idx] && g.x[i] < g.x[idx] + g.w[idx]) { n++; const b = g.rectOf(i); if (b.x >= -0.01 && b.x + b.w <= g.width + 0.01) inside++; }
        }
      }
      return { focus: g.focus, w: r.w, width: g.width, drawn: g.drawn, under: n, inside, url: location.search };
    }, target.idx);
    assert.equal(z.focus, target.idx);
    assert.ok(Math.abs(z.w - z.width) < 1, `zoomed frame spans the width: ${z.w} of ${z.width}`);
    assert.equal(z.inside, z.under, 'every frame below the focus lies inside the width');
    assert.ok(z.drawn.frames > 10, `frames drawn after the zoom: ${z.drawn.frames}`);
    assert.match(decodeURIComponent(z.url), new RegExp('focus=[^&]*' + target.name.replace(/[.[\]]/g, '\\$&')));
    // hover inside the zoomed view reads a frame of the focus's subtree
    const h = await page.evaluate(() => {
      const g = window.__flamedb.graph, r = g.canvas.getBoundingClientRect();
      const hits = [];
      for (let k = 1; k < 20; k++) {
        const i = g.frameAt((g.width * k) / 20, g.rowY(g.t.depth[g.focus] + 1) + 5);
        if (i >= 0) { let a = i; while (a >= 0 && a !== g.focus) a = g.t.parent[a]; hits.push(a === g.focus); }
      }
      return hits;
    });
    assert.ok(h.length > 0 && h.every(Boolean), `hits below the focus are in its subtree: ${h}`);
    await shot(page, '42-levels-200k-zoomed');
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => window.__flamedb.graph.focus !== undefined && document.querySelector('#crumbs button.cur') !== null);
    const out = await page.evaluate(() => ({ depth: window.__flamedb.graph.t.depth[window.__flamedb.graph.focus] }));
    assert.equal(out.depth, 2, 'Esc zooms out one level');
    assert.ok(before.frames > 0);

    // ctrl+wheel zooms around the mouse: the value under it stays under it
    const win = () => page.evaluate(() => { const g = window.__flamedb.graph, w = g.window(); return { x0: w.x0, w: w.w, width: g.width, focus: g.focus, view: !!g.view, drawn: g.drawn, rows: g.rows }; });
    const cv = await page.evaluate(() => { const r = window.__flamedb.graph.canvas.getBoundingClientRect(); return { left: r.left, top: r.top, bottom: Math.min(r.bottom, innerHeight - 10) }; });
    const mx = cv.left + 300, my = cv.bottom - 30;
    const w0 = await win();
    const under0 = w0.x0 + ((mx - cv.left) / w0.width) * w0.w;
    await page.mouse.move(mx, my);
    await page.keyboard.down('Control');
    await page.mouse.wheel(0, -400);
    await page.keyboard.up('Control');
    await page.waitForFunction((x0) => window.__flamedb.graph.view && window.__flamedb.graph.view.x0 !== x0 && !window.__flamedb.graph.pending, w0.x0);
    const w1 = await win();
    assert.ok(w1.w < w0.w * 0.7, `window narrowed: ${w1.w} of ${w0.w}`);
    const under1 = w1.x0 + ((mx - cv.left) / w1.width) * w1.w;
    assert.ok(Math.abs(under1 - under0) <= w0.w * 1e-9 + 1e-6, `the value under the mouse stays: ${under0} -> ${under1}`);
    assert.equal(w1.focus, w0.focus, 'a wheel zoom keeps the focus');
    assert.ok(w1.drawn.frames + w1.drawn.narrow <= w1.rows * w1.width, 'still what is visible');
    // every block drawn lies inside the canvas
    const inside = await page.evaluate(() => {
      const g = window.__flamedb.graph, bad = [];
      g.layout((kind, i, px, pw) => { if (px < -0.01 || px + pw > g.width + 0.01) bad.push([kind, px, pw]); });
      return bad;
    });
    assert.deepEqual(inside, [], 'blocks cut at the window edges');
    // a drag pans by what the mouse moved, and is not a click (no zoom)
    await page.mouse.move(mx, my);
    await page.mouse.down();
    await page.mouse.move(mx - 100, my, { steps: 4 });
    await page.mouse.move(mx - 200, my, { steps: 4 });
    await page.mouse.up();
    await page.waitForFunction(() => !window.__flamedb.graph.pending);
    const w2 = await win();
    assert.equal(w2.focus, w1.focus, 'a drag does not zoom into a frame');
    assert.ok(Math.abs((w2.x0 - w1.x0) - (200 * w1.w) / w1.width) <= w1.w * 1e-9 + 1e-6, `panned by 200 px: ${w2.x0 - w1.x0} vs ${(200 * w1.w) / w1.width}`);
    assert.ok(Math.abs(w2.w - w1.w) <= w1.w * 1e-12, 'same width');
    await shot(page, '43-levels-200k-panned');
    // Esc goes back to the focused frame's window
    await page.keyboard.press('Escape');
    const w3 = await win();
    assert.equal(w3.view, false);
    assert.equal(w3.focus, w0.focus);
  });
}
