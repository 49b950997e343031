// screenshot.mjs — regenerates the viewer's screenshot in README.md
// (`make screenshot`): the real server with a throw-away data directory,
// the real system-wide profile of ../shared/data/system-mix.folded pushed as
// one series per process (its root frame) every minute over the last half
// hour, each process's weight swinging a little from push to push, and
// the viewer at 1280x800 split by process with the timeline grouped by it.
//
//   node tests/browser/screenshot.mjs /abs/path/bin/flamedb docs/screenshot.png
import { readFileSync, existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, ingest, launchChromium } from './lib.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../..');
const [bin, outArg] = process.argv.slice(2);
const out = resolve(outArg || join(repo, 'docs/screenshot.png'));
function join(...p) { return resolve(...p); }

const mixPath = resolve(repo, '../shared/data/system-mix.folded');
if (!existsSync(mixPath)) {
  console.error(`screenshot: ${mixPath} is missing (the real profile the screenshot shows)`);
  process.exit(1);
}
// stacks by process: "proc;a;b N" -> byProc[proc] = ["a;b N", ...]
const byProc = new Map();
for (const line of readFileSync(mixPath, 'utf8').split('\n')) {
  const m = /^([^;]+);(.*) (\d+)$/.exec(line);
  if (!m || m[1].startsWith(':')) continue;
  if (!byProc.has(m[1])) byProc.set(m[1], []);
  byProc.get(m[1]).push([m[2], Number(m[3])]);
}

const server = await startServer(bin);
let browser;
try {
  const now = Math.floor(Date.now() / 1000);
  const procs = [...byProc.keys()];
  for (let k = 0; k < 30; k++) {
    const t = now - 1800 + k * 60;
    for (const [i, p] of procs.entries()) {
      // a slow swing per process, so the timeline's lines move apart
      const f = 0.55 + 0.45 * (1 + Math.sin(k / 4.4 + i * 1.7)) / 2 + (p === 'python3' && k >= 18 ? 0.6 : 0);
      const body = byProc.get(p).map(([s, n]) => [s, Math.round(n * f)]).filter(([, n]) => n > 0).map(([s, n]) => `${s} ${n}`).join('\n');
      if (!body) continue;
      await ingest(server.url, { service: 'node', process: p, host: 'build-1', rate: '499', from: String(t), until: String(t + 12) }, body + '\n');
    }
  }
  browser = await launchChromium();
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light', deviceScaleFactor: 1 });
  const page = await ctx.newPage();
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(e.message));
  const q = new URLSearchParams({ query: 'node{}', from: String(now - 1860), until: String(now), split: 'process', group_by: 'process', tab: 'top', max_nodes: '0', layout: 'icicle' });
  await page.goto(`${server.url}/?${q}`);
  await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 20000 });
  await page.waitForTimeout(300);
  if (errors.length) throw new Error('console errors: ' + errors.join(' | '));
  await page.screenshot({ path: out });
  console.log(`screenshot: ${out}`);
} finally {
  if (browser) await browser.close();
  await server.stop();
}
