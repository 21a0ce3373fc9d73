/*
 * calls.js - the call log: every model (llm.call) and tool call (mcp.call,
 * and the MCP requests around them, mcp.relay) of the selected project,
 * newest first, from the audit records: each is the call's envelope (time,
 * principal, route or tool, upstream, outcome and code, latency, tokens,
 * cost). Filters go to the server (GET .../audit?action=&since=&until=
 * &outcome=&target=&actor=&run=&order=desc); the newest page refreshes
 * while the list is open. A call's page shows its whole envelope.
 */
'use strict';

import {
  el, fill, api, say, refused, project, enc, short, nav, view, poll, table, facts, badge, button, json, when,
  ms, num, usd, hashQuery, setHashQuery, RANGES, sinceOf, select,
} from './lib.js';
import { kindOf, subject } from './runs.js';

const KINDS = [['llm.call,mcp.call,mcp.relay', 'every call'], ['llm.call', 'model calls'], ['mcp.call', 'tool calls'], ['mcp.relay', 'other MCP requests']];
const OUTCOMES = [['', 'any outcome'], ['!ok', 'not ok (every failure)'], ['ok', 'ok'], ['refused', 'refused'], ['failed', 'failed'],
  ['unavailable', 'unavailable'], ['error', 'error'], ['cancelled', 'cancelled'], ['killed', 'killed (budget)'], ['capped', 'capped'],
  ['schema_invalid', 'schema invalid'], ['client_gone', 'client gone'], ['stopped', 'stopped']];
const cost = (c) => (c.payload && c.payload.budget ? c.payload.budget.cost_usd : null);

function localToIso(v) { return v ? new Date(v + 'Z').toISOString() : ''; }

export async function viewCalls(parts, g) {
  if (parts[0]) return viewCall(parts[0], g);
  const q = hashQuery();
  const kind = select('call-kind', KINDS, q.kind || KINDS[0][0]);
  const range = select('call-range', [...RANGES.map(([k, t]) => [k, t]), ['custom', 'between…']], q.range === undefined ? '24h' : q.range);
  const from = el('input', { id: 'call-from', type: 'datetime-local', value: q.from || '' });
  const until = el('input', { id: 'call-until', type: 'datetime-local', value: q.until || '' });
  const outcome = select('call-outcome', OUTCOMES, q.outcome || '');
  const target = el('input', { id: 'call-target', value: q.target || '', placeholder: 'chat, echo__web, …' });
  const actor = el('input', { id: 'call-actor', value: q.actor || '', placeholder: 'a key\'s name' });
  const run = el('input', { id: 'call-run', value: q.run || '', placeholder: 'run id', class: 'mono' });
  const live = el('input', { id: 'call-live', type: 'checkbox', checked: q.live !== '0' });
  const custom = el('span', { class: 'row', hidden: range.value !== 'custom' },
    el('label', { for: 'call-from' }, 'From (UTC)', from), el('label', { for: 'call-until' }, 'Until (UTC)', until));
  const summary = el('div', { id: 'calls-summary' }), box = el('div', { id: 'calls-box' }), more = el('div');
  let rows = [], cursor = null;

  function query(extra) {
    const p = new URLSearchParams({ action: kind.value, order: 'desc', limit: '100' });
    const since = range.value === 'custom' ? localToIso(from.value) : sinceOf(range.value);
    if (since) p.set('since', since);
    if (range.value === 'custom' && until.value) p.set('until', localToIso(until.value));
    for (const [k, i] of [['outcome', outcome], ['target', target], ['actor', actor], ['run', run]]) if (i.value.trim()) p.set(k, i.value.trim());
    for (const [k, v] of Object.entries(extra || {})) p.set(k, v);
    return `/v1/projects/${enc(project())}/audit?` + p.toString();
  }
  function render() {
    setHashQuery('#/calls', { kind: kind.value === KINDS[0][0] ? '' : kind.value, range: range.value, from: from.value, until: until.value,
      outcome: outcome.value, target: target.value.trim(), actor: actor.value.trim(), run: run.value.trim(), live: live.checked ? '' : '0' });
    const bad = rows.filter((c) => !c.payload || c.payload.outcome !== 'ok').length;
    const lat = rows.map((c) => (c.payload && c.payload.latency_ms) || 0).sort((a, b) => a - b);
    const pct = (p) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] : null);
    const tok = rows.reduce((a, c) => a + ((c.payload && (c.payload.tokens_in || 0) + (c.payload.tokens_out || 0)) || 0), 0);
    const usdSum = rows.reduce((a, c) => a + (cost(c) || 0), 0);
    fill(summary, el('ul', { class: 'stats', 'aria-label': 'The calls listed' },
      el('li', {}, el('strong', { text: num(rows.length) }), ' calls listed'),
      el('li', { class: bad ? 'bad' : null }, el('strong', { text: num(bad) }), ' not ok'),
      el('li', {}, el('strong', { text: ms(pct(0.5)) }), ' median latency'),
      el('li', {}, el('strong', { text: ms(pct(0.95)) }), ' 95th percentile'),
      el('li', {}, el('strong', { text: num(tok) }), ' tokens'),
      el('li', {}, el('strong', { text: usd(usdSum) }), ' cost')));
    fill(box, table([
      { label: 'Time', get: (c) => el('a', { href: '#/calls/' + c.seq, title: 'call ' + c.seq + ' at ' + c.ts, text: c.ts.slice(5, 19).replace('T', ' ') }) },
      { label: 'Call', get: (c) => kindOf(c.action) },
      { label: 'Principal', get: (c) => c.actor },
      { label: 'Route or tool', get: (c) => subject(c) },
      { label: 'Upstream', get: (c) => (c.payload && c.payload.upstream) || '-' },
      { label: 'Outcome', get: (c) => [badge((c.payload && c.payload.outcome) || '-'), c.payload && c.payload.code ? el('span', { class: 'muted', text: ' ' + c.payload.code }) : null] },
      { label: 'Latency', num: true, get: (c) => ms(c.payload && c.payload.latency_ms) },
      { label: 'Tokens in / out', num: true, get: (c) => (c.payload && c.payload.tokens_in !== undefined ? `${num(c.payload.tokens_in)} / ${num(c.payload.tokens_out)}` : '') },
      { label: 'Cost', num: true, get: (c) => (cost(c) === null ? '' : usd(cost(c))) },
      { label: 'Run', get: (c) => (c.payload && c.payload.run_id ? el('a', { href: '#/runs/' + c.payload.run_id, class: 'mono', text: short(c.payload.run_id) }) : '') }],
    rows, `Calls of ${project()}, newest first`, { id: 'calls-table', empty: 'No call matches these filters.', rowClass: (c) => (c.payload && c.payload.outcome !== 'ok' ? 'notok' : null) }));
    fill(more, cursor ? button('Load older calls', async () => {
      const r = await api('GET', query({ cursor }));
      if (!r.ok) return say('Older calls not loaded: ' + (r.data && r.data.code), 'bad');
      rows = rows.concat(r.data.items);
      cursor = r.data.next_cursor;
      render();
    }, 'secondary') : null);
  }
  /* the newest page: new calls join the top, older pages stay */
  async function load(reset) {
    const r = await api('GET', query());
    if (g !== nav.gen) return false;
    if (!r.ok) { fill(box, refused(r, 'The call log is not shown')); fill(summary); return 'error'; }
    if (reset || !rows.length) { rows = r.data.items; cursor = r.data.next_cursor; } else {
      const top = rows.length ? rows[0].seq : 0;
      rows = r.data.items.filter((c) => c.seq > top).concat(rows);
    }
    render();
    return true;
  }
  const again = () => load(true);
  range.addEventListener('change', () => { custom.hidden = range.value !== 'custom'; again(); });
  [kind, outcome, from, until].forEach((x) => x.addEventListener('change', again));
  live.addEventListener('change', render);
  if (!view(g, 'Calls',
    el('p', { class: 'muted', text: 'Every model and tool call of ' + project() + ', as its audit record holds it (the envelope: prompts and completions are not recorded).' }),
    el('form', { class: 'filters', 'aria-label': 'Filter calls', onsubmit: (ev) => { ev.preventDefault(); again(); } },
      el('label', { for: 'call-kind' }, 'Calls', kind), el('label', { for: 'call-range' }, 'When', range), custom,
      el('label', { for: 'call-outcome' }, 'Outcome', outcome), el('label', { for: 'call-target' }, 'Route or tool', target),
      el('label', { for: 'call-actor' }, 'Principal (key)', actor), el('label', { for: 'call-run' }, 'Run', run),
      el('button', { type: 'submit', text: 'Apply' }),
      el('label', { for: 'call-live', class: 'check' }, live, 'Live')),
    summary, box, more)) return;
  poll(g, 5000, () => (live.checked ? load(false) : true), 60000);
}

async function viewCall(seq, g) {
  const n = Number(seq);
  const r = await api('GET', `/v1/projects/${enc(project())}/audit?order=desc&limit=1&cursor=${n + 1}`);
  const c = r.ok && r.data.items[0] && r.data.items[0].seq === n ? r.data.items[0] : null;
  if (!c) return view(g, 'Call ' + seq, r.ok ? el('p', { id: 'call-missing', class: 'bad', text: `No record ${seq} in ${project()}.` }) : refused(r, 'Not shown'),
    el('p', {}, el('a', { href: '#/calls', text: 'Back to the call log' })));
  const p = c.payload || {};
  const b = p.budget || {};
  view(g, `${kindOf(c.action)[0].toUpperCase() + kindOf(c.action).slice(1)} call ${seq}`,
    el('p', { class: 'lead' }, badge(p.outcome || '-'), ' ', p.code ? el('span', { class: 'bad', text: p.code + ' ' }) : null,
      el('span', { class: 'muted', text: `${subject(c)} by ${c.actor}` })),
    facts([['When', when(c.ts)], ['Call', `${kindOf(c.action)} (${c.action})`], ['Principal', c.actor],
      c.action === 'llm.call' ? ['Route', p.route || '-'] : ['Tool or method', subject(c)],
      p.model !== undefined ? ['Model asked', p.model || '-'] : null, p.upstream_model !== undefined ? ['Model that answered', p.upstream_model || '-'] : null,
      ['Upstream', p.upstream || '-'], ['Outcome', p.outcome || '-'], ['Code', p.code || '-'], p.gate ? ['Refused at gate', String(p.gate)] : null,
      ['Latency', ms(p.latency_ms)], p.ttft_ms !== undefined ? ['First token after', ms(p.ttft_ms)] : null,
      p.tokens_in !== undefined ? ['Tokens in / out', `${num(p.tokens_in)} / ${num(p.tokens_out)}`] : null,
      p.budget ? ['Cost', `${usd(b.cost_usd)} (${num(b.charged)} tokens charged, ${num(b.reserved)} reserved; usage ${b.usage})`] : null,
      p.attempts !== undefined ? ['Attempts, failovers', `${p.attempts}, ${p.failovers}`] : null,
      ['Run', p.run_id ? el('a', { href: '#/runs/' + p.run_id, class: 'mono', text: p.run_id + (p.step ? ' step ' + p.step : '') }) : '-'],
      ['Trace id', el('span', { class: 'mono', text: c.trace_id || p.trace_id || '-' })],
      ['Policy revision', el('span', { class: 'mono', text: p.policy_revision || '-' })]], 'call'),
    el('h2', { text: 'The envelope, as recorded' }), json(p, 'The envelope'),
    el('p', { class: 'muted', text: `Audit record ${c.seq}, hash ${c.hash.slice(0, 16)}…; prompts and completions are not kept, only this envelope (redacted).` }),
    el('p', {}, el('a', { href: '#/calls', text: 'Back to the call log' })));
}
