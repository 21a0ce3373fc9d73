/*
 * audit.js - the Audit view: the selected project's hash-chained trail,
 * newest first, filtered by action and principal, older pages on demand, a
 * record's payload on request, and the whole chain verified in the store.
 */
'use strict';

import { el, fill, api, problem, refused, project, enc, short, view, table, button, json, when, hashQuery, setHashQuery } from './lib.js';

export async function viewAudit(parts, g) {
  const q = hashQuery();
  const action = el('input', { id: 'audit-action', value: q.action || '', placeholder: 'run.submit, contract.activate, …' });
  const actor = el('input', { id: 'audit-actor', value: q.actor || '', placeholder: 'a key\'s name' });
  const out = el('p', { id: 'verify-result' }), box = el('div', { id: 'audit-box' }), more = el('div');
  let rows = [], cursor = null;
  const url = (c) => `/v1/projects/${enc(project())}/audit?order=desc&limit=100` + (action.value.trim() ? '&action=' + enc(action.value.replace(/\s+/g, '')) : '') +
    (actor.value.trim() ? '&actor=' + enc(actor.value.trim()) : '') + (c ? '&cursor=' + c : '');
  function render() {
    fill(box, table([{ label: '#', num: true, get: (a) => a.seq }, { label: 'When', get: (a) => when(a.ts) }, { label: 'Who', get: (a) => a.actor },
      { label: 'Action', get: (a) => a.action }, { label: 'Target', get: (a) => el('span', { class: 'mono', title: a.target, text: short(a.target) }) },
      { label: 'Details', get: (a) => el('details', {}, el('summary', { text: 'payload' }), json(a.payload), el('p', { class: 'mono muted', text: 'hash ' + a.hash })) }],
    rows, `The trail of ${project()}, newest first`, { id: 'audit-table', empty: 'No record matches.' }));
    fill(more, cursor ? button('Load older records', async () => {
      const r = await api('GET', url(cursor));
      if (!r.ok) return problem(r, 'Not loaded');
      rows = rows.concat(r.data.items);
      cursor = r.data.next_cursor;
      render();
    }, 'secondary') : null);
  }
  async function load() {
    setHashQuery('#/audit', { action: action.value.trim(), actor: actor.value.trim() });
    const r = await api('GET', url(null));
    if (!r.ok) return fill(box, refused(r, 'The audit trail is not shown'));
    rows = r.data.items;
    cursor = r.data.next_cursor;
    render();
  }
  if (!view(g, 'Audit trail',
    el('div', { class: 'row' }, button('Verify the chain', async () => {
      const v = await api('GET', `/v1/projects/${enc(project())}/audit/verify`);
      if (!v.ok) return problem(v, 'Not verified');
      out.className = v.data.ok ? 'ok' : 'bad';
      out.textContent = v.data.ok ? `Chain intact: ${v.data.records} records verified.` : `Chain BROKEN at record ${v.data.break_seq}: ${v.data.reason}`;
    }), out),
    el('form', { class: 'filters', 'aria-label': 'Filter the trail', onsubmit: (ev) => { ev.preventDefault(); load(); } },
      el('label', { for: 'audit-action', class: 'grow' }, 'Actions (comma-separated)', action), el('label', { for: 'audit-actor' }, 'Principal', actor),
      el('button', { type: 'submit', text: 'Apply' })),
    box, more)) return;
  await load();
}
