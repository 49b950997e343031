// transforms.js — new call trees computed in the browser from the merged tree
// the API answered: transforms (after the Firefox Profiler's), the inverted
// (bottom-up) tree and the sandwich of one function. Pure functions, no DOM.
//
// A tree is a Tree of tree.js: flat typed arrays in breadth-first order, one
// value field (self/total) or a diff's two (left, right), every field carried
// through. What max_nodes left out below a node is an explicit "other" leaf
// there, so nothing is lost, but no transform can look inside it — the
// numbers of a cut tree are partial (the caller says so). The results are
// built by tree.js's Trie: typed arrays and a hash of (parent, name), no
// object per node, whatever the tree's size.
//
// Transforms rewrite every stack (root-to-leaf path of frames) and merge the
// results, in order, each on the output of the one before, as the Firefox
// Profiler does:
//   ff  focus on function F: stacks without F are dropped; frames above the
//       first F are removed, so F becomes the only root.
//   mf  merge function F: F's frames are removed from every stack; F's self
//       time becomes its caller's self, its callees move up to its caller.
//   rec collapse recursion of F: an F below another F (directly or through
//       other functions) is removed, so F → G → F → H reads F → G → H.
//   drec collapse direct recursion only: F → F → G reads F → G.
//   cf  collapse function F: F's whole subtree is folded into F (F keeps its
//       total, all of it as self).
//   df  drop samples with F: every stack containing F is removed; its time
//       leaves the tree (the totals shrink). This is "hide a frame" in
//       flamedb: the Firefox Profiler's "drop samples with this function".
// The walk is one iterative preorder pass over the input tree carrying each
// transform's small state along the path (per depth), so a transform costs
// O(nodes).

import { OTHER, Trie, preorder, subtree } from './tree.js';

export { OTHER };

export const KINDS = {
  ff: { label: 'focus', title: 'Focus on function: only stacks through it, with it as the root' },
  mf: { label: 'merge', title: 'Merge function: removed from every stack, its self time goes to its caller' },
  rec: { label: 'collapse recursion', title: 'Collapse recursion: calls of it below itself (also through other functions) are removed' },
  drec: { label: 'collapse direct recursion', title: 'Collapse direct recursion only: it calling itself directly is one frame' },
  cf: { label: 'collapse', title: 'Collapse function: its subtree folded into it (its total becomes self)' },
  df: { label: 'drop', title: 'Drop samples with this function: stacks containing it are removed' },
};

// URL form: kind:name pairs joined by commas, names percent-encoded.
export function parseTransforms(s) {
  if (!s) return [];
  const out = [];
  for (const part of s.split(',')) {
    const i = part.indexOf(':');
    if (i < 0) continue;
    const kind = part.slice(0, i);
    let name;
    try { name = decodeURIComponent(part.slice(i + 1)); } catch { continue; }
    if (KINDS[kind] && name) out.push({ kind, name });
  }
  return out;
}
export function formatTransforms(list) {
  return list.map((t) => t.kind + ':' + encodeURIComponent(t.name)).join(',');
}

// Where a name is `name` in a tree's names table: a flag per name index.
function hitsOf(t, name) {
  const h = new Uint8Array(t.names.length);
  for (let i = 0; i < t.names.length; i++) if (t.names[i] === name) h[i] = 1;
  return h;
}

// One step of one transform: the new state, whether the frame is passed on,
// and whether the subtree is pruned (null: the stack is dropped).
function step(kind, s, hit) {
  switch (kind) {
    case 'ff': return s ? [1, true] : hit ? [1, true] : [0, false];
    case 'mf': return [s, !hit];
    case 'rec': return hit ? (s ? [1, false] : [1, true]) : [s, true];
    case 'drec': return hit ? (s ? [1, false] : [1, true]) : [0, true];
    case 'cf': return s ? [1, false] : hit ? [1, true] : [0, true];
    case 'df': return hit ? null : [s, true];
  }
  return [s, true];
}

// The tree after `transforms`; `invert` then turns it bottom-up. A Tree in,
// a Tree out (tree.js); the input is returned as is when there is nothing
// to do.
export function transformTree(tree, transforms = [], { invert = false } = {}) {
  const k = tree.k;
  let out = tree;
  if (transforms.length) {
    const T = transforms, nt = T.length;
    const hits = T.map((t) => hitsOf(tree, t.name));
    const otherName = tree.names.indexOf(OTHER);
    const trie = new Trie(tree.names, k, tree.name[0]);
    // per depth of the walk: the transforms' states and the output node
    const D = tree.rowStart.length;
    const st = new Uint8Array(D * nt), at = new Int32Array(D);
    const isFF = T.map((t) => t.kind === 'ff');
    preorder(tree, (i, d) => {
      const base = d * nt;
      let o;
      if (d === 0) { o = 0; for (let j = 0; j < nt; j++) st[j] = 0; }
      else {
        const pb = base - nt;
        o = at[d - 1];
        let pass = true;
        const other = tree.other[i], nm = tree.name[i];
        for (let j = 0; j < nt; j++) {
          const s = st[pb + j];
          if (!pass) { st[base + j] = s; continue; }
          const r = step(T[j].kind, s, !other && hits[j][nm] === 1);
          if (!r) return false;
          st[base + j] = r[0];
          pass = r[1];
        }
        if (pass) o = trie.child(o, other ? otherName : nm, other);
      }
      at[d] = o;
      for (let j = 0; j < nt; j++) if (isFF[j] && st[base + j] === 0) return true;
      for (let j = 0; j < k; j++) trie.self[j][o] += tree.self[j][i];
      return true;
    });
    out = trie.tree();
  }
  return invert ? invertTree(out) : out;
}

// Bottom-up: each stack reversed, leaf first, so a function's frames at the
// root hold the time spent in it (its self), their children its callers.
export function invertTree(tree) {
  const k = tree.k;
  const trie = new Trie(tree.names, k, tree.name[0]);
  const otherName = tree.names.indexOf(OTHER);
  const path = new Int32Array(tree.rowStart.length);
  preorder(tree, (i, d) => {
    if (d === 0) { for (let j = 0; j < k; j++) trie.self[j][0] += tree.self[j][i]; return true; }
    if (tree.other[i]) {
      const o = trie.child(0, otherName, 1);
      for (let j = 0; j < k; j++) trie.self[j][o] += tree.self[j][i];
      return false;
    }
    path[d] = tree.name[i];
    let any = false;
    for (let j = 0; j < k; j++) if (tree.self[j][i]) any = true;
    if (any) {
      let o = 0;
      for (let e = d; e >= 1; e--) o = trie.child(o, path[e], 0);
      for (let j = 0; j < k; j++) trie.self[j][o] += tree.self[j][i];
    }
    return true;
  });
  return trie.tree();
}

// The sandwich of function `name`: callers (bottom-up from the function: its
// callers, their callers, ...) and callees (top-down from it), each rooted
// at the function and merged over every place it occurs; an occurrence below
// another occurrence (recursion) counts once, in the outermost, so the root's
// total is the function's total as /api/v1/top gives it. self: the sum of
// the self of all its frames.
export function sandwich(tree, name) {
  const k = tree.k;
  const hit = hitsOf(tree, name);
  let root = tree.names.indexOf(name);
  const names = root < 0 ? [...tree.names, name] : tree.names;
  if (root < 0) root = names.length - 1;
  const trie = new Trie(names, k, root);
  const self = new Float64Array(k), total = new Float64Array(k);
  let count = 0;
  const D = tree.rowStart.length;
  const path = new Int32Array(D), inF = new Int32Array(D);
  preorder(tree, (i, d) => {
    if (d === 0) { inF[0] = 0; return true; }
    if (tree.other[i]) return false;
    path[d] = tree.name[i];
    const above = inF[d - 1];
    if (!hit[tree.name[i]]) { inF[d] = above; return true; }
    count++;
    for (let j = 0; j < k; j++) self[j] += tree.self[j][i];
    if (above === 0) {
      for (let j = 0; j < k; j++) total[j] += tree.total[j][i];
      let o = 0;
      for (let e = d - 1; e >= 1; e--) o = trie.child(o, path[e], 0);
      for (let j = 0; j < k; j++) trie.self[j][o] += tree.total[j][i];
    }
    inF[d] = above + 1;
    return true;
  });
  const callers = trie.tree();
  let callees = null;
  if (count) {
    const focused = transformTree(tree, [{ kind: 'ff', name }]);
    for (let c = focused.first[0], e = c + focused.nkids[0]; c < e && focused.nkids[0]; c++) {
      if (!focused.other[c] && focused.names[focused.name[c]] === name) { callees = subtree(focused, c); break; }
    }
  }
  const pick = (a) => (k === 1 ? a[0] : { left: a[0], right: a[1] });
  return { name, count, callers: count ? callers : null, callees, self: pick(self), total: pick(total) };
}

// Whether a tree has values max_nodes left out (the numbers of a transform
// or inversion are then partial).
export function isCut(tree) {
  return !!tree && tree.cut;   // a diff's tree (fromNested, two fields) has no "other" blocks
}
