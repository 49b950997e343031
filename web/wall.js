// wall.js — on-CPU and off-CPU time of one selection together (issue 13):
// the agent pushes `type="cpu"` (samples with a rate, answered in
// nanoseconds) and `type="offcpu"` (nanoseconds a thread spent off the CPU
// at a stack, docs/agent.md) as two types of the same series. The viewer
// shows them side by side (two flamegraphs, each in its own unit and
// total) or as the wall view: the two trees merged by path, so a stack's
// wall time is its on-CPU time plus its off-CPU time. Pure functions, no DOM.
//
// The wall tree is a Tree of tree.js with two value fields, field 0 on-CPU
// and field 1 off-CPU (a diff's tree has two fields too, left and right):
// the transforms, the inverted tree and the sandwich carry both through, and
// the flamegraph draws a frame as wide as their sum (meta.wall), its tooltip
// giving the two parts. What max_nodes left out on either side stays an
// "other" block under the same path. Only time adds to time: both sides
// must be in nanoseconds (wallUnits says why not). The off-CPU side has no
// sample count, so the wall has none either: no intervals.
import { Trie, preorder } from './tree.js';

export const ON = 'cpu', OFF = 'offcpu';

// null when the two answers can be added, else what the user reads.
export function wallUnits(on, off) {
  const bad = [];
  if (on.total && on.unit !== 'nanoseconds') bad.push(`the on-CPU profiles (type="${ON}") are in ${on.unit}${on.unit === 'samples' ? ' (pushed without a rate)' : ''}`);
  if (off.total && off.unit !== 'nanoseconds') bad.push(`the off-CPU profiles (type="${OFF}") are in ${off.unit}`);
  if (!bad.length) return null;
  return `Wall adds on-CPU and off-CPU time, so both must be in nanoseconds, but ${bad.join(' and ')}. Push CPU profiles with a rate (the agent does), or use side by side, which draws each in its own unit.`;
}

/* The wall tree of two one-field Trees (on-CPU, off-CPU): every node of
 * each put at its path (names compared as text, "other" blocks kept apart
 * from a function of that name), its self added to its side's field. */
export function wallTree(on, off) {
  const names = on.names.slice();
  const index = new Map();
  names.forEach((s, i) => { if (!index.has(s)) index.set(s, i); });
  const idx = (s) => { let i = index.get(s); if (i === undefined) { i = names.length; names.push(s); index.set(s, i); } return i; };
  const trie = new Trie(names, 2, idx(on.names[on.name[0]]));
  [on, off].forEach((t, j) => {
    const remap = t.names.map(idx);
    const at = new Int32Array(t.rowStart.length + 1);
    preorder(t, (i, d) => {
      const o = d === 0 ? 0 : trie.child(at[d - 1], remap[t.name[i]], t.other[i]);
      at[d] = o;
      trie.self[j][o] += t.self[0][i];
      return true;
    });
  });
  return trie.tree();
}

/* /api/v1/top of the wall: the two answers merged by function. The stacks
 * of the two types are disjoint time, so a function's wall self and total
 * are its on-CPU ones plus its off-CPU ones, exactly; shares are of the
 * wall total, with no interval (no sample count). null when an answer does
 * not hold every function (the server pages it): then they cannot be merged. */
export function wallTop(on, off) {
  const whole = (a) => !a || a.functions_total === undefined || a.functions_total <= a.functions.length;
  if (!whole(on) || !whole(off)) return null;
  const T = (on ? on.total : 0) + (off ? off.total : 0);
  const by = new Map();
  for (const [a, j] of [[on, 0], [off, 1]]) {
    for (const f of a ? a.functions : []) {
      let r = by.get(f.name);
      if (!r) { r = { name: f.name, self: 0, total: 0, on: [0, 0], off: [0, 0] }; by.set(f.name, r); }
      r.self += f.self; r.total += f.total;
      (j ? r.off : r.on)[0] += f.self; (j ? r.off : r.on)[1] += f.total;
    }
  }
  const functions = [...by.values()].map((r) => ({ ...r, self_share: T ? r.self / T : 0, total_share: T ? r.total / T : 0, self_ci95: null, total_ci95: null }));
  functions.sort((a, b) => b.self - a.self || b.total - a.total || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { total: T, samples: null, unit: 'nanoseconds', functions_total: functions.length, offset: 0, functions, type: 'wall' };
}

/* Two timeline answers (same from, until and step: the caller asks both
 * with the same absolute range) as one grouped answer of two series,
 * `type=cpu` then `type=offcpu` whatever their totals (so on-CPU keeps the
 * first colour): stacked, each step is the wall time. */
export function wallTimeline(on, off) {
  const g = (a, type) => ({ labels: { type }, unit: a.unit, points: a.points || [] });
  const P = on.points || [], Q = off.points || [];
  if (P.length !== Q.length) {   // not the same windows: off-CPU's read at on-CPU's
    const at = new Map(Q.map((p) => [Math.round(p[0]), p[1]]));
    off = { ...off, points: P.map((p) => [p[0], at.get(Math.round(p[0])) || 0]) };
  }
  return { from: on.from, until: on.until, step: on.step, type: 'wall', keepOrder: true, groups: [g(on, ON), g(off, OFF)] };
}
