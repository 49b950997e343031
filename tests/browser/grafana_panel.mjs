// grafana_panel.mjs — flamedb's SelectMergeStacktraces answer drawn by
// Grafana's own flame graph panel (@grafana/flamegraph from npm, issue 11),
// in Debian's chromium driven by playwright-core.
//
// tests/browser/grafana/entry.jsx is bundled by esbuild into a temporary
// directory and served, with a small page, by a static server of this test;
// the flamedb under test runs with --cors-origin naming that server, so the
// page calls it cross-origin as a browser client would. Known stacks are
// pushed as folded text; every number the test expects is computed here
// from that text (never read back from flamedb), and compared with what the
// panel shows: the rows of its top table (symbol, self, total, in its
// default order, self descending), the tooltip of every frame of the flame
// graph (name, exact value as "Samples", share of the total), and a canvas
// that is painted. A series of another service must not show.
//
//   node tests/browser/grafana_panel.mjs /abs/path/bin/flamedb
//
// Needs tests/browser/grafana/node_modules (`make browser` installs it with
// npm ci). Last line: "browser-grafana: N passed, M failed"; exit 1 when
// M > 0. Screenshots: tests/artifacts/grafana-panel{,-tooltip,-table}.png.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { launchChromium } from './lib.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../..');
const pkg = join(here, 'grafana');
const artifacts = join(repo, 'tests/artifacts');
mkdirSync(artifacts, { recursive: true });

const bin = process.argv[2];
let passed = 0, failed = 0;
const finish = (code) => { console.log(`browser-grafana: ${passed} passed, ${failed} failed`); process.exit(code); };
const t0 = Date.now();

// ---------- fixtures: folded text, 100 Hz, so one sample is 10 ms ----------
const RATE = 100, NS = 1e9 / RATE;
const T = Math.floor(Date.now() / 1000 / 60) * 60 - 1200;   // 20 minutes ago, on a minute
const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';
// json under two parents (the top table adds them up); every parent with a
// single child has self of its own, so the panel collapses no frame
const shop1 = 'main;handle;parse;json 120\nmain;handle;parse 35\nmain;handle;render;json 300\nmain;handle;render 200\n' +
  'main;handle 50\nmain;gc 80\nmain 7\nbg;flush 40\nbg 5\n';
const shop2 = 'main;handle;render;json 100\nmain;gc 20\nbg;flush;fsync 30\n';
const other = 'main;secret 999\n';   // another service: not selected

// The tree of the shop stacks, in nanoseconds: path -> {total, self}, and
// per function what Grafana's top table shows: the sum over its frames.
function expected(texts) {
  const nodes = new Map([['', { name: 'total', total: 0, self: 0, depth: 0 }]]);
  for (const text of texts) {
    for (const line of text.split('\n').filter(Boolean)) {
      const sp = line.lastIndexOf(' ');
      const frames = line.slice(0, sp).split(';'), v = Number(line.slice(sp + 1)) * NS;
      nodes.get('').total += v;
      let path = '';
      frames.forEach((f, i) => {
        path += (i ? ';' : '') + f;
        if (!nodes.has(path)) nodes.set(path, { name: f, total: 0, self: 0, depth: i + 1 });
        const n = nodes.get(path);
        n.total += v;
        if (i === frames.length - 1) n.self += v;
      });
    }
  }
  const functions = new Map();
  for (const n of nodes.values()) {
    const f = functions.get(n.name) || { self: 0, total: 0 };
    f.self += n.self;
    f.total += n.total;
    functions.set(n.name, f);
  }
  return { nodes, functions, total: nodes.get('').total };
}
const want = expected([shop1, shop2]);

// ---------- the servers ----------
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.ttf': 'font/ttf', '.svg': 'image/svg+xml' };
const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>flamedb in Grafana's flame graph panel</title>
<link rel="icon" href="data:,"><link rel="stylesheet" href="/entry.css">
<style>body{margin:0;font-family:Inter,Helvetica,Arial,sans-serif;background:#fff}#panel{height:1000px;padding:8px;box-sizing:border-box}</style>
</head><body><div id="error"></div><div id="panel"></div><script type="module" src="/entry.js"></script></body></html>`;

async function bundle(out) {
  const require = createRequire(join(pkg, 'package.json'));
  let esbuild;
  try {
    esbuild = require('esbuild');
    require.resolve('@grafana/flamegraph');
  } catch (e) {
    throw new Error(`tests/browser/grafana's packages are not installed (make browser runs npm ci there): ${e.message.split('\n')[0]}`);
  }
  await esbuild.build({
    entryPoints: [join(pkg, 'entry.jsx')], bundle: true, outdir: out, format: 'esm', jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"production"' }, logLevel: 'error',
    loader: { '.svg': 'file', '.ttf': 'file', '.woff': 'file', '.woff2': 'file', '.png': 'file' },
  });
}

// The bundle from dir; under /public/ the files Grafana serves there for
// @grafana/ui (its icons), from the package.
async function staticServer(dir) {
  const server = createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    const root = path.startsWith('/public/') ? join(pkg, 'node_modules/@grafana/ui/dist') : dir;
    const file = join(root, path);
    if (path === '/') { res.writeHead(200, { 'content-type': TYPES['.html'] }); res.end(PAGE); return; }
    if (file.startsWith(root + '/') && existsSync(file)) {
      res.writeHead(200, { 'content-type': TYPES[extname(file)] || 'application/octet-stream' });
      res.end(readFileSync(file));
      return;
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${server.address().port}` };
}

async function startFlamedb(data, origin) {
  if (!bin || !existsSync(bin)) throw new Error(`flamedb binary not found: ${bin}`);
  const proc = spawn(bin, ['serve', '--listen', '127.0.0.1:0', '--data', data, '--cors-origin', origin], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const url = await new Promise((res, rej) => {
    const timer = setTimeout(() => rej(new Error('flamedb did not print its address within 10 s:\n' + stderr)), 10000);
    proc.stderr.on('data', (b) => {
      stderr += b;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr);
      if (m) { clearTimeout(timer); res(m[1]); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); rej(new Error(`flamedb exited with ${code}:\n${stderr}`)); });
  });
  proc.stderr.on('data', () => {});
  return { url, proc };
}

async function ingest(url, params, body) {
  const r = await fetch(`${url}/api/v1/ingest?${new URLSearchParams(params)}`, { method: 'POST', body });
  if (!r.ok) throw new Error(`ingest ${JSON.stringify(params)}: ${r.status} ${await r.text()}`);
}

// ---------- reading the panel ----------
// The value a cell shows ("1.20 s", "800 ms") back in nanoseconds, with the
// half-unit of its last digit: the rounding the display may have done.
const SCALE = { ns: 1, 'µs': 1e3, us: 1e3, ms: 1e6, s: 1e9, min: 60e9, hour: 3600e9 };
function parseDuration(text) {
  const m = /^(-?\d+(?:\.(\d+))?)\s*(ns|µs|us|ms|s|min|hour)$/.exec(text.trim());
  assert.ok(m, `"${text}" is not a duration`);
  const scale = SCALE[m[3]];
  return { ns: Number(m[1]) * scale, slack: 0.5 * 10 ** -(m[2] ? m[2].length : 0) * scale };
}
const share = (v) => Math.round(1e4 * v / want.total) / 100;   // as the panel rounds a percentage

// The frames as the panel lays them out: the answer's levels decoded here
// (x offset, total, self, name index), each frame's path through its parent.
function framesOf(fg) {
  const out = [];
  let above = [];
  for (const [depth, l] of fg.levels.entries()) {
    const v = l.values.map(Number), row = [];
    let x = 0;
    for (let i = 0; i < v.length; i += 4) {
      const start = x + v[i], f = { depth, start, total: v[i + 1], name: fg.names[v[i + 3]] };
      x = start + f.total;
      const parent = above.find((p) => p.start <= start && start + f.total <= p.start + p.total);
      f.path = depth === 0 ? '' : depth === 1 ? f.name : `${parent.path};${f.name}`;
      row.push(f);
    }
    out.push(...row);
    above = row;
  }
  return out;
}

// ---------- tests ----------
const tests = [];
const test = (name, fn) => tests.push({ name, fn });
let ctx, page, flamedb, site;

const pageURL = (labelSelector) => `${site.url}/?${new URLSearchParams({
  api: flamedb.url, profileTypeID: CPU, labelSelector, start: String((T - 60) * 1000), end: String((T + 600) * 1000) })}`;

// Every page error, console error or failed request fails the test, but
// one: the header's "Collapse all groups" button asks for an icon that
// @grafana/ui 11.3.1 does not ship in its package (Grafana's server has it).
const MISSING_ICON = /\/public\/img\/icons\/unicons\/angle-double-up\.svg$/;
async function open(url) {
  const p = await ctx.newPage();
  p.errors = [];
  p.on('pageerror', (e) => p.errors.push(e.message));
  p.on('console', (m) => { if (m.type() === 'error' && !MISSING_ICON.test(m.location().url)) p.errors.push(`${m.text()} (${m.location().url})`); });
  p.on('response', (r) => { if (r.status() >= 400 && !MISSING_ICON.test(r.url())) p.errors.push(`HTTP ${r.status()} ${r.url()}`); });
  await p.goto(url);
  try {
    await p.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.state), null, { timeout: 30000 });
  } catch (e) {
    throw new Error(`the page did not draw the panel: ${e.message.split('\n')[0]}; errors: ${p.errors.join(' | ') || 'none'}`);
  }
  const state = await p.evaluate(() => document.body.dataset.state);
  assert.equal(state, 'ready', 'the page: ' + await p.textContent('#error'));
  return p;
}

test('the panel draws the flame graph of the selected service', async () => {
  page = await open(pageURL('{service_name="shop"}'));
  // one row per tree node: the answer was turned into the whole nested set
  assert.equal(Number(await page.evaluate(() => document.body.dataset.rows)), want.nodes.size);
  const canvas = page.locator('[data-testid="flameGraph"]');
  await canvas.waitFor();
  const stats = await page.evaluate(() => {
    const c = document.querySelector('[data-testid="flameGraph"]');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let painted = 0;
    const colours = new Set();
    for (let i = 0; i < d.length; i += 4) {
      if (d[i + 3] && !(d[i] > 245 && d[i + 1] > 245 && d[i + 2] > 245)) { painted++; colours.add(d[i] << 16 | d[i + 1] << 8 | d[i + 2]); }
    }
    return { painted, colours: colours.size, w: c.width, h: c.height };
  });
  const depth = Math.max(...[...want.nodes.values()].map((n) => n.depth)) + 1;
  assert.ok(stats.w > 300 && stats.h >= depth * 22, `canvas ${stats.w}x${stats.h} for ${depth} levels`);
  assert.ok(stats.painted > stats.w * 22, `only ${stats.painted} painted pixels`);
  assert.ok(stats.colours > 5, `only ${stats.colours} colours`);
  await page.screenshot({ path: join(artifacts, 'grafana-panel.png') });
  assert.deepEqual(page.errors, []);
});

test('hovering each frame shows its name, exact value and share of the total', async () => {
  const r = await fetch(`${flamedb.url}/querier.v1.QuerierService/SelectMergeStacktraces`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ profileTypeID: CPU, labelSelector: '{service_name="shop"}', start: String((T - 60) * 1000), end: String((T + 600) * 1000) }),
  });
  const frames = framesOf((await r.json()).flamegraph);
  assert.deepEqual(frames.map((f) => f.path).sort(), [...want.nodes.keys()].sort(), 'the frames are the stacks pushed');
  const box = await page.locator('[data-testid="flameGraph"]').boundingBox();
  for (const f of frames) {
    const x = box.x + (f.start + f.total / 2) / want.total * box.width, y = box.y + f.depth * 22 + 11;
    await page.mouse.move(x, y);
    const tip = page.locator('p', { hasText: 'Samples:' });
    await tip.waitFor();
    const text = (await tip.locator('..').innerText()).replace(/\s+/g, ' ');
    const n = want.nodes.get(f.path);
    const samples = /Samples: ([\d,.\s]+)/.exec(text);
    assert.ok(text.startsWith(n.name + ' '), `frame ${f.path || 'total'}: tooltip "${text}"`);
    assert.ok(samples && Number(samples[1].replace(/\D/g, '')) === n.total, `frame ${f.path || 'total'}: ${n.total} expected, tooltip "${text}"`);
    assert.ok(text.includes(`(${share(n.total)}%) Self:`) && text.includes(`(${share(n.self)}%) Samples`), `frame ${f.path || 'total'}: shares ${share(n.total)}% / ${share(n.self)}%, tooltip "${text}"`);
    if (f.path === 'main;handle;render;json') await page.screenshot({ path: join(artifacts, 'grafana-panel-tooltip.png') });
    await page.mouse.move(box.x + box.width / 2, box.y + box.height + 40);   // off the graph: the tooltip goes
    await tip.waitFor({ state: 'detached' });
  }
  assert.deepEqual(page.errors, []);
});

test("the panel's top table lists every function with its self and total, self descending", async () => {
  await page.getByRole('radio', { name: 'Top Table' }).check();   // the table alone: tall enough for every row
  await page.waitForFunction((n) => document.querySelectorAll('[data-testid="topTable"] [role="row"] [role="cell"]').length >= n,
    want.functions.size * 3, { timeout: 10000 });
  const rows = await page.$$eval('[data-testid="topTable"] [role="row"]', (rs) =>
    rs.map((r) => [...r.querySelectorAll('[role="cell"]')].map((c) => c.textContent.trim())).filter((c) => c.length));
  const header = await page.$$eval('[data-testid="topTable"] [role="columnheader"]', (hs) => hs.map((h) => h.textContent.trim()));
  const iSym = header.indexOf('Symbol'), iSelf = header.indexOf('Self'), iTotal = header.indexOf('Total');
  assert.ok(iSym >= 0 && iSelf >= 0 && iTotal >= 0, `columns ${JSON.stringify(header)}`);
  const shown = rows.map((c) => c[iSym]);
  assert.deepEqual([...shown].sort(), [...want.functions.keys()].sort(), 'the symbols');
  assert.ok(!shown.includes('secret'), 'another service is not drawn');
  for (const c of rows) {
    const f = want.functions.get(c[iSym]);
    for (const [col, v] of [[iSelf, f.self], [iTotal, f.total]]) {
      const d = parseDuration(c[col]);
      assert.ok(Math.abs(d.ns - v) <= d.slack, `${c[iSym]}: "${c[col]}" shown for ${v} ns`);
    }
  }
  const bySelf = [...want.functions.entries()].sort((a, b) => b[1].self - a[1].self).map(([n]) => n);
  assert.deepEqual(shown, bySelf, 'sorted by self, descending');
  await page.screenshot({ path: join(artifacts, 'grafana-panel-table.png') });
});

test('a selector of no data draws an empty panel, not an error', async () => {
  const p = await open(pageURL('{service_name="nothing"}'));
  // flamedb answers the root alone, of 0: one row, the top table lists it only
  assert.equal(Number(await p.evaluate(() => document.body.dataset.rows)), 1);
  await p.getByRole('radio', { name: 'Top Table' }).check();
  const symbols = await p.$$eval('[data-testid="topTable"] [role="row"]', (rs) => rs.map((r) => r.querySelectorAll('[role="cell"]')).filter((c) => c.length).map((c) => [...c].map((x) => x.textContent.trim())));
  assert.deepEqual(symbols.map((c) => c.filter(Boolean)), [['total', '0 ns', '0 ns']]);
  assert.deepEqual(p.errors, []);
});

// ---------- main ----------
const work = mkdtempSync(join(tmpdir(), 'flamedb-grafana-panel-'));
let browser;
// stopped (Ctrl-C, a timeout): the server and the files go too
process.on('exit', () => {
  if (flamedb && flamedb.proc.exitCode === null) flamedb.proc.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(1));
try {
  const tb = Date.now();
  await bundle(join(work, 'www'));
  const bundleMs = Date.now() - tb;
  site = await staticServer(join(work, 'www'));
  flamedb = await startFlamedb(join(work, 'data'), site.url);
  const w = (t) => ({ from: String(t), until: String(t + 10) });
  await ingest(flamedb.url, { service: 'shop', rate: String(RATE), ...w(T) }, shop1);
  await ingest(flamedb.url, { service: 'shop', rate: String(RATE), ...w(T + 60) }, shop2);
  await ingest(flamedb.url, { service: 'other', rate: String(RATE), ...w(T + 30) }, other);
  browser = await launchChromium();
  ctx = await browser.newContext({ viewport: { width: 1400, height: 1100 }, colorScheme: 'light', locale: 'en-US' });
  console.log(`     (bundle ${bundleMs} ms)`);
} catch (e) {
  console.error('setup: ' + e.message);
  failed++;
}
if (!failed) {
  for (const t of tests) {
    const ts = Date.now();
    try {
      await t.fn();
      passed++;
      console.log(`ok   ${t.name} (${Date.now() - ts} ms)`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${t.name}\n     ${String(e.stack || e).split('\n').slice(0, process.env.BROWSER_LINES ? 40 : 4).join('\n     ')}`);
      try { if (page) await page.screenshot({ path: join(artifacts, 'FAIL-grafana-panel.png') }); } catch {}
    }
  }
}
try { if (browser) await browser.close(); } catch {}
if (site) site.server.close();
if (flamedb && flamedb.proc.exitCode === null) {
  const done = new Promise((r) => flamedb.proc.once('exit', r));
  flamedb.proc.kill('SIGTERM');
  await Promise.race([done, new Promise((r) => setTimeout(r, 5000))]);
  if (flamedb.proc.exitCode === null) flamedb.proc.kill('SIGKILL');
}
rmSync(work, { recursive: true, force: true });
console.log(`     (${Date.now() - t0} ms in all)`);
finish(failed ? 1 : 0);
