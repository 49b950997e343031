// run.mjs — browser tests of flamedb's viewer: the real server on a free port,
// fixture profiles pushed through the HTTP API at explicit times in the last
// hour, Debian's chromium driven by playwright-core. Each test checks what the
// page shows against the API's own answer. Screenshots go to tests/artifacts/.
//
//   node tests/browser/run.mjs /abs/path/bin/flamedb
//
// Last line: "browser: N passed, M failed"; exit 1 when M > 0 or chromium
// (or the server) cannot start.
import { mkdirSync, readFileSync, existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { startServer, ingest, getJSON, launchChromium } from './lib.mjs';
import { registerViewTests } from './views.mjs';
import { registerNextTests, loadNextFixtures } from './next.mjs';
import { registerLevelsTests } from './levels.mjs';
import { registerAgentsTests } from './agents.mjs';
import { registerPanelsTests, loadPanelsFixtures } from './panels.mjs';
import { registerWallTests, loadWallFixtures } from './wall.mjs';
import { registerSamplesTests, loadSamplesFixtures } from './samples.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../..');
const artifacts = join(repo, 'tests/artifacts');
mkdirSync(artifacts, { recursive: true });

const bin = process.argv[2];
let server, browser;
let passed = 0, failed = 0;

function finish(code) {
  console.log(`browser: ${passed} passed, ${failed} failed`);
  process.exit(code);
}

// ---------- fixtures ----------
const T = Math.floor(Date.now() / 1000 / 60) * 60 - 1800;   // half an hour ago, on a minute
const FROM = String(T - 60), UNTIL = String(T + 900);
const shopV1 = 'main;handle;parse 120\nmain;handle;render 300\nmain;gc 50\nmain;handle;render;escape 30\n';
const shopV2 = shopV1 + 'main;handle;render;json 400\n';
const shopI3 = 'main;handle;parse 500\nmain;gc 400\nmain;handle;render 20\n';
// archive: imported with its own timestamps, 8 days ago: outside every preset
const OLD_T = T - 8 * 86400;
const archive1 = 'main;restore;decode 40\nmain;restore;verify 10\n', archive2 = 'main;restore;decode 25\nmain;gc 5\n';

async function loadFixtures(url) {
  const w = (t) => ({ from: String(t), until: String(t + 10) });
  await ingest(url, { service: 'shop', build: 'v1', instance: 'i-1', rate: '99', ...w(T) }, shopV1);
  await ingest(url, { service: 'shop', build: 'v1', instance: 'i-1', rate: '99', ...w(T + 60) }, shopV1);
  await ingest(url, { service: 'shop', build: 'v2', instance: 'i-2', rate: '99', ...w(T + 300) }, shopV2);
  await ingest(url, { service: 'shop', build: 'v2', instance: 'i-2', rate: '99', ...w(T + 360) }, shopV2);
  await ingest(url, { service: 'shop', build: 'v1', instance: 'i-3', rate: '99', ...w(T + 600) }, shopI3);
  const gojs = resolve(repo, '../shared/data/go-json-sort.cpu.pb.gz');
  if (existsSync(gojs)) await ingest(url, { service: 'gojs', format: 'pprof', ...w(T + 200) }, readFileSync(gojs));
  await ingest(url, { service: 'heap', type: 'alloc_space', unit: 'bytes', ...w(T + 200) }, 'main;alloc 4096\nmain;grow 1024\n');
  await ingest(url, { service: 'inuse', type: 'inuse_space', unit: 'bytes', ...w(T + 200) }, 'main;cache 3072\n');
  await ingest(url, { service: 'inuse', type: 'inuse_space', unit: 'bytes', ...w(T + 210) }, 'main;cache 5120\n');
  // recursion, direct (fib;fib) and through another function (fib;work;fib)
  await ingest(url, { service: 'rec', ...w(T + 30) }, 'main;fib;fib;fib;leaf 10\nmain;fib;work;fib 5\nmain;fib 3\nmain;fib;work;fib;fib;leaf 2\n');
  await ingest(url, { service: 'archive', ...w(OLD_T - 600) }, archive1);
  await ingest(url, { service: 'archive', ...w(OLD_T) }, archive2);
  const mix = resolve(repo, '../shared/data/system-mix.folded');
  if (existsSync(mix)) await ingest(url, { service: 'system', rate: '499', ...w(T + 120) }, readFileSync(mix));
  else await ingest(url, { service: 'system', rate: '499', ...w(T + 120) }, 'kernel;idle 9000\nuser;work 100\n');
  await loadNextFixtures(url, T);
  await loadPanelsFixtures(url, T);
  await loadWallFixtures(url, T);
  await loadSamplesFixtures(url, T);
}

// ---------- helpers ----------
const SHOP = 'shop{}';
const flameURL = (url, extra = {}) => `${url}/?${new URLSearchParams({ query: SHOP, from: FROM, until: UNTIL, ...extra })}`;

// Every page a test opens is watched: an uncaught exception or a console
// error (a failed request such as a favicon 404 is one) fails the test,
// unless the test expects it (allowConsole).
let opened = [];
async function open(ctx, url) {
  const page = await ctx.newPage();
  const errors = [], consoleErrors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(`${m.text()} (${m.location().url || 'page'})`); });
  page.on('response', (r) => { if (r.status() >= 400) consoleErrors.push(`HTTP ${r.status()} ${r.url()}`); });
  page.errors = errors;
  page.consoleErrors = consoleErrors;
  opened.push(page);
  await page.goto(url);
  await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.state), null, { timeout: 15000 });
  return page;
}
async function ready(page) {
  await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 15000 });
}
function findAll(tree, pred, out = []) {
  if (pred(tree)) out.push(tree);
  for (const c of tree.children || []) findAll(c, pred, out);
  return out;
}
function combinedShare(tree, pred) {
  let sum = 0;
  const walk = (n, under) => {
    const hit = n !== tree && pred(n);
    if (hit && !under) sum += n.total;
    for (const c of n.children || []) walk(c, under || hit);
  };
  walk(tree, false);
  return sum / tree.total;
}
async function pixel(page, x, y) {
  return page.evaluate(([x, y]) => {
    const c = window.__flamedb.graph.canvas, r = c.getBoundingClientRect();
    const d = devicePixelRatio || 1;
    return Array.from(c.getContext('2d').getImageData(Math.round((x - r.left) * d), Math.round((y - r.top) * d), 1, 1).data);
  }, [x, y]);
}
const shot = (page, name) => page.screenshot({ path: join(artifacts, name + '.png'), fullPage: false });

// ---------- tests ----------
const tests = [];
const test = (name, fn, opts = {}) => tests.push({ name, fn, ...opts });

test('flamegraph draws (non-blank canvas) and names the type', async (ctx, url) => {
  const page = await open(ctx, flameURL(url));
  await ready(page);
  const stats = await page.evaluate(() => {
    const c = window.__flamedb.graph.canvas;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let painted = 0, colours = new Set();
    for (let i = 0; i < d.length; i += 4 * 7) if (d[i + 3] > 0) { painted++; colours.add(d[i] << 16 | d[i + 1] << 8 | d[i + 2]); }
    return { painted, colours: colours.size, w: c.width, h: c.height };
  });
  assert.ok(stats.w > 500 && stats.h >= 18 * 4, `canvas ${stats.w}x${stats.h}`);
  assert.ok(stats.painted > 1000, `only ${stats.painted} painted pixels`);
  assert.ok(stats.colours > 3, `only ${stats.colours} colours`);
  const q = await getJSON(url, '/api/v1/query', { query: SHOP, from: FROM, until: UNTIL });
  const summary = await page.textContent('#summary');
  assert.match(summary, new RegExp(q.samples.toLocaleString('en-US') + ' samples'));
  const tlBars = await page.evaluate(() => { const c = document.querySelector('#timeline'); const d = c.getContext('2d').getImageData(0, 0, c.width, c.height - 14).data; let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; });
  assert.ok(tlBars > 20, 'timeline has bars');
  assert.deepEqual(page.errors, []);
  await shot(page, '01-flame');
});

test('search highlights matches and shows their combined share as the API gives it', async (ctx, url) => {
  const page = await open(ctx, flameURL(url));
  await ready(page);
  await page.keyboard.press('/');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'search');
  await page.keyboard.type('render');
  await page.waitForFunction(() => document.querySelector('#search-result').dataset.share !== undefined);
  const q = await getJSON(url, '/api/v1/query', { query: SHOP, from: FROM, until: UNTIL });
  const want = combinedShare(q.tree, (n) => n.name.toLowerCase().includes('render'));
  const got = Number(await page.getAttribute('#search-result', 'data-share'));
  assert.ok(Math.abs(got - want) < 1e-12, `share ${got} != ${want}`);
  const text = await page.textContent('#search-result');
  assert.ok(text.includes((want * 100).toFixed(2) + '%'), `shown "${text}"`);
  const box = await page.evaluate(() => window.__flamedb.layoutOf('render'));
  const match = await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--match').trim());
  const px = await pixel(page, box.x + 3, box.y + 3);
  const hex = '#' + px.slice(0, 3).map((v) => v.toString(16).padStart(2, '0')).join('');
  assert.equal(hex, match, 'the matched frame is drawn in the highlight colour');
  const other = await page.evaluate(() => window.__flamedb.layoutOf('gc'));
  const px2 = await pixel(page, other.x + 3, other.y + 3);
  assert.notDeepEqual(px2.slice(0, 3), px.slice(0, 3), 'non-matches are not highlighted');
  // nested matches are not counted twice: "main" contains every frame
  await page.fill('#search', 'a');   // matches main, handle, parse, escape: share 1
  await page.waitForFunction(() => Number(document.querySelector('#search-result').dataset.share) === 1);
  await page.fill('#search', 'render');
  await page.waitForTimeout(400);
  assert.match(page.url(), /search=render/);
  await shot(page, '02-search');
});

test('click zooms into a frame, the breadcrumb follows, Esc zooms out, back works', async (ctx, url) => {
  const page = await open(ctx, flameURL(url));
  await ready(page);
  // the root is named as the levels answer names it (names[0])
  assert.equal(await page.getAttribute('#crumbs', 'data-root'), 'total');
  const h = await page.evaluate(() => window.__flamedb.layoutOf('handle'));
  await page.mouse.click(h.cx, h.cy);
  assert.equal(await page.getAttribute('#crumbs', 'data-root'), 'handle');
  assert.deepEqual(await page.$$eval('#crumbs button', (b) => b.map((x) => x.textContent)), ['all', 'main', 'handle']);
  assert.match(decodeURIComponent(page.url()), /focus=main;handle/);
  // the zoomed frame spans the whole width
  const h2 = await page.evaluate(() => window.__flamedb.layoutOf('handle'));
  const cw = await page.evaluate(() => window.__flamedb.graph.width);
  assert.ok(Math.abs(h2.w - cw) < 1, `handle is ${h2.w}px of ${cw}`);
  await shot(page, '03-zoomed');
  await page.keyboard.press('Escape');
  assert.equal(await page.getAttribute('#crumbs', 'data-root'), 'main');
  await page.keyboard.press('Escape');
  assert.equal(await page.getAttribute('#crumbs', 'data-root'), 'total');
  await page.goBack();
  await page.waitForFunction(() => document.querySelector('#crumbs').dataset.root === 'main');
  await page.goForward();
  await page.waitForFunction(() => document.querySelector('#crumbs').dataset.root === 'total');
});

test('tooltip shows self, total, shares and the 95% interval of the hovered frame, as the API', async (ctx, url) => {
  const page = await open(ctx, flameURL(url));
  await ready(page);
  const q = await getJSON(url, '/api/v1/query', { query: SHOP, from: FROM, until: UNTIL });
  const render = findAll(q.tree, (n) => n.name === 'render')[0];
  const box = await page.evaluate(() => window.__flamedb.layoutOf('render'));
  await page.mouse.move(box.cx, box.cy);
  await page.waitForSelector('#tooltip:not([hidden])');
  const ds = await page.evaluate(() => ({ ...document.querySelector('#tooltip').dataset }));
  assert.equal(ds.name, 'render');
  assert.equal(Number(ds.total), render.total);
  assert.equal(Number(ds.self), render.self);
  assert.equal(Number(ds.totalShare), render.total / q.total);
  assert.equal(Number(ds.selfShare), render.self / q.total);
  // the interval is the API's (top gives total_ci95 for the function, and render appears once)
  const top = await getJSON(url, '/api/v1/top', { query: SHOP, from: FROM, until: UNTIL, limit: 0 });
  const f = top.functions.find((x) => x.name === 'render');
  const tci = ds.totalCi.split(',').map(Number);
  assert.ok(Math.abs(tci[0] - f.total_ci95[0]) < 1e-12 && Math.abs(tci[1] - f.total_ci95[1]) < 1e-12, `ci ${tci} vs ${f.total_ci95}`);
  const text = await page.textContent('#tooltip');
  assert.ok(text.includes((render.total / q.total * 100).toFixed(2) + '%'), text);
  assert.ok(text.includes(`${(f.total_ci95[0] * 100).toFixed(2)}–${(f.total_ci95[1] * 100).toFixed(2)}%`), text);
  await shot(page, '04-tooltip');
});

test('samples apart from values: a Go CPU profile reads "395 samples · 3.95 s"; bytes without samples get no interval', async (ctx, url) => {
  if (existsSync(resolve(repo, '../shared/data/go-json-sort.cpu.pb.gz'))) {
    const page = await open(ctx, flameURL(url, { query: 'gojs{type="cpu"}' }));
    await ready(page);
    const summary = await page.textContent('#summary');
    assert.ok(summary.includes('395 samples · 3.95 s'), summary);
    await page.close();
  }
  const page = await open(ctx, flameURL(url, { query: 'heap{}' }));
  await ready(page);
  assert.ok((await page.textContent('#summary')).includes('samples unknown · 5.0 KiB'), await page.textContent('#summary'));
  const box = await page.evaluate(() => window.__flamedb.layoutOf('alloc'));
  await page.mouse.move(box.cx, box.cy);
  await page.waitForSelector('#tooltip:not([hidden])');
  const ds = await page.evaluate(() => ({ ...document.querySelector('#tooltip').dataset }));
  assert.equal(ds.selfCi, '');
  const text = await page.textContent('#tooltip');
  assert.ok(text.includes('no interval') && text.includes('samples unknown'), text);
  assert.deepEqual(page.errors, []);
  await shot(page, '13-samples-unknown');
  // a gauge: two heap snapshots of 3 and 5 KiB read as their average, 4 KiB
  const gp = await open(ctx, flameURL(url, { query: 'inuse{}' }));
  await ready(gp);
  const gs = await gp.textContent('#summary');
  assert.ok(gs.includes('4.0 KiB (snapshots averaged over time)'), gs);
  assert.deepEqual(gp.errors, []);
});

test('diff view colours a frame that grew red and one that shrank blue; compare lists significant changes', async (ctx, url) => {
  const page = await open(ctx, `${url}/?${new URLSearchParams({ view: 'diff', left: 'shop{build="v1"}', right: 'shop{build="v2"}', from: FROM, until: UNTIL })}`);
  await ready(page);
  const d = await getJSON(url, '/api/v1/diff', { left: 'shop{build="v1"}', right: 'shop{build="v2"}', from: FROM, until: UNTIL });
  const json = findAll(d.tree, (n) => n.name === 'json')[0];
  assert.ok(json.right_total > 0 && json.left_total === 0, 'fixture: json grew');
  const g = await page.evaluate(() => window.__flamedb.layoutOf('json'));
  const [r, gg, b] = await pixel(page, g.x + 3, g.y + 3);
  assert.ok(r > gg + 80 && r > b + 80, `json is drawn rgb(${r},${gg},${b}), not the grew hue (red)`);
  const s = await page.evaluate(() => window.__flamedb.layoutOf('parse'));
  const [r2, g2, b2] = await pixel(page, s.x + 3, s.y + 3);
  assert.ok(b2 > r2 + 40, `parse (shrank) is drawn rgb(${r2},${g2},${b2}), not blue`);
  const c = await getJSON(url, '/api/v1/compare', { left: 'shop{build="v1"}', right: 'shop{build="v2"}', from: FROM, until: UNTIL, limit: 100 });
  const sig = c.functions.filter((f) => f.significant).map((f) => f.name);
  const shown = await page.$$eval('#compare tbody tr.sig', (rows) => rows.map((r) => r.dataset.name));
  assert.deepEqual(shown, sig);
  assert.ok(await page.isVisible('#compare'), 'changes tab shown');
  await page.mouse.move(g.cx, g.cy);
  await page.waitForSelector('#tooltip:not([hidden])');
  assert.equal(Number(await page.getAttribute('#tooltip', 'data-delta')), json.right_total / d.right_total - json.left_total / d.left_total);
  await shot(page, '05-diff');
});

test('URL round trip restores the view in a new page', async (ctx, url) => {
  const params = { query: 'shop{build="v1"}', from: FROM, until: UNTIL, search: 'parse', layout: 'icicle', focus: 'main;handle', group_by: 'instance', tab: 'stability' };
  const page = await open(ctx, flameURL(url, params));
  await ready(page);
  assert.equal(await page.inputValue('#query'), 'shop{build="v1"}');
  assert.equal(await page.inputValue('#from'), FROM);
  assert.equal(await page.inputValue('#until'), UNTIL);
  assert.equal(await page.inputValue('#search'), 'parse');
  assert.equal(await page.inputValue('#group_by'), 'instance');
  assert.equal(await page.getAttribute('#crumbs', 'data-root'), 'handle');
  assert.ok(await page.evaluate(() => window.__flamedb.graph.icicle), 'icicle layout');
  assert.ok(await page.isVisible('#tab-stability'));
  const q = await getJSON(url, '/api/v1/query', { query: 'shop{build="v1"}', from: FROM, until: UNTIL });
  assert.equal(await page.evaluate(() => window.__flamedb.current.total), q.total);
  // icicle: root row at the top
  const root = await page.evaluate(() => window.__flamedb.graph.rectOf(0).y);
  assert.equal(root, 0);
  const st = await getJSON(url, '/api/v1/stability', { query: 'shop{build="v1"}', from: FROM, until: UNTIL, step: '30' });
  assert.ok(await page.textContent('#verdict'));
  assert.equal(await page.getAttribute('#verdict', 'data-stable'), String(st.summary.stable));
  await shot(page, '06-roundtrip-stability');
  // the link reproduces the view in a fresh page
  const again = await open(ctx, page.url());
  await ready(again);
  assert.equal(await again.getAttribute('#crumbs', 'data-root'), 'handle');
  assert.equal(await again.inputValue('#search'), 'parse');
});

test('top table sorts and matches the API; clicking a row highlights the function', async (ctx, url) => {
  const page = await open(ctx, flameURL(url));
  await ready(page);
  const top = await getJSON(url, '/api/v1/top', { query: SHOP, from: FROM, until: UNTIL, limit: 0 });
  const names = await page.$$eval('#top tbody tr', (r) => r.map((x) => x.dataset.name));
  assert.deepEqual(names, top.functions.map((f) => f.name), 'default order is the API order (self desc)');
  await page.click('#top th[data-key="total"]');
  const totals = await page.$$eval('#top tbody tr td:nth-child(4)', (t) => t.map((x) => Number(x.dataset.v)));
  assert.deepEqual(totals, [...totals].sort((a, b) => b - a));
  await page.click('#top th[data-key="total"]');
  const asc = await page.$$eval('#top tbody tr td:nth-child(4)', (t) => t.map((x) => Number(x.dataset.v)));
  assert.deepEqual(asc, [...asc].sort((a, b) => a - b));
  await page.click('#top th[data-key="name"]');
  const byName = await page.$$eval('#top tbody tr', (r) => r.map((x) => x.dataset.name));
  assert.deepEqual(byName, [...byName].sort((a, b) => a.localeCompare(b)));
  await page.click('#top tbody tr[data-name="gc"]');
  await page.waitForFunction(() => document.querySelector('#search-result').dataset.share !== undefined);
  const gc = top.functions.find((f) => f.name === 'gc');
  assert.equal(Number(await page.getAttribute('#search-result', 'data-share')), gc.total_share);
  const box = await page.evaluate(() => window.__flamedb.layoutOf('gc'));
  const match = await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--match').trim());
  const px = await pixel(page, box.x + 3, box.y + 3);
  assert.equal('#' + px.slice(0, 3).map((v) => v.toString(16).padStart(2, '0')).join(''), match);
});

test('group_by lists groups outliers first (distance over sampling noise), with a flamegraph per selected group', async (ctx, url) => {
  const page = await open(ctx, flameURL(url, { group_by: 'instance' }));
  await ready(page);
  const st = await getJSON(url, '/api/v1/stability', { query: SHOP, from: FROM, until: UNTIL, group_by: 'instance' });
  const rows = await page.$$eval('#groups tbody tr[data-group]', (r) => r.map((x) => ({ g: x.dataset.group, m: Number(x.querySelector('td[data-v]').dataset.v) })));
  assert.equal(rows.length, st.groups.length);
  // ranked by the lower end of the distance's interval (M - 1.96*sqrt(pi/2)*noise), web/outliers.js
  const lo = (g) => Math.max(0, g.manhattan - 1.96 * Math.sqrt(Math.PI / 2) * g.manhattan_noise);
  const ref = [...st.groups].sort((a, b) => lo(b) - lo(a) || b.manhattan - a.manhattan);
  assert.deepEqual(rows.map((r) => r.g), ref.map((g) => `instance=${g.labels.instance}`));
  assert.deepEqual(rows.map((r) => r.m), ref.map((g) => g.manhattan), 'the API\'s distances');
  assert.equal(rows[0].g, 'instance=i-3', 'the outlier comes first');
  assert.equal(await page.$$eval('.mini', (m) => m.length), 2);
  await shot(page, '07-groups');
  await page.click('#groups tbody tr[data-group]:nth-child(3) input');
  await page.waitForFunction(() => document.querySelectorAll('.mini').length === 3);
  assert.match(decodeURIComponent(page.url()), /groups=/);
});

test('no query: opens on the service with the most samples in the last hour', async (ctx, url) => {
  const g = await getJSON(url, '/api/v1/query', { query: '{}', group_by: 'service', max_nodes: '1', from: 'now-1h' });
  const page = await open(ctx, url + '/');
  await ready(page);
  const q = new URL(page.url()).searchParams.get('query');
  assert.equal(q, `{service="${g.groups[0].labels.service}"}`);
  assert.equal(await page.inputValue('#service'), g.groups[0].labels.service);
  await shot(page, '08-default-' + g.groups[0].labels.service);
});

test('what max_nodes left out is drawn as "other" and counted', async (ctx, url) => {
  const page = await open(ctx, `${url}/?${new URLSearchParams({ query: 'system{}', from: FROM, until: UNTIL, max_nodes: '200' })}`);
  await ready(page);
  const q = await getJSON(url, '/api/v1/query', { query: 'system{}', from: FROM, until: UNTIL, max_nodes: '200' });
  assert.ok(q.truncated.nodes > 0);
  const note = await page.textContent('#truncated');
  assert.ok(note.includes(q.truncated.nodes.toLocaleString('en-US')), note);
  const others = await page.evaluate(() => window.__flamedb.graph.allNodes().filter((n) => n.other).reduce((a, n) => a + n.total, 0));
  // every value is accounted for: shown nodes + other blocks = root total at each level
  const shown = findAll(q.tree, () => true);
  let missing = 0;
  for (const n of shown) missing += Math.max(0, n.total - n.self - (n.children || []).reduce((a, c) => a + c.total, 0));
  assert.equal(others, missing);
  await shot(page, '09-truncated');
});

test('API errors are shown in the page', async (ctx, url) => {
  const page = await open(ctx, `${url}/?${new URLSearchParams({ query: '{service="shop"', from: FROM, until: UNTIL })}`);
  await page.waitForSelector('#error:not([hidden])');
  const r = await fetch(`${url}/api/v1/query?${new URLSearchParams({ query: '{service="shop"', from: FROM, until: UNTIL })}`);
  const body = await r.json();
  assert.equal(r.status, 400);
  assert.ok((await page.textContent('#error')).includes(body.error));
}, { allowConsole: /status of 400|HTTP 400 .*\/api\/v1\// });

test('exports: folded, speedscope and JSON links answer; pprof offered only if the server has it', async (ctx, url) => {
  const page = await open(ctx, flameURL(url));
  await ready(page);
  for (const id of ['exp-folded', 'exp-speedscope', 'exp-json']) {
    const href = await page.getAttribute('#' + id, 'href');
    const r = await fetch(url + href);
    assert.equal(r.status, 200, id);
  }
  const folded = await (await fetch(url + await page.getAttribute('#exp-folded', 'href'))).text();
  assert.match(folded, /main;handle;render;escape \d+/);
  const pp = await fetch(`${url}/api/v1/query?format=pprof&from=now-5m&max_nodes=1`);
  await page.waitForTimeout(200);
  assert.equal(await page.evaluate(() => document.querySelector('#exp-pprof').hidden), pp.status !== 200, `pprof answers ${pp.status}`);
  await page.click('#export-btn');
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#exp-png')]);
  const path = join(artifacts, 'export.png');
  await dl.saveAs(path);
  const png = readFileSync(path);
  assert.equal(png.subarray(1, 4).toString(), 'PNG');
});

test('selector autocomplete offers label names and values', async (ctx, url) => {
  const page = await open(ctx, flameURL(url));
  await ready(page);
  await page.fill('#query', '');
  await page.focus('#query');
  await page.keyboard.type('{bu');
  await page.waitForFunction(() => !document.querySelector('#ac').hidden && document.querySelector('.ac-head').textContent === 'label');
  assert.ok((await page.$$eval('.ac-item', (i) => i.map((x) => x.textContent))).includes('build'));
  await page.keyboard.press('Tab');
  assert.equal(await page.inputValue('#query'), '{build="');
  await page.waitForFunction(() => !document.querySelector('#ac').hidden && document.querySelector('.ac-head').textContent === 'build value');
  const vals = await page.$$eval('.ac-item', (i) => i.map((x) => x.textContent));
  assert.deepEqual(vals, (await getJSON(url, '/api/v1/label/build/values', { from: FROM, until: UNTIL })).values);
  await shot(page, '10-autocomplete');
});

test('diff of one selector over two time ranges; dragging the timeline selects a range', async (ctx, url) => {
  const p = { view: 'diff', left: SHOP, right: SHOP, from: FROM, until: UNTIL, left_until: String(T + 200), right_from: String(T + 200), right_until: String(T + 500) };
  const page = await open(ctx, `${url}/?${new URLSearchParams(p)}`);
  await ready(page);
  assert.equal(await page.inputValue('#left_until'), String(T + 200));
  const g = await page.evaluate(() => window.__flamedb.layoutOf('json'));
  const [r, gg, b] = await pixel(page, g.x + 3, g.y + 3);
  assert.ok(r > gg + 80 && r > b + 80, `json grew between the ranges: rgb(${r},${gg},${b})`);
  const page2 = await open(ctx, flameURL(url));
  await ready(page2);
  const box = await page2.locator('#timeline').boundingBox();
  await page2.mouse.move(box.x + box.width * 0.25, box.y + 20);
  await page2.mouse.down();
  await page2.mouse.move(box.x + box.width * 0.5, box.y + 20, { steps: 4 });
  await page2.mouse.up();
  await ready(page2);
  await page2.waitForFunction((f) => new URL(location.href).searchParams.get('from') !== f, FROM);
  const sp = new URL(page2.url()).searchParams;
  const span = Number(UNTIL) - Number(FROM);
  assert.ok(Math.abs(Number(sp.get('from')) - (Number(FROM) + span * 0.25)) <= span * 0.02, `from ${sp.get('from')}`);
  assert.ok(Math.abs(Number(sp.get('until')) - (Number(FROM) + span * 0.5)) <= span * 0.02, `until ${sp.get('until')}`);
  await page2.goBack();
  await page2.waitForFunction((f) => document.querySelector('#from').value === f, FROM);
});

test('an empty range offers the newest profile; "Show it" moves the range there and draws it', async (ctx, url) => {
  // no from/until: the default last hour, which holds nothing of archive
  const page = await open(ctx, `${url}/?${new URLSearchParams({ query: 'archive{}' })}`);
  await ready(page);
  const q = await getJSON(url, '/api/v1/query', { query: 'archive{}' });
  assert.equal(q.total, 0);
  assert.deepEqual(q.latest, { from: OLD_T, until: OLD_T + 10 });
  await page.waitForSelector('#latest:not([hidden])');
  const when = new Date(OLD_T * 1000).toISOString().replace('T', ' ').replace(/:00\.000Z$/, 'Z');
  const text = await page.textContent('#latest');
  assert.ok(text.startsWith(`No profiles in this range; the newest is at ${when} (8 days ago) — Show it`), text);
  assert.equal(Number(await page.getAttribute('#latest', 'data-from')), OLD_T);
  assert.equal(await page.evaluate(() => getComputedStyle(document.querySelector('#flame'), '::after').display), 'none',
    'the offer replaces the empty message');
  assert.equal(await page.textContent('#summary'), 'no profiles in this range');
  await shot(page, '14-latest-offer');
  await page.click('#show-latest');
  await page.waitForFunction(() => document.body.dataset.state === 'ready' && window.__flamedb.current.total > 0, null, { timeout: 15000 });
  // the hour ending where the newest profile ends, in the URL like any range change
  const sp = new URL(page.url()).searchParams;
  assert.equal(sp.get('until'), String(OLD_T + 10));
  assert.equal(sp.get('from'), String(OLD_T + 10 - 3600));
  assert.equal(sp.get('query'), 'archive{}');
  assert.equal(await page.inputValue('#from'), String(OLD_T + 10 - 3600));
  assert.ok(await page.isHidden('#latest'), 'the offer is gone');
  const q2 = await getJSON(url, '/api/v1/query', { query: 'archive{}', from: sp.get('from'), until: sp.get('until') });
  assert.equal(q2.profiles, 2);
  assert.equal(q2.samples, 80);
  assert.equal(q2.latest, undefined);
  const summary = await page.textContent('#summary');
  assert.ok(summary.includes('80 samples') && summary.includes('2 profiles'), summary);
  const painted = await page.evaluate(() => {
    const c = window.__flamedb.graph.canvas;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4 * 7) if (d[i]) n++;
    return n;
  });
  assert.ok(painted > 1000, `only ${painted} painted pixels`);
  const dec = await page.evaluate(() => window.__flamedb.layoutOf('decode'));
  assert.ok(dec && dec.total === 65, `decode frame ${JSON.stringify(dec)}`);
  assert.deepEqual(page.errors, []);
  await shot(page, '15-latest-shown');
  // back: the empty hour and its offer again
  await page.goBack();
  await page.waitForSelector('#latest:not([hidden])');
});

test('dark colour scheme at 1280x800', async (ctx, url, browser) => {
  const dctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'dark', acceptDownloads: true });
  try {
    const page = await open(dctx, flameURL(url, { group_by: 'build' }));
    await ready(page);
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    assert.equal(bg, 'rgb(23, 24, 28)');
    await shot(page, '11-dark');
    const page2 = await open(dctx, `${url}/?${new URLSearchParams({ query: 'system{}', from: FROM, until: UNTIL })}`);
    await ready(page2);
    await shot(page2, '12-dark-system');
  } finally { await dctx.close(); }
});

registerViewTests({ test, open, ready, shot, flameURL, FROM, UNTIL, SHOP });
registerNextTests({ test, open, ready, shot, flameURL, FROM, UNTIL, SHOP, T, artifacts });
registerLevelsTests({ test, open, ready, shot, FROM, UNTIL });
registerAgentsTests({ test, open, shot });
registerPanelsTests({ test, open, ready, shot, FROM, UNTIL, T });
registerWallTests({ test, open, ready, shot, FROM, UNTIL });
registerSamplesTests({ test, open, ready, shot, FROM, UNTIL });

// ---------- main ----------
try {
  server = await startServer(bin);
  await loadFixtures(server.url);
} catch (e) {
  console.error('server: ' + e.message);
  failed++;
  finish(1);
}
try {
  browser = await launchChromium();
} catch (e) {
  console.error(e.message);
  await server.stop();
  failed++;
  finish(1);
}
const only = process.env.BROWSER_ONLY;
for (const t of tests) {
  if (only && !t.name.includes(only)) continue;
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light', acceptDownloads: true });
  const t0 = Date.now();
  opened = [];
  try {
    await t.fn(ctx, server.url, browser);
    for (const p of opened) {
      const bad = [...p.errors, ...p.consoleErrors].filter((m) => !(t.allowConsole && t.allowConsole.test(m)));
      assert.ok(!bad.length, `errors in the console of ${p.url()}: ${bad.join(' | ')}`);
    }
    passed++;
    console.log(`ok   ${t.name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${t.name}\n     ${String(e.stack || e).split("\n").slice(0, process.env.BROWSER_LINES ? 40 : 4).join('\n     ')}`);
    try { const p = ctx.pages()[ctx.pages().length - 1]; if (p) await shot(p, 'FAIL-' + t.name.slice(0, 40).replace(/\W+/g, '_')); } catch {}
  } finally {
    await ctx.close();
  }
}
await browser.close();
await server.stop();
finish(failed ? 1 : 0);
