// tree.js — the viewer's call tree as flat typed arrays: no object per node.
//
// A Tree holds n nodes in breadth-first order, level by level: the root is
// node 0, then every node of depth 1, then depth 2, ...; within a level the
// nodes are in drawing order (left to right), so the children of a node are
// one contiguous run of the next level (first[i], nkids[i]) and a parent's
// index is below its children's. Per node: the index of its name in the
// shared `names` table, its parent, its depth, whether it is an "other"
// block, and per value field its self and total (k = 1 field: self/total;
// k = 2 for a diff: left and right). rowStart[d] is the first node of depth
// d (rowStart[D] = n). 37 bytes a node for k = 1, against a JS object of
// five to eight properties per node in the nested form.
//
// Made from the API's `format=levels` answer (fromLevels: per depth a flat
// array of [x offset, total, self, name index]; a node's parent is the node
// of the level above whose [x, x + total) holds it), from a nested tree
// (fromNested: /api/v1/diff answers only that), or by a Trie (the
// transforms, the inverted tree and the sandwich build new trees with it).
// What max_nodes left out below a node (its total − self − its children's
// totals) becomes an explicit "other" child after its children, with that
// value as its self, so nothing is lost and `cut` says the tree is partial.

export const OTHER = 'other (left out by max_nodes)';

function alloc(n, k) {
  const t = {
    k, n, names: null,
    name: new Int32Array(n), parent: new Int32Array(n), depth: new Int32Array(n),
    first: new Int32Array(n), nkids: new Int32Array(n), other: new Uint8Array(n),
    self: [], total: [], rowStart: null, cut: false,
  };
  for (let j = 0; j < k; j++) { t.self.push(new Float64Array(n)); t.total.push(new Float64Array(n)); }
  return t;
}

// Fill depth, first, nkids and rowStart from parent (nodes in BFS order).
function link(t) {
  const { n, parent, depth, first, nkids } = t;
  let D = n ? 1 : 0;
  for (let i = 1; i < n; i++) {
    const p = parent[i];
    depth[i] = depth[p] + 1;
    if (nkids[p]++ === 0) first[p] = i;
    if (depth[i] + 1 > D) D = depth[i] + 1;
  }
  const rs = new Int32Array(D + 1);
  for (let i = 0, d = 0; i <= n; i++) {
    const di = i < n ? depth[i] : D;
    while (d < di) rs[++d] = i;
  }
  t.rowStart = rs;
  for (let i = 0; i < n && !t.cut; i++) if (t.other[i]) t.cut = true;
  return t;
}

// The index of `name` in the table, appended when absent.
function nameIndex(names, name) {
  let i = names.lastIndexOf(name);
  if (i < 0) { i = names.length; names.push(name); }
  return i;
}

/* The API's levels answer ({names, levels}) as a Tree. */
export function fromLevels(ans) {
  const LV = ans.levels || [];
  const D = LV.length;
  const names = (ans.names || []).slice();
  if (!D) {
    const t = alloc(1, 1);
    t.names = names.length ? names : ['total'];
    t.parent[0] = -1;
    return link(t);
  }
  // pass 1: absolute x, each node's parent (index in the level above), the
  // sum of each node's children, hence the "other" blocks. A parent is the
  // last node of the level above starting at or before the child (exact
  // for values below 2^53; above, sums of doubles round, and eps absorbs it)
  const rootTotal = LV[0][1] || 0;
  const eps = rootTotal > 2 ** 53 ? rootTotal * 2 ** -50 : 0;
  const X = [], P = [], kidSum = [];
  for (let d = 0; d < D; d++) {
    const a = LV[d], m = a.length >> 2;
    const x = new Float64Array(m);
    let cur = 0;
    for (let i = 0; i < m; i++) { cur += a[4 * i]; x[i] = cur; cur += a[4 * i + 1]; }
    X.push(x);
    kidSum.push(new Float64Array(m));
    if (d === 0) { P.push(null); continue; }
    const px = X[d - 1], pm = px.length, ks = kidSum[d - 1];
    const par = new Int32Array(m);
    let p = 0;
    for (let i = 0; i < m; i++) {
      while (p + 1 < pm && px[p + 1] <= x[i] + eps) p++;
      par[i] = p;
      ks[p] += a[4 * i + 1];
    }
    P.push(par);
  }
  let n = 0, others = 0;
  for (let d = 0; d < D; d++) {
    const a = LV[d], m = a.length >> 2, ks = kidSum[d];
    n += m;
    for (let i = 0; i < m; i++) if (a[4 * i + 1] - a[4 * i + 2] - ks[i] > eps) others++;
  }
  const t = alloc(n + others, 1);
  const otherName = others ? nameIndex(names, OTHER) : -1;
  t.names = names;
  const S = t.self[0], T = t.total[0];
  let g = 0;
  const put = (a, i, par) => { t.parent[g] = par; T[g] = a[4 * i + 1]; S[g] = a[4 * i + 2]; t.name[g] = a[4 * i + 3]; return g++; };
  let G = new Int32Array([put(LV[0], 0, -1)]);
  for (let d = 1; d <= D; d++) {
    const a = d < D ? LV[d] : null, m = a ? a.length >> 2 : 0, par = a ? P[d] : null;
    const pa = LV[d - 1], ks = kidSum[d - 1];
    const NG = new Int32Array(m);
    let j = 0;
    for (let q = 0; q < G.length; q++) {
      while (j < m && par[j] === q) NG[j] = put(a, j++, G[q]);
      const miss = pa[4 * q + 1] - pa[4 * q + 2] - ks[q];
      if (miss > eps) { t.parent[g] = G[q]; T[g] = S[g] = miss; t.name[g] = otherName; t.other[g] = 1; g++; }
    }
    G = NG;
  }
  return link(t);
}

/* A nested tree ({name, self, total, children} or a diff's
 * {name, left_self, left_total, right_self, right_total, children}) as a
 * Tree; children with nothing on any side are left out. */
export function fromNested(tree) {
  const F = tree && 'left_total' in tree ? [['left_self', 'left_total'], ['right_self', 'right_total']] : [['self', 'total']];
  const k = F.length;
  const queue = [tree], par = [-1];
  const live = (c) => { for (const f of F) if (c[f[1]] > 0) return true; return false; };
  for (let h = 0; h < queue.length; h++) {
    for (const c of queue[h].children || []) if (live(c)) { queue.push(c); par.push(h); }
  }
  // what max_nodes left out, for a one-field tree
  const miss = [];
  if (k === 1) {
    for (let h = 0; h < queue.length; h++) {
      const o = queue[h];
      let m = o.total - o.self;
      for (const c of o.children || []) m -= c.total;
      if (m > 0) miss.push([h, m]);
    }
  }
  const names = [];
  const index = new Map();
  const idx = (s) => { let i = index.get(s); if (i === undefined) { i = names.length; names.push(s); index.set(s, i); } return i; };
  const t = alloc(queue.length + miss.length, k);
  t.names = names;
  for (let h = 0; h < queue.length; h++) {
    const o = queue[h];
    t.parent[h] = par[h];
    t.name[h] = idx(o.name);
    for (let j = 0; j < k; j++) { t.self[j][h] = o[F[j][0]] || 0; t.total[j][h] = o[F[j][1]] || 0; }
  }
  // the "other" blocks go last; sortBFS puts each after its siblings
  for (let m = 0, g = queue.length; m < miss.length; m++, g++) {
    t.parent[g] = miss[m][0]; t.self[0][g] = t.total[0][g] = miss[m][1]; t.name[g] = idx(OTHER); t.other[g] = 1;
  }
  return link(sortBFS(t));
}

// Reorder a tree's nodes so that parents come in BFS order and each parent's
// children stay contiguous (stable): needed when nodes were appended out of
// level order.
function sortBFS(t) {
  const n = t.n;
  const depth = new Int32Array(n);
  let ok = true;
  for (let i = 1; i < n; i++) {
    depth[i] = depth[t.parent[i]] + 1;
    if (depth[i] < depth[i - 1] || t.parent[i] < t.parent[i - 1]) ok = false;
  }
  if (ok) return t;
  // children lists in the current order
  const cnt = new Int32Array(n + 1);
  for (let i = 1; i < n; i++) cnt[t.parent[i] + 1]++;
  for (let i = 1; i <= n; i++) cnt[i] += cnt[i - 1];
  const kids = new Int32Array(Math.max(0, n - 1)), fill = cnt.slice();
  for (let i = 1; i < n; i++) kids[fill[t.parent[i]]++] = i;
  const order = new Int32Array(n);
  let tail = 1;
  for (let h = 0; h < tail; h++) { const p = order[h]; for (let c = cnt[p]; c < cnt[p + 1]; c++) order[tail++] = kids[c]; }
  return permute(t, order);
}

// A new tree with the nodes of t in `order` (order[new] = old).
function permute(t, order) {
  const n = order.length;
  const u = alloc(n, t.k);
  u.names = t.names;
  const inv = new Int32Array(t.n).fill(-1);
  for (let i = 0; i < n; i++) inv[order[i]] = i;
  for (let i = 0; i < n; i++) {
    const o = order[i];
    u.parent[i] = i === 0 ? -1 : inv[t.parent[o]];
    u.name[i] = t.name[o];
    u.other[i] = t.other[o];
    for (let j = 0; j < t.k; j++) { u.self[j][i] = t.self[j][o]; u.total[j][i] = t.total[j][o]; }
  }
  return u;
}

/* The subtree of node r as a Tree of its own (r its root). */
export function subtree(t, r) {
  const order = [r];
  for (let h = 0; h < order.length; h++) { const p = order[h]; for (let c = t.first[p], e = c + t.nkids[p]; c < e; c++) order.push(c); }
  const u = permute(t, Int32Array.from(order));
  return link(u);
}

/* A tree of one node: `name` with nothing in it. */
export function emptyTree(name, k = 1) {
  const t = alloc(1, k);
  t.names = [name];
  t.parent[0] = -1;     // the root has none (a walk up from it must stop)
  return link(t);
}

/* Visit every node in preorder (depth-first, children left to right):
 * fn(i, depth) returning false skips the node's subtree. Iterative. */
export function preorder(t, fn) {
  if (!t.n) return;
  const stack = new Int32Array(t.n);
  let sp = 0;
  stack[sp++] = 0;
  while (sp) {
    const i = stack[--sp];
    if (fn(i, t.depth[i]) === false) continue;
    for (let c = t.first[i] + t.nkids[i] - 1; c >= t.first[i]; c--) stack[sp++] = c;
  }
}

/* A call tree being built (transforms, inverted tree, sandwich): nodes made
 * by child(parent, name, other), each with its own self values added by the
 * caller; tree() sums the totals bottom-up, sorts each node's children by
 * total (summed over the fields) descending then name, and lays them out as
 * a Tree. Typed arrays and an open-addressing hash of (parent, name): no
 * object per node. */
export class Trie {
  constructor(names, k, rootName) {
    this.names = names;
    this.k = k;
    this.n = 0;
    this.cap = 0;
    this.grow(1024);
    this.mask = 0;
    this.slots = null;
    this.rehash(2048);
    this.add(-1, rootName, 0);
  }
  grow(cap) {
    const re = (A, C) => { const b = new C(cap); if (A) b.set(A); return b; };
    this.parent = re(this.parent, Int32Array);
    this.name = re(this.name, Int32Array);
    this.other = re(this.other, Uint8Array);
    this.self = Array.from({ length: this.k }, (_, j) => re(this.self && this.self[j], Float64Array));
    this.cap = cap;
  }
  hash(p, nm, o) { return ((Math.imul(p + 1, 0x9E3779B1) ^ Math.imul(nm * 2 + o + 1, 0x85EBCA77)) >>> 0) & this.mask; }
  rehash(size) {
    this.slots = new Int32Array(size);
    this.mask = size - 1;
    for (let i = 1; i < this.n; i++) {
      let h = this.hash(this.parent[i], this.name[i], this.other[i]);
      while (this.slots[h]) h = (h + 1) & this.mask;
      this.slots[h] = i + 1;
    }
  }
  add(p, nm, o) {
    if (this.n === this.cap) this.grow(this.cap * 2);
    const i = this.n++;
    this.parent[i] = p; this.name[i] = nm; this.other[i] = o;
    return i;
  }
  // the child of p named nm (other: the "other" block), made when absent
  child(p, nm, o = 0) {
    let h = this.hash(p, nm, o);
    for (;;) {
      const s = this.slots[h];
      if (!s) break;
      const i = s - 1;
      if (this.parent[i] === p && this.name[i] === nm && this.other[i] === o) return i;
      h = (h + 1) & this.mask;
    }
    const i = this.add(p, nm, o);
    this.slots[h] = i + 1;
    if (this.n * 2 > this.slots.length) this.rehash(this.slots.length * 2);
    return i;
  }
  tree() {
    const n = this.n, k = this.k, names = this.names;
    const tot = Array.from({ length: k }, (_, j) => this.self[j].slice(0, n));
    for (let i = n - 1; i > 0; i--) { const p = this.parent[i]; for (let j = 0; j < k; j++) tot[j][p] += tot[j][i]; }
    const sum = k === 1 ? tot[0] : Float64Array.from(tot[0], (v, i) => v + tot[1][i]);
    // children lists (counting sort by parent), each sorted
    const cnt = new Int32Array(n + 1);
    for (let i = 1; i < n; i++) cnt[this.parent[i] + 1]++;
    for (let i = 1; i <= n; i++) cnt[i] += cnt[i - 1];
    const kids = new Int32Array(Math.max(0, n - 1)), fill = cnt.slice();
    for (let i = 1; i < n; i++) kids[fill[this.parent[i]]++] = i;
    const cmp = (a, b) => sum[b] - sum[a] || (names[this.name[a]] < names[this.name[b]] ? -1 : names[this.name[a]] > names[this.name[b]] ? 1 : this.other[a] - this.other[b]);
    for (let p = 0; p < n; p++) if (cnt[p + 1] - cnt[p] > 1) kids.subarray(cnt[p], cnt[p + 1]).sort(cmp);
    const order = new Int32Array(n);
    let tail = n ? 1 : 0;
    for (let h = 0; h < tail; h++) { const p = order[h]; for (let c = cnt[p]; c < cnt[p + 1]; c++) order[tail++] = kids[c]; }
    const t = alloc(n, k);
    t.names = names;
    const inv = new Int32Array(n);
    for (let i = 0; i < n; i++) inv[order[i]] = i;
    for (let i = 0; i < n; i++) {
      const o = order[i];
      t.parent[i] = i === 0 ? -1 : inv[this.parent[o]];
      t.name[i] = this.name[o];
      t.other[i] = this.other[o];
      for (let j = 0; j < k; j++) { t.self[j][i] = this.self[j][o]; t.total[j][i] = tot[j][o]; }
    }
    return link(t);
  }
}

/* The nested form of a Tree ({name, self, total, children}, or the diff's
 * fields; "other" blocks carry other: true): for tests and debugging only,
 * it makes an object per node. */
export function toNested(t) {
  const F = t.k === 1 ? [['self', 'total']] : [['left_self', 'left_total'], ['right_self', 'right_total']];
  const objs = new Array(t.n);
  for (let i = 0; i < t.n; i++) {
    const o = { name: t.names[t.name[i]] };
    for (let j = 0; j < t.k; j++) { o[F[j][0]] = t.self[j][i]; o[F[j][1]] = t.total[j][i]; }
    if (t.other[i]) o.other = true;
    o.children = [];
    objs[i] = o;
    if (i) objs[t.parent[i]].children.push(o);
  }
  return objs[0];
}
