/*
 * budget.js - the Budget view of the selected project: this period's spend
 * against the limits, a suspension with who imposed it (and who may lift
 * it), suspend (asked first) and resume, spend over time (tokens or cost
 * per hour or per day, in all or split by model or by key: GET
 * .../budget/spend, aggregated by the server from the model calls' audit
 * records) as an inline SVG chart with its data as a table, spend per model
 * and per key this period, and the ledger itself, newest first.
 */
'use strict';

import {
  el, fill, svg, api, say, problem, refused, project, enc, nav, view, table, facts, button, when, num, usd, confirmAction,
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

const SERIES = 5; /* the largest groups drawn apart; the rest as "others" */

/* The endpoint's rows -> n buckets from since, each {t, total: {tokens,
 * cost}, by: {group: {tokens, cost}}}, and the groups largest first. */
function buckets(d, size) {
  const first = Date.parse(d.since), n = Math.round((Date.parse(d.until) - first) / size) + 1;
  const out = Array.from({ length: Math.min(n, 800) }, (_, i) => ({ t: first + i * size, tokens: 0, cost: 0, calls: 0, by: {} }));
  const sums = {};
  for (const x of d.items) {
    const i = Math.floor((Date.parse(x.at) - first) / size);
    if (i < 0 || i >= out.length) continue;
    const g = x.model !== undefined ? x.model || '(none answered)' : x.key !== undefined ? x.key : '';
    const b = out[i];
    b.tokens += x.tokens; b.cost += x.cost_usd; b.calls += x.calls;
    const c = b.by[g] || (b.by[g] = { tokens: 0, cost: 0 });
    c.tokens += x.tokens; c.cost += x.cost_usd;
    sums[g] = (sums[g] || 0) + x.tokens + x.cost_usd * 1e6;
  }
  while (out.length > 1 && out[out.length - 1].t >= Date.parse(d.until)) out.pop();
  return { data: out, groups: Object.keys(sums).sort((a, b) => sums[b] - sums[a]) };
}

function label(t, size) {
  const d = new Date(t).toISOString();
  return size === HOUR ? d.slice(11, 16) : d.slice(5, 10);
}

/* A bar chart, stacked by group when split: an accessible picture (title,
 * description, a title per bar and a legend in words) whose numbers are
 * also in the table below it. */
function chart(B, metric, size, split) {
  const { data, groups } = B;
  const W = 720, H = 220, L = 56, Bm = 28, T = 12;
  const val = (b) => (metric === 'cost' ? b.cost : b.tokens);
  const max = Math.max(...data.map(val), 0);
  const fmt = (v) => (metric === 'cost' ? usd(v) : num(Math.round(v)));
  const bw = (W - L - 8) / data.length;
  const h = (v) => (max ? ((H - Bm - T) * v) / max : 0);
  const total = data.reduce((a, b) => a + val(b), 0);
  const named = split ? groups.slice(0, SERIES) : [];
  const what = `${metric === 'cost' ? 'Cost' : 'Tokens'} per ${size === HOUR ? 'hour' : 'day'}${split ? ' by ' + split : ''}, ${data.length} ${size === HOUR ? 'hours' : 'days'}`;
  const rects = [];
  data.forEach((b, i) => {
    const x = L + 2 + i * bw, w = Math.max(bw - 2, 1);
    if (!split) {
      rects.push(svg('rect', { x, y: H - Bm - h(val(b)), width: w, height: h(val(b)), class: 'bar' }, svg('title', {}, `${label(b.t, size)}: ${fmt(val(b))}`)));
      return;
    }
    let y = H - Bm;
    const parts = named.map((g, k) => [g, k, b.by[g] ? val(b.by[g]) : 0]);
    parts.push(['others', SERIES, val(b) - parts.reduce((a, p) => a + p[2], 0)]);
    for (const [g, k, v] of parts) {
      if (v <= 0) continue;
      y -= h(v);
      rects.push(svg('rect', { x, y, width: w, height: h(v), class: 'bar s' + k }, svg('title', {}, `${label(b.t, size)}, ${g}: ${fmt(v)}`)));
    }
  });
  return [svg('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': 'chart-title chart-desc', id: 'spend-chart' },
    svg('title', { id: 'chart-title' }, what),
    svg('desc', { id: 'chart-desc' }, `In all ${fmt(total)}; the most in one ${size === HOUR ? 'hour' : 'day'} ${fmt(max)}. The table below lists every bar.`),
    svg('line', { x1: L, y1: H - Bm, x2: W - 4, y2: H - Bm, class: 'axis' }),
    svg('line', { x1: L, y1: T, x2: L, y2: H - Bm, class: 'axis' }),
    svg('text', { x: L - 6, y: T + 10, class: 'tick', 'text-anchor': 'end' }, fmt(max)),
    svg('text', { x: L - 6, y: H - Bm, class: 'tick', 'text-anchor': 'end' }, '0'),
    rects,
    [[0, 'start'], [Math.floor(data.length / 2), 'middle'], [data.length - 1, 'end']].map(([i, a]) =>
      svg('text', { x: L + 2 + i * bw + (a === 'start' ? 0 : a === 'end' ? bw : bw / 2), y: H - 8, class: 'tick', 'text-anchor': a }, label(data[i].t, size)))),
  split && named.length ? el('ul', { class: 'legend', id: 'chart-legend', 'aria-label': 'Legend' },
    [...named, ...(groups.length > SERIES ? ['others'] : [])].map((g, k) => el('li', {}, el('span', { class: 'swatch s' + k, 'aria-hidden': 'true' }), g))) : null];
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
  const split = el('select', { id: 'chart-split' }, el('option', { value: 'none', text: 'nothing (in all)' }), el('option', { value: 'model', text: 'model' }), el('option', { value: 'key', text: 'key' }));
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
      if (!(await confirmAction({ title: `Suspend the model calls of ${project()}?`, action: 'Suspend model calls',
        text: 'Calls in flight are cut at once, every process refuses new ones and the project\'s runs are cancelled, until someone resumes them.' +
          (reason.value.trim() ? ` Reason: "${reason.value.trim()}".` : '') }))) return;
      const a = await api('POST', P + '/budget/suspend', reason.value.trim() ? { reason: reason.value.trim() } : undefined);
      if (!a.ok) return problem(a, 'Not suspended');
      say('Model calls suspended: calls in flight were cut, runs cancelled.', 'ok');
      viewBudget(parts, nav.gen);
    } }, el('label', { for: 'suspend-reason', class: 'grow' }, 'Reason', reason), el('button', { type: 'submit', class: 'danger', text: 'Suspend model calls' })),
    el('h2', { text: 'Spend over time' }),
    el('div', { class: 'row' }, el('label', { for: 'chart-metric' }, 'Show', metric), el('label', { for: 'chart-size' }, 'Bars', size),
      el('label', { for: 'chart-split' }, 'Split by', split)),
    chartBox,
    el('h2', { text: 'By model (this period)' }),
    table([{ label: 'Model', get: (x) => x.model || '(none answered)' }, { label: 'Calls', num: true, get: (x) => num(x.calls) },
      { label: 'Tokens', num: true, get: (x) => num(x.tokens) }, { label: 'Cost', num: true, get: (x) => usd(x.cost_usd) }], b.models || [], 'Settled this period'),
    el('h2', { text: 'By key' }), perKey,
    el('h2', { text: 'Ledger' }), ledgerBox)) return;
  document.querySelectorAll('.meter [data-width]').forEach((x) => { x.style.width = x.dataset.width + '%'; });

  /* spend over time: asked of the server for each choice of bars and split */
  let asked = 0;
  async function draw() {
    const mine = ++asked, sz = size.value === 'hour' ? HOUR : DAY;
    const r = await api('GET', `${P}/budget/spend?bucket=${size.value}&by=${split.value}`);
    if (g !== nav.gen || mine !== asked) return;
    if (!r.ok) return fill(chartBox, refused(r, 'No spend over time'));
    const B = buckets(r.data, sz), sp = split.value === 'none' ? '' : split.value;
    const rows = [];
    for (const x of B.data) {
      if (!sp) { if (x.tokens || x.cost) rows.push({ t: x.t, g: '', tokens: x.tokens, cost: x.cost, calls: x.calls }); continue; }
      for (const gname of B.groups) if (x.by[gname]) rows.push({ t: x.t, g: gname, tokens: x.by[gname].tokens, cost: x.by[gname].cost });
    }
    fill(chartBox, chart(B, metric.value, sz, sp), el('details', {}, el('summary', { text: 'The numbers' }),
      table([{ label: size.value === 'hour' ? 'Hour (UTC)' : 'Day (UTC)', get: (x) => new Date(x.t).toISOString().slice(0, sz === HOUR ? 16 : 10).replace('T', ' ') },
        sp ? { label: sp === 'model' ? 'Model' : 'Key', get: (x) => x.g } : null,
        { label: 'Tokens', num: true, get: (x) => num(x.tokens) }, { label: 'Cost', num: true, get: (x) => usd(x.cost) }].filter(Boolean),
      rows, `Per ${size.value}${sp ? ' and ' + sp : ''}, from the model calls' records`, { id: 'spend-table', empty: 'No model call in this window.' })),
    r.data.truncated ? el('p', { class: 'muted', text: 'More rows than one answer holds: the oldest are left out.' }) : null);
  }
  [metric, size, split].forEach((x) => x.addEventListener('change', draw));
  draw();

  /* per key this period: the server's sums by key (by the day since the period began) */
  const since = b.period && /^\d{4}-\d{2}(-\d{2})?$/.test(b.period) ? (b.period.length === 7 ? b.period + '-01' : b.period) + 'T00:00:00.000Z' : new Date(Date.now() - DAY).toISOString();
  const [k, L] = await Promise.all([api('GET', `${P}/budget/spend?bucket=day&by=key&since=${since}`), ledger(20000)]);
  if (g !== nav.gen) return;
  const keys = {};
  if (k.ok) for (const x of k.data.items) {
    const o = keys[x.key] || (keys[x.key] = { key: x.key, calls: 0, failed: 0, tokens: 0, cost: 0 });
    o.calls += x.calls; o.failed += x.failed; o.tokens += x.tokens; o.cost += x.cost_usd;
  }
  fill(perKey, !k.ok ? refused(k, 'Spend per key not shown') : table([{ label: 'Key (principal)', get: (x) => x.key }, { label: 'Model calls', num: true, get: (x) => num(x.calls) },
    { label: 'Not ok', num: true, get: (x) => num(x.failed) }, { label: 'Tokens', num: true, get: (x) => num(x.tokens) }, { label: 'Cost', num: true, get: (x) => usd(x.cost) }],
  Object.values(keys).sort((a, c) => c.tokens - a.tokens), `Model calls since ${since.slice(0, 10)}`, { id: 'per-key-table' }));
  if (L.error) fill(ledgerBox, refused(L.error, 'No ledger'));
  else fill(ledgerBox, table([{ label: '#', num: true, get: (e) => e.seq }, { label: 'When', get: (e) => when(e.at) }, { label: 'Entry', get: (e) => e.kind },
    { label: 'Tokens', num: true, get: (e) => num(e.tokens) }, { label: 'Cost', num: true, get: (e) => usd(e.cost_usd) },
    { label: 'Model', get: (e) => e.model }, { label: 'Run', get: (e) => (e.run_id ? el('a', { href: '#/runs/' + e.run_id, class: 'mono', text: e.run_id.slice(0, 8) }) : '') }],
  L.entries.slice(-100).reverse(), 'The latest 100 lines, newest first (reserve: held when a call starts; settle: what it used; release: the rest given back)'));
}
