/*
 * app.js - the awooop console: one page, hash routes, the public API only.
 * The API key lives in sessionStorage (never in a URL or localStorage); the
 * DOM is built with textContent (nothing the API returns is parsed as HTML).
 */
'use strict';

const KEY = 'awooop.key';
const PROJECT = 'awooop.project';
let timers = [];
let projects = [];

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of kids.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}
const svg = (tag, attrs, ...kids) => {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const c of kids) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
};

function say(msg, cls) {
  const s = document.getElementById('status');
  s.textContent = msg;
  s.className = 'status ' + (cls || '');
}

async function api(method, path, body, headers) {
  const h = Object.assign({ Authorization: 'Bearer ' + sessionStorage.getItem(KEY) }, headers || {});
  if (body !== undefined) h['Content-Type'] = 'application/json';
  let r;
  try {
    r = await fetch(path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  } catch (e) {
    say('The server did not answer: ' + e.message, 'bad');
    throw e;
  }
  const ct = r.headers.get('content-type') || '';
  const data = ct.includes('json') ? await r.json().catch(() => null) : await r.text();
  return { status: r.status, ok: r.ok, data };
}

/* An answer that is not 2xx: its stable code and detail in the status line. */
/* /metrics holds every tenant's series: answered to a key of the platform
 * project only. The parsed series, or null when this key may not read them. */
async function metrics() {
  const r = await fetch('/metrics', { cache: 'no-store', headers: { Authorization: 'Bearer ' + sessionStorage.getItem(KEY) } });
  return r.ok ? parseMetrics(await r.text()) : null;
}

function problem(res, what) {
  const d = res.data || {};
  const code = d.code || (d.error && d.error.data && d.error.data.code) || res.status;
  say(`${what}: ${code}${d.detail ? ' - ' + d.detail : d.title ? ' - ' + d.title : ''}`, 'bad');
  return code;
}

const project = () => sessionStorage.getItem(PROJECT) || '';
const short = (id) => (id ? id.slice(0, 8) + '…' + id.slice(-4) : '');
const enc = encodeURIComponent;

function table(cols, rows, caption) {
  return el('table', {},
    caption ? el('caption', { class: 'muted', text: caption }) : null,
    el('thead', {}, el('tr', {}, cols.map((c) => el('th', { scope: 'col', class: c.num ? 'num' : null, text: c.label })))),
    el('tbody', {}, rows.length ? rows.map((r) => el('tr', {}, cols.map((c) => {
      const v = c.get(r);
      return el('td', { class: c.num ? 'num' : null }, v instanceof Node ? v : v === null || v === undefined ? '' : String(v));
    }))) : el('tr', {}, el('td', { colspan: cols.length, class: 'muted', text: 'nothing yet' }))));
}

/* Route generations: a view renders, and starts its refresh timers, only
 * while it is still the route asked for last (a slow view finishing after
 * the user moved on must not paint over the newer one). */
let gen = 0;

function view(g, title, ...kids) {
  if (g !== gen) return;
  const m = document.getElementById('main');
  m.replaceChildren(el('h1', { text: title }), ...kids);
  document.title = title + ' - awooop console';
}

function every(g, ms, fn) {
  if (g !== gen) return;
  fn();
  timers.push(setInterval(fn, ms));
}

/* ------------------------------------------------------------ sign in */

function login() {
  document.getElementById('nav').hidden = true;
  document.getElementById('who').hidden = true;
  const input = el('input', { id: 'key', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false' });
  view(++gen, 'Sign in',
    el('form', { class: 'login', onsubmit: async (ev) => {
      ev.preventDefault();
      sessionStorage.setItem(KEY, input.value.trim());
      const r = await api('GET', '/v1/projects?limit=1000');
      if (!r.ok) {
        sessionStorage.removeItem(KEY);
        problem(r, 'Sign in refused');
        return;
      }
      say('Signed in.', 'ok');
      location.hash = '#/projects';
      route();
    } },
    el('p', { class: 'muted', text: 'Your API key stays in this tab (session storage) and is sent only to this server.' }),
    el('label', { for: 'key' }, 'API key', input),
    el('button', { type: 'submit', text: 'Sign in' })));
  input.focus();
}

async function loadProjects() {
  const r = await api('GET', '/v1/projects?limit=1000');
  if (!r.ok) return false;
  projects = (r.data.items || []).map((p) => p.id);
  const sel = document.getElementById('project');
  if (!projects.includes(project())) sessionStorage.setItem(PROJECT, projects.find((p) => !p.startsWith('__')) || projects[0] || '');
  sel.replaceChildren(...projects.map((p) => el('option', { value: p, selected: p === project(), text: p })));
  return true;
}

/* ------------------------------------------------------------ projects and keys */

async function viewProjects(params, g) {
  const r = await api('GET', '/v1/projects?limit=1000');
  const pid = el('input', { id: 'new-project', required: true, pattern: '[a-z0-9][a-z0-9_-]{1,62}' });
  const keysBox = el('div');
  view(g, 'Projects and keys',
    table([{ label: 'Project', get: (p) => p.id }, { label: 'Created', get: (p) => p.created_at }, { label: 'By', get: (p) => p.created_by }],
      r.ok ? r.data.items : [], 'Projects this key may see'),
    el('h2', { text: 'New project' }),
    el('form', { onsubmit: async (ev) => {
      ev.preventDefault();
      const c = await api('POST', '/v1/projects', { id: pid.value });
      if (!c.ok) return problem(c, 'Project not created');
      say('Project ' + c.data.id + ' created.', 'ok');
      await loadProjects();
      route();
    } }, el('label', { for: 'new-project' }, 'Project id', pid), el('button', { type: 'submit', text: 'Create project' })),
    el('h2', { text: 'Keys of ' + project() }), keysBox);
  const k = await api('GET', `/v1/projects/${enc(project())}/keys`);
  const name = el('input', { id: 'key-name', required: true });
  const scope = el('select', { id: 'key-scope' }, ['reader', 'worker', 'operator', 'project-admin'].map((s) => el('option', { value: s, text: s })));
  const secret = el('output', { id: 'key-secret', class: 'mono' });
  keysBox.replaceChildren(
    k.ok ? table([
      { label: 'Name', get: (x) => x.name }, { label: 'Scope', get: (x) => x.scope }, { label: 'Prefix', get: (x) => x.prefix },
      { label: 'Created', get: (x) => x.created_at }, { label: 'Revoked', get: (x) => x.revoked_at || '' },
      { label: 'Action', get: (x) => x.revoked_at ? '' : el('button', { type: 'button', class: 'danger', 'aria-label': 'Revoke key ' + x.name, onclick: async () => {
        const d = await api('DELETE', `/v1/projects/${enc(project())}/keys/${enc(x.key_id)}`);
        if (d.status !== 204) return problem(d, 'Key not revoked');
        say('Key ' + x.name + ' revoked.', 'ok');
        route();
      } }, 'Revoke') }], k.data.items) : el('p', { class: 'muted', text: 'Listing keys needs a project-admin key (' + (k.data && k.data.code) + ').' }),
    el('form', { onsubmit: async (ev) => {
      ev.preventDefault();
      const c = await api('POST', `/v1/projects/${enc(project())}/keys`, { name: name.value, scope: scope.value });
      if (!c.ok) return problem(c, 'Key not created');
      secret.textContent = 'New key (shown once): ' + c.data.key;
      say('Key ' + c.data.name + ' created.', 'ok');
    } }, el('label', { for: 'key-name' }, 'Key name', name), el('label', { for: 'key-scope' }, 'Scope', scope),
    el('button', { type: 'submit', text: 'Create key' })),
    secret);
}

/* ------------------------------------------------------------ contracts */

const FAMILIES = ['policy_routing', 'channel_event', 'mcp_tool', 'budget', 'approval'];

async function viewContracts(params, g) {
  const fam = el('select', { id: 'family' }, FAMILIES.map((f) => el('option', { value: f, selected: f === (params.family || 'policy_routing'), text: f })));
  const cid = el('input', { id: 'contract', value: params.contract || 'default', required: true });
  const body = el('textarea', { id: 'draft-body', 'aria-describedby': 'draft-help' }, '{}');
  const list = el('div'), conv = el('div', { id: 'convergence' }), diff = el('div');
  const base = () => `/v1/projects/${enc(project())}/contracts/${enc(fam.value)}/${enc(cid.value)}`;
  async function load() {
    const r = await api('GET', base() + '/revisions');
    if (!r.ok) { list.replaceChildren(el('p', { class: 'muted', text: 'No revisions (' + ((r.data && r.data.code) || r.status) + ').' })); return; }
    const revs = r.data.items || [];
    const act = (rev, what) => el('button', { type: 'button', class: 'secondary', 'aria-label': what + ' revision ' + short(rev.revision_id), onclick: async () => {
      const a = await api('POST', `${base()}/revisions/${rev.revision_id}/${what}`);
      if (!a.ok) return problem(a, 'Not ' + what + 'd');
      const rb = a.data && a.data.rollback ? (a.data.activated ? ' Rollback activated.'
        : a.data.activation_error ? ` Rollback not activated: ${a.data.activation_error.code} ${a.data.activation_error.detail}`
          : ` Rollback: ${a.data.approvals} of ${a.data.approvals_needed} approval(s).`) : '';
      say(`Revision ${short(rev.revision_id)}: ${what} done${a.status === 202 ? ' (suggest mode: nothing changed)' : ''}.${rb}`, 'ok');
      load();
    } }, what);
    // a superseded revision comes back as a new revision with its body, published here and
    // activated by the approval that completes the policy's rollback quorum (another principal)
    const rollback = (rev) => el('button', { type: 'button', class: 'secondary', 'aria-label': 'Roll back to revision ' + short(rev.revision_id), onclick: async () => {
      const a = await api('POST', `${base()}/rollback`, { to: rev.revision_id });
      if (!a.ok) return problem(a, 'Not rolled back');
      say(`Rollback to ${short(rev.revision_id)}: revision ${short(a.data.revision_id)} published, waiting for ${a.data.approvals_needed} approval(s) by another approver.`, 'ok');
      load();
    } }, 'Roll back');
    const selA = el('select', { id: 'diff-a' }, revs.map((x) => el('option', { value: x.revision_id, text: short(x.revision_id) + ' ' + x.state })));
    const selB = el('select', { id: 'diff-b' }, revs.map((x, i) => el('option', { value: x.revision_id, selected: i === 1, text: short(x.revision_id) + ' ' + x.state })));
    list.replaceChildren(
      table([
        { label: 'Revision', get: (x) => el('span', { class: 'mono', title: x.revision_id, text: short(x.revision_id) }) },
        { label: 'State', get: (x) => x.rollback_of ? `${x.state} (rollback to ${short(x.rollback_of)})` : x.state },
        { label: 'Updated', get: (x) => x.updated_at }, { label: 'By', get: (x) => x.created_by },
        { label: 'Actions', get: (x) => el('span', { class: 'row' },
          x.state === 'draft' ? act(x, 'publish') : null,
          x.state === 'published' ? [act(x, 'approve'), act(x, 'activate')] : null,
          x.state === 'active' || x.state === 'published' ? act(x, 'revoke') : null,
          x.state === 'superseded' ? rollback(x) : null) }], revs, 'Revisions, newest first'),
      revs.length > 1 ? el('form', { onsubmit: async (ev) => {
        ev.preventDefault();
        const [a, b] = await Promise.all([api('GET', `${base()}/revisions/${selA.value}`), api('GET', `${base()}/revisions/${selB.value}`)]);
        const p = await api('GET', `${base()}/revisions/${selA.value}/diff/${selB.value}`);
        if (!a.ok || !b.ok || !p.ok) return problem(p.ok ? (a.ok ? b : a) : p, 'No diff');
        diff.replaceChildren(el('h2', { text: 'Side by side' }),
          el('div', { class: 'grid2' },
            el('section', { 'aria-label': 'Revision A' }, el('h3', { text: 'A ' + short(selA.value) }), el('pre', { class: 'del', text: JSON.stringify(a.data.body, null, 2) })),
            el('section', { 'aria-label': 'Revision B' }, el('h3', { text: 'B ' + short(selB.value) }), el('pre', { class: 'add', text: JSON.stringify(b.data.body, null, 2) }))),
          table([{ label: 'Op', get: (o) => o.op }, { label: 'Path', get: (o) => o.path }, { label: 'Value', get: (o) => o.value === undefined ? '' : JSON.stringify(o.value) }],
            p.data, 'RFC 6902 patch from A to B'));
      } }, el('label', { for: 'diff-a' }, 'A', selA), el('label', { for: 'diff-b' }, 'B', selB), el('button', { type: 'submit', text: 'Compare' })) : null);
  }
  async function convergence() {
    const r = await api('GET', base() + '/convergence?limit=5');
    if (!r.ok) { conv.replaceChildren(el('p', { class: 'muted', text: 'No convergence data (' + ((r.data && r.data.code) || r.status) + ').' })); return; }
    const a = r.data.activations[0];
    conv.replaceChildren(
      a ? el('p', { id: 'conv-summary', class: a.converged ? 'ok' : 'warn' },
        `${a.learned} of ${a.of} processes serve ${short(a.revision_id)}${a.of ? ' (' + Math.round(100 * a.learned / a.of) + '%)' : ''}` +
        (a.slowest_ms !== null ? `, slowest ${a.slowest_ms} ms after the commit` : '')) : el('p', { class: 'muted', text: 'Never activated.' }),
      table([{ label: 'Process', get: (p) => p.process_id ? el('span', { class: 'mono', title: p.process_id, text: short(p.process_id) }) : '(the platform\'s)' },
        { label: 'Role', get: (p) => p.role }, { label: 'Serves', get: (p) => short(p.revision_id) }, { label: 'Last seen', get: (p) => p.last_seen }],
        r.data.processes, `${r.data.live} live processes (${r.data.stale} stale dropped)`),
      table([{ label: 'Activation', get: (x) => short(x.revision_id) }, { label: 'At', get: (x) => x.activated_at },
        { label: 'Learned', num: true, get: (x) => `${x.learned}/${x.of}` }, { label: 'Slowest (ms)', num: true, get: (x) => x.slowest_ms === null ? '-' : x.slowest_ms }],
        r.data.activations, 'Recent activations'));
  }
  view(g, 'Contracts',
    el('form', { onsubmit: (ev) => { ev.preventDefault(); location.hash = `#/contracts/${fam.value}/${cid.value}`; } },
      el('label', { for: 'family' }, 'Family', fam), el('label', { for: 'contract' }, 'Contract', cid), el('button', { type: 'submit', text: 'Open' })),
    list,
    el('h2', { text: 'Convergence (live)' }), conv,
    diff,
    el('h2', { text: 'New draft' }),
    el('form', { onsubmit: async (ev) => {
      ev.preventDefault();
      let b;
      try { b = JSON.parse(body.value); } catch (e) { return say('The body is not JSON: ' + e.message, 'bad'); }
      const c = await api('POST', base() + '/revisions', { body: b });
      if (!c.ok) return problem(c, 'Draft not created');
      say('Draft ' + short(c.data.revision_id) + ' created.', 'ok');
      load();
    } }, el('label', { for: 'draft-body', class: 'wide' }, 'Body (JSON)', body),
    el('p', { id: 'draft-help', class: 'muted', text: 'docs/contracts.md documents each family\'s fields.' }),
    el('button', { type: 'submit', text: 'Create draft' })));
  await load();
  every(g, 1000, convergence);
}

/* ------------------------------------------------------------ runs */

async function viewRuns(params, g) {
  if (params.id) return viewRun(params.id, g);
  const st = el('select', { id: 'run-state' }, ['', 'queued', 'claimed', 'running', 'waiting_approval', 'retry_wait', 'succeeded', 'failed', 'cancelled', 'suggested'].map((s) => el('option', { value: s, selected: s === (params.state || ''), text: s || 'any state' })));
  const wf = el('textarea', { id: 'run-workflow' }, '[{"kind":"noop"}]');
  const box = el('div');
  async function load() {
    const r = await api('GET', '/v1/platform/runs?limit=100' + (st.value ? '&state=' + enc(st.value) : ''));
    if (!r.ok) return problem(r, 'Runs not listed');
    box.replaceChildren(table([
      { label: 'Run', get: (x) => el('a', { href: '#/runs/' + x.run_id, class: 'mono', text: short(x.run_id) }) },
      { label: 'State', get: (x) => x.state }, { label: 'Mode', get: (x) => x.mode },
      { label: 'Attempts', num: true, get: (x) => x.attempts }, { label: 'Created', get: (x) => x.created_at }], r.data.items, 'Runs of ' + project() + ', newest first'));
  }
  view(g, 'Runs',
    el('form', { onsubmit: (ev) => { ev.preventDefault(); load(); } }, el('label', { for: 'run-state' }, 'State', st), el('button', { type: 'submit', text: 'Filter' })),
    box,
    el('h2', { text: 'Submit a run' }),
    el('form', { onsubmit: async (ev) => {
      ev.preventDefault();
      let w;
      try { w = JSON.parse(wf.value); } catch (e) { return say('The workflow is not JSON: ' + e.message, 'bad'); }
      const c = await api('POST', '/v1/platform/runs', { workflow: w });
      if (!c.ok) return problem(c, 'Run not submitted');
      say('Run ' + short(c.data.run_id) + ' submitted.', 'ok');
      location.hash = '#/runs/' + c.data.run_id;
    } }, el('label', { for: 'run-workflow', class: 'wide' }, 'Workflow (JSON steps)', wf), el('button', { type: 'submit', text: 'Submit run' })));
  every(g, 2000, load);
}

async function viewRun(id, g) {
  const box = el('div');
  view(g, 'Run ' + short(id), box);
  async function load() {
    const r = await api('GET', '/v1/platform/runs/' + enc(id));
    if (r.status === 404) {
      box.replaceChildren(el('p', { id: 'run-missing', class: 'bad', text: `Not found (${(r.data && r.data.code) || r.status}).` }));
      return false;
    }
    if (!r.ok) { problem(r, 'Run not read'); return true; } /* the next poll tries again */
    const x = r.data;
    const done = ['succeeded', 'failed', 'cancelled', 'suggested'].includes(x.state);
    box.replaceChildren(
      el('dl', {}, ...[['Run', x.run_id], ['State', x.state], ['Mode', x.mode], ['Queue', x.queue], ['Attempts', `${x.attempts} of ${x.max_attempts}`],
        ['Trace id', x.trace_id], ['Error', x.error_code || '-'], ['Created', x.created_at], ['Finished', x.finished_at || '-']]
        .map(([k, v]) => [el('dt', { text: k }), el('dd', { id: 'run-' + k.toLowerCase().replace(' ', '-'), class: 'mono', text: v })]).flat()),
      done ? null : el('button', { type: 'button', class: 'danger', onclick: async () => {
        const c = await api('POST', `/v1/platform/runs/${enc(id)}/cancel`);
        if (!c.ok) return problem(c, 'Not cancelled');
        say('Run cancelled.', 'ok');
        load();
      } }, 'Cancel run'),
      el('h2', { text: 'Journal' }),
      table([{ label: 'Step', num: true, get: (s) => s.step }, { label: 'Kind', get: (s) => s.kind }, { label: 'State', get: (s) => s.state },
        { label: 'Attempt', num: true, get: (s) => s.attempt }, { label: 'Error', get: (s) => s.error_code || '' },
        { label: 'Result', get: (s) => s.result === null ? '' : el('code', { text: JSON.stringify(s.result).slice(0, 200) }) }], x.steps || []),
      el('h2', { text: 'Transitions' }),
      table([{ label: 'At', get: (t) => t.at }, { label: 'From', get: (t) => t.from || '' }, { label: 'To', get: (t) => t.to || '' },
        { label: 'Event', get: (t) => t.event || '' }, { label: 'Actor', get: (t) => t.actor || '' }], x.transitions || []));
    return !done;
  }
  if (await load()) every(g, 1500, load);
}

/* ------------------------------------------------------------ audit */

async function viewAudit(params, g) {
  const out = el('p', { id: 'verify-result' });
  const r = await api('GET', `/v1/projects/${enc(project())}/audit?limit=200`);
  view(g, 'Audit trail',
    el('div', { class: 'row' }, el('button', { type: 'button', onclick: async () => {
      const v = await api('GET', `/v1/projects/${enc(project())}/audit/verify`);
      if (!v.ok) return problem(v, 'Not verified');
      out.className = v.data.ok ? 'ok' : 'bad';
      out.textContent = v.data.ok ? `Chain intact: ${v.data.records} records verified.` : `Chain BROKEN at record ${v.data.break_seq}: ${v.data.reason}`;
    } }, 'Verify the chain')),
    out,
    r.ok ? table([{ label: 'Seq', num: true, get: (a) => a.seq }, { label: 'Time', get: (a) => a.ts }, { label: 'Actor', get: (a) => a.actor },
      { label: 'Action', get: (a) => a.action }, { label: 'Target', get: (a) => a.target },
      { label: 'Hash', get: (a) => el('span', { class: 'mono', title: a.hash, text: a.hash.slice(0, 12) }) }], r.data.items, 'Oldest first (first 200)')
      : el('p', { class: 'muted', text: 'The audit trail needs an operator key (' + ((r.data && r.data.code) || r.status) + ').' }));
}

/* ------------------------------------------------------------ relay and metrics */

function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(\{[^}]*\})?\s+(\S+)$/.exec(line);
    if (m) out.push({ name: m[1], labels: m[2] || '', value: Number(m[3]) });
  }
  return out;
}

async function viewOps(params, g) {
  const box = el('div'), keys = el('div');
  view(g, 'Relay and metrics', el('p', { class: 'muted', text: 'From this process\'s /metrics, refreshed every 2 s.' }), box,
    el('h2', { text: 'Redis key migration (INV-1)' }), keys);
  const k = await api('GET', `/v1/projects/${enc(project())}/key-migrations`);
  keys.replaceChildren(k.ok ? table([{ label: 'Pattern', get: (x) => x.pattern }, { label: 'Priority', get: (x) => x.priority },
    { label: 'Phase', get: (x) => x.phase }, { label: 'Since', get: (x) => x.since || '-' },
    { label: 'Reads / new hits / fallbacks / old reads', num: true, get: (x) => x.counters ? [x.counters.reads, x.counters.new_hits, x.counters.fallbacks, x.counters.old_reads].join(' / ') : '-' }],
  k.data.items, k.data.redis ? 'Phases and this process\'s counters' : 'Phases (no Redis configured: no counters)')
    : el('p', { class: 'muted', text: 'Key migrations need an operator key (' + ((k.data && k.data.code) || k.status) + ').' }));
  every(g, 2000, async () => {
    const m = await metrics();
    if (!m) return box.replaceChildren(el('p', { class: 'muted', text: 'Metrics hold every tenant\'s series: they need a key of the platform project.' }));
    const get = (n) => m.filter((x) => x.name === n);
    const one = (n) => { const x = get(n)[0]; return x ? x.value : '-'; };
    const now = Date.now() / 1000;
    box.replaceChildren(
      table([{ label: 'Outbox', get: (x) => x[0] }, { label: 'Value', num: true, get: (x) => x[1] }], [
        ['undelivered events', one('awooop_outbox_undelivered')],
        ['oldest undelivered (s)', one('awooop_outbox_oldest_undelivered_age_seconds')],
        ['publish failures', get('awooop_relay_publish_failures_total').reduce((a, x) => a + x.value, 0)]], 'The ADR-113 relay'),
      table([{ label: 'Loop', get: (x) => x.labels.replace(/^\{loop="|"\}$/g, '') }, { label: 'Seconds since its last tick', num: true, get: (x) => (now - x.value).toFixed(1) }],
        get('awooop_loop_last_tick_seconds'), 'Background loops'),
      table([{ label: 'Learned by', get: (x) => x.labels.replace(/^\{source="|"\}$/g, '') }, { label: 'Revisions', num: true, get: (x) => x.value }],
        get('awooop_policy_changes_total'), 'Revisions this process learned'),
      table([{ label: 'Run event', get: (x) => x.labels.replace(/^\{event="|"\}$/g, '') }, { label: 'Count', num: true, get: (x) => x.value }],
        get('awooop_run_events_total'), 'Run runtime events'));
  });
}

/* ------------------------------------------------------------ budget */

async function viewBudget(params, g) {
  const r = await api('GET', `/v1/projects/${enc(project())}/budget`);
  if (!r.ok) return view(g, 'Budget', el('p', { class: 'muted', text: 'No budget view (' + ((r.data && r.data.code) || r.status) + ').' }));
  const b = r.data;
  const limit = b.limit || 0, settled = b.settled || 0, reserved = b.reserved || 0;
  const W = 500, frac = (v) => (limit ? Math.min(1, v / limit) : 0) * W;
  const chart = svg('svg', { class: 'meter', viewBox: `0 0 ${W} 22`, role: 'img', 'aria-labelledby': 'spend-title' },
    svg('title', { id: 'spend-title' }, `spent ${settled} and reserved ${reserved} of ${limit || 'no'} tokens`),
    svg('rect', { x: 0, y: 0, width: W, height: 22, fill: '#e6e9ed' }),
    svg('rect', { x: 0, y: 0, width: frac(settled), height: 22, fill: '#0b5cad' }),
    svg('rect', { x: frac(settled), y: 0, width: frac(reserved), height: 22, fill: '#7aa7d6' }));
  view(g, 'Budget',
    el('p', { class: b.suspended ? 'bad' : 'muted', text: b.suspended ? 'Suspended: ' + b.reason : `Period ${b.period} (${b.period_kind || 'none'}), resets ${b.resets || '-'}` }),
    b.budget ? chart : el('p', { class: 'muted', text: 'No budget contract is active: spend is recorded, nothing is limited.' }),
    table([{ label: 'Tokens', get: (x) => x[0] }, { label: 'Value', num: true, get: (x) => x[1] }],
      [['limit', limit || '-'], ['settled', settled], ['reserved', reserved]], 'This period'),
    table([{ label: 'Model', get: (x) => x.model }, { label: 'Tokens', num: true, get: (x) => x.tokens }, { label: 'Cost (USD)', num: true, get: (x) => x.cost_usd }],
      b.models || [], 'By model'));
}

/* ------------------------------------------------------------ MCP tools */

async function viewTools(params, g) {
  const hdr = { Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/list' };
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: 'awooop-console', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': {} };
  const r = await api('POST', `/v1/projects/${enc(project())}/mcp`, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta } }, hdr);
  const m = ((await metrics()) || [])
    .filter((x) => x.name === 'awooop_mcp_refusals_total' && x.labels.includes(`project="${project()}"`));
  const tools = r.ok && r.data && r.data.result ? r.data.result.tools : null;
  view(g, 'MCP tools',
    tools ? table([{ label: 'Tool', get: (t) => t.name }, { label: 'Description', get: (t) => t.description || '' }], tools, 'Tools this project may call')
      : el('p', { class: 'muted', text: 'No tools (' + ((r.data && r.data.error && r.data.error.data && r.data.error.data.code) || r.status) + ').' }),
    table([{ label: 'Refusals', get: (x) => x.labels.replace(/^\{|\}$/g, '') }, { label: 'Count', num: true, get: (x) => x.value }], m, 'Gate refusals (this process)'));
}

/* ------------------------------------------------------------ routing */

const VIEWS = { projects: viewProjects, contracts: viewContracts, runs: viewRuns, audit: viewAudit, ops: viewOps, budget: viewBudget, tools: viewTools };

async function route() {
  timers.forEach(clearInterval);
  timers = [];
  const g = ++gen;
  if (!sessionStorage.getItem(KEY)) return login();
  if (!projects.length && !(await loadProjects())) {
    sessionStorage.removeItem(KEY);
    return login();
  }
  document.getElementById('nav').hidden = false;
  document.getElementById('who').hidden = false;
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  const name = VIEWS[parts[0]] ? parts[0] : 'projects';
  const params = name === 'contracts' ? { family: parts[1], contract: parts[2] } : name === 'runs' ? { id: parts[1] } : {};
  document.querySelectorAll('nav a').forEach((a) => { if (a.getAttribute('href') === '#/' + name) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current'); });
  await VIEWS[name](params, g);
  document.getElementById('main').focus({ preventScroll: true });
}

document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('project').addEventListener('change', (ev) => { sessionStorage.setItem(PROJECT, ev.target.value); route(); });
  document.getElementById('logout').addEventListener('click', () => { sessionStorage.clear(); projects = []; say('Signed out.'); location.hash = ''; login(); });
  window.addEventListener('hashchange', route);
  route();
});
