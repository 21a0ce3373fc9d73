/*
 * budget.js - the Budget view of the selected project: this period's spend
 * against the limits, a suspension with who imposed it (and who may lift
 * it), suspend and resume, spend over time (tokens or cost per hour or per
 * day, from the ledger's settlements) as an inline SVG chart with its data
 * as a table, spend per model and per key (from the model calls' audit
 * records), and the ledger itself, newest first.
 */
'use strict';

import {
  el, fill, svg, api, say, problem, refused, project, enc, nav, view, table, facts, button, when, num, usd,
} from './lib.js';

const HOUR = 3600e3, DAY = 86400e3;

/* Every ledger line (ascending), at most max. */
async function ledger(max) {
  let out = [], after = 0;
  for (;;) {
    const r = await api('GET', `/v1/projects/${enc(project())}/budget/ledger?limit=1000&after=${after}`);
    if (!r.ok) return { error: r };
    out = out.concat(r.data.entries);
    if (r.data.entries.length < 1000 || out.length >= max) return { entries: out, cut: r.data.entries.length === 1000 };
    after = r.data.next;
  }
}

/* Settled spend per bucket (an hour or a day) over the last n buckets. */
function buckets(entries, size, n) {
  const now = Date.now(), first = Math.floor(now / size) * size - (n - 1) * size;
  const out = Array.from({ length: n }, (_, i) => ({ t: first + i * size, tokens: 0, cost: 0 }));
  for (const e of entries) {
    if (e.kind !== 'settle' && e.kind !== 'overshoot') continue;
    const i = Math.floor((Date.parse(e.at) - first) / size);
    if (i >= 0 && i < n) { out[i].tokens += e.tokens; out[i].cost += e.cost_usd; }
  }
  return out;
}

function label(t, size) {
  const d = new Date(t).toISOString();
  return size === HOUR ? d.slice(11, 16) : d.slice(5, 10);
}

/* A bar chart: an accessible picture (title, description, a title per bar)
 * whose numbers are also in the table below it. */
function chart(data, metric, size) {
  const W = 720, H = 220, L = 56, B = 28, T = 12;
  const val = (b) => (metric === 'cost' ? b.cost : b.tokens);
  const max = Math.max(...data.map(val), 0);
  const fmt = (v) => (metric === 'cost' ? usd(v) : num(Math.round(v)));
  const bw = (W - L - 8) / data.length;
  const y = (v) => H - B - (max ? ((H - B - T) * v) / max : 0);
  const total = data.reduce((a, b) => a + val(b), 0);
  const what = `${metric === 'cost' ? 'Cost' : 'Tokens'} settled per ${size === HOUR ? 'hour, the last 48 hours' : 'day, the last 30 days'}`;
  return svg('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': 'chart-title chart-desc', id: 'spend-chart' },
    svg('title', { id: 'chart-title' }, what),
    svg('desc', { id: 'chart-desc' }, `In all ${fmt(total)}; the most in one ${size === HOUR ? 'hour' : 'day'} ${fmt(max)}. The table below lists every bar.`),
    svg('line', { x1: L, y1: H - B, x2: W - 4, y2: H - B, class: 'axis' }),
    svg('line', { x1: L, y1: T, x2: L, y2: H - B, class: 'axis' }),
    svg('text', { x: L - 6, y: T + 10, class: 'tick', 'text-anchor': 'end' }, fmt(max)),
    svg('text', { x: L - 6, y: H - B, class: 'tick', 'text-anchor': 'end' }, '0'),
    data.map((b, i) => svg('rect', { x: L + 2 + i * bw, y: y(val(b)), width: Math.max(bw - 2, 1), height: H - B - y(val(b)), class: 'bar' },
      svg('title', {}, `${label(b.t, size)}: ${fmt(val(b))}`))),
    [[0, 'start'], [Math.floor(data.length / 2), 'middle'], [data.length - 1, 'end']].map(([i, a]) =>
      svg('text', { x: L + 2 + i * bw + (a === 'start' ? 0 : a === 'end' ? bw : bw / 2), y: H - 8, class: 'tick', 'text-anchor': a }, label(data[i].t, size))));
}

export async function viewBudget(parts, g) {
  const P = `/v1/projects/${enc(project())}`;
  const r = await api('GET', P + '/budget');
  if (!r.ok) return view(g, 'Budget', refused(r, 'No budget view'));
  const b = r.data;
  const s = b.suspension;
  const reason = el('input', { id: 'suspend-reason', maxlength: 200, placeholder: 'why (shown to whoever looks)' });
  const chartBox = el('div', { id: 'chart-box' }), perKey = el('div', { id: 'per-key' }), ledgerBox = el('div', { id: 'ledger' });
  const metric = el('select', { id: 'chart-metric' }, el('option', { value: 'tokens', text: 'tokens' }), el('option', { value: 'cost', text: 'cost (USD)' }));
  const size = el('select', { id: 'chart-size' }, el('option', { value: 'hour', text: 'per hour (48 h)' }), el('option', { value: 'day', text: 'per day (30 days)' }));
  const pct = (v) => (b.limit ? Math.min(100, Math.round((100 * v) / b.limit)) : 0);
  const meter = el('div', { class: 'meter', role: 'img', 'aria-label': `${num(b.settled)} settled and ${num(b.reserved)} reserved of ${b.limit ? num(b.limit) : 'no'} tokens` },
    el('span', { class: 'meter-settled', 'data-width': pct(b.settled) }), el('span', { class: 'meter-reserved', 'data-width': pct(b.reserved) }));
  if (!view(g, 'Budget',
    b.suspended ? el('section', { class: 'callout alarm', id: 'suspension', 'aria-labelledby': 'susp-h' },
      el('h2', { id: 'susp-h', text: 'Model calls are suspended' }),
      el('p', {}, `Since ${s ? s.since.slice(0, 19).replace('T', ' ') : '?'} UTC, by `, el('strong', { id: 'suspended-by', text: s ? s.by : '?' }),
        ` (imposed by the ${s ? s.imposed_by : '?'}): `, el('span', { id: 'suspended-reason', text: b.reason }), '.'),
      el('p', {}, `Only the ${s ? s.lifted_by : 'project'} may lift it. `,
        button('Resume model calls', async () => {
          const a = await api('POST', P + '/budget/resume');
          if (!a.ok) return problem(a, 'Not resumed');
          say('Model calls resumed.', 'ok');
          viewBudget(parts, nav.gen);
        }, 'approve'))) : null,
    el('p', { class: 'lead' }, b.budget ? `Period ${b.period} (${b.period_kind}), resets ${b.resets.replace('T', ' ').replace(':00Z', ' UTC')}.`
      : 'No budget contract is active: spend is recorded, nothing is limited.'),
    b.budget ? meter : null,
    facts([['Limit', b.limit ? num(b.limit) + ' tokens' : 'none'], ['Settled', num(b.settled) + ' tokens'], ['Reserved (calls in flight)', num(b.reserved) + ' tokens'],
      ['Remaining', b.limit ? num(b.remaining) + ' tokens' : '-'], ['Cost settled', usd(b.cost_settled_usd)],
      ['Cost limit', b.cost_limit_usd === null || b.cost_limit_usd === undefined ? 'none' : usd(b.cost_limit_usd)],
      b.ledger && b.ledger.overshoot && b.ledger.overshoot.tokens ? ['Billed past reservations', num(b.ledger.overshoot.tokens) + ' tokens'] : null], 'budget'),
    b.suspended ? null : el('form', { class: 'row', 'aria-label': 'Suspend the project\'s model calls', onsubmit: async (ev) => {
      ev.preventDefault();
      const a = await api('POST', P + '/budget/suspend', reason.value.trim() ? { reason: reason.value.trim() } : undefined);
      if (!a.ok) return problem(a, 'Not suspended');
      say('Model calls suspended: calls in flight were cut, runs cancelled.', 'ok');
      viewBudget(parts, nav.gen);
    } }, el('label', { for: 'suspend-reason', class: 'grow' }, 'Reason', reason), el('button', { type: 'submit', class: 'danger', text: 'Suspend model calls' })),
    el('h2', { text: 'Spend over time' }),
    el('div', { class: 'row' }, el('label', { for: 'chart-metric' }, 'Show', metric), el('label', { for: 'chart-size' }, 'Bars', size)),
    chartBox,
    el('h2', { text: 'By model (this period)' }),
    table([{ label: 'Model', get: (x) => x.model || '(none answered)' }, { label: 'Calls', num: true, get: (x) => num(x.calls) },
      { label: 'Tokens', num: true, get: (x) => num(x.tokens) }, { label: 'Cost', num: true, get: (x) => usd(x.cost_usd) }], b.models || [], 'Settled this period'),
    el('h2', { text: 'By key' }), perKey,
    el('h2', { text: 'Ledger' }), ledgerBox)) return;
  document.querySelectorAll('.meter [data-width]').forEach((x) => { x.style.width = x.dataset.width + '%'; });

  const L = await ledger(20000);
  if (g !== nav.gen) return;
  if (L.error) { fill(chartBox, refused(L.error, 'No ledger')); fill(ledgerBox); }
  else {
    const draw = () => {
      const sz = size.value === 'hour' ? HOUR : DAY;
      const data = buckets(L.entries, sz, sz === HOUR ? 48 : 30);
      const m = metric.value;
      fill(chartBox, chart(data, m, sz), el('details', {}, el('summary', { text: 'The numbers' }),
        table([{ label: size.value === 'hour' ? 'Hour (UTC)' : 'Day (UTC)', get: (x) => new Date(x.t).toISOString().slice(0, sz === HOUR ? 16 : 10).replace('T', ' ') },
          { label: 'Tokens', num: true, get: (x) => num(x.tokens) }, { label: 'Cost', num: true, get: (x) => usd(x.cost) }],
        data.filter((x) => x.tokens || x.cost), 'Settled per ' + size.value, { empty: 'Nothing settled in this window.' })),
      L.cut ? el('p', { class: 'muted', text: 'The ledger is longer than the first 20,000 lines read here.' }) : null);
    };
    metric.addEventListener('change', draw);
    size.addEventListener('change', draw);
    draw();
    fill(ledgerBox, table([{ label: '#', num: true, get: (e) => e.seq }, { label: 'When', get: (e) => when(e.at) }, { label: 'Entry', get: (e) => e.kind },
      { label: 'Tokens', num: true, get: (e) => num(e.tokens) }, { label: 'Cost', num: true, get: (e) => usd(e.cost_usd) },
      { label: 'Model', get: (e) => e.model }, { label: 'Run', get: (e) => (e.run_id ? el('a', { href: '#/runs/' + e.run_id, class: 'mono', text: e.run_id.slice(0, 8) }) : '') }],
    L.entries.slice(-100).reverse(), 'The latest 100 lines, newest first (reserve: held when a call starts; settle: what it used; release: the rest given back)'));
  }
  /* per key: the model calls' records since the period began */
  const since = b.period && /^\d{4}-\d{2}(-\d{2})?$/.test(b.period) ? (b.period.length === 7 ? b.period + '-01' : b.period) + 'T00:00:00.000Z' : new Date(Date.now() - DAY).toISOString();
  const keys = {};
  let cursor = null, pages = 0, err = null;
  do {
    const c = await api('GET', `${P}/audit?action=llm.call&since=${since}&order=desc&limit=1000${cursor ? '&cursor=' + cursor : ''}`);
    if (!c.ok) { err = c; break; }
    for (const x of c.data.items) {
      const k = keys[x.actor] || (keys[x.actor] = { key: x.actor, calls: 0, failed: 0, tokens: 0, cost: 0 });
      const p = x.payload || {};
      k.calls++;
      if (p.outcome !== 'ok') k.failed++;
      k.tokens += (p.tokens_in || 0) + (p.tokens_out || 0);
      k.cost += (p.budget && p.budget.cost_usd) || 0;
    }
    cursor = c.data.next_cursor;
  } while (cursor && ++pages < 10);
  if (g !== nav.gen) return;
  fill(perKey, err ? refused(err, 'Spend per key not shown') : table([{ label: 'Key (principal)', get: (k) => k.key }, { label: 'Model calls', num: true, get: (k) => num(k.calls) },
    { label: 'Not ok', num: true, get: (k) => num(k.failed) }, { label: 'Tokens', num: true, get: (k) => num(k.tokens) }, { label: 'Cost', num: true, get: (k) => usd(k.cost) }],
  Object.values(keys).sort((a, c) => c.tokens - a.tokens), `Model calls since ${since.slice(0, 10)}${cursor ? ' (the latest 10,000)' : ''}`, { id: 'per-key-table' }));
}

