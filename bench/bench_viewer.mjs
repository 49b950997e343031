// bench_viewer.mjs — the viewer's speed on a big graph, in headless chromium.
//
// Starts the real server, pushes one generated profile of ~50,000 distinct
// call-tree nodes (a random recursive tree: every node picks a random earlier
// node as parent, so depth ~ ln n and fan-out varies, with module-style
// names), opens the viewer with max_nodes=0 and measures in the page:
//   * render: FlameGraph.setData (flatten + per-row index) + draw, the cost of
//     a new answer; and draw alone, the cost of a zoom or a search
//   * hover: one mousemove event on the canvas, handled synchronously
//     (binary search + outline + tooltip) — the work per event
// Prints figures and their ratio to the targets (200 ms, 16 ms); never
// passes or fails on a timing.
//
//   node bench/bench_viewer.mjs /abs/path/bin/flamedb [nodes]
import { startServer, ingest, launchChromium } from '../tests/browser/lib.mjs';

const bin = process.argv[2];
const N = Number(process.argv[3] || 50000);

function generate(n) {
  let seed = 42;
  const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
  const parent = new Int32Array(n), names = new Array(n);
  const mods = ['net/http', 'encoding/json', 'runtime', 'db/sql', 'app/handler', 'app/render', 'compress/gzip', 'crypto/tls', 'libc', 'kernel'];
  const lines = [];
  const path = new Array(n);
  for (let i = 0; i < n; i++) {
    parent[i] = i === 0 ? -1 : Math.floor(rnd() * i);
    const m = mods[Math.floor(rnd() * mods.length)];
    names[i] = m === 'kernel' ? `k_func${i}_[k]` : `${m}.Func${i}`;
    path[i] = i === 0 ? names[i] : path[parent[i]] + ';' + names[i];
    lines.push(`${path[i]} ${1 + Math.floor(rnd() * 50)}`);
  }
  return lines.join('\n') + '\n';
}

const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
const p95 = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(s.length * 0.95))]; };

const server = await startServer(bin);
let browser;
try {
  const now = Math.floor(Date.now() / 1000);
  const body = generate(N);
  const t0 = performance.now();
  const ing = await ingest(server.url, { service: 'bench', from: String(now - 600), until: String(now - 590), rate: '100' }, body);
  console.log(`profile: ${ing.stacks} stacks, ${ing.samples} samples, ${(body.length / 1e6).toFixed(1)} MB folded, ingested in ${(performance.now() - t0).toFixed(0)} ms`);
  browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const url = `${server.url}/?${new URLSearchParams({ query: 'bench{}', from: String(now - 900), until: String(now), max_nodes: '0' })}`;
  const t1 = performance.now();
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 60000 });
  const pageLoad = performance.now() - t1;
  const r = await page.evaluate(() => {
    const g = window.__flamedb.graph, cur = window.__flamedb.current;
    const meta = g.meta;
    const render = [], draw = [];
    for (let k = 0; k < 7; k++) {
      const a = performance.now();
      g.setData(cur.tree, meta);
      g.draw();
      render.push(performance.now() - a);
    }
    for (let k = 0; k < 7; k++) { const a = performance.now(); g.draw(); draw.push(performance.now() - a); }
    return { nodes: g.nodes.length, rows: g.rows, render, draw, treeNodes: cur.truncated ? cur.truncated.nodes : null };
  });
  // hover: synthetic mousemove events over the whole canvas, handled synchronously
  const hover = await page.evaluate(() => {
    const g = window.__flamedb.graph, o = g.overlay, rect = o.getBoundingClientRect();
    const times = [];
    let hits = 0, seed = 7;
    const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
    for (let k = 0; k < 2000; k++) {
      const x = rect.left + rnd() * rect.width, y = rect.top + rnd() * Math.min(rect.height, 800);
      const a = performance.now();
      o.dispatchEvent(new MouseEvent('mousemove', { clientX: x, clientY: y, bubbles: true }));
      times.push(performance.now() - a);
      if (g.hoverIdx >= 0) hits++;
    }
    return { times, hits };
  });
  // hover including the browser's frame (paint of tooltip and outline): rAF to rAF
  const frames = await page.evaluate(async () => {
    const g = window.__flamedb.graph, o = g.overlay, rect = o.getBoundingClientRect();
    const out = [];
    for (let k = 0; k < 60; k++) {
      const a = performance.now();
      o.dispatchEvent(new MouseEvent('mousemove', { clientX: rect.left + (k * 97) % rect.width, clientY: rect.top + (k * 37) % Math.min(rect.height, 700), bubbles: true }));
      await new Promise((res) => requestAnimationFrame(() => res()));
      out.push(performance.now() - a);
    }
    return out;
  });
  const rm = median(r.render), dm = median(r.draw), hm = median(hover.times), hp = p95(hover.times);
  console.log(`graph: ${r.nodes} frames laid out (incl. root), ${r.rows} rows visible; page load to ready ${pageLoad.toFixed(0)} ms (fetch + JSON + all panels)`);
  console.log(`render (setData + draw), 7 runs: median ${rm.toFixed(1)} ms, min ${Math.min(...r.render).toFixed(1)}, max ${Math.max(...r.render).toFixed(1)}`);
  console.log(`redraw (zoom/search), 7 runs: median ${dm.toFixed(1)} ms`);
  console.log(`hover: 2000 mousemove events (${hover.hits} over a frame): median ${(hm * 1000).toFixed(0)} us, p95 ${(hp * 1000).toFixed(0)} us, max ${Math.max(...hover.times).toFixed(2)} ms; event to next painted frame median ${median(frames).toFixed(1)} ms (one 60 Hz frame: the work fits inside it)`);
  console.log(`RESULT viewer: render of ${r.nodes - 1} nodes ${rm.toFixed(1)} ms (target <= 200, ratio ${(rm / 200).toFixed(3)}); hover ${hm.toFixed(3)} ms/event p95 ${hp.toFixed(3)} (target < 16, ratio ${(hp / 16).toFixed(4)})`);
} finally {
  if (browser) await browser.close();
  await server.stop();
}
