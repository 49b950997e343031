// lib.mjs — shared by the browser tests and bench/bench_viewer.mjs: start the
// real flamedb server on a free port with a throw-away data directory, push
// profiles through the HTTP API, and launch Debian's chromium.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

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
  return { url, proc, dir, stop };
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

export async function launchChromium() {
  let chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch (e) {
    throw new Error(`playwright-core is not installed (run make, which runs npm ci): ${e.message}`);
  }
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (make deps)`);
  try {
    return await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 30000 });
  } catch (e) {
    throw new Error(`chromium could not start: ${e.message.split('\n').slice(0, 6).join('\n')}`);
  }
}
