// auth.js — the viewer against a server started with --auth: every API call
// goes through authFetch, which sends the token kept in this tab's
// sessionStorage as `Authorization: Bearer` (and the tenant, when one was
// given, as X-Scope-OrgID). An answer 401 (no token, or one the server does
// not know), or 400 asking for X-Scope-OrgID, opens the token form with the
// server's message; the call is tried again once the form is sent. One form
// serves every call waiting at that moment. Without --auth nothing here is
// ever shown: the server answers no 401. The viewer's files themselves need
// no token. Export links are plain links, which carry no header: with a
// token they are fetched with it and saved from memory instead.
const KEY = 'flamedb.token', ORG_KEY = 'flamedb.tenant';
const $ = (s) => document.querySelector(s);

export function authHeaders() {
  const h = {};
  const t = sessionStorage.getItem(KEY), o = sessionStorage.getItem(ORG_KEY);
  if (t) h.Authorization = 'Bearer ' + t;
  if (o) h['X-Scope-OrgID'] = o;
  return h;
}

let asking = null;   // the form's promise while it is open

function form() {
  let f = $('#auth');
  if (f) return f;
  f = document.createElement('form');
  f.id = 'auth';
  f.className = 'auth';
  f.hidden = true;
  f.innerHTML = `
    <div class="auth-box" role="dialog" aria-modal="true" aria-labelledby="auth-title">
      <b id="auth-title">This server asks for a token</b>
      <p id="auth-msg" class="muted"></p>
      <label>token <input id="auth-token" type="password" autocomplete="off" spellcheck="false" required></label>
      <label>tenant <input id="auth-tenant" spellcheck="false" placeholder="only for a token of several tenants"></label>
      <p class="muted">Kept in this tab only (session storage), sent as Authorization: Bearer.</p>
      <button class="primary" type="submit">Use token</button>
    </div>`;
  document.body.appendChild(f);
  return f;
}

function askToken(message) {
  if (asking) return asking;
  const f = form();
  $('#auth-msg').textContent = message || '';
  $('#auth-token').value = '';
  $('#auth-tenant').value = sessionStorage.getItem(ORG_KEY) || '';
  f.hidden = false;
  $('#auth-token').focus();
  asking = new Promise((resolve) => {
    f.onsubmit = (e) => {
      e.preventDefault();
      const t = $('#auth-token').value.trim(), o = $('#auth-tenant').value.trim();
      if (!t) return;
      sessionStorage.setItem(KEY, t);
      if (o) sessionStorage.setItem(ORG_KEY, o); else sessionStorage.removeItem(ORG_KEY);
      f.hidden = true;
      asking = null;
      resolve();
    };
  });
  return asking;
}

// fetch with the token; asks for one while the server answers 401 (or wants
// a tenant), then answers the server's answer as fetch does.
export async function authFetch(url, opts = {}) {
  for (;;) {
    const r = await fetch(url, { ...opts, headers: { ...(opts.headers || {}), ...authHeaders() } });
    let why = null;
    if (r.status === 401 || r.status === 400) {
      let err = '';
      try { err = (await r.clone().json()).error || ''; } catch { /* not JSON */ }
      if (r.status === 401) why = err || 'HTTP 401';
      else if (/X-Scope-OrgID/.test(err)) why = err + ' (give the tenant below)';
    }
    if (why === null) return r;
    await askToken(why);
  }
}

// Export links with a token: fetched with it, saved from a blob.
document.addEventListener('click', async (e) => {
  const a = e.target.closest && e.target.closest('a[download]');
  if (!a || !sessionStorage.getItem(KEY)) return;
  const href = a.getAttribute('href') || '';
  if (!href.startsWith('/api/')) return;
  e.preventDefault();
  const r = await authFetch(href);
  const blob = await r.blob();
  const tmp = document.createElement('a');
  tmp.href = URL.createObjectURL(blob);
  tmp.download = a.download;
  tmp.click();
  setTimeout(() => URL.revokeObjectURL(tmp.href), 5000);
}, true);
