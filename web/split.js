// split.js — "split by" a label (after Parca's group-by in the icicle
// graph): one root frame per value of the label under "all", each holding
// that value's own call tree. Built from one /api/v1/query?group_by=LABEL
// answer (the API merges each group on its own, so nothing here re-merges
// stacks): the root's children are the groups, named `label=value`
// (`label=""` for series without the label), in the API's order (total
// descending). Each group picks its own unit in the API; groups in a unit
// other than the largest group's cannot be added to it and are left out,
// counted in `skipped`. Pure functions, no DOM.
//
// A sample label (pprof Sample.label: span_id, endpoint, ...) splits the
// graph too: split=sample:KEY in the URL (`:` is in no label name), drawn
// from one /api/v1/query?group_by_sample=KEY answer, whose root frames are
// already `KEY=value` (the server keeps the label's frame at the root);
// stacks without the label keep their own root beside them.
import { fromLevels } from './tree.js';

// The frame name of a group: `label=value`.
export function splitName(label, value) {
  return `${label}=${value === '' || value === undefined ? '""' : value}`;
}

// split=sample:KEY: the sample label KEY, else null (a series label).
export const SAMPLE_SPLIT = 'sample:';
export function sampleKeyOf(split) {
  return split && split.startsWith(SAMPLE_SPLIT) ? split.slice(SAMPLE_SPLIT.length) : null;
}
// The label a split's frames are named after (`label=value`).
export function splitLabel(split) {
  return sampleKeyOf(split) || split;
}
// How the viewer names a split: `span_id (sample label)`, `process`.
export function splitTitle(split) {
  const k = sampleKeyOf(split);
  return k ? `${k} (sample label)` : split;
}

// Is `name` a split frame of `label`?
export function isSplitFrame(name, label) {
  return !!label && name.startsWith(label + '=');
}

// answer: /api/v1/query?group_by=label&format=levels. Returns the fields of
// a plain query answer (total, samples, unit, profiles, series, truncated)
// with `tree` a Tree (tree.js), plus groups (how many are drawn) and skipped
// ({groups, units}). The groups' levels are laid side by side one depth
// down, under their `label=value` frames, as one levels answer (names
// tables merged): flat arrays of numbers, no object per node.
export function splitAnswer(answer, label) {
  const groups = answer.groups || [];
  const unit = groups.length ? groups[0].unit : 'samples';
  const kept = groups.filter((g) => g.unit === unit && g.total > 0);
  const skipped = groups.filter((g) => g.unit !== unit);
  let total = 0, samples = 0, profiles = 0, series = 0, tnodes = 0, ttotal = 0;
  const names = ['all'], index = new Map([['all', 0]]);
  const nameOf = (s) => { let i = index.get(s); if (i === undefined) { i = names.length; names.push(s); index.set(s, i); } return i; };
  const levels = [[], []];
  const ends = [0, 0];          // per depth: where the last node written ends
  for (const g of kept) {
    const x0 = total;             // the group's left edge
    total += g.total;
    samples = samples === null || g.samples === null || g.samples === undefined ? null : samples + g.samples;
    profiles += g.profiles || 0;
    series += g.series || 0;
    if (g.truncated) { tnodes += g.truncated.nodes; ttotal += g.truncated.total; }
    const LV = g.levels || [[0, g.total, g.total, 0]];
    const remap = (g.names || ['total']).map(nameOf);
    levels[1].push(x0 - ends[1], g.total, LV[0][2], nameOf(splitName(label, g.labels[label])));
    ends[1] = x0 + g.total;
    for (let d = 1; d < LV.length; d++) {
      const a = LV[d], D = d + 1;
      if (!levels[D]) { levels[D] = []; ends[D] = 0; }
      const out = levels[D];
      let x = x0;
      for (let i = 0; i < a.length; i += 4) {
        x += a[i];
        out.push(x - ends[D], a[i + 1], a[i + 2], remap[a[i + 3]]);
        x += a[i + 1];
        ends[D] = x;
      }
    }
  }
  levels[0] = [0, total, 0, 0];
  if (!kept.length) levels.length = 1;
  return {
    type: answer.type, unit, total, samples, profiles, series, other_types: answer.other_types,
    truncated: { nodes: tnodes, total: ttotal },
    tree: fromLevels({ names, levels }),
    groups: kept.length,
    skipped: { groups: skipped.length, units: [...new Set(skipped.map((g) => g.unit))] },
    latest: answer.latest,   // an empty range: where the newest profile is
  };
}

// answer: /api/v1/query?group_by_sample=key&format=levels, one merged tree
// whose root children are `key=value` frames (and the roots of stacks
// without the label). Returns the fields of a plain answer with `tree` a
// Tree, groups (how many `key=value` frames) and skipped (none: one merge
// has one unit).
export function sampleSplitAnswer(answer, key) {
  const tree = fromLevels(answer);
  const L1 = (answer.levels && answer.levels[1]) || [];
  let groups = 0;
  for (let i = 3; i < L1.length; i += 4) if (isSplitFrame(answer.names[L1[i]], key)) groups++;
  const out = { ...answer, tree, groups, skipped: { groups: 0, units: [] } };
  delete out.levels;
  delete out.names;
  return out;
}

// max_nodes for each group: the viewer's budget shared by the values the
// label has (its cardinality from /api/v1/labels), never below 256.
export function nodesPerGroup(budget, values) {
  return Math.max(256, Math.floor(budget / Math.max(1, values || 1)));
}
