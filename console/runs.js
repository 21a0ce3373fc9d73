/*
 * runs.js - the Runs view: the selected project's runs with filters (state,
 * queue, when created, text: applied by the server, GET /v1/platform/runs
 * ?state=&queue=&created_from=&created_to=&q=), refreshed while it is open
 * (polling, slower after a failure); approve or deny a waiting run where it is listed; submit a run
 * in the selected project. A run's page: its actions (approve, deny, cancel,
 * rerun), a step timeline (queued, each step's execution - an agent step's
 * turns and tool calls from its journal -, waits for approval, retries), the model and tool calls its steps made, the journal
 * and the transitions, refreshed until it ends.
 */
'use strict';

import {
  session, el, fill, api, say, problem, refused, codeOf, project, enc, short, inProject, nav, view, poll, table, facts,
  WORDS, badge, button, json, when, ago, dur, ms, num, usd, hashQuery, setHashQuery, RANGES, sinceOf, select, confirmAction,
} from './lib.js';

const STATES = ['queued', 'claimed', 'running', 'waiting_approval', 'retry_wait', 'succeeded', 'failed', 'cancelled', 'suggested'];
const DONE = ['succeeded', 'failed', 'cancelled', 'suggested'];
const CALLS = 'llm.call,mcp.call,mcp.relay';

/* POST .../approve {"decision"}: the signed-in key's own decision. */
async function decide(id, decision, after) {
  const r = await api('POST', inProject(`/v1/platform/runs/${enc(id)}/approve`), { decision });
  if (!r.ok) return problem(r, decision === 'approve' ? 'Not approved' : 'Not denied');
  const d = r.data;
  say(decision === 'approve'
    ? (d.moved ? `Run ${short(id)} approved: it goes on.` : `Approval recorded: ${d.approvals} of ${d.threshold}.`)
    : `Run ${short(id)} denied: it has failed.`, 'ok');
  if (after) after();
}

/* Deny asks first: a denied run fails, and that cannot be undone. */
export const askDeny = (id, what) => confirmAction({ title: `Deny run ${short(id)}?`,
  text: `${what ? '"' + what + '": ' : ''}the run fails with E-RUN-009, and a denial cannot be taken back. You decide as ${session.me.principal}.`,
  action: 'Deny the run' });
export const decideButtons = (id, after, what) => [
  button('Approve', () => decide(id, 'approve', after), 'approve', 'Approve run ' + short(id)),
  button('Deny', async () => { if (await askDeny(id, what)) decide(id, 'deny', after); }, 'danger', 'Deny run ' + short(id))];
/* What a waiting run asks (its approval step's summary), for the dialog. */
const asks = (x) => { const s = (x.workflow || []).find((st) => st.kind === 'approval'); return s && s.args && s.args.summary ? s.args.summary : ''; };
const localToIso = (v) => (v ? new Date(v + 'Z').toISOString() : '');

export async function viewRuns(parts, g) {
  if (parts[0]) return viewRun(parts[0], g);
  const q = hashQuery();
  const st = select('run-state', [['', 'any state'], ...STATES.map((s) => [s, s.replace('_', ' ')])], q.state || '');
  const queue = select('run-queue', [['', 'any queue']], q.queue || '');
  const range = select('run-range', [...RANGES.map(([k, t]) => [k, t]), ['custom', 'between…']], q.range || '');
  const from = el('input', { id: 'run-from', type: 'datetime-local', step: 1, value: q.from || '' });
  const until = el('input', { id: 'run-until', type: 'datetime-local', step: 1, value: q.until || '' });
  const custom = el('span', { class: 'row', hidden: range.value !== 'custom' },
    el('label', { for: 'run-from' }, 'From (UTC)', from), el('label', { for: 'run-until' }, 'Until (UTC)', until));
  const text = el('input', { id: 'run-text', type: 'search', value: q.q || '', maxlength: 200, placeholder: 'run id, step kind or name' });
  const box = el('div', { id: 'runs-box' }), more = el('div');
  let runs = [], cursor = null, asked = '';
  const filters = () => ({ state: st.value, queue: queue.value, range: range.value, from: range.value === 'custom' ? from.value : '',
    until: range.value === 'custom' ? until.value : '', q: text.value.trim() });
  /* the filters as the API's query */
  function query(after) {
    const f = filters(), p = new URLSearchParams({ limit: '100' });
    if (f.state) p.set('state', f.state);
    if (f.queue) p.set('queue', f.queue);
    const since = f.range === 'custom' ? localToIso(f.from) : sinceOf(f.range);
    if (since) p.set('created_from', since);
    if (f.range === 'custom' && f.until) p.set('created_to', localToIso(f.until));
    if (f.q) p.set('q', f.q);
    if (after) p.set('cursor', after);
    return inProject('/v1/platform/runs?' + p.toString());
  }
  const filtered = () => { const f = filters(); return !!(f.state || f.queue || f.range || f.q); };

  function render() {
    fill(box, table([
      { label: 'Run', get: (x) => el('a', { href: '#/runs/' + x.run_id, class: 'mono', text: short(x.run_id) }) },
      { label: 'State', get: (x) => [badge(x.state), x.error_code ? el('span', { class: 'muted', text: ' ' + x.error_code }) : null] },
      { label: 'Steps', get: (x) => (x.workflow || []).map((s) => s.name || s.kind).join(' → ') },
      { label: 'Queue', get: (x) => x.queue },
      { label: 'Created', get: (x) => when(x.created_at) },
      { label: 'Took', get: (x) => (x.started_at ? dur(x.created_at, x.finished_at) : '-') },
      { label: 'Act', get: (x) => (x.state === 'waiting_approval' ? el('span', { class: 'row' }, decideButtons(x.run_id, load, asks(x))) : '') }],
    runs, `Runs of ${project()}, newest first${filtered() ? ', filtered' : ''}: ${runs.length}${cursor ? ' (more below)' : ''}`,
    { id: 'runs-table', empty: filtered() ? 'No run matches these filters.' : 'No runs in this project yet.' }));
    fill(more, cursor ? button('Load older runs', async () => { await page(cursor); render(); }, 'secondary') : null);
  }
  async function page(after) {
    const asked = JSON.stringify(filters());
    const r = await api('GET', query(after));
    if (asked !== JSON.stringify(filters())) return true; /* the filters changed meanwhile: that answer is stale */
    if (!r.ok) { fill(box, refused(r, 'Runs not listed')); return 'error'; }
    runs = after ? runs.concat(r.data.items) : r.data.items;
    cursor = r.data.next_cursor;
    return true;
  }
  /* the newest page again, keeping older pages loaded (while the filters are the same) */
  async function load() {
    const same = asked === JSON.stringify(filters());
    const older = same && runs.length > 100 ? runs.slice(100) : [], c = cursor;
    asked = JSON.stringify(filters());
    const r = await page(null);
    if (r === 'error') return r;
    if (older.length) {
      const seen = new Set(runs.map((x) => x.run_id));
      runs = runs.concat(older.filter((x) => !seen.has(x.run_id)));
      cursor = c;
    }
    render();
    return true;
  }
  /* a filter changed: the hash says it (a link keeps it), the list is asked again */
  let typing = 0;
  const changed = () => {
    custom.hidden = range.value !== 'custom';
    setHashQuery('#/runs', filters());
    runs = []; cursor = null;
    load();
  };
  const wf = el('textarea', { id: 'run-workflow', rows: 4 }, '[{"kind":"noop"}]');
  const input = el('textarea', { id: 'run-input', rows: 2, placeholder: 'optional JSON' });
  [st, queue, range, from, until].forEach((x) => x.addEventListener('change', changed));
  text.addEventListener('input', () => { clearTimeout(typing); typing = setTimeout(changed, 300); });
  if (!view(g, 'Runs',
    el('form', { class: 'filters', 'aria-label': 'Filter runs', onsubmit: (ev) => { ev.preventDefault(); clearTimeout(typing); changed(); } },
      el('label', { for: 'run-state' }, 'State', st), el('label', { for: 'run-queue' }, 'Queue', queue),
      el('label', { for: 'run-range' }, 'Created', range), custom, el('label', { for: 'run-text', class: 'grow' }, 'Text', text)),
    el('p', { class: 'muted', id: 'runs-live', text: 'Refreshed every 3 seconds while this page is open (the filters are applied by the server).' }),
    box, more,
    el('details', { class: 'panel', id: 'submit-panel' }, el('summary', { text: 'Submit a run in ' + project() }),
      el('form', { onsubmit: async (ev) => {
        ev.preventDefault();
        let w, i;
        try { w = JSON.parse(wf.value); } catch (e) { return say('The workflow is not JSON: ' + e.message, 'bad'); }
        try { i = input.value.trim() ? JSON.parse(input.value) : undefined; } catch (e) { return say('The input is not JSON: ' + e.message, 'bad'); }
        const body = { workflow: w };
        if (i !== undefined) body.input = i;
        const c = await api('POST', inProject('/v1/platform/runs'), body);
        if (!c.ok) return problem(c, 'Run not submitted');
        say(`Run ${short(c.data.run_id)} submitted in ${c.data.project}.`, 'ok');
        location.hash = '#/runs/' + c.data.run_id;
      } },
      el('label', { for: 'run-workflow', class: 'wide' }, 'Workflow: a JSON array of steps ({"kind", "args"})', wf),
      el('label', { for: 'run-input', class: 'wide' }, 'Input (JSON)', input),
      el('button', { type: 'submit', text: 'Submit run' }))))) return;
  api('GET', `/v1/projects/${enc(project())}/queues`).then((r) => {
    if (!r.ok || g !== nav.gen) return;
    for (const x of r.data.items) if (x.name) queue.append(el('option', { value: x.name, selected: x.name === q.queue, text: x.name }));
  });
  poll(g, 3000, load, 30000);
}

/* ------------------------------------------------------------ one run */

/* The timeline: one row a phase, its bar placed on the run's own time axis
 * (the rows carry the words; the bars are a picture of them). */
function timeline(x, calls) {
  const t0 = Date.parse(x.created_at);
  const end = x.finished_at ? Date.parse(x.finished_at) : Date.now();
  const span = Math.max(end - t0, 1);
  const rows = [];
  const tr = x.transitions || [];
  const firstStart = tr.find((t) => t.to === 'running');
  rows.push({ what: 'Queued', state: 'queued', a: x.created_at, b: firstStart ? firstStart.at : x.finished_at, note: firstStart ? '' : 'not started' });
  for (const s of x.steps || []) {
    const turns = s.calls || []; /* an agent step's journal: its turns and tool calls */
    const stepCalls = turns.length ? [] : calls.filter((c) => c.payload && c.payload.step === s.step);
    const nturns = turns.filter((c) => c.kind === 'model').length, ntools = turns.length - nturns;
    rows.push({ what: `Step ${s.step}: ${s.kind}`, state: s.state, a: s.started_at, b: s.state === 'started' ? null : s.finished_at,
      note: [s.tries > 1 ? `${s.tries} tries` : '', s.error_code || '', stepCalls.length ? `${stepCalls.length} call${stepCalls.length > 1 ? 's' : ''}` : '',
        turns.length ? `${nturns} turn${nturns === 1 ? '' : 's'}, ${ntools} tool call${ntools === 1 ? '' : 's'}` : ''].filter(Boolean).join(', ') });
    for (const c of turns)
      rows.push({ what: c.kind === 'model' ? `  turn ${c.turn}: model ${c.name}` : `  turn ${c.turn}: tool ${c.name}`,
        state: { started: 'running', done: 'succeeded', parked: 'waiting', approved: 'approved' }[c.state] || c.state,
        a: c.started_at, b: c.state === 'started' || c.state === 'parked' ? null : c.finished_at || null,
        note: [c.error_code || '', c.tool_calls && c.tool_calls.length ? 'asked for ' + c.tool_calls.join(', ') : '',
          c.state === 'parked' ? 'waits for approval' : ''].filter(Boolean).join(', '), sub: true });
    for (const c of stepCalls) {
      /* a call's record is written once it ends (by a recorder, a little
       * later): drawn as ending then, at the latest as its step ends */
      const sEnd = s.finished_at ? Date.parse(s.finished_at) : Date.now(), sStart = Date.parse(s.started_at);
      const endAt = Math.min(Date.parse(c.ts), sEnd), lat = c.payload.latency_ms || 0;
      rows.push({ what: `  ${kindOf(c.action)} call: ${subject(c)}`, state: c.payload.outcome || '-',
        a: new Date(Math.max(endAt - lat, sStart)).toISOString(), b: new Date(endAt).toISOString(),
        note: [c.payload.code || '', c.payload.tokens_in !== undefined ? `${num(c.payload.tokens_in)} + ${num(c.payload.tokens_out)} tokens` : ''].filter(Boolean).join(', '), sub: true });
    }
    if (s.kind === 'approval' || s.state === 'waiting') { /* the wait: from parking to the decision (or now) */
      const park = tr.filter((t) => t.to === 'waiting_approval').pop();
      const next = park && tr.find((t) => t.from === 'waiting_approval' && t.at >= park.at);
      if (park) rows.push({ what: '  waiting for approval', state: next ? (s.state === 'succeeded' ? 'approved' : x.state) : 'waiting', a: park.at, b: next ? next.at : null,
        note: next ? `${next.event || next.to}${next.actor ? ' by ' + next.actor : ''}` : 'open' });
    }
  }
  for (const t of tr.filter((t) => t.to === 'retry_wait'))
    rows.push({ what: 'Retry wait', state: 'retry_wait', a: t.at, b: (tr.find((u) => u.from === 'retry_wait' && u.at >= t.at) || {}).at, note: t.error_code || '' });
  const pos = (ts) => (ts ? Math.min(100, Math.max(0, (100 * (Date.parse(ts) - t0)) / span)) : 100);
  return el('ol', { class: 'timeline', id: 'run-timeline', 'aria-label': 'Step timeline' }, rows.map((r) => {
    const a = pos(r.a), b = r.b ? pos(r.b) : 100;
    return el('li', { class: r.sub ? 'sub' : null },
      el('span', { class: 'tl-what' }, r.what.trim(), ' ', badge(r.state)),
      el('span', { class: 'tl-time muted', text: r.a ? `${dur(x.created_at, r.a)} in, took ${r.b ? dur(r.a, r.b) : dur(r.a, null) + ' so far'}${r.note ? ' · ' + r.note : ''}` : r.note }),
      el('span', { class: 'tl-track', 'aria-hidden': 'true' }, el('span', { class: 'tl-bar ' + r.state, 'data-left': a, 'data-width': Math.max(b - a, 0.5) })));
  }));
}

/* The bars' geometry: inline styles are refused by the CSP (style-src
 * 'self'), so it is set through the CSSOM after rendering. */
function placeBars(root) {
  root.querySelectorAll('.tl-bar').forEach((b) => { b.style.left = b.dataset.left + '%'; b.style.width = b.dataset.width + '%'; });
}

export function callRows(calls, withStep) {
  return table([
    withStep ? { label: 'Step', num: true, get: (c) => (c.payload && c.payload.step) || '' } : null,
    { label: 'Time', get: (c) => el('a', { href: '#/calls/' + c.seq, text: c.ts.slice(11, 23) }) },
    { label: 'Call', get: (c) => kindOf(c.action) },
    { label: 'Route or tool', get: (c) => subject(c) },
    { label: 'Outcome', get: (c) => [badge((c.payload && c.payload.outcome) || '-'), c.payload && c.payload.code ? ' ' + c.payload.code : ''] },
    { label: 'Latency', num: true, get: (c) => ms(c.payload && c.payload.latency_ms) },
    { label: 'Tokens in / out', num: true, get: (c) => (c.payload && c.payload.tokens_in !== undefined ? `${num(c.payload.tokens_in)} / ${num(c.payload.tokens_out)}` : '') },
  ].filter(Boolean), calls, 'Model and tool calls made by this run\'s steps', { empty: 'This run made no model or tool call.' });
}
export const kindOf = (a) => ({ 'llm.call': 'model', 'mcp.call': 'tool', 'mcp.relay': 'MCP request' })[a] || a;
export function subject(c) {
  const p = c.payload || {};
  return c.action === 'mcp.call' ? p.tool || c.target : c.action === 'mcp.relay' ? p.method || c.target : p.route || c.target || (p.model ? '(' + p.model + ')' : '');
}

async function viewRun(id, g) {
  const box = el('div', { id: 'run-box' });
  if (!view(g, 'Run ' + short(id), box)) return;
  let calls = [], callsNote = null;
  async function loadCalls() {
    const c = await api('GET', `/v1/projects/${enc(project())}/audit?action=${CALLS}&run=${enc(id)}&limit=500`);
    if (c.ok) { calls = c.data.items; callsNote = null; } else callsNote = refused(c, 'The run\'s calls are not shown');
  }
  async function load() {
    const r = await api('GET', inProject('/v1/platform/runs/' + enc(id)));
    if (r.status === 404) {
      fill(box, el('p', { id: 'run-missing', class: 'bad', text: `This run was not found in ${project()} (${codeOf(r)}).` }),
        el('p', {}, el('a', { href: '#/runs', text: 'Back to the runs' })));
      return false;
    }
    if (!r.ok) { problem(r, 'Run not read'); return 'error'; }
    const x = r.data;
    await loadCalls();
    if (g !== nav.gen) return false;
    const done = DONE.includes(x.state);
    /* the step that parked: an approval step, or a tool or agent step whose tool needs one */
    const wait = x.state === 'waiting_approval' ? (x.steps || []).filter((s) => s.state === 'waiting').pop() : null;
    const w = wait && wait.result ? wait.result : null;
    fill(box,
      el('p', { class: 'lead' }, badge(x.state), ' ', x.error_code ? el('span', { id: 'run-error', class: 'bad', text: x.error_code + ' ' }) : null,
        el('span', { class: 'muted', text: done ? `finished ${ago(x.finished_at)}, took ${dur(x.created_at, x.finished_at)}`
          : `submitted ${ago(x.created_at)} · refreshed every 1.5 s until it ends` })),
      wait ? el('section', { class: 'callout attention', 'aria-labelledby': 'wait-h' },
        el('h2', { id: 'wait-h', text: 'Waiting for approval' }),
        el('p', {}, w && w.summary ? ['"', el('span', { id: 'wait-summary', text: w.summary }), '" · '] : '',
          `${w ? w.threshold : 1} approval(s) needed from ${w && w.approvers ? w.approvers.join(', ') : 'any principal'}` +
          (w && w.expires_at ? `, until ${w.expires_at.slice(0, 16).replace('T', ' ')} UTC` : '') + '.'),
        el('p', { class: 'row' }, decideButtons(id, load, w && w.summary),
          el('span', { class: 'muted', text: `You decide as ${session.me.principal}: the decision is yours.` }))) : null,
      el('div', { class: 'row actions' },
        done ? null : button('Cancel run', async () => {
          if (!(await confirmAction({ title: `Cancel run ${short(id)}?`, action: 'Cancel the run',
            text: 'A step in flight stops within a heartbeat; the run ends cancelled and cannot be resumed (Rerun starts a new one).' }))) return;
          const c = await api('POST', inProject(`/v1/platform/runs/${enc(id)}/cancel`));
          if (!c.ok) return problem(c, 'Not cancelled');
          say('Run cancelled.', 'ok');
          load();
        }, 'danger'),
        button('Rerun', async () => {
          const body = { workflow: x.workflow, mode: x.mode, queue: x.queue, priority: x.priority, max_attempts: x.max_attempts, timeout_s: x.timeout_s };
          if (x.input !== null && x.input !== undefined) body.input = x.input;
          const c = await api('POST', inProject('/v1/platform/runs'), body);
          if (!c.ok) return problem(c, 'Not rerun');
          say(`Rerun of ${short(id)}: new run ${short(c.data.run_id)} submitted.`, 'ok');
          location.hash = '#/runs/' + c.data.run_id;
        }, 'secondary', 'Rerun: a new run with the same workflow and input'),
        el('a', { href: `#/calls?run=${x.run_id}&range=`, text: 'All its calls in the call log' })),
      facts([['Run', el('span', { class: 'mono', text: x.run_id })], ['Project', x.project], ['State', WORDS[x.state] || x.state], ['Mode', x.mode],
        ['Queue', x.queue], ['Attempts', `${x.attempts} of ${x.max_attempts}`], ['Trace id', el('span', { class: 'mono', text: x.trace_id })],
        ['Error', x.error_code || '-'], ['Created', when(x.created_at)], ['Finished', x.finished_at ? when(x.finished_at) : '-']], 'run'),
      el('h2', { text: 'Timeline' }), timeline(x, calls),
      el('h2', { text: 'Model and tool calls' }), callsNote || callRows(calls, true),
      el('h2', { text: 'Journal' }),
      table([{ label: 'Step', num: true, get: (s) => s.step }, { label: 'Kind', get: (s) => s.kind }, { label: 'State', get: (s) => badge(s.state) },
        { label: 'Tries', num: true, get: (s) => s.tries || s.attempt }, { label: 'Error', get: (s) => s.error_code || '' },
        { label: 'Result', get: (s) => (s.result === null || s.result === undefined ? '' : el('details', {}, el('summary', { text: JSON.stringify(s.result).slice(0, 60) }), json(s.result))) }],
      x.steps || [], 'Each step as journaled'),
      el('details', {}, el('summary', { text: 'Workflow and input as submitted' }), json({ workflow: x.workflow, input: x.input })),
      el('h2', { text: 'Transitions' }),
      table([{ label: 'At', get: (t) => when(t.at) }, { label: 'From', get: (t) => t.from || '' }, { label: 'To', get: (t) => (t.to ? badge(t.to) : '') },
        { label: 'Event', get: (t) => t.event || '' }, { label: 'By', get: (t) => t.approver || t.actor || '' }], (x.transitions || []).slice().reverse(), 'Newest first'));
    placeBars(box);
    return !done;
  }
  poll(g, 1500, load, 15000);
}
