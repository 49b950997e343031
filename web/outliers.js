// outliers.js — which groups differ from the whole, ranked by what the data
// can tell apart (after GWP's per-machine checks). Pure functions, no DOM.
//
// /api/v1/stability?group_by gives each group its Manhattan distance M to
// the merge of the whole query and `manhattan_noise`: the distance that
// sampling alone gives a group of its samples, Σ_f sqrt(2 p(1−p) / (π n)),
// which is Σ_f E|e_f| for the sampling errors e_f of the shares. Since
// |M − M_true| ≤ Σ_f |e_f| and each |e_f| stays below 1.96 σ_f (=
// 1.96·sqrt(π/2)·E|e_f|) 95% of the time, the interval
//   [max(0, M − K·noise), min(2, M + K·noise)],  K = 1.96·sqrt(π/2) ≈ 2.46
// holds the distance the group would show with unlimited samples (a
// conservative bound: the errors are not all at their limit at once).
//
// Ranking uses the interval, not the point: groups by the lower end
// descending (how far the group is *at least*), ties by M. A group with
// fewer than `min` samples is ranked apart, after the others ("too few
// samples": its interval is too wide to say anything), and so are groups
// whose samples are unknown (no interval), by M.
export const K = 1.96 * Math.sqrt(Math.PI / 2);
export const MIN_SAMPLES = 100;

export function intervalOf(g) {
  if (g.manhattan === null || g.manhattan === undefined) return null;
  if (g.samples === null || g.samples === undefined || g.manhattan_noise === null || g.manhattan_noise === undefined) return null;
  const h = K * g.manhattan_noise;
  return [Math.max(0, g.manhattan - h), Math.min(2, g.manhattan + h)];
}

// groups: the API's. Returns {ranked, few, unknown}: each a list of
// {g, ci, outlier} (outlier: the interval's lower end is above 0, the group
// differs by more than sampling explains).
export function rankGroups(groups, min = MIN_SAMPLES) {
  const ranked = [], few = [], unknown = [];
  for (const g of groups) {
    const ci = intervalOf(g);
    const e = { g, ci, outlier: false };
    if (!ci) unknown.push(e);
    else if (g.samples < min) few.push(e);
    else { e.outlier = ci[0] > 0; ranked.push(e); }
  }
  const byM = (a, b) => (b.g.manhattan ?? -1) - (a.g.manhattan ?? -1);
  ranked.sort((a, b) => b.ci[0] - a.ci[0] || byM(a, b));
  few.sort(byM);
  unknown.sort(byM);
  return { ranked, few, unknown };
}
