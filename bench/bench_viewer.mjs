// bench_viewer.mjs — the viewer's speed on big graphs, in headless chromium.
//
// Starts the real server and, for each size (default 50,000 and 1,000,000
// call-tree nodes, the same run), pushes one generated profile (lib.mjs's
// randomTree: every node picks a random earlier node as parent, so depth
// ~ ln n and fan-out varies, with module-style names; every node a folded
// line with its own self; pushed in pieces under --max-body, which the
// query merges), opens the viewer with max_nodes=0 and measures in the
// page:
//   * fetch + parse: /api/v1/query?format=levels fetched (server time and
//     transfer) and JSON.parse'd, with its bytes; the same for the nested
//     format=json, which the viewer read before (its bytes and times, for
//     comparison: the viewer no longer asks for it)
//   * build: tree.js's fromLevels (flat typed arrays) + FlameGraph.setData
//     (x and width per node), and the memory they add per node (chromium's
//     precise memory info, after a forced gc), next to what the parsed
//     nested answer holds (an object per node)
//   * first draw; redraw on zoom (down the widest child eight times and
//     back out, each a full draw), on pan and wheel zoom (a free window
//     moved 50 px at a time, then halved) and on search; what a draw painted (frames and
//     merged sub-pixel runs)
//   * hover: one mousemove event on the canvas, handled synchronously
//   * inverted tree (transforms.js on the flat tree) + setData + draw
// Prints figures and their ratio to the targets (200 ms a frame, 16 ms a
// hover); never passes or fails on a timing.
//
//   node bench/bench_viewer.mjs /abs/path/bin/flamedb [nodes[,nodes...]]
import { startServer, ingest, launchChromium, randomTree } from '../tests/browser/lib.mjs';

const bin = process.argv[2];
const SIZES = (process.argv[3] || '50000,1000000').split(',').map(Number);
const CHUNK = 40e6;            // bytes of folded text a push (--max-body is 64 MiB)

const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
const p95 = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(s.length * 0.95))]; };
const ms = (v) => v.toFixed(v < 10 ? 1 : 0);
const MB = (b) => (b / 1e6).toFixed(1) + ' MB';

// Everything measured inside the page for one service.
async function measure(page, params) {
  return page.evaluate(async (params) => {
    const { fromLevels, emptyTree } = await import('/tree.js');
    const { transformTree } = await import('/transforms.js');
    const g = window.__flamedb.graph, meta = g.meta;
    const heap = () => (performance.memory ? performance.memory.usedJSHeapSize : NaN);
    const out = {};
    const get = async (format) => {
      const a = performance.now();
      const r = await fetch('/api/v1/query?' + new URLSearchParams({ ...params, format }));
      const text = await r.text();
      const b = performance.now();
      const body = JSON.parse(text);
      return { fetch: b - a, parse: performance.now() - b, bytes: text.length, body };
    };
    const settle = async () => { for (let k = 0; k < 3; k++) { if (window.gc) window.gc(); await new Promise((r) => setTimeout(r, 50)); } };
    let nested = await get('json');
    out.json = { fetch: nested.fetch, parse: nested.parse, bytes: nested.bytes };
    // the heap the nested answer holds once parsed (an object per node)
    await settle();
    const hj = heap();
    nested = null;
    await settle();
    out.jsonHeap = hj - heap();
    const lv = await get('levels');
    out.levels = { fetch: lv.fetch, parse: lv.parse, bytes: lv.bytes };
    // build: levels -> Tree -> setData, a few times; heap added by one
    out.build = [];
    out.setData = [];
    let tree;
    for (let k = 0; k < 5; k++) {
      tree = null;
      const a = performance.now();
      tree = fromLevels(lv.body);
      const b = performance.now();
      g.setData(tree, meta);
      out.build.push(b - a);
      out.setData.push(performance.now() - b);
    }
    tree = null;
    g.setData(emptyTree('none'), meta);
    await settle();
    const h0 = heap();
    tree = fromLevels(lv.body);
    g.setData(tree, meta);
    await settle();
    out.heapPerNode = (heap() - h0) / tree.n;

    out.nodes = tree.n;
    out.depth = tree.rowStart.length - 1;
    // first draw: the graph as it opens (root focus)
    g.focus = 0;
    let a = performance.now();
    g.draw();
    out.firstDraw = performance.now() - a;
    out.firstDrawn = g.drawn;
    // zoom: down the widest child eight times, then back out, each a draw
    out.zoom = [];
    out.zoomDrawn = [];
    let i = 0;
    const path = [];
    for (let s = 0; s < 8 && tree.nkids[i]; s++) { i = tree.first[i]; path.push(i); }
    for (const f of [...path, ...path.slice(0, -1).reverse(), 0]) {
      a = performance.now();
      g.focus = f;
      g.draw();
      out.zoom.push(performance.now() - a);
      out.zoomDrawn.push(g.drawn.frames + g.drawn.narrow);
    }
    // pan and wheel zoom: a free window (an eighth of the root) moved by 50 px
    // sixteen times, then narrowed by half eight times around its middle
    out.pan = [];
    g.focus = 0;
    let win = { x0: g.w[0] / 3, w: g.w[0] / 8 };
    for (let k = 0; k < 16; k++) {
      win = { x0: win.x0 + (50 * win.w) / g.width, w: win.w };
      a = performance.now(); g.view = win; g.draw(); out.pan.push(performance.now() - a);
    }
    for (let k = 0; k < 8; k++) {
      win = { x0: win.x0 + win.w / 4, w: win.w / 2 };
      a = performance.now(); g.view = win; g.draw(); out.pan.push(performance.now() - a);
    }
    g.view = null;
    // search: a substring in a tenth of the names, highlighted, redrawn
    out.search = [];
    for (let k = 0; k < 5; k++) { a = performance.now(); g.setSearch('json', false); out.search.push(performance.now() - a); g.setSearch('', false); }
    // hover: 2000 synthetic mousemoves, handled synchronously
    const o = g.overlay, rect = o.getBoundingClientRect();
    out.hover = [];
    let seed = 7;
    const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
    for (let k = 0; k < 2000; k++) {
      const x = rect.left + rnd() * rect.width, y = rect.top + rnd() * Math.min(rect.height, 800);
      a = performance.now();
      o.dispatchEvent(new MouseEvent('mousemove', { clientX: x, clientY: y, bubbles: true }));
      out.hover.push(performance.now() - a);
    }
    o.dispatchEvent(new MouseEvent('mouseleave'));
    // the inverted tree, computed from the flat tree and drawn
    a = performance.now();
    const inv = transformTree(tree, [], { invert: true });
    const b = performance.now();
    g.setData(inv, meta);
    g.draw();
    out.invert = { compute: b - a, show: performance.now() - b, nodes: inv.n };
    g.setData(tree, meta);
    g.draw();
    return out;
  }, params);
}

const server = await startServer(bin);
let browser;
const rows = [];
try {
  browser = await launchChromium(['--enable-precise-memory-info', '--js-flags=--expose-gc']);
  const now = Math.floor(Date.now() / 1000);
  for (const N of SIZES) {
    const service = `bench${N}`;
    const t0 = performance.now();
    const { chunks, bytes } = randomTree(N, CHUNK);
    const t1 = performance.now();
    let stacks = 0;
    const pushes = chunks.length;
    for (let c = 0; c < chunks.length; c++) {
      const ing = await ingest(server.api, { service, from: String(now - 600 + 10 * c), until: String(now - 590 + 10 * c), rate: '100' }, chunks[c]);
      stacks += ing.stacks;
    }
    chunks.length = 0;
    console.log(`${N} nodes: ${stacks} stacks, ${MB(bytes)} folded in ${pushes} pushes; generated in ${ms(t1 - t0)} ms, ingested in ${ms(performance.now() - t1)} ms`);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const params = { query: `${service}{}`, from: String(now - 900), until: String(now), max_nodes: '0' };
    const t2 = performance.now();
    await page.goto(`${server.url}/?${new URLSearchParams(params)}`);
    await page.waitForFunction(() => document.body.dataset.flame === 'ready', null, { timeout: 300000, polling: 20 });
    const flameLoad = performance.now() - t2;
    await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 300000, polling: 100 });
    const pageLoad = performance.now() - t2;
    // the page load's slowest requests (resource timing: request to last byte)
    const slow = await page.evaluate(() => performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/'))
      .map((e) => [new URL(e.name).pathname + ' ' + (new URL(e.name).searchParams.get('format') || new URL(e.name).searchParams.get('group_by') || ''), e.responseEnd - e.startTime, e.encodedBodySize || e.transferSize])
      .sort((a, b) => b[1] - a[1]).slice(0, 4));
    const gcOn0 = await page.evaluate(() => typeof window.gc === 'function' && !!performance.memory);
    const r = await measure(page, params);
    const gcOn = gcOn0;
    await page.close();
    rows.push({ N, pageLoad, flameLoad, ...r });
    const z = median(r.zoom);
    console.log(`  page load: flamegraph drawn after ${ms(flameLoad)} ms (fetch + parse of the levels answer, flat tree, draw), every panel after ${ms(pageLoad)} ms; tree ${r.nodes} nodes incl. root, depth ${r.depth}`);
    console.log(`  slowest requests of the page load: ${slow.map(([n, t, b]) => `${n.trim()} ${ms(t)} ms${b ? ' ' + MB(b) : ''}`).join(', ')}`);
    console.log(`  levels: ${MB(r.levels.bytes)}, fetch ${ms(r.levels.fetch)} ms + parse ${ms(r.levels.parse)} ms; nested json (what the viewer read before): ${MB(r.json.bytes)}, fetch ${ms(r.json.fetch)} ms + parse ${ms(r.json.parse)} ms`);
    console.log(`  build: fromLevels median ${ms(median(r.build))} ms + setData ${ms(median(r.setData))} ms; memory added ${gcOn ? r.heapPerNode.toFixed(0) + ' bytes/node (its typed arrays)' : 'not measured (no gc/precise memory)'}; the parsed nested json held ${gcOn ? (r.jsonHeap / r.nodes).toFixed(0) + ' bytes/node' : '?'}`);
    console.log(`  first draw ${ms(r.firstDraw)} ms (${r.firstDrawn.frames} frames + ${r.firstDrawn.narrow} merged sub-pixel runs); zoom redraw median ${ms(z)} ms, max ${ms(Math.max(...r.zoom))} ms over ${r.zoom.length} zooms (${Math.max(...r.zoomDrawn)} blocks at most); search + redraw median ${ms(median(r.search))} ms; pan/wheel-zoom redraw median ${ms(median(r.pan))} ms, max ${ms(Math.max(...r.pan))} ms`);
    console.log(`  hover: median ${(median(r.hover) * 1000).toFixed(0)} us, p95 ${(p95(r.hover) * 1000).toFixed(0)} us, max ${ms(Math.max(...r.hover))} ms; inverted tree ${ms(r.invert.compute)} ms to compute (${r.invert.nodes} nodes) + ${ms(r.invert.show)} ms setData + draw`);
  }
  for (const r of rows) {
    const worst = Math.max(r.firstDraw, ...r.zoom, ...r.pan);
    console.log(`RESULT viewer ${r.N} nodes: page open to flamegraph drawn ${ms(r.flameLoad)} ms; fetch+parse ${ms(r.levels.fetch + r.levels.parse)} ms (${MB(r.levels.bytes)} levels; nested json ${MB(r.json.bytes)}, ${ms(r.json.fetch + r.json.parse)} ms); build ${ms(median(r.build) + median(r.setData))} ms; first draw ${ms(r.firstDraw)} ms; zoom redraw median ${ms(median(r.zoom))} ms; pan redraw median ${ms(median(r.pan))} ms; worst frame ${ms(worst)} ms (target <= 200, ratio ${(worst / 200).toFixed(3)}); hover p95 ${p95(r.hover).toFixed(3)} ms (target < 16, ratio ${(p95(r.hover) / 16).toFixed(4)})`);
  }
  if (rows.length === 2) {
    const [a, b] = rows;
    console.log(`RESULT viewer ${b.N} / ${a.N} nodes (x${(b.N / a.N).toFixed(0)}): fetch+parse x${((b.levels.fetch + b.levels.parse) / (a.levels.fetch + a.levels.parse)).toFixed(1)}, build x${((median(b.build) + median(b.setData)) / (median(a.build) + median(a.setData))).toFixed(1)}, first draw x${(b.firstDraw / a.firstDraw).toFixed(1)}, zoom redraw x${(median(b.zoom) / median(a.zoom)).toFixed(1)}`);
  }
} finally {
  if (browser) await browser.close();
  await server.stop();
}
