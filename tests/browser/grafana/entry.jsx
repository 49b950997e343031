// entry.jsx — Grafana's own flame graph panel (@grafana/flamegraph) drawing
// flamedb's SelectMergeStacktraces answer, as Grafana's Pyroscope data
// source would show it. Bundled by esbuild at test time (grafana_panel.mjs);
// the bundle is never committed.
//
// The page's query string names the flamedb under test (api, which lets
// this page's origin in with --cors-origin) and the query: profileTypeID,
// labelSelector, start, end (unix ms). The page asks flamedb with the
// Connect protocol's JSON form, as curl and the Profiles Drilldown app do
// (Grafana's backend sends the same message as binary protobuf).
//
// The answer becomes the DataFrame Grafana's data source builds from it
// (grafana/grafana, pkg/tsdb/grafana-pyroscope-datasource: the flamebearer
// levels are turned back into a tree and walked depth first, the "nested
// set" form): one row per node in depth-first order with
//   level  the node's depth (the root, "total", is 0)
//   value  its total, self its self, both with the unit of the profile
//          type's sample unit (nanoseconds → "ns", count → "short")
//   label  an enum field: indices into the names table, which is the
//          field's config.type.enum.text
// Each level of the answer is [x offset from the previous node's end,
// total, self, name index] 4-tuples, in x order; a node's children are the
// nodes of the next level inside its [x, x + total).
//
// document.body.dataset.state is "ready" once the panel is rendered with
// the data, or "error" (with the message in #error) when the call failed.
import { createRoot } from 'react-dom/client';
import { createDataFrame, createTheme, FieldType, ThemeContext } from '@grafana/data';
import { FlameGraph } from '@grafana/flamegraph';

const params = new URLSearchParams(location.search);
const theme = createTheme({ colors: { mode: 'light' } });

function unitOf(profileTypeID) {
  const unit = profileTypeID.split(':')[2];
  return unit === 'nanoseconds' ? 'ns' : unit === 'count' ? 'short' : unit;
}

export function flameGraphToFrame(fg, unit) {
  // absolute x of every node, level by level
  const levels = (fg.levels || []).map((l) => {
    const v = (l.values || []).map(Number);
    const nodes = [];
    let x = 0;
    for (let i = 0; i + 3 < v.length; i += 4) {
      const start = x + v[i];
      nodes.push({ start, total: v[i + 1], self: v[i + 2], name: v[i + 3] });
      x = start + v[i + 1];
    }
    return nodes;
  });
  const level = [], value = [], self = [], label = [];
  const next = levels.map(() => 0);   // per level: the first node not yet visited
  const stack = levels.length && levels[0].length ? [[0, levels[0][0]]] : [];
  while (stack.length) {
    const [d, n] = stack.pop();
    level.push(d);
    value.push(n.total);
    self.push(n.self);
    label.push(n.name);
    // children: the next level's nodes that end inside this one; pushed in
    // reverse so that they are visited in x order
    const kids = [], below = levels[d + 1];
    while (below && next[d + 1] < below.length && below[next[d + 1]].start + below[next[d + 1]].total <= n.start + n.total)
      kids.push(below[next[d + 1]++]);
    for (let i = kids.length - 1; i >= 0; i--) stack.push([d + 1, kids[i]]);
  }
  return createDataFrame({
    name: 'response',
    meta: { preferredVisualisationType: 'flamegraph' },
    fields: [
      { name: 'level', type: FieldType.number, values: level },
      { name: 'value', type: FieldType.number, values: value, config: { unit } },
      { name: 'self', type: FieldType.number, values: self, config: { unit } },
      { name: 'label', type: FieldType.enum, values: label, config: { type: { enum: { text: fg.names || [] } } } },
    ],
  });
}

async function main() {
  const api = params.get('api');
  const profileTypeID = params.get('profileTypeID');
  const body = {
    profileTypeID,
    labelSelector: params.get('labelSelector') || '{}',
    start: params.get('start'),
    end: params.get('end'),
  };
  const r = await fetch(`${api}/querier.v1.QuerierService/SelectMergeStacktraces`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const answer = await r.json();
  if (!r.ok) throw new Error(`SelectMergeStacktraces: ${r.status} ${answer.code}: ${answer.message}`);
  const frame = flameGraphToFrame(answer.flamegraph || {}, unitOf(profileTypeID));
  document.body.dataset.rows = String(frame.length);
  createRoot(document.getElementById('panel')).render(
    <ThemeContext.Provider value={theme}>
      <FlameGraph data={frame} getTheme={() => theme} />
    </ThemeContext.Provider>
  );
  // ready once the panel has drawn its canvas
  const drawn = () => document.querySelector('#panel canvas');
  while (!drawn()) await new Promise((res) => requestAnimationFrame(res));
  document.body.dataset.state = 'ready';
}

main().catch((e) => {
  document.getElementById('error').textContent = String(e.message || e);
  document.body.dataset.state = 'error';
});
