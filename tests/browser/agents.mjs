// agents.mjs — the Agents page (web/agents.html, issue 13 fleet control):
// agents that sent heartbeats are listed with what they said, as
// GET /api/v1/agents answers it; the filter narrows the rows, a column
// header sorts them.  Registered by run.mjs.
import assert from 'node:assert/strict';
import { getJSON } from './lib.mjs';

async function heartbeat(url, hb) {
  const r = await fetch(`${url}/api/v1/agents/heartbeat`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(hb),
  });
  assert.equal(r.status, 200, `heartbeat of ${hb.id}: HTTP ${r.status} ${await r.text()}`);
}

export function registerAgentsTests({ test, open, shot }) {
  test('agents: the page lists every agent with its labels, state, samples and last error; filter and sort', async (ctx, url) => {
    const now = Math.floor(Date.now() / 1000);
    await heartbeat(url, { id: 'web-1', labels: { node: 'web-1', service: 'shop' }, version: '0.13', state: 'sampling',
      frequency: 99, cpu_seconds: 12.5, rss_bytes: 11 << 20, samples: 123456, profiles_pushed: 40, push_failures: 0,
      spool_waiting: 0, started: now - 600, last_push: now - 5 });
    await heartbeat(url, { id: 'db-7', labels: { node: 'db-7', service: 'db' }, version: '0.13', state: 'ceased',
      frequency: 99, cpu_seconds: 3.25, rss_bytes: 9 << 20, samples: 2000, profiles_pushed: 4, push_failures: 9,
      spool_waiting: 3, started: now - 300, last_push: now - 200, last_error: 'HTTP 429 from the server' });
    const api = await getJSON(url, '/api/v1/agents');
    const ids = api.agents.map((a) => a.id).sort();
    const page = await open(ctx, `${url}/agents.html`);
    const shown = await page.$$eval('#agents tbody tr', (trs) => trs.map((tr) => tr.dataset.id).sort());
    assert.deepEqual(shown, ids, 'every agent of the listing, no other');
    assert.ok(ids.includes('web-1') && ids.includes('db-7'));
    const row = async (id) => page.$eval(`#agents tr[data-id="${id}"]`, (tr) => [...tr.cells].map((c) => c.textContent.trim()));
    const web = await row('web-1'), db = await row('db-7');
    assert.equal(web[1], 'node=web-1, service=shop');
    assert.equal(web[6], (123456).toLocaleString('en-US'));
    assert.equal(db[2], 'ceased');
    assert.equal(db[8], '9');
    assert.equal(db[13], 'HTTP 429 from the server');
    assert.match(await page.textContent('#fleet'), new RegExp(`^${ids.length} agents`));
    // the filter narrows to matching rows
    await page.fill('#filter', '429');
    assert.deepEqual(await page.$$eval('#agents tbody tr', (trs) => trs.map((tr) => tr.dataset.id)), ['db-7']);
    await page.fill('#filter', '');
    // samples, ascending then descending
    await page.click('#agents th[data-k="samples"]');
    let order = await page.$$eval('#agents tbody tr', (trs) => trs.map((tr) => tr.dataset.id));
    assert.ok(order.indexOf('db-7') < order.indexOf('web-1'), `ascending: ${order}`);
    await page.click('#agents th[data-k="samples"]');
    order = await page.$$eval('#agents tbody tr', (trs) => trs.map((tr) => tr.dataset.id));
    assert.ok(order.indexOf('web-1') < order.indexOf('db-7'), `descending: ${order}`);
    // the main page links to it
    const main = await open(ctx, `${url}/`);
    assert.equal(await main.getAttribute('a[href="/agents.html"]', 'href'), '/agents.html');
    assert.deepEqual(page.errors, []);
    assert.deepEqual(page.consoleErrors, []);
    await shot(page, '50-agents');
  });
}
