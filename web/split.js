// split.js — "split by" a label (after Parca's group-by in the icicle
// graph): one root frame per value of the label under "all", each holding
// that value's own call tree. Built from one /api/v1/query?group_by=LABEL
// answer (the API merges each group on its own, so nothing here re-merges
// stacks): the root's children are the groups, named `label=value`
// (`label=""` for series without the label), in the API's order (total
// descending). Each group picks its own unit in the API; groups in a unit
// other than the largest group's cannot be added to it and are left out,
// counted in `skipped`. Pure functions, no DOM.

// The frame name of a group: `label=value`.
export function splitName(label, value) {
  return `${label}=${value === '' || value === undefined ? '""' : value}`;
}

// Is `name` a split frame of `label`?
export function isSplitFrame(name, label) {
  return !!label && name.startsWith(label + '=');
}

// answer: /api/v1/query?group_by=label. Returns the fields of a plain query
// answer (tree, total, samples, unit, profiles, series, truncated) plus
// groups (how many are drawn) and skipped ({groups, units}).
export function splitAnswer(answer, label) {
  const groups = answer.groups || [];
  const unit = groups.length ? groups[0].unit : 'samples';
  const kept = groups.filter((g) => g.unit === unit && g.total > 0);
  const skipped = groups.filter((g) => g.unit !== unit);
  let total = 0, samples = 0, profiles = 0, series = 0, tnodes = 0, ttotal = 0;
  const children = [];
  for (const g of kept) {
    total += g.total;
    samples = samples === null || g.samples === null || g.samples === undefined ? null : samples + g.samples;
    profiles += g.profiles || 0;
    series += g.series || 0;
    if (g.truncated) { tnodes += g.truncated.nodes; ttotal += g.truncated.total; }
    const t = g.tree || { self: g.total, children: [] };
    children.push({ name: splitName(label, g.labels[label]), self: t.self || 0, total: g.total, children: t.children || [] });
  }
  return {
    type: answer.type, unit, total, samples, profiles, series, other_types: answer.other_types,
    truncated: { nodes: tnodes, total: ttotal },
    tree: { name: 'root', self: 0, total, children },
    groups: kept.length,
    skipped: { groups: skipped.length, units: [...new Set(skipped.map((g) => g.unit))] },
    latest: answer.latest,   // an empty range: where the newest profile is
  };
}

// max_nodes for each group: the viewer's budget shared by the values the
// label has (its cardinality from /api/v1/labels), never below 256.
export function nodesPerGroup(budget, values) {
  return Math.max(256, Math.floor(budget / Math.max(1, values || 1)));
}
