// keys.js — the viewer's keyboard shortcuts, listed in a dialog under `?`.
// A shortcut acts on the function under the mouse (in the flamegraph or the
// sandwich), else on the function selected in the table. Keys typed into a
// field are the field's, except Escape.
const $ = (s) => document.querySelector(s);

export function initKeys(ctx) {
  const { views, labels, getState, commit } = ctx;
  const target = () => views.hovered() || getState().fn || null;
  const onFn = (what) => () => { const n = target(); if (n) views.act(what, n); };
  const SHORTCUTS = [
    ['/', 'search functions', null],
    ['Esc', 'close a menu or the sandwich, else zoom out one level', null],
    ['i', 'inverted (bottom-up) tree on or off', () => views.toggleInvert()],
    ['s', 'sandwich of the function under the mouse (or selected in the table)', onFn('sandwich')],
    ['f', 'focus on that function', onFn('ff')],
    ['m', 'merge that function into its callers', onFn('mf')],
    ['r', 'collapse its recursion', onFn('rec')],
    ['c', 'collapse its subtree into it', onFn('cf')],
    ['d', 'drop the samples with that function', onFn('df')],
    ['Backspace', 'remove the last transform', () => {
      const t = (getState().transforms || '').split(',').filter(Boolean);
      if (t.length) { t.pop(); commit({ transforms: t.join(',') || undefined, focus: undefined }); }
    }],
    ['t', 'filter the function table', () => { commit({ tab: 'top' }, { replace: true }); $('#tfilter').focus(); }],
    ['l', 'label browser (names and values)', () => labels.open()],
    ['?', 'this list', () => toggle()],
  ];
  const help = $('#help');
  help.innerHTML = `<div class="dialog-box"><div class="dialog-head"><b>Keyboard shortcuts</b><button id="help-close" aria-label="close">✕</button></div>
    <table>${SHORTCUTS.map(([k, t]) => `<tr><td><kbd>${k}</kbd></td><td>${t}</td></tr>`).join('')}</table>
    <div class="muted">Right-click a frame for the same actions.</div></div>`;
  const toggle = () => { help.hidden = !help.hidden; };
  $('#help-close').onclick = () => { help.hidden = true; };
  help.addEventListener('click', (e) => { if (e.target === help) help.hidden = true; });
  addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === 'Escape' && !help.hidden) { help.hidden = true; e.stopImmediatePropagation(); return; }
    if (/^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement?.tagName)) return;
    const s = SHORTCUTS.find(([k, , fn]) => fn && k === e.key);
    if (!s) return;
    e.preventDefault();
    s[2]();
  }, true);
  return { toggle, SHORTCUTS };
}
