// transforms.js — new call trees computed in the browser from the merged tree
// the API answered: transforms (after the Firefox Profiler's), the inverted
// (bottom-up) tree and the sandwich of one function. Pure functions, no DOM.
//
// A tree is the API's: {name, self, total, children} (a diff tree has
// left_self/left_total/right_self/right_total instead; every value field is
// carried through). A node's values beyond self + its children's totals are
// what max_nodes left out: they become an explicit leaf {other: true}, so
// nothing is lost, but no transform can look inside them — the numbers of a
// cut tree are partial (the caller says so).
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
// The walk is one iterative pass over the input tree carrying each
// transform's small state along the path, so a transform costs O(nodes).

export const OTHER = 'other (left out by max_nodes)';
const OTHER_KEY = '\u0000other';

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

// The value fields of a tree: [[selfKey, totalKey], ...].
export function fieldsOf(tree) {
  return tree && 'left_total' in tree ? [['left_self', 'left_total'], ['right_self', 'right_total']] : [['self', 'total']];
}

function outNode(name, other, k) {
  return { name, other, self: k === 1 ? [0] : [0, 0], kids: null };
}
function childOf(o, name, other, k) {
  if (!o.kids) o.kids = new Map();
  const key = other ? OTHER_KEY : name;
  let c = o.kids.get(key);
  if (!c) { c = outNode(other ? OTHER : name, other, k); o.kids.set(key, c); }
  return c;
}

// Build the API-shaped tree of an output node: totals summed bottom-up,
// children by total descending (summed over the fields), then name. Two
// passes without recursion; the nodes made have one fixed shape.
function finish(root, F) {
  const k = F.length;
  // post-order: o.tot = o.self + the children's tot
  const order = [];
  const st = [root];
  while (st.length) {
    const o = st.pop();
    order.push(o);
    o.tot = o.self.slice();
    if (o.kids) for (const c of o.kids.values()) st.push(c);
  }
  const sumTot = (o) => (k === 1 ? o.tot[0] : o.tot[0] + o.tot[1]);
  for (let i = order.length - 1; i >= 0; i--) {
    const o = order[i];
    if (!o.kids) continue;
    const kids = [...o.kids.values()];
    for (const c of kids) for (let j = 0; j < k; j++) o.tot[j] += c.tot[j];
    kids.sort((a, b) => sumTot(b) - sumTot(a) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    o.sorted = kids;
  }
  const make = (o) => {
    const n = k === 1
      ? { name: o.name, self: o.self[0], total: o.tot[0], children: [] }
      : { name: o.name, left_self: o.self[0], left_total: o.tot[0], right_self: o.self[1], right_total: o.tot[1], children: [] };
    if (o.other) n.other = true;
    return n;
  };
  const top = make(root);
  const q = [[root, top]];
  while (q.length) {
    const [o, n] = q.pop();
    if (!o.sorted) continue;
    for (const c of o.sorted) { const cn = make(c); n.children.push(cn); q.push([c, cn]); }
  }
  return top;
}

// Visit every node of a tree in preorder (depth-first, so a caller can keep
// the path by depth): ctx = enter(node, depth, isOther, parentCtx, values)
// where an "other" leaf stands for what max_nodes left out below a node
// (values: what it holds); enter returning undefined prunes the subtree.
// Iterative: deep recursions do not overflow.
function walk(tree, F, enter) {
  const k = F.length;
  const stack = [[tree, 0, null, null]];
  while (stack.length) {
    const [n, depth, pctx, v] = stack.pop();
    const vals = v || (n.other ? Float64Array.from(F, (f) => n[f[1]]) : null);
    const ctx = enter(n, depth, !!vals, pctx, vals);
    if (ctx === undefined || vals) continue;
    const kids = n.children || [];
    {
      let missing = null;
      for (let j = 0; j < k; j++) {
        let m = n[F[j][1]] - n[F[j][0]];
        for (const c of kids) m -= c[F[j][1]];
        if (m > 0) { if (!missing) missing = new Float64Array(k); missing[j] = m; }
      }
      if (missing) stack.push([{ name: OTHER, other: true }, depth + 1, ctx, missing]);
    }
    for (let i = kids.length - 1; i >= 0; i--) stack.push([kids[i], depth + 1, ctx, null]);
  }
}

// One step of one transform: the new state, whether the frame is passed on,
// and whether the subtree is pruned.
function step(t, s, name, other) {
  const hit = !other && name === t.name;
  switch (t.kind) {
    case 'ff': return s ? [1, true] : hit ? [1, true] : [0, false];
    case 'mf': return [s, !hit];
    case 'rec': return hit ? (s ? [1, false] : [1, true]) : [s, true];
    case 'drec': return hit ? (s ? [1, false] : [1, true]) : [0, true];
    case 'cf': return s ? [1, false] : hit ? [1, true] : [0, true];
    case 'df': return hit ? null : [s, true];
  }
  return [s, true];
}

// The tree after `transforms`; `invert` then turns it bottom-up.
export function transformTree(tree, transforms = [], { invert = false } = {}) {
  const F = fieldsOf(tree), k = F.length;
  let out = tree;
  if (transforms.length) {
    const T = transforms, nt = T.length;
    const root = outNode(tree.name, false, k);
    const dropped = (st) => { for (let j = 0; j < nt; j++) if (T[j].kind === 'ff' && st[j] === 0) return true; return false; };
    const add = (o, st, n, vals) => {
      if (dropped(st)) return;
      for (let j = 0; j < k; j++) o.self[j] += vals ? vals[j] : n[F[j][0]];
    };
    walk(tree, F, (n, depth, other, parent, vals) => {
      if (!parent) { const st = new Array(nt).fill(0); add(root, st, n, null); return { st, o: root }; }
      let st = parent.st, o = parent.o, pass = true;
      for (let j = 0; j < nt && pass; j++) {
        const r = step(T[j], st[j], n.name, other);
        if (!r) return undefined;
        if (r[0] !== st[j]) { if (st === parent.st) st = st.slice(); st[j] = r[0]; }
        pass = r[1];
      }
      if (pass) o = childOf(o, n.name, other, k);
      add(o, st, n, vals);
      return { st, o };
    });
    out = finish(root, F);
  }
  return invert ? invertTree(out) : out;
}

// Bottom-up: each stack reversed, leaf first, so a function's frames at the
// root hold the time spent in it (its self), their children its callers.
export function invertTree(tree) {
  const F = fieldsOf(tree), k = F.length;
  const root = outNode(tree.name, false, k);
  const path = [];
  walk(tree, F, (n, depth, other, parent, vals) => {
    if (depth === 0) { for (let j = 0; j < k; j++) root.self[j] += n[F[j][0]]; return true; }
    path.length = depth - 1;
    if (other) {
      const o = childOf(root, OTHER, true, k);
      for (let j = 0; j < k; j++) o.self[j] += vals[j];
      return undefined;
    }
    path.push(n.name);
    let any = false;
    for (let j = 0; j < k; j++) if (n[F[j][0]]) any = true;
    if (any) {
      let o = root;
      for (let i = path.length - 1; i >= 0; i--) o = childOf(o, path[i], false, k);
      for (let j = 0; j < k; j++) o.self[j] += n[F[j][0]];
    }
    return true;
  });
  return finish(root, F);
}

// The sandwich of function `name`: callers (bottom-up from the function: its
// callers, their callers, ...) and callees (top-down from it), each rooted
// at the function and merged over every place it occurs; an occurrence below
// another occurrence (recursion) counts once, in the outermost, so the root's
// total is the function's total as /api/v1/top gives it. self: the sum of
// the self of all its frames.
export function sandwich(tree, name) {
  const F = fieldsOf(tree), k = F.length;
  const croot = outNode(name, false, k);
  const self = new Float64Array(k), total = new Float64Array(k);
  let count = 0;
  const path = [];
  walk(tree, F, (n, depth, other, parent) => {
    if (depth === 0) return 0;
    if (other) return undefined;
    path.length = depth - 1;
    path.push(n.name);
    const inF = parent;                       // frames named `name` above
    if (n.name !== name) return inF;
    count++;
    for (let j = 0; j < k; j++) self[j] += n[F[j][0]];
    if (inF === 0) {
      for (let j = 0; j < k; j++) total[j] += n[F[j][1]];
      let o = croot;
      for (let i = path.length - 2; i >= 0; i--) o = childOf(o, path[i], false, k);
      for (let j = 0; j < k; j++) o.self[j] += n[F[j][1]];
    }
    return inF + 1;
  });
  const callers = finish(croot, F);
  const focused = transformTree(tree, [{ kind: 'ff', name }]);
  const callees = (focused.children || []).find((c) => c.name === name && !c.other) || null;
  const pick = (a) => (k === 1 ? a[0] : Object.fromEntries(F.map((f, j) => [f[0].replace('_self', ''), a[j]])));
  return { name, count, callers: count ? callers : null, callees, self: pick(self), total: pick(total) };
}

// Whether a tree has values max_nodes left out (the numbers of a transform
// or inversion are then partial).
export function isCut(tree) {
  if (!tree || 'left_total' in tree) return false;
  const stack = [tree];
  while (stack.length) {
    const n = stack.pop();
    if (n.other) return true;
    let m = n.total - n.self;
    for (const c of n.children || []) { m -= c.total; stack.push(c); }
    if (m > 0) return true;
  }
  return false;
}
