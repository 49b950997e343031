// agents.js — the Agents page (/agents.html): the machine database of
// fleet control (issue 13, GET /api/v1/agents): every agent of the
// request's tenant with its labels, state, whether the plan has it
// sampling now and next, when it was seen and last pushed, what it sent,
// its own CPU and RSS, and its last error.  Refreshed every 5 s; a filter
// box over id, labels, state and error; columns sort on click.
import { authFetch } from './auth.js';

const $ = (s) => document.querySelector(s);
const state = { list: null, sort: 'id', desc: false };

function esc(s) {
  return String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}
function ago(s) {
  if (s == null || s < 0) return '—';
  if (s < 90) return `${Math.round(s)} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  return `${(s / 3600).toFixed(1)} h ago`;
}
function bytes(n) {
  if (!n) return '—';
  const u = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${u[i]}`;
}
const labelText = (l) => Object.entries(l || {}).map(([k, v]) => `${k}=${v}`).join(', ');

function rows() {
  const now = state.list.now || Date.now() / 1000;
  const f = $('#filter').value.trim().toLowerCase();
  let v = state.list.agents.filter((a) => !f || [a.id, labelText(a.labels), a.state, a.last_error].join(' ').toLowerCase().includes(f));
  const k = state.sort, sign = state.desc ? -1 : 1;
  const key = (a) => (k === 'labels' ? labelText(a.labels) : k === 'last_push' ? (a.last_push || 0) : a[k]);
  v = v.slice().sort((a, b) => {
    const x = key(a), y = key(b);
    return sign * (typeof x === 'number' && typeof y === 'number' ? x - y : String(x ?? '').localeCompare(String(y ?? '')));
  });
  $('#agents tbody').innerHTML = v.map((a) => `<tr data-id="${esc(a.id)}" class="${a.state === 'ceased' ? 'ceased' : ''}">
    <td>${esc(a.id)}</td><td>${esc(labelText(a.labels))}</td><td class="state">${esc(a.state)}</td>
    <td>${a.sampling ? 'now' : 'no'}${a.next_sampling ? ', next too' : ''}</td>
    <td>${ago(a.seen_ago_s)}</td><td>${a.last_push ? ago(now - a.last_push) : '—'}</td>
    <td class="num">${(a.samples || 0).toLocaleString('en-US')}</td><td class="num">${a.profiles_pushed || 0}</td>
    <td class="num">${a.push_failures || 0}</td><td class="num">${a.spool_waiting || 0}</td>
    <td class="num">${a.cpu_seconds != null ? a.cpu_seconds.toFixed(1) + ' s' : '—'}</td><td class="num">${bytes(a.rss_bytes)}</td>
    <td>${esc(a.version)}</td><td class="err" title="${esc(a.last_error)}">${esc(a.last_error)}</td></tr>`).join('');
  $('#empty').hidden = state.list.agents.length > 0;
  const fl = state.list.fleet || {};
  $('#fleet').textContent = `${state.list.agents.length} agents` + (v.length !== state.list.agents.length ? ` (${v.length} shown)` : '') +
    ` · ${fl.sampling ?? 0} sampling now · duty ${fl.duty ?? 1}` + (fl.period ? ` · turns of ${fl.period} s` : '');
  for (const th of document.querySelectorAll('#agents th')) th.classList.toggle('sorted', th.dataset.k === state.sort);
}

async function load() {
  try {
    const r = await authFetch('/api/v1/agents');
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || `HTTP ${r.status}`);
    state.list = { ...body, now: Date.now() / 1000 };
    $('#error').hidden = true;
    rows();
    document.body.dataset.state = 'ready';
  } catch (e) {
    $('#error').textContent = 'Cannot list the agents: ' + e.message;
    $('#error').hidden = false;
    document.body.dataset.state = 'error';
  }
}

$('#filter').addEventListener('input', () => state.list && rows());
for (const th of document.querySelectorAll('#agents th')) {
  th.addEventListener('click', () => {
    state.desc = state.sort === th.dataset.k ? !state.desc : false;
    state.sort = th.dataset.k;
    if (state.list) rows();
  });
}
load();
setInterval(load, 5000);
