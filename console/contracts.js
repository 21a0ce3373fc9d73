/*
 * contracts.js - the Contracts view of one contract (family + id) of the
 * selected project: what is active, its revisions newest first with their
 * actions (publish, approve, activate, revoke; roll back a superseded one,
 * or in one step to the previous one), any revision's body, two side by
 * side with the patch between them, who did what (the audit records), how
 * far the fleet has taken the latest activation (and, after a revoke, that
 * nothing is served), and a new draft.
 */
'use strict';

import {
  el, fill, api, say, problem, refused, project, enc, short, nav, view, poll, table, facts, badge, button, json, when, confirmAction,
} from './lib.js';

const FAMILIES = ['policy_routing', 'channel_event', 'mcp_tool', 'budget', 'approval'];
const HISTORY = 'contract.draft,contract.update,contract.publish,contract.approve,contract.activate,contract.activate_suggested,contract.revoke,contract.rollback';
const DONE = { publish: 'published', approve: 'approved', activate: 'activated', revoke: 'revoked' };

export async function viewContracts(parts, g) {
  const fam = el('select', { id: 'family' }, FAMILIES.map((f) => el('option', { value: f, selected: f === (parts[0] || 'policy_routing'), text: f })));
  const cid = el('input', { id: 'contract', value: parts[1] || 'default', required: true });
  const body = el('textarea', { id: 'draft-body', rows: 8, 'aria-describedby': 'draft-help' }, '{}');
  const head = el('div', { id: 'contract-head' }), list = el('div'), shown = el('div', { id: 'revision-body' });
  const conv = el('div', { id: 'convergence' }), diff = el('div'), history = el('div');
  const base = () => `/v1/projects/${enc(project())}/contracts/${enc(fam.value)}/${enc(cid.value)}`;
  let revs = [];

  const act = (rev, what) => button(what[0].toUpperCase() + what.slice(1), async () => {
    if (what === 'revoke' && !(await confirmAction({ title: `Revoke revision ${short(rev.revision_id)}?`, action: 'Revoke it',
      text: rev.state === 'active' ? 'No revision of this contract will be active: the calls it governs are refused until another is activated.'
        : 'It can no longer be approved or activated.' }))) return;
    const a = await api('POST', `${base()}/revisions/${rev.revision_id}/${what}`);
    if (!a.ok) return problem(a, `Revision ${short(rev.revision_id)} not ${DONE[what]}`);
    const rb = a.data && a.data.rollback ? (a.data.activated ? ' Rollback activated.'
      : a.data.activation_error ? ` Rollback not activated: ${a.data.activation_error.detail} (${a.data.activation_error.code}).`
        : ` Rollback: ${a.data.approvals} of ${a.data.approvals_needed} approval(s).`) : '';
    say(`Revision ${short(rev.revision_id)} ${DONE[what]}${a.status === 202 ? ' (suggest mode: nothing changed)' : ''}.${rb}`, 'ok');
    load();
  }, what === 'revoke' ? 'danger' : 'secondary', `${what} revision ${short(rev.revision_id)}`);

  async function rollback(to) {
    const target = to ? revs.find((x) => x.revision_id === to) : revs.find((x) => x.state === 'superseded');
    if (!(await confirmAction({ title: `Roll back ${fam.value}/${cid.value}?`, action: 'Roll back',
      text: `A new revision restoring the body of ${short(target ? target.revision_id : to)} is published; once another approver approves it, it replaces the active one.` }))) return;
    const a = await api('POST', `${base()}/rollback`, to ? { to } : undefined);
    if (!a.ok) return problem(a, 'Not rolled back');
    say(`Rollback to ${short(a.data.rollback_of)}: revision ${short(a.data.revision_id)} published, waiting for ${a.data.approvals_needed} approval(s) by another approver.`, 'ok');
    load();
  }
  function showBody(rev) {
    fill(shown, el('section', { class: 'panel', 'aria-labelledby': 'body-h' },
      el('h2', { id: 'body-h', text: `Revision ${short(rev.revision_id)} (${rev.state})` }),
      facts([['Revision', el('span', { class: 'mono', text: rev.revision_id })], ['Created', [when(rev.created_at), ' by ', rev.created_by]],
        ['Published', rev.published_at ? [when(rev.published_at), ' by ', rev.published_by] : '-'],
        ['Body hash', el('span', { class: 'mono', text: rev.body_hash || '-' })], rev.rollback_of ? ['Restores', short(rev.rollback_of)] : null]),
      json(rev.body, 'Body of revision ' + short(rev.revision_id))));
    shown.scrollIntoView({ block: 'nearest' });
  }

  async function load() {
    const r = await api('GET', base() + '/revisions');
    if (g !== nav.gen) return;
    if (!r.ok) { fill(list, refused(r, 'No revisions')); fill(head); return; }
    revs = (r.data.items || []).slice().reverse(); /* the API answers oldest first */
    const active = revs.find((x) => x.state === 'active');
    const previous = revs.find((x) => x.state === 'superseded');
    fill(head, el('p', { class: 'lead', id: 'active-summary' }, active
      ? ['Active: ', el('span', { class: 'mono', text: short(active.revision_id) }), active.rollback_of ? ` (a rollback to ${short(active.rollback_of)})` : '', ` · published by ${active.published_by || active.created_by}`]
      : revs.length ? 'No revision is active: calls governed by this contract are refused.' : 'This contract has no revision yet.'),
    active && previous ? el('p', { class: 'row' }, button('Roll back to the previous revision', () => rollback(null), 'secondary'),
      el('span', { class: 'muted', text: 'publishes the body that was active before, activated by another approver\'s approval' })) : null);
    fill(list, table([
      { label: 'Revision', get: (x) => el('span', { class: 'mono', title: x.revision_id, text: short(x.revision_id) }) },
      { label: 'State', get: (x) => [badge(x.state), x.rollback_of ? el('span', { class: 'muted', text: ` (rollback to ${short(x.rollback_of)})` }) : ''] },
      { label: 'Updated', get: (x) => when(x.updated_at) }, { label: 'By', get: (x) => x.published_by || x.created_by },
      { label: 'Actions', get: (x) => el('span', { class: 'row' },
        button('View', () => showBody(x), 'link', 'View revision ' + short(x.revision_id)),
        x.state === 'draft' ? act(x, 'publish') : null,
        x.state === 'published' ? [act(x, 'approve'), act(x, 'activate')] : null,
        x.state === 'active' || x.state === 'published' ? act(x, 'revoke') : null,
        x.state === 'superseded' ? button('Roll back', () => rollback(x.revision_id), 'secondary', 'Roll back to revision ' + short(x.revision_id)) : null) }],
    revs, 'Revisions, newest first', { id: 'revisions' }),
    revs.length > 1 ? compareForm() : null);
    loadHistory();
  }
  function compareForm() {
    const opt = (x, i, sel) => el('option', { value: x.revision_id, selected: i === sel, text: short(x.revision_id) + ' ' + x.state });
    const selA = el('select', { id: 'diff-a' }, revs.map((x, i) => opt(x, i, 1)));
    const selB = el('select', { id: 'diff-b' }, revs.map((x, i) => opt(x, i, 0)));
    return el('form', { class: 'row', 'aria-label': 'Compare two revisions', onsubmit: async (ev) => {
      ev.preventDefault();
      const [a, b, p] = await Promise.all([api('GET', `${base()}/revisions/${selA.value}`), api('GET', `${base()}/revisions/${selB.value}`),
        api('GET', `${base()}/revisions/${selA.value}/diff/${selB.value}`)]);
      if (!a.ok || !b.ok || !p.ok) return problem(p.ok ? (a.ok ? b : a) : p, 'No comparison');
      fill(diff, el('h2', { text: 'Side by side' }),
        el('div', { class: 'grid2' },
          el('section', { 'aria-label': 'Revision A' }, el('h3', { text: 'A ' + short(selA.value) }), el('pre', { class: 'json del', tabindex: '0', 'aria-label': 'Body of revision A', text: JSON.stringify(a.data.body, null, 2) })),
          el('section', { 'aria-label': 'Revision B' }, el('h3', { text: 'B ' + short(selB.value) }), el('pre', { class: 'json add', tabindex: '0', 'aria-label': 'Body of revision B', text: JSON.stringify(b.data.body, null, 2) }))),
        table([{ label: 'Change', get: (o) => o.op }, { label: 'Where', get: (o) => el('code', { text: o.path }) }, { label: 'New value', get: (o) => (o.value === undefined ? '' : JSON.stringify(o.value)) }],
          p.data, 'What changes from A to B (RFC 6902 patch)', { empty: 'The two bodies are the same.' }));
    } }, el('label', { for: 'diff-a' }, 'Compare A', selA), el('label', { for: 'diff-b' }, 'with B', selB), el('button', { type: 'submit', text: 'Compare' }));
  }
  /* who did what: the contract records since its first revision was
   * drafted, newest first, kept when they name one of its revisions (at
   * most 5 pages of 200 read) */
  async function loadHistory() {
    const ids = new Set(revs.map((x) => x.revision_id));
    const first = revs.length ? revs[revs.length - 1].created_at : '';
    const items = [];
    let cursor = null, pages = 0, h;
    do {
      h = await api('GET', `/v1/projects/${enc(project())}/audit?action=${HISTORY}&order=desc&limit=200` +
        (first ? '&since=' + enc(first) : '') + (cursor ? '&cursor=' + cursor : ''));
      if (g !== nav.gen) return;
      if (!h.ok) return fill(history, refused(h, 'History not shown'));
      items.push(...h.data.items.filter((a) => ids.has(a.target)));
      cursor = h.data.next_cursor;
    } while (cursor && ++pages < 5);
    fill(history, table([{ label: 'When', get: (a) => when(a.ts) }, { label: 'Who', get: (a) => a.actor },
      { label: 'Did', get: (a) => a.action.replace('contract.', '').replace('_', ' ') }, { label: 'Revision', get: (a) => el('span', { class: 'mono', text: short(a.target) }) }],
    items, `Who did what, newest first${cursor ? ' (the latest 1,000 records read)' : ''}`, { id: 'history' }));
  }
  async function convergence() {
    const r = await api('GET', base() + '/convergence?limit=5');
    if (g !== nav.gen) return false;
    if (!r.ok) { fill(conv, refused(r, 'No convergence data')); return 'error'; }
    const a = r.data.activations[0];
    const rev = a && revs.find((x) => x.revision_id === a.revision_id);
    const gone = rev && (rev.state === 'revoked' || rev.state === 'superseded') && !revs.some((x) => x.state === 'active');
    let line;
    if (!a) line = el('p', { class: 'muted', id: 'conv-summary', text: 'Never activated.' });
    else if (gone) { /* revoked: what is true is that nothing is served */
      const still = a.serving !== undefined ? a.serving : r.data.processes.filter((p) => p.revision_id === a.revision_id).length;
      line = el('p', { id: 'conv-summary', class: still ? 'warn' : 'ok' },
        `Revision ${short(a.revision_id)} was ${rev.state}: no revision is active. ` +
        (still ? `${still} of ${r.data.live} processes still serve it (they drop it at their next check).` : `None of the ${r.data.live} live processes serves it.`));
    } else line = el('p', { id: 'conv-summary', class: a.converged ? 'ok' : 'warn' },
      `${a.learned} of ${a.of} processes serve ${short(a.revision_id)}${a.of ? ' (' + Math.round(100 * a.learned / a.of) + '%)' : ''}` +
      (a.slowest_ms !== null ? `, the slowest ${a.slowest_ms} ms after the activation` : ''));
    fill(conv, line,
      table([{ label: 'Process', get: (p) => (p.process_id ? el('span', { class: 'mono', title: p.process_id, text: short(p.process_id) }) : 'a platform process') },
        { label: 'Role', get: (p) => p.role }, { label: 'Serves', get: (p) => (p.revision_id ? short(p.revision_id) : 'nothing') }, { label: 'Last report', get: (p) => when(p.last_seen) }],
      r.data.processes, `${r.data.live} live processes${r.data.stale ? ` (${r.data.stale} silent, left out)` : ''}`),
      table([{ label: 'Activation', get: (x) => short(x.revision_id) },
        { label: 'Now', get: (x) => { const v = revs.find((y) => y.revision_id === x.revision_id); return v ? badge(v.state) : '-'; } },
        { label: 'At', get: (x) => when(x.activated_at) },
        { label: 'Learned by', num: true, get: (x) => `${x.learned} of ${x.of}` },
        { label: 'Serving now', num: true, get: (x) => (x.serving === undefined ? '-' : `${x.serving} of ${x.of}`) }, { label: 'Slowest', num: true, get: (x) => (x.slowest_ms === null ? '-' : x.slowest_ms + ' ms') }],
      r.data.activations, 'Recent activations'));
    return true;
  }
  if (!view(g, 'Contracts',
    el('form', { class: 'filters', 'aria-label': 'Choose a contract', onsubmit: (ev) => { ev.preventDefault(); location.hash = `#/contracts/${fam.value}/${cid.value}`; } },
      el('label', { for: 'family' }, 'Family', fam), el('label', { for: 'contract' }, 'Contract', cid), el('button', { type: 'submit', text: 'Open' })),
    head, list, shown, diff,
    el('h2', { text: 'Across the fleet (live)' }), conv,
    el('h2', { text: 'History' }), history,
    el('details', { class: 'panel', open: true }, el('summary', { text: 'New draft' }),
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
      el('button', { type: 'submit', text: 'Create draft' }))))) return;
  await load();
  poll(g, 1000, convergence, 10000);
}

