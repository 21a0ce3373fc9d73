/*
 * app.js - the awooop console: one page, hash routes, the public API only.
 * The API key lives in sessionStorage (never in a URL or localStorage). The
 * project selector scopes every view, creating included: a platform admin's
 * runs, approvals and submissions go to the selected project (the runs
 * routes' ?project=). Each view is a module of its own (views below).
 */
'use strict';

import { KEY, PROJECT, session, el, fill, say, api, nav, problem } from './lib.js';
import { viewOverview } from './overview.js';
import { viewRuns } from './runs.js';
import { viewCalls } from './calls.js';
import { viewContracts } from './contracts.js';
import { viewBudget } from './budget.js';
import { viewAudit } from './audit.js';
import { viewKeys } from './keys.js';
import { viewSystem } from './system.js';

const VIEWS = {
  overview: viewOverview, runs: viewRuns, calls: viewCalls, contracts: viewContracts,
  budget: viewBudget, audit: viewAudit, keys: viewKeys, system: viewSystem,
};

function chrome(on) {
  document.getElementById('nav').hidden = !on;
  document.getElementById('who').hidden = !on;
}

/* ------------------------------------------------------------ sign in */

function login() {
  chrome(false);
  const g = ++nav.gen;
  const input = el('input', { id: 'key', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false' });
  const m = document.getElementById('main');
  fill(m, el('h1', { text: 'Sign in' }),
    el('form', { class: 'login', onsubmit: async (ev) => {
      ev.preventDefault();
      sessionStorage.setItem(KEY, input.value.trim());
      const r = await api('GET', '/v1/whoami');
      if (!r.ok) {
        sessionStorage.removeItem(KEY);
        problem(r, 'Sign in refused');
        return;
      }
      session.me = null;
      say('Signed in.', 'ok');
      location.hash = '#/overview';
      route();
    } },
    el('p', { class: 'muted', text: 'Paste an API key of this server. It stays in this tab (session storage) and is sent only to this server.' }),
    el('label', { for: 'key' }, 'API key', input),
    el('button', { type: 'submit', text: 'Sign in' })));
  document.title = 'Sign in - awooop console';
  if (g === nav.gen) input.focus();
}

/* Who the key is, and the projects it may see (the selector). */
export async function loadSession() {
  const [me, p] = await Promise.all([api('GET', '/v1/whoami'), api('GET', '/v1/projects?limit=1000')]);
  if (!me.ok || !p.ok) return false;
  /* a platform admin: the platform project's platform-admin key, which acts in every project */
  session.me = Object.assign({ platform: me.data.scope === 'platform-admin' && me.data.project === '__platform__' }, me.data);
  session.projects = (p.data.items || []).map((x) => x.id);
  const cur = sessionStorage.getItem(PROJECT);
  if (!session.projects.includes(cur))
    sessionStorage.setItem(PROJECT, session.projects.find((x) => !x.startsWith('__')) || session.projects[0] || '');
  const sel = document.getElementById('project');
  fill(sel, session.projects.map((x) => el('option', { value: x, selected: x === sessionStorage.getItem(PROJECT),
    text: x === '__platform__' ? 'platform (__platform__)' : x })));
  fill(document.getElementById('whoami'), 'Signed in as ', el('strong', { id: 'principal', text: me.data.principal }),
    ` (${session.me.platform ? 'platform admin' : me.data.scope + ' of ' + me.data.project})`);
  return true;
}

/* ------------------------------------------------------------ routing */

export async function route() {
  const g = ++nav.gen;
  if (!sessionStorage.getItem(KEY)) return login();
  if (!session.me && !(await loadSession())) {
    sessionStorage.removeItem(KEY);
    say('The key was not accepted: sign in again.', 'bad');
    return login();
  }
  if (g !== nav.gen) return;
  chrome(true);
  const [path] = location.hash.replace(/^#\/?/, '').split('?');
  const parts = path.split('/').map(decodeURIComponent);
  const name = VIEWS[parts[0]] ? parts[0] : 'overview';
  document.querySelectorAll('#nav a').forEach((a) => {
    if (a.getAttribute('href') === '#/' + name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  });
  await VIEWS[name](parts.slice(1), g);
  if (g === nav.gen) document.getElementById('main').focus({ preventScroll: true });
}

document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('project').addEventListener('change', (ev) => {
    sessionStorage.setItem(PROJECT, ev.target.value);
    say('Project ' + ev.target.value + ' selected.');
    // a run or a call belongs to the project it was read in: back to the list
    const [path] = location.hash.replace(/^#\/?/, '').split('?');
    const top = path.split('/')[0];
    if (['runs', 'calls'].includes(top) && path.includes('/')) location.hash = '#/' + top;
    else route();
  });
  document.getElementById('logout').addEventListener('click', () => {
    sessionStorage.clear();
    session.me = null;
    session.projects = [];
    say('Signed out.');
    history.replaceState(null, '', '#');
    login();
  });
  window.addEventListener('hashchange', route);
  route();
});
