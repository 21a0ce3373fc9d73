/*
 * overview.js - the first page: every project this key may see at a glance
 * (a platform admin: all of them) - runs in flight, waiting for approval and
 * failed, model and tool calls of the last 24 hours and how many were not
 * ok, today's spend and whether the budget is suspended; 20 projects a page,
 * the page's projects only asked for - and, for the
 * selected project, what needs someone: runs waiting for an approval
 * (decided here), runs that failed, calls that were not ok.
 */
'use strict';

import { askDeny } from './runs.js';
import {
  session, PROJECT, el, fill, api, say, refused, project, enc, short, nav, view, poll, pool, table, badge, button, when, num, usd, isPlatform,
} from './lib.js';

const FLIGHT = ['queued', 'claimed', 'running', 'retry_wait'];
const DAY = 86400e3;
const PAGE = 20;

async function glance(p) {
  const since = new Date(Date.now() - DAY).toISOString();
  const [runs, calls, budget] = await Promise.all([
    api('GET', `/v1/platform/runs?project=${enc(p)}&limit=200`),
    api('GET', `/v1/projects/${enc(p)}/audit?action=llm.call,mcp.call,mcp.relay&since=${since}&order=desc&limit=1000`),
    api('GET', `/v1/projects/${enc(p)}/budget`)]);
  const o = { project: p };
  if (runs.ok) {
    const it = runs.data.items;
    o.flight = it.filter((x) => FLIGHT.includes(x.state)).length;
    o.waiting = it.filter((x) => x.state === 'waiting_approval').length;
    o.failed = it.filter((x) => x.state === 'failed' && x.finished_at && Date.parse(x.finished_at) > Date.now() - DAY).length;
    o.runsMore = !!runs.data.next_cursor;
  }
  if (calls.ok) {
    const it = calls.data.items;
    o.calls = it.length;
    o.notok = it.filter((x) => !x.payload || x.payload.outcome !== 'ok').length;
    o.callsMore = !!calls.data.next_cursor;
  }
  if (budget.ok) {
    o.tokens = budget.data.settled;
    o.cost = budget.data.cost_settled_usd;
    o.budget = budget.data.suspended ? 'suspended' : budget.data.budget ? 'active' : 'none';
    o.limit = budget.data.limit;
  }
  return o;
}

/* A link-like button that selects project p and goes to where. */
const open = (p, where, text, label) => button(text || p, () => {
  sessionStorage.setItem(PROJECT, p);
  document.getElementById('project').value = p;
  say('Project ' + p + ' selected.');
  location.hash = where || '#/runs';
}, 'link', label || `Open the runs of project ${p}`);

export async function viewOverview(parts, g) {
  const all = el('div', { id: 'projects-glance' }), attention = el('div', { id: 'attention' });
  const list = isPlatform() ? session.projects.filter((p) => p !== '__platform__') : [project()];
  const pages = Math.max(1, Math.ceil(list.length / PAGE));
  /* the page that holds the selected project, first */
  let at = Math.max(0, Math.floor(list.indexOf(project()) / PAGE));
  const pager = el('div', { class: 'pager', id: 'glance-pager' });
  function drawPager() {
    if (pages < 2) return fill(pager);
    const to = (i) => () => { at = i; fill(all, el('p', { class: 'muted', text: 'Loading…' })); drawPager(); loadAll(); };
    fill(pager, button('Previous projects', to(at - 1), 'secondary'), el('span', { id: 'glance-page', text: `Projects ${at * PAGE + 1}-${Math.min(list.length, (at + 1) * PAGE)} of ${list.length}` }),
      button('Next projects', to(at + 1), 'secondary'));
    pager.firstChild.disabled = at === 0;
    pager.lastChild.disabled = at === pages - 1;
  }
  drawPager();
  if (!view(g, 'Overview',
    el('h2', { text: isPlatform() ? 'Every project' : 'Your project' }), pager, all,
    el('h2', { text: 'Needs attention in ' + project() }), attention)) return;
  async function loadAll() {
    const mine = at;
    const rows = await pool(list.slice(at * PAGE, (at + 1) * PAGE), 4, glance);
    if (g !== nav.gen) return false;
    if (mine !== at) return true; /* another page was asked for meanwhile */
    const n = (v, more) => (v === undefined ? '-' : num(v) + (more ? '+' : ''));
    fill(all, table([
      { label: 'Project', get: (o) => open(o.project) },
      { label: 'Runs in flight', num: true, get: (o) => n(o.flight) },
      { label: 'Waiting for approval', num: true, get: (o) => (o.waiting ? el('strong', { class: 'warn', text: num(o.waiting) }) : n(o.waiting)) },
      { label: 'Failed runs (24 h)', num: true, get: (o) => (o.failed ? el('strong', { class: 'bad', text: num(o.failed) }) : n(o.failed)) },
      { label: 'Calls (24 h)', num: true, get: (o) => n(o.calls, o.callsMore) },
      { label: 'Not ok', num: true, get: (o) => (o.notok ? open(o.project, '#/calls?outcome=!ok', n(o.notok, o.callsMore), `${n(o.notok, o.callsMore)} calls of ${o.project} not ok`) : n(o.notok)) },
      { label: 'Tokens today', num: true, get: (o) => n(o.tokens) },
      { label: 'Cost today', num: true, get: (o) => usd(o.cost) },
      { label: 'Budget', get: (o) => (o.budget ? badge(o.budget) : '-') }],
    rows, isPlatform() ? `${list.length} projects${pages > 1 ? `, ${at * PAGE + 1}-${at * PAGE + rows.length} shown` : ''}; runs counted among each one's latest 200` : 'Runs counted among the latest 200',
    { id: 'glance', rowClass: (o) => (o.project === project() ? 'current' : null) }));
    return true;
  }
  async function loadAttention() {
    const p = project();
    const since = new Date(Date.now() - DAY).toISOString();
    const [w, f, c] = await Promise.all([
      api('GET', `/v1/platform/runs?project=${enc(p)}&state=waiting_approval&limit=50`),
      api('GET', `/v1/platform/runs?project=${enc(p)}&state=failed&limit=5`),
      api('GET', `/v1/projects/${enc(p)}/audit?action=llm.call,mcp.call,mcp.relay&outcome=!ok&since=${since}&order=desc&limit=5`)]);
    if (g !== nav.gen) return false;
    const decide = (id, d, what) => async () => {
      if (d === 'deny' && !(await askDeny(id, what))) return;
      const r = await api('POST', `/v1/platform/runs/${enc(id)}/approve?project=${enc(p)}`, { decision: d });
      if (!r.ok) return say(`Not ${d === 'approve' ? 'approved' : 'denied'}: ${(r.data && r.data.detail) || ''} (${(r.data && r.data.code) || r.status})`, 'bad');
      say(`Run ${short(id)} ${d === 'approve' ? 'approved' : 'denied'} by ${session.me.principal}.`, 'ok');
      loadAttention();
    };
    const summary = (x) => {
      const s = (x.workflow || []).find((st) => st.kind === 'approval');
      return s && s.args && s.args.summary ? s.args.summary : (x.workflow || []).map((st) => st.kind).join(' → ');
    };
    fill(attention,
      w.ok ? table([{ label: 'Run', get: (x) => el('a', { href: '#/runs/' + x.run_id, class: 'mono', text: short(x.run_id) }) },
        { label: 'Asks', get: (x) => summary(x) }, { label: 'Waiting since', get: (x) => when(x.updated_at || x.created_at) },
        { label: 'Decide', get: (x) => el('span', { class: 'row' }, button('Approve', decide(x.run_id, 'approve'), 'approve', 'Approve run ' + short(x.run_id)),
          button('Deny', decide(x.run_id, 'deny', summary(x)), 'danger', 'Deny run ' + short(x.run_id))) }],
      w.data.items, 'Runs waiting for an approval', { id: 'waiting', empty: 'No run waits for an approval.' }) : refused(w, 'Runs not shown'),
      f.ok ? table([{ label: 'Run', get: (x) => el('a', { href: '#/runs/' + x.run_id, class: 'mono', text: short(x.run_id) }) },
        { label: 'Error', get: (x) => x.error_code || '' }, { label: 'Finished', get: (x) => when(x.finished_at) }],
      f.data.items, 'The latest failed runs', { empty: 'No failed run.' }) : null,
      c.ok ? table([{ label: 'Call', get: (x) => el('a', { href: '#/calls/' + x.seq, text: x.action === 'llm.call' ? 'model' : 'tool' }) },
        { label: 'By', get: (x) => x.actor }, { label: 'Outcome', get: (x) => [badge(x.payload.outcome), ' ', x.payload.code || ''] }, { label: 'When', get: (x) => when(x.ts) }],
      c.data.items, 'Calls not ok in the last 24 hours', { empty: 'Every call of the last 24 hours was ok.' }) : refused(c, 'Calls not shown'));
    return true;
  }
  poll(g, 15000, async () => ((await Promise.all([loadAll(), loadAttention()])).every(Boolean) ? true : 'error'), 120000);
}
