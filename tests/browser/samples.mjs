// samples.mjs — browser tests of sample labels in the viewer (issue 11,
// point 5): pprof Sample.label (span_id, endpoint) listed by the label
// browser only when asked (the page's load never scans the stacks), a value
// filtering the flamegraph, and split by one drawing a root frame per value
// (split=sample:KEY, one /api/v1/query?group_by_sample=KEY), from the label
// browser, the split picker and the right-click menu. Registered by run.mjs;
// what is drawn is checked against the API's own answers.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getJSON, ingest } from './lib.mjs';
import { stacksOf, totalsOf, drawnTotals, eqTotals, frameBox } from './views.mjs';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SPANS = 'spans{}';

// One CPU profile in pprof with sample labels, written by the integration
// tests' encoder (tests/integration/pprof_labels.py).
export async function loadSamplesFixtures(url, T) {
  const dir = mkdtempSync(join(tmpdir(), 'flamedb-samples-'));
  try {
    const spec = {
      types: [['cpu', 'nanoseconds']],
      samples: [
        { stack: 'main;handle;parse', values: [30000000], labels: { span_id: 'a1', endpoint: '/api' } },
        { stack: 'main;handle;render', values: [50000000], labels: { span_id: 'b2', endpoint: '/api' } },
        { stack: 'main;handle;render', values: [10000000], labels: { span_id: 'a1', endpoint: '/api' } },
        { stack: 'main;gc', values: [20000000] },
      ],
    };
    writeFileSync(join(dir, 'spec.json'), JSON.stringify(spec));
    execFileSync('python3', [join(repo, 'tests/integration/pprof_labels.py'), join(dir, 'spec.json'), join(dir, 'p.pb')]);
    await ingest(url, { service: 'spans', format: 'pprof', from: String(T + 100), until: String(T + 110) }, readFileSync(join(dir, 'p.pb')));
  } finally { rmSync(dir, { recursive: true, force: true }); }
}

export function registerSamplesTests({ test, open, ready, shot, FROM, UNTIL }) {
  const range = { from: FROM, until: UNTIL };
  const url0 = (url, extra = {}) => `${url}/?${new URLSearchParams({ query: SPANS, ...range, ...extra })}`;
  const labelsReady = (page) => page.waitForFunction(() => document.querySelector('#labels-list').dataset.ready, null, { timeout: 5000 });
  // the browser's requests for sample labels (the ones that read stacks)
  const watch = (page) => { const seen = []; page.on('request', (r) => { if (/[?&]sample_labels=1/.test(r.url())) seen.push(r.url()); }); return seen; };

  test('sample labels: listed only when asked, a value filters the flamegraph, split by one draws a root per value', async (ctx, url) => {
    const page = await open(ctx, url0(url));
    const scans = watch(page);
    await ready(page);
    assert.equal(scans.length, 0, 'the page load lists no sample labels');
    // the label browser: series labels, then the entry that lists sample labels
    await page.click('#labels-btn');
    await labelsReady(page);
    assert.ok(await page.$('#labels-list [data-sample-load]'), 'an entry lists the sample labels');
    assert.equal(scans.length, 0, 'opening the label browser lists none either');
    await page.click('#labels-list [data-sample-load]');
    await page.waitForSelector('#labels-list [data-label="span_id"][data-sample]');
    assert.equal(scans.length, 1, 'asked: one request');
    const api = await getJSON(url, '/api/v1/labels', { query: SPANS, ...range, sample_labels: 1 });
    const listed = await page.$$eval('#labels-list [data-sample]', (x) => x.map((y) => y.dataset.label));
    assert.deepEqual(listed, api.sample_labels.map((l) => l.name), 'the API\'s sample labels');
    assert.ok((await page.textContent('#labels-list [data-label="span_id"]')).includes('2 values · sample label'));
    await shot(page, '61-labels-sample-labels');
    // a sample label's values; one filters the graph as a series label's does
    await page.click('#labels-list [data-label="span_id"] b');
    await page.waitForSelector('#labels-list [data-name="span_id"][data-value="a1"]');
    assert.deepEqual(await page.$$eval('#labels-list [data-name="span_id"]', (x) => x.map((y) => y.dataset.value)), ['a1', 'b2']);
    await page.click('#labels-list [data-name="span_id"][data-value="a1"]');
    await page.waitForFunction(() => (new URL(location.href).searchParams.get('query') || '').includes('span_id="a1"'));
    await ready(page);
    const qa = await getJSON(url, '/api/v1/query', { query: '{service="spans",span_id="a1"}', ...range, max_nodes: 0 });
    assert.equal(qa.total, 40000000, 'the API keeps span a1\'s stacks only');
    eqTotals(await drawnTotals(page), totalsOf(stacksOf(qa.tree)), 'the filtered tree');
    assert.equal(await page.getAttribute('#timeline', 'data-refused'), '1', 'the timeline says it cannot (profile totals, not stacks)');
    assert.ok(await page.$eval('#error', (e) => e.hidden), 'no error shown');
    // split by span_id from the label browser: one root frame per value
    await page.goto(url0(url));
    await ready(page);
    await page.click('#labels-btn');
    await labelsReady(page);
    await page.click('#labels-list [data-sample-load]');
    await page.click('#labels-list [data-label="span_id"] [data-split]');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('split') === 'sample:span_id');
    await ready(page);
    const g = await getJSON(url, '/api/v1/query', { query: SPANS, ...range, group_by_sample: 'span_id', max_nodes: 0 });
    eqTotals(await drawnTotals(page), totalsOf(stacksOf(g.tree)), 'the split tree is the group_by_sample answer');
    const roots = await page.evaluate(() => window.__flamedb.graph.allNodes().filter((n) => n.depth === 1).map((n) => [n.name, n.total]));
    assert.deepEqual(roots, [['span_id=b2', 50000000], ['span_id=a1', 40000000], ['main', 20000000]], 'a root per value; stacks without the label keep theirs');
    const summary = await page.textContent('#summary');
    assert.ok(summary.includes('split by span_id (sample label): 2 values'), summary);
    assert.equal(await page.inputValue('#split'), 'sample:span_id', 'the picker shows it');
    assert.equal(await page.getAttribute('#timeline', 'data-refused'), null, 'a split is no filter: the timeline is drawn');
    await shot(page, '60-split-sample-label');
    // right-click a value's frame: filter to it
    const b = await frameBox(page, 'span_id=b2', 1);
    await page.mouse.click(b.cx, b.cy, { button: 'right' });
    await page.click('#ctxmenu a[data-act="only"]');
    await page.waitForFunction(() => (new URL(location.href).searchParams.get('query') || '').includes('span_id="b2"'));
    await ready(page);
    assert.deepEqual(await page.evaluate(() => window.__flamedb.graph.allNodes().filter((n) => n.depth === 1).map((n) => [n.name, n.total])),
      [['span_id=b2', 50000000]], 'filtered to b2, still split');
  });

  test('sample labels in the split picker: listed when asked, then a split like any label (in the URL)', async (ctx, url) => {
    const page = await open(ctx, url0(url));
    const scans = watch(page);
    await ready(page);
    const before = await page.$$eval('#split optgroup option', (o) => o.map((x) => x.value));
    assert.deepEqual(before, ['sample:'], 'one entry until asked');
    await page.selectOption('#split', 'sample:');
    await page.waitForFunction(() => document.querySelector('#split').dataset.samples === '2');
    assert.equal(scans.length, 1);
    assert.equal(new URL(page.url()).searchParams.get('split'), null, 'listing them changes no view');
    assert.deepEqual(await page.$$eval('#split optgroup option', (o) => o.map((x) => [x.value, x.textContent])),
      [['sample:endpoint', 'endpoint (1)'], ['sample:span_id', 'span_id (2)']]);
    await page.selectOption('#split', 'sample:endpoint');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('split') === 'sample:endpoint');
    await ready(page);
    const roots = await page.evaluate(() => window.__flamedb.graph.allNodes().filter((n) => n.depth === 1).map((n) => [n.name, n.total]));
    assert.deepEqual(roots, [['endpoint=/api', 90000000], ['main', 20000000]]);
    // a copied link draws the same
    const again = await open(ctx, page.url());
    await ready(again);
    assert.equal(await again.inputValue('#split'), 'sample:endpoint');
    eqTotals(await drawnTotals(again), await drawnTotals(page));
  });
}
