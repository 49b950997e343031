// auth.mjs — the viewer against a server with --auth (issue 12): the page's
// own files load without a token; the first API call answered 401 shows the
// token form with the server's message; a wrong token is asked again; the
// right one draws the flamegraph (the numbers are the API's), is kept for the
// tab (a reload asks nothing) and goes with the exports; a token of two
// tenants is asked for its tenant (X-Scope-OrgID) and then shows that
// tenant's data only.
//
//   node tests/browser/auth.mjs /abs/path/bin/flamedb
//
// Last line: "browser-auth: N passed, M failed"; exit 1 when M > 0.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import assert from 'node:assert/strict';
import { launchChromium } from './lib.mjs';

const bin = process.argv[2];
let passed = 0, failed = 0;
const finish = (code) => { console.log(`browser-auth: ${passed} passed, ${failed} failed`); process.exit(code); };

const sha = (t) => createHash('sha256').update(t).digest('hex');
const TOKEN = 'viewer-token-shop', TOKEN2 = 'viewer-token-two';
const dir = mkdtempSync(join(tmpdir(), 'flamedb-browser-auth-'));
writeFileSync(join(dir, 'tokens'), `shop read,write sha256:${sha(TOKEN)}\nshop|ads read,write sha256:${sha(TOKEN2)}\n`);

async function startServer() {
  const proc = spawn(bin, ['serve', '--listen', '127.0.0.1:0', '--data', join(dir, 'data'), '--auth', join(dir, 'tokens')],
    { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server did not start:\n' + stderr)), 10000);
    proc.stderr.on('data', (b) => {
      stderr += b;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited with ${code}:\n${stderr}`)); });
  });
  return { url, proc };
}

const T = Math.floor(Date.now() / 1000 / 60) * 60 - 900;
const FROM = String(T - 60), UNTIL = String(T + 600);
async function call(url, path, params, { token = TOKEN, org, method = 'GET', body } = {}) {
  const headers = { Authorization: 'Bearer ' + token };
  if (org) headers['X-Scope-OrgID'] = org;
  const r = await fetch(`${url}${path}?${new URLSearchParams(params)}`, { method, headers, body });
  const text = await r.text();
  if (!r.ok) throw new Error(`${path}: ${r.status} ${text}`);
  return text;
}

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

async function open(ctx, url) {
  const page = await ctx.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  await page.goto(url);
  return page;
}
const ready = (page) => page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 15000 });

test('a 401 shows the token form; a wrong token is asked again; the right one draws, is kept, and exports', async (ctx, url) => {
  const page = await open(ctx, `${url}/?${new URLSearchParams({ query: 'shop{}', from: FROM, until: UNTIL })}`);
  await page.waitForSelector('#auth:not([hidden])', { timeout: 15000 });
  assert.match(await page.textContent('#auth-msg'), /needs a token with the 'read' scope/);
  await page.fill('#auth-token', 'not-the-token');
  await page.click('#auth button[type=submit]');
  await page.waitForFunction(() => /not known/.test(document.querySelector('#auth-msg').textContent)
    && !document.querySelector('#auth').hidden, null, { timeout: 15000 });
  await page.fill('#auth-token', TOKEN);
  await page.click('#auth button[type=submit]');
  await ready(page);
  assert.equal(await page.isHidden('#auth'), true);
  const q = JSON.parse(await call(url, '/api/v1/query', { query: 'shop{}', from: FROM, until: UNTIL }));
  assert.match(await page.textContent('#summary'), new RegExp(q.samples.toLocaleString('en-US') + ' samples'));
  assert.equal(await page.evaluate(() => sessionStorage.getItem('flamedb.token')), TOKEN);
  // a reload in the same tab asks nothing
  await page.reload();
  await ready(page);
  assert.equal(await page.isHidden('#auth'), true);
  // the folded export goes with the token
  await page.click('#export-btn');
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#exp-folded')]);
  const got = readFileSync(await dl.path(), 'utf8');
  const want = await call(url, '/api/v1/query', { query: 'shop{}', from: FROM, until: UNTIL, format: 'folded' });
  assert.equal(got, want);
  assert.deepEqual(page.errors, []);
});

test('a token of two tenants is asked for the tenant, then shows that tenant only', async (ctx, url) => {
  const page = await open(ctx, `${url}/?${new URLSearchParams({ query: 'shop{}', from: FROM, until: UNTIL })}`);
  await page.waitForSelector('#auth:not([hidden])', { timeout: 15000 });
  await page.fill('#auth-token', TOKEN2);
  await page.click('#auth button[type=submit]');
  await page.waitForFunction(() => /X-Scope-OrgID is required/.test(document.querySelector('#auth-msg').textContent)
    && !document.querySelector('#auth').hidden, null, { timeout: 15000 });
  await page.fill('#auth-token', TOKEN2);
  await page.fill('#auth-tenant', 'ads');
  await page.click('#auth button[type=submit]');
  await ready(page);
  const q = JSON.parse(await call(url, '/api/v1/query', { query: 'shop{}', from: FROM, until: UNTIL }, { token: TOKEN2, org: 'ads' }));
  const shop = JSON.parse(await call(url, '/api/v1/query', { query: 'shop{}', from: FROM, until: UNTIL }));
  assert.notEqual(q.samples, shop.samples);
  assert.match(await page.textContent('#summary'), new RegExp(q.samples.toLocaleString('en-US') + ' samples'));
  assert.deepEqual(page.errors, []);
});

let server, browser;
try {
  server = await startServer();
  const w = (t) => ({ from: String(t), until: String(t + 10) });
  await call(server.url, '/api/v1/ingest', { service: 'shop', ...w(T) }, { method: 'POST', body: 'main;serve;parse 30\nmain;gc 5\n' });
  await call(server.url, '/api/v1/ingest', { service: 'shop', ...w(T + 60) }, { method: 'POST', body: 'main;serve;render 12\n' });
  await call(server.url, '/api/v1/ingest', { service: 'shop', ...w(T + 30) },
    { token: TOKEN2, org: 'ads', method: 'POST', body: 'main;ads;bid 7\n' });
  browser = await launchChromium();
} catch (e) {
  console.log(`FAIL setup: ${e.message}`);
  failed++;
  if (server) server.proc.kill('SIGTERM');
  finish(1);
}
for (const t of tests) {
  const t0 = Date.now();
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  try {
    await t.fn(ctx, server.url);
    passed++;
    console.log(`ok   ${t.name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${t.name}\n     ${String(e.stack || e).split('\n').slice(0, 6).join('\n     ')}`);
  } finally {
    await ctx.close();
  }
}
await browser.close();
server.proc.kill('SIGTERM');
await new Promise((r) => server.proc.once('exit', r));
rmSync(dir, { recursive: true, force: true });
finish(failed ? 1 : 0);
