/*
 * system.js - the System view: the tools the selected project may call and
 * why tool calls were refused, then how this server process is doing
 * (notices of policy changes waiting for delivery, background jobs, runs)
 * from its /metrics (a platform key's), in plain words; the internal
 * names (ADR-113 relay, INV-1 key migration) only in the part for operators
 * who debug.
 */
'use strict';

import { el, fill, api, refused, project, enc, view, poll, table, metrics, num } from './lib.js';

const GATES = {
  'E-MCP-GATE-001': 'the caller\'s key was refused', 'E-MCP-GATE-002': 'the tool is not offered to this project',
  'E-MCP-GATE-003': 'the tool is disabled or writes in a read-only project', 'E-MCP-GATE-004': 'the tool changed since it was approved',
  'E-MCP-GATE-005': 'the arguments were refused', 'E-MCP-GATE-006': 'the tool\'s rate limit was spent',
  'E-MCP-GATE-007': 'the project\'s model and tool calls are suspended', 'E-MCP-GATE-008': 'the tool needs an approval',
  'E-MCP-GATE-009': 'the tool\'s server failed or could not be reached',
};
const JOBS = {
  relay: 'delivers policy change notices', fallback_checker: 're-checks active policies when notices are lost',
  fleet_reporter: 'reports which policy this process serves', reaper: 'takes back runs of vanished workers',
  heartbeat: 'keeps this worker\'s runs leased', queue_age: 'measures how long runs wait', llm_engine: 'moves model calls',
  llm_recorder: 'writes model calls to the audit trail', mcp_recorder: 'writes tool calls to the audit trail',
  http_sweeper: 'ends idle connections', channel_lead: 'holds the chat channel lease', channel_work: 'sends and receives chat messages',
  call_watcher: 'cuts calls of suspended projects', redaction_sync: 'loads projects\' redaction patterns',
};
const RUN_EVENTS = { claimed: 'runs taken by a worker', step: 'steps executed', succeeded: 'runs succeeded', failed: 'runs failed',
  empty_claim: 'looks for work that found none', cancelled: 'runs cancelled', retried: 'runs retried', reaped: 'runs taken back' };

export async function viewSystem(parts, g) {
  const hdr = { Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/list' };
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: 'awooop-console', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': {} };
  const [r, m0] = await Promise.all([api('POST', `/v1/projects/${enc(project())}/mcp`, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta } }, hdr), metrics()]);
  const tools = r.ok && r.data && r.data.result ? r.data.result.tools : null;
  const refusals = (m0 || []).filter((x) => x.name === 'awooop_mcp_refusals_total' && x.labels.project === project());
  const box = el('div', { id: 'process' }), keys = el('div');
  if (!view(g, 'System',
    el('h2', { text: 'Tools of ' + project() }),
    tools ? table([{ label: 'Tool', get: (t) => t.name }, { label: 'What it does', get: (t) => t.description || '' }], tools, 'Tools this project may call', { id: 'tools' })
      : el('p', { class: 'muted', text: `No tool list for this key (${(r.data && r.data.error && r.data.error.data && r.data.error.data.code) || r.status}): it needs a worker key of the project.` }),
    el('h2', { text: 'Tool calls refused' }),
    m0 ? table([{ label: 'Why', get: (x) => GATES[x.labels.code] || x.labels.code }, { label: 'Gate', num: true, get: (x) => x.labels.gate },
      { label: 'Code', get: (x) => el('code', { text: x.labels.code }) }, { label: 'Calls', num: true, get: (x) => num(x.value) }], refusals,
    'Since this server process started', { id: 'refusals', empty: 'None.' })
      : el('p', { class: 'muted', text: 'Counting refusals needs a key of the platform project (the numbers cover every tenant).' }),
    el('h2', { text: 'This server process' }), box,
    el('details', { class: 'panel' }, el('summary', { text: 'For operators debugging: Redis key migration (INV-1)' }), keys))) return;
  api('GET', `/v1/projects/${enc(project())}/key-migrations`).then((k) => {
    fill(keys, k.ok ? table([{ label: 'Key pattern', get: (x) => el('code', { text: x.pattern }) }, { label: 'Priority', get: (x) => x.priority },
      { label: 'Phase', get: (x) => x.phase }, { label: 'Since', get: (x) => x.since || '-' },
      { label: 'Reads / new hits / fallbacks / old reads', num: true, get: (x) => (x.counters ? [x.counters.reads, x.counters.new_hits, x.counters.fallbacks, x.counters.old_reads].join(' / ') : '-') }],
    k.data.items, k.data.redis ? 'Phases and this process\'s counters' : 'Phases (no Redis configured: no counters)') : refused(k, 'Key migrations not shown'));
  });
  poll(g, 2000, async () => {
    const m = await metrics();
    if (!m) { fill(box, el('p', { class: 'muted', text: 'How the process is doing needs a key of the platform project (its numbers cover every tenant).' })); return false; }
    const get = (n) => m.filter((x) => x.name === n);
    const one = (n) => { const x = get(n)[0]; return x ? x.value : null; };
    const now = Date.now() / 1000;
    fill(box,
      table([{ label: 'Policy change notices', get: (x) => x[0] }, { label: 'Now', num: true, get: (x) => x[1] }], [
        ['waiting to be delivered', num(one('awooop_outbox_undelivered'))],
        ['the oldest has waited (s)', num(one('awooop_outbox_oldest_undelivered_age_seconds'))],
        ['deliveries that failed', num(get('awooop_relay_publish_failures_total').reduce((a, x) => a + x.value, 0))]], 'Delivery of policy changes to every process', { id: 'delivery' }),
      table([{ label: 'Background job', get: (x) => JOBS[x.labels.loop] || x.labels.loop }, { label: 'Internal name', get: (x) => el('code', { text: x.labels.loop }) },
        { label: 'Last ran (s ago)', num: true, get: (x) => (now - x.value).toFixed(1) }], get('awooop_loop_last_tick_seconds'), 'Background jobs', { id: 'jobs' }),
      table([{ label: 'What', get: (x) => RUN_EVENTS[x.labels.event] || x.labels.event }, { label: 'Count', num: true, get: (x) => num(x.value) }],
        get('awooop_run_events_total'), 'Runs in this process'));
    return true;
  }, 20000);
}
