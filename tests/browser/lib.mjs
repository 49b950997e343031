// lib.mjs — shared by the browser tests and bench/bench_viewer.mjs: start the
// real flamedb server on a free port with a throw-away data directory, push
// profiles through the HTTP API, and launch Debian's chromium.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve, extname } from 'node:path';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--no-first-run', '--disable-quic', '--disable-sync'];

export async function startServer(bin) {
  if (!bin || !existsSync(bin)) throw new Error(`flamedb binary not found: ${bin}`);
  const dir = mkdtempSync(join(tmpdir(), 'flamedb-browser-'));
  const proc = spawn(bin, ['serve', '--listen', '127.0.0.1:0', '--data', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server did not print its address within 10 s:\n' + stderr)), 10000);
    proc.stderr.on('data', (b) => {
      stderr += b;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited with ${code}:\n${stderr}`)); });
  });
  proc.stderr.on('data', () => {});
  const stop = async () => {
    if (proc.exitCode === null) {
      const done = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await Promise.race([done, new Promise((r) => setTimeout(r, 5000))]);
      if (proc.exitCode === null) proc.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
  };
  // FLAMEDB_WEB_DIR=web: a development aid. The pages are served from that
  // directory on every request (no rebuild of the binary after each edit of
  // web/), everything else is passed to the server. `make browser` never sets
  // it: the tests run against the files compiled into the binary.
  if (process.env.FLAMEDB_WEB_DIR) {
    const px = await webProxy(url, resolve(process.env.FLAMEDB_WEB_DIR));
    return { url: px.url, api: url, proc, dir, stop: async () => { px.server.close(); await stop(); } };
  }
  // api: the server itself (with FLAMEDB_WEB_DIR, url is the page proxy)
  return { url, api: url, proc, dir, stop };
}

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };
async function webProxy(backend, dir) {
  const server = createServer(async (req, res) => {
    const path = req.url.split('?')[0];
    const file = path === '/' ? join(dir, 'index.html') : join(dir, path);
    if (!path.startsWith('/api/') && file.startsWith(dir) && existsSync(file)) {
      res.writeHead(200, { 'content-type': TYPES[extname(file)] || 'application/octet-stream' });
      res.end(readFileSync(file));
      return;
    }
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const r = await fetch(backend + req.url, { method: req.method, headers: { ...req.headers, host: new URL(backend).host }, body: chunks.length ? Buffer.concat(chunks) : undefined });
    const h = {};
    r.headers.forEach((v, k) => { if (!['content-encoding', 'content-length', 'transfer-encoding'].includes(k)) h[k] = v; });
    res.writeHead(r.status, h);
    res.end(Buffer.from(await r.arrayBuffer()));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${server.address().port}` };
}

export async function ingest(url, params, body) {
  const r = await fetch(`${url}/api/v1/ingest?${new URLSearchParams(params)}`, { method: 'POST', body });
  const text = await r.text();
  if (!r.ok) throw new Error(`ingest ${JSON.stringify(params)}: ${r.status} ${text}`);
  return JSON.parse(text);
}

export async function getJSON(url, path, params = {}) {
  const r = await fetch(`${url}${path}?${new URLSearchParams(params)}`);
  const body = await r.json();
  if (!r.ok) throw new Error(`${path}: ${r.status} ${body.error}`);
  return body;
}

// extra: more chromium flags (the viewer bench asks for precise memory figures)
export async function launchChromium(extra = []) {
  let chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch (e) {
    throw new Error(`playwright-core is not installed (run make, which runs npm ci): ${e.message}`);
  }
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (make deps)`);
  try {
    return await chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS, ...extra], timeout: 30000 });
  } catch (e) {
    throw new Error(`chromium could not start: ${e.message.split('\n').slice(0, 6).join('\n')}`);
  }
}

// A random recursive call tree of n nodes as folded text (bench_viewer.mjs
// and the browser tests of large trees): every node picks a random earlier
// node as its parent, so depth ~ ln n and fan-out varies, with module-style
// names (each distinct: FuncN); every node is a line, its path and a self of
// 1 to 50. In pieces of at most `chunk` bytes, to push under --max-body.
export function randomTree(n, chunk = 40e6) {
  let seed = 42;
  const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
  const parent = new Int32Array(n), names = new Array(n);
  const mods = ['net/http', 'encoding/json', 'runtime', 'db/sql', 'app/handler', 'app/render', 'compress/gzip', 'crypto/tls', 'libc', 'kernel'];
  const chunks = [];
  let lines = [], bytes = 0, total = 0;
  const chain = [];
  for (let i = 0; i < n; i++) {
    parent[i] = i === 0 ? -1 : Math.floor(rnd() * i);
    const m = mods[Math.floor(rnd() * mods.length)];
    names[i] = m === 'kernel' ? `k_func${i}_[k]` : `${m}.Func${i}`;
    chain.length = 0;
    for (let j = i; j >= 0; j = parent[j]) chain.push(names[j]);
    const line = `${chain.reverse().join(';')} ${1 + Math.floor(rnd() * 50)}`;
    if (bytes + line.length + 1 > chunk) { chunks.push(lines.join('\n') + '\n'); lines = []; bytes = 0; }
    lines.push(line);
    bytes += line.length + 1;
    total += line.length + 1;
  }
  chunks.push(lines.join('\n') + '\n');
  return { chunks, bytes: total };
}
