// views.mjs — browser tests of viewer v2 (issue 16): favicon, inverted tree,
// sandwich, transforms, the paged table, the label browser, state in the URL,
// keyboard shortcuts and dark mode. Registered by run.mjs. Every expected
// tree here is computed by this file from the API's own answer, stack by
// stack (a different algorithm from web/transforms.js, which walks the tree).
import assert from 'node:assert/strict';
import { getJSON } from './lib.mjs';

// ---------- an independent reference: trees as lists of stacks ----------
// stacks of a tree: [[frames...], self], plus what max_nodes left out as a
// stack ending in "<other>"
export function stacksOf(tree) {
  const out = [];
  const walk = (n, path) => {
    if (n.self) out.push([path, n.self]);
    let m = n.total - n.self;
    for (const c of n.children || []) { walk(c, [...path, c.name]); m -= c.total; }
    if (m > 0) out.push([[...path, '<other>'], m]);
  };
  walk(tree, []);
  return out;
}
export function applyRef(stacks, transforms) {
  let s = stacks;
  for (const { kind, name: F } of transforms) {
    s = s.map(([p, v]) => {
      const i = p.indexOf(F);
      switch (kind) {
        case 'ff': return i < 0 ? null : [p.slice(i), v];
        case 'mf': return [p.filter((f) => f !== F), v];
        case 'rec': return [p.filter((f, k) => f !== F || k === i), v];
        case 'cf': return [i < 0 ? p : p.slice(0, i + 1), v];
        case 'df': return i < 0 ? [p, v] : null;
      }
      throw new Error(kind);
    }).filter(Boolean);
  }
  return s;
}
// "a;b;c" -> total of the node at that path, for every node
export function totalsOf(stacks) {
  const m = new Map();
  for (const [p, v] of stacks) for (let k = 1; k <= p.length; k++) { const key = p.slice(0, k).join(';'); m.set(key, (m.get(key) || 0) + v); }
  return m;
}
const sorted = (m) => new Map([...m].sort((a, b) => (a[0] < b[0] ? -1 : 1)));

// what a FlameGraph holds, as path -> total ("other" frames as <other>)
export async function drawnTotals(page, which = 'graph') {
  return new Map(await page.evaluate((which) => {
    const g = which === 'graph' ? window.__flamedb.graph : window.__flamedb.views.sandwich[which];
    const out = [];
    const N = g.allNodes();
    N.forEach((n, i) => {
      if (i === 0) return;
      const p = [];
      for (let j = i; j > 0; j = N[j].parent) p.unshift(N[j].other ? '<other>' : N[j].name);
      out.push([p.join(';'), n.total]);
    });
    return out;
  }, which));
}
// merge "other" keys that the viewer may hold at one path as one
export const eqTotals = (got, want, msg) => assert.deepEqual(sorted(got), sorted(want), msg);

// the drawn rectangle and hit-test of the widest frame `name` at `depth`
export async function frameBox(page, name, depth, which = 'graph') {
  return page.evaluate(([name, depth, which]) => {
    const g = which === 'graph' ? window.__flamedb.graph : window.__flamedb.views.sandwich[which];
    const r = g.canvas.getBoundingClientRect();
    let best = -1;
    const N = g.allNodes();
    N.forEach((n, i) => { if (n.name === name && n.depth === depth && (best < 0 || n.total > N[best].total)) best = i; });
    if (best < 0) return null;
    const b = g.rectOf(best);
    const cx = r.left + b.x + b.w / 2, cy = r.top + b.y + b.h / 2;
    const hit = g.frameAt(cx - r.left, cy - r.top);
    return { x: r.left + b.x, y: r.top + b.y, w: b.w, cx, cy, total: N[best].total, width: g.width, hit: hit >= 0 ? N[hit].name : null };
  }, [name, depth, which]);
}

// wait until the elements `sel` carry `attr` values equal to `want` (the
// list is drawn after asynchronous fetches), then compare: a failure names
// what was drawn
export async function listIs(page, sel, attr, want, msg) {
  await page.waitForFunction(([sel, attr, want]) => JSON.stringify([...document.querySelectorAll(sel)].map((x) => x.dataset[attr])) === want,
    [sel, attr, JSON.stringify(want)], { timeout: 5000 }).catch(() => {});
  assert.deepEqual(await page.$$eval(sel, (i, attr) => i.map((x) => x.dataset[attr]), attr), want, msg);
}

export function registerViewTests({ test, open, ready, shot, flameURL, FROM, UNTIL, SHOP }) {
  const range = { from: FROM, until: UNTIL };

  test('favicon: an embedded SVG, linked from the page; no request fails on load', async (ctx, url) => {
    const page = await open(ctx, flameURL(url));
    await ready(page);
    const href = await page.getAttribute('link[rel="icon"]', 'href');
    assert.equal(href, '/favicon.svg');
    const r = await fetch(url + href);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'image/svg+xml');
    assert.match(await r.text(), /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^]*<\/svg>\s*$/);
    // the runner fails any test whose pages log a console error (a 404 is one)
    await page.waitForTimeout(300);
    assert.deepEqual(page.consoleErrors, []);
  });

  test('inverted tree: leaves at the root with their self time, callers above; back and forward', async (ctx, url) => {
    const page = await open(ctx, flameURL(url));
    await ready(page);
    await page.click('#invert');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('invert') === '1');
    assert.ok(await page.isVisible('.chip[data-kind="invert"]'));
    const q = await getJSON(url, '/api/v1/query', { query: SHOP, ...range });
    const top = await getJSON(url, '/api/v1/top', { query: SHOP, ...range, limit: 0 });
    // reference: every stack reversed
    const want = totalsOf(stacksOf(q.tree).map(([p, v]) => [[...p].reverse(), v]));
    eqTotals(await drawnTotals(page), want, 'the inverted tree');
    // roots are the functions with self time, each as wide as its self (the API's top)
    const leaves = top.functions.filter((f) => f.self > 0);
    for (const f of leaves) {
      const b = await frameBox(page, f.name, 1);
      assert.equal(b.total, f.self, f.name);
      assert.ok(Math.abs(b.w - (f.self / q.total) * b.width) < 0.01, `${f.name} drawn ${b.w}px`);
      if (b.w > 20) assert.equal(b.hit, f.name, 'the frame under its own centre');
    }
    // render's callers: handle above it, as wide as render's self
    const render = top.functions.find((f) => f.name === 'render');
    const h = await frameBox(page, 'handle', 2);
    assert.equal(h.total, render.self);
    assert.ok(h.y < (await frameBox(page, 'render', 1)).y, 'callers are drawn above (flame layout)');
    await shot(page, '16-inverted');
    // "i" toggles it off; back brings it again
    await page.keyboard.press('i');
    await page.waitForFunction(() => !new URL(location.href).searchParams.get('invert'));
    eqTotals(await drawnTotals(page), totalsOf(stacksOf(q.tree)), 'top-down again');
    await page.goBack();
    await page.waitForFunction(() => window.__flamedb.graph.meta.inverted === true);
    eqTotals(await drawnTotals(page), want);
    // a tree cut by max_nodes: inverted, and said to be partial
    const page2 = await open(ctx, `${url}/?${new URLSearchParams({ query: 'system{}', ...range, max_nodes: '200', invert: '1' })}`);
    await ready(page2);
    assert.ok(await page2.isVisible('#partial'), 'partial numbers are flagged');
    const q2 = await getJSON(url, '/api/v1/query', { query: 'system{}', ...range, max_nodes: '200' });
    const got = await drawnTotals(page2);
    const other = got.get('<other>');
    assert.equal(other, q2.truncated.total, 'what max_nodes left out is one hatched root block');
    await shot(page2, '17-inverted-partial');
  });

  test('sandwich: right-click a frame, callers above and callees below, merged over every place', async (ctx, url) => {
    const page = await open(ctx, flameURL(url));
    await ready(page);
    const b = await page.evaluate(() => window.__flamedb.layoutOf('render'));
    await page.mouse.click(b.cx, b.cy, { button: 'right' });
    await page.waitForSelector('#ctxmenu:not([hidden])');
    assert.equal(await page.textContent('#ctxmenu .ctx-head'), 'render');
    await page.click('#ctxmenu a[data-act="sandwich"]');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('sandwich') === 'render');
    assert.ok(await page.isVisible('#sandwich') && await page.isHidden('#flame'));
    const q = await getJSON(url, '/api/v1/query', { query: SHOP, ...range });
    const top = await getJSON(url, '/api/v1/top', { query: SHOP, ...range, limit: 0 });
    const f = top.functions.find((x) => x.name === 'render');
    // reference: the stacks through render; callers = the part above it reversed, callees = from it down
    const through = stacksOf(q.tree).filter(([p]) => p.includes('render'));
    const callers = totalsOf(through.map(([p, v]) => [p.slice(0, p.indexOf('render')).reverse(), v]));
    const callees = totalsOf(through.map(([p, v]) => [p.slice(p.indexOf('render') + 1), v]));
    eqTotals(await drawnTotals(page, 'callers'), callers, 'callers');
    eqTotals(await drawnTotals(page, 'callees'), callees, 'callees');
    const roots = await page.evaluate(() => { const s = window.__flamedb.views.sandwich; return [s.callers.node(0), s.callees.node(0)].map((n) => ({ name: n.name, total: n.total })); });
    assert.deepEqual(roots, [{ name: 'render', total: f.total }, { name: 'render', total: f.total }], "the root is the function with its total as /api/v1/top gives it");
    const fig = await page.textContent('#sw-figures');
    assert.ok(fig.includes(`${(f.total_share * 100).toFixed(2)}%`) && fig.includes(`${(f.total_ci95[0] * 100).toFixed(2)}%–${(f.total_ci95[1] * 100).toFixed(2)}%`), fig);
    // callers in flame layout above the function, callees in icicle layout below it
    const cr = await frameBox(page, 'handle', 1, 'callers'), ce = await frameBox(page, 'json', 1, 'callees');
    const rootC = await frameBox(page, 'render', 0, 'callers'), rootE = await frameBox(page, 'render', 0, 'callees');
    assert.ok(cr.y < rootC.y && rootC.y < rootE.y && rootE.y < ce.y, `callers ${cr.y} < render ${rootC.y} < render ${rootE.y} < callees ${ce.y}`);
    assert.equal(ce.hit, 'json');
    await shot(page, '18-sandwich');
    // a recursive function: each stack counts once, at its outermost frame
    const rq = await getJSON(url, '/api/v1/query', { query: 'rec{}', ...range });
    const rtop = await getJSON(url, '/api/v1/top', { query: 'rec{}', ...range, limit: 0 });
    const pr = await open(ctx, flameURL(url, { query: 'rec{}', sandwich: 'fib' }));
    await ready(pr);
    const rthrough = stacksOf(rq.tree).filter(([p]) => p.includes('fib'));
    eqTotals(await drawnTotals(pr, 'callers'), totalsOf(rthrough.map(([p, v]) => [p.slice(0, p.indexOf('fib')).reverse(), v])), 'callers of fib');
    eqTotals(await drawnTotals(pr, 'callees'), totalsOf(rthrough.map(([p, v]) => [p.slice(p.indexOf('fib') + 1), v])), 'callees of fib');
    const fib = rtop.functions.find((x) => x.name === 'fib');
    assert.equal(await pr.evaluate(() => window.__flamedb.views.sandwich.callers.node(0).total), fib.total);
    assert.ok((await pr.textContent('#sw-figures')).includes(`self ${fib.self}`), await pr.textContent('#sw-figures'));
    // Esc closes it; back opens it again
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => document.querySelector('#sandwich').hidden);
    await page.goBack();
    await page.waitForFunction(() => !document.querySelector('#sandwich').hidden);
    // from the table: select gc, then Sandwich in the detail pane
    await page.click('#top tbody tr[data-name="gc"]');
    await page.waitForSelector('#detail:not([hidden])');
    await page.click('#detail button[data-act="sandwich"]');
    await page.waitForFunction(() => document.querySelector('#sandwich').dataset.name === 'gc');
    const gc = top.functions.find((x) => x.name === 'gc');
    assert.equal(await page.evaluate(() => window.__flamedb.views.sandwich.callers.node(0).total), gc.total);
    eqTotals(await drawnTotals(page, 'callers'), new Map([['main', gc.total]]));
  });

  test('transforms: merge, focus, collapse recursion, collapse, drop as chips; each tree as its stacks say', async (ctx, url) => {
    const page = await open(ctx, flameURL(url));
    await ready(page);
    const q = await getJSON(url, '/api/v1/query', { query: SHOP, ...range });
    const S = stacksOf(q.tree);
    // merge handle from the right-click menu
    const h = await page.evaluate(() => window.__flamedb.layoutOf('handle'));
    await page.mouse.click(h.cx, h.cy, { button: 'right' });
    await page.click('#ctxmenu a[data-act="mf"]');
    await page.waitForSelector('.chip[data-kind="mf"][data-name="handle"]');
    assert.equal(new URL(page.url()).searchParams.get('transforms'), 'mf:handle');
    eqTotals(await drawnTotals(page), totalsOf(applyRef(S, [{ kind: 'mf', name: 'handle' }])), 'merge handle');
    const parse = await frameBox(page, 'parse', 2);
    assert.equal(parse.hit, 'parse', 'parse is drawn right above main now');
    await shot(page, '19-merge');
    // focus on render with the keyboard, the mouse over it
    const r = await page.evaluate(() => window.__flamedb.layoutOf('render'));
    await page.mouse.move(r.cx, r.cy);
    await page.keyboard.press('f');
    await page.waitForSelector('.chip[data-kind="ff"][data-name="render"]');
    const both = [{ kind: 'mf', name: 'handle' }, { kind: 'ff', name: 'render' }];
    eqTotals(await drawnTotals(page), totalsOf(applyRef(S, both)), 'merge handle, focus render');
    assert.deepEqual(await page.$$eval('#chips .chip', (c) => c.map((x) => x.textContent.replace(/\s+/g, ' ').trim())), ['merge handle×', 'focus render×']);
    // remove the first chip: focus alone remains
    await page.click('.chip[data-kind="mf"] button');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('transforms') === 'ff:render');
    eqTotals(await drawnTotals(page), totalsOf(applyRef(S, [{ kind: 'ff', name: 'render' }])));
    // back: both again
    await page.goBack();
    await page.waitForFunction(() => document.querySelectorAll('#chips .chip').length === 2);
    eqTotals(await drawnTotals(page), totalsOf(applyRef(S, both)));
    // drop gc and collapse handle, from a URL
    const tf = [{ kind: 'df', name: 'gc' }, { kind: 'cf', name: 'handle' }];
    const p2 = await open(ctx, flameURL(url, { transforms: 'df:gc,cf:handle' }));
    await ready(p2);
    const want = totalsOf(applyRef(S, tf));
    eqTotals(await drawnTotals(p2), want, 'drop gc, collapse handle');
    const gcTotal = q.tree.children[0].children.find((c) => c.name === 'gc').total;
    assert.equal(await p2.evaluate(() => window.__flamedb.graph.node(0).total), q.total - gcTotal, 'dropped samples leave the total');
    const hd = await frameBox(p2, 'handle', 2);
    assert.equal(hd.total, want.get('main;handle'));
    assert.equal(await p2.evaluate(() => window.__flamedb.graph.allNodes().filter((n) => n.depth > 2).length), 0, 'nothing is drawn above the collapsed handle');
    // collapse recursion: fib calling itself directly and through work
    const rq = await getJSON(url, '/api/v1/query', { query: 'rec{}', ...range });
    const p3 = await open(ctx, flameURL(url, { query: 'rec{}', transforms: 'rec:fib' }));
    await ready(p3);
    eqTotals(await drawnTotals(p3), totalsOf(applyRef(stacksOf(rq.tree), [{ kind: 'rec', name: 'fib' }])), 'collapse recursion of fib');
    assert.equal(await p3.evaluate(() => window.__flamedb.graph.allNodes().filter((n) => n.name === 'fib').length), 1, 'one fib frame left');
    await shot(p3, '20-collapse-recursion');
  });

  test('table: every function reachable by pages, "N of M", sort, filter, full names, detail with the interval', async (ctx, url) => {
    const page = await open(ctx, flameURL(url, { query: 'system{}' }));
    await ready(page);
    const top = await getJSON(url, '/api/v1/top', { query: 'system{}', ...range, limit: 0 });
    const M = top.functions.length;
    assert.ok(M > 200, `fixture: ${M} functions`);
    const fmt = (n) => n.toLocaleString('en-US');
    assert.equal(await page.textContent('#tcount'), `1–100 of ${fmt(M)} functions`);
    assert.deepEqual(await page.$$eval('#top tbody tr', (r) => r.map((x) => x.dataset.name)), top.functions.slice(0, 100).map((f) => f.name));
    // walk every page to the last: every function appears once
    const seen = [];
    for (let p = 0; ; p++) {
      seen.push(...await page.$$eval('#top tbody tr', (r) => r.map((x) => x.dataset.name)));
      if (await page.isDisabled('#tnext')) break;
      await page.click('#tnext');
    }
    assert.deepEqual(seen, top.functions.map((f) => f.name), 'every row reachable');
    assert.equal(await page.textContent('#tcount'), `${fmt(Math.floor((M - 1) / 100) * 100 + 1)}–${fmt(M)} of ${fmt(M)} functions`);
    // filter
    await page.fill('#tfilter', 'spin');
    const match = top.functions.filter((f) => f.name.toLowerCase().includes('spin'));
    await page.waitForFunction((n) => document.querySelector('#tcount').dataset.of === String(n), match.length);
    assert.equal(await page.textContent('#tcount'), `1–${match.length} of ${match.length} matching (${fmt(M)} functions)`);
    assert.deepEqual(await page.$$eval('#top tbody tr', (r) => r.map((x) => x.dataset.name)), match.map((f) => f.name));
    assert.equal(new URL(page.url()).searchParams.get('tq'), 'spin');
    // sort by name, then by total descending
    await page.click('#top th[data-key="name"]');
    assert.deepEqual(await page.$$eval('#top tbody tr', (r) => r.map((x) => x.dataset.name)), match.map((f) => f.name).sort((a, b) => a.localeCompare(b)));
    await page.click('#top th[data-key="total"]');
    const totals = await page.$$eval('#top tbody tr td:nth-child(4)', (t) => t.map((x) => Number(x.dataset.v)));
    assert.deepEqual(totals, match.map((f) => f.total).sort((a, b) => b - a));
    // a long name: cut in its cell, whole on hover (title) and in the detail pane
    await page.fill('#tfilter', '');
    await page.waitForFunction((n) => document.querySelector('#tcount').dataset.of === String(n), M);
    const long = (await page.$$eval('#top tbody tr', (r) => r.map((x) => x.dataset.name))).sort((a, b) => b.length - a.length)[0];
    const cell = page.locator(`#top tbody tr[data-name="${long}"] td.fn`);
    assert.ok(await cell.evaluate((td) => td.scrollWidth > td.clientWidth), `${long} is cut in its cell`);
    assert.equal(await cell.getAttribute('title'), long);
    await cell.click();
    await page.waitForSelector('#detail:not([hidden])');
    assert.equal(await page.textContent('#detail .detail-name'), long);
    const f = top.functions.find((x) => x.name === long);
    const row = async (k) => page.$$eval(`#detail tr[data-k="${k}"] td`, (t) => t.map((x) => x.textContent));
    // the unit as the viewer writes nanoseconds (web/app.js fmtValue)
    const ms = (v) => (v < 1e3 ? v.toFixed(0) + ' ns' : v < 1e6 ? (v / 1e3).toFixed(v < 1e4 ? 2 : 1) + ' µs' : v < 1e9 ? (v / 1e6).toFixed(v < 1e7 ? 2 : 1) + ' ms' : (v / 1e9).toFixed(2) + ' s');
    const ci = (c) => `${(c[0] * 100).toFixed(2)}–${(c[1] * 100).toFixed(2)}%`;
    assert.equal(top.unit, 'nanoseconds');
    assert.deepEqual(await row('total'), ['total', ms(f.total), (f.total_share * 100).toFixed(2) + '%', ci(f.total_ci95)]);
    assert.deepEqual(await row('self'), ['self', ms(f.self), (f.self_share * 100).toFixed(2) + '%', ci(f.self_ci95)]);
    assert.equal(new URL(page.url()).searchParams.get('fn'), long);
    await shot(page, '21-table-detail');
    // the selection survives a reload on its page
    const again = await open(ctx, page.url());
    await ready(again);
    assert.equal(await again.textContent('#detail .detail-name'), long);
    assert.equal(await again.getAttribute('#top tbody tr.sel', 'data-name'), long);
  });

  test('label browser: type-ahead over names and values; a click adds label="value" and runs', async (ctx, url) => {
    const page = await open(ctx, flameURL(url));
    await ready(page);
    await page.click('#labels-btn');
    await page.waitForSelector('#labels-pop:not([hidden]) .pop-item');
    const labels = await getJSON(url, '/api/v1/labels', range);
    await listIs(page, '#labels-list .pop-item[data-label]', 'label', labels.labels.map((l) => l.name), 'the label names');
    assert.ok(await page.$('#labels-list .pop-item:last-child[data-sample-load]'), 'then the entry listing sample labels (samples.mjs)');
    // a name, then its values
    await page.keyboard.type('bui');
    await page.waitForFunction(() => [...document.querySelectorAll('#labels-list .pop-item')].some((x) => x.dataset.label === 'build'));
    await listIs(page, '#labels-list .pop-item[data-label]', 'label', labels.labels.map((l) => l.name).filter((n) => n.includes('bui')), 'names with "bui"');
    await page.click('#labels-list .pop-item[data-label="build"]');
    const bv = await getJSON(url, '/api/v1/label/build/values', range);
    await listIs(page, '#labels-list .pop-item', 'value', bv.values, 'the values of build');
    await page.click('#labels-list [data-back]');
    // a value of any label: i-3 is an instance
    await page.fill('#labels-q', 'i-3');
    await page.waitForSelector('#labels-list .pop-item[data-value="i-3"]');
    assert.equal(await page.getAttribute('#labels-list .pop-item[data-value="i-3"]', 'data-name'), 'instance');
    await shot(page, '22-labels');
    await page.click('#labels-list .pop-item[data-value="i-3"]');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('query').includes('instance="i-3"'));
    await ready(page);
    const sel = new URL(page.url()).searchParams.get('query');
    assert.equal(sel, '{instance="i-3", service="shop"}');
    assert.equal(await page.inputValue('#query'), sel);
    const q = await getJSON(url, '/api/v1/query', { query: sel, ...range });
    assert.equal(await page.evaluate(() => window.__flamedb.current.total), q.total);
    assert.ok(await page.isHidden('#labels-pop'));
  });

  test('state in the URL: a copied link opens the same picture; back and forward walk it', async (ctx, url) => {
    const params = { query: 'shop{}', ...range, transforms: 'mf:handle', invert: '1', search: 'render', fn: 'render', tq: 'r', tsort: 'name:asc', tab: 'top', sandwich: 'parse' };
    const page = await open(ctx, flameURL(url, params));
    await ready(page);
    const picture = (p) => p.evaluate(() => {
      const s = window.__flamedb.views.sandwich;
      return {
        chips: [...document.querySelectorAll('#chips .chip')].map((c) => c.dataset.kind + ':' + (c.dataset.name || '')),
        sandwich: document.querySelector('#sandwich').hidden ? null : document.querySelector('#sandwich').dataset.name,
        callers: s ? s.callers.allNodes().map((n) => n.name + '=' + n.total) : null,
        rows: [...document.querySelectorAll('#top tbody tr')].map((r) => r.dataset.name),
        sel: document.querySelector('#top tbody tr.sel')?.dataset.name,
        detail: document.querySelector('#detail').hidden ? null : document.querySelector('#detail .detail-name').textContent,
        search: document.querySelector('#search').value, filter: document.querySelector('#tfilter').value,
        graph: window.__flamedb.graph.allNodes().map((n) => n.name + '=' + n.total).join(','),
      };
    });
    const a = await picture(page);
    assert.deepEqual(a.chips, ['mf:handle', 'invert:']);
    assert.equal(a.sandwich, 'parse');
    assert.equal(a.detail, 'render');
    assert.equal(a.filter, 'r');
    const top = await getJSON(url, '/api/v1/top', { query: 'shop{}', ...range, limit: 0 });
    assert.deepEqual(a.rows, top.functions.map((f) => f.name).filter((n) => n.includes('r')).sort((x, y) => x.localeCompare(y)));
    const b = await picture(await (async () => { const p = await open(ctx, page.url()); await ready(p); return p; })());
    assert.deepEqual(b, a, 'the same picture from the copied URL');
    // walk: close the sandwich, drop the inversion; back twice returns to the start
    await page.click('#sw-close');
    await page.waitForFunction(() => document.querySelector('#sandwich').hidden);
    await page.click('#invert');
    await page.waitForFunction(() => !new URL(location.href).searchParams.get('invert'));
    await page.goBack();
    await page.waitForFunction(() => new URL(location.href).searchParams.get('invert') === '1');
    await page.goBack();
    await page.waitForFunction(() => !document.querySelector('#sandwich').hidden);
    assert.deepEqual(await picture(page), a);
    await page.goForward();
    await page.waitForFunction(() => document.querySelector('#sandwich').hidden);
  });

  test('keyboard shortcuts under "?", each of them working; readable in dark mode', async (ctx, url, browser) => {
    const page = await open(ctx, flameURL(url));
    await ready(page);
    await page.keyboard.press('?');
    await page.waitForSelector('#help:not([hidden])');
    const keys = await page.$$eval('#help kbd', (k) => k.map((x) => x.textContent));
    for (const k of ['/', 'Esc', 'i', 's', 'f', 'm', 'r', 'c', 'd', 'Backspace', 't', 'l', '?']) assert.ok(keys.includes(k), `${k} is listed`);
    await shot(page, '23-shortcuts');
    await page.keyboard.press('Escape');
    assert.ok(await page.isHidden('#help'));
    // each key acts on the function under the mouse
    const h = await page.evaluate(() => window.__flamedb.layoutOf('handle'));
    await page.mouse.move(h.cx, h.cy);
    for (const [key, tf] of [['m', 'mf:handle'], ['Backspace', null], ['r', 'rec:handle'], ['Backspace', null], ['c', 'cf:handle'], ['Backspace', null], ['d', 'df:handle'], ['Backspace', null]]) {
      if (key !== 'Backspace') { const b = await page.evaluate(() => window.__flamedb.layoutOf('handle') || window.__flamedb.layoutOf('main')); await page.mouse.move(b.cx, b.cy); }
      await page.keyboard.press(key);
      await page.waitForFunction((tf) => new URL(location.href).searchParams.get('transforms') === tf, tf);
    }
    await page.mouse.move(h.cx, h.cy);
    await page.keyboard.press('s');
    await page.waitForFunction(() => document.querySelector('#sandwich').dataset.name === 'handle' && !document.querySelector('#sandwich').hidden);
    await page.keyboard.press('Escape');
    await page.keyboard.press('t');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'tfilter');
    await page.keyboard.press('Escape');
    await page.keyboard.press('l');
    await page.waitForSelector('#labels-pop:not([hidden])');
    await page.keyboard.press('Escape');
    assert.ok(await page.isHidden('#labels-pop'));
    // dark: every new part readable (contrast of its text on its background at least 4.5)
    const dctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'dark' });
    try {
      const p = await open(dctx, flameURL(url, { query: 'system{}', transforms: 'mf:%5Bunknown%5D', sandwich: 'read', fn: 'read', search: 'read', max_nodes: '300' }));
      await ready(p);
      await p.keyboard.press('?');
      const ratios = await p.evaluate(() => {
        const rgb = (s) => (s.match(/[\d.]+/g) || []).map(Number);
        const lum = ([r, g, b]) => { const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; }; return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
        const bgOf = (el) => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor); if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3); } return [255, 255, 255]; };
        const out = {};
        for (const sel of ['.chip b', '.chip .chip-name', '#partial', '#sw-name', '#sw-figures', '.sw-label', '#tcount', '#tfilter', '#detail .detail-name', '#detail td', '#detail .muted', '#detail button', '#top td.fn', '#invert', '#labels-btn', '.dialog-box td', '.dialog-box kbd']) {
          const el = document.querySelector(sel);
          if (!el) { out[sel] = 'missing'; continue; }
          const a = lum(rgb(getComputedStyle(el).color)), b = lum(bgOf(el));
          out[sel] = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
        }
        return out;
      });
      for (const [sel, r] of Object.entries(ratios)) assert.ok(typeof r === 'number' && r >= 4.5, `${sel}: contrast ${r}`);
      assert.equal(await p.evaluate(() => getComputedStyle(document.querySelector('.dialog-box')).backgroundColor), 'rgb(31, 33, 38)');
      await shot(p, '24-dark-views');
      assert.deepEqual([...p.errors, ...p.consoleErrors], []);
    } finally { await dctx.close(); }
  });
}
