/*
 * keys.js - the Keys view: the projects this key may see (a platform admin
 * creates them here) and the selected project's API keys: create one (its
 * secret shown once), revoke one; a virtual key's limits in a column of
 * their own (set with `awooop key update` or PATCH .../keys/{id}).
 */
'use strict';

import { el, fill, api, say, problem, refused, project, enc, view, table, button, when, isPlatform } from './lib.js';
import { loadSession, route } from './app.js';

/* A virtual key's limits in words: models, per-minute limits, budget,
 * expiry, team and user ("" none). */
function limitsText(x) {
  const l = x.limits || {}, out = [];
  if (l.models) out.push('models: ' + l.models.join(', '));
  if (l.rpm) out.push(l.rpm + ' calls/min');
  if (l.tpm) out.push(l.tpm + ' tokens/min');
  if (l.budget) out.push('budget: ' + [l.budget.tokens ? l.budget.tokens + ' tokens' : '', l.budget.cost_usd ? l.budget.cost_usd + ' USD' : '']
    .filter(Boolean).join(' + ') + ' per ' + l.budget.period);
  if (x.expires_at) out.push('expires ' + x.expires_at.slice(0, 16).replace('T', ' ') + ' UTC');
  if (l.metadata && l.metadata.team) out.push('team ' + l.metadata.team);
  if (l.metadata && l.metadata.user) out.push('user ' + l.metadata.user);
  return out.join('; ');
}

export async function viewKeys(parts, g) {
  const r = await api('GET', '/v1/projects?limit=1000');
  const pid = el('input', { id: 'new-project', required: true, pattern: '[a-z0-9][a-z0-9_-]{1,62}', 'aria-describedby': 'new-project-help' });
  const keysBox = el('div');
  if (!view(g, 'Projects and keys',
    table([{ label: 'Project', get: (p) => p.id }, { label: 'Created', get: (p) => when(p.created_at) }, { label: 'By', get: (p) => p.created_by }],
      r.ok ? r.data.items : [], 'Projects this key may see'),
    isPlatform() ? [el('h2', { text: 'New project' }),
      el('form', { class: 'row', onsubmit: async (ev) => {
        ev.preventDefault();
        const c = await api('POST', '/v1/projects', { id: pid.value });
        if (!c.ok) return problem(c, 'Project not created');
        say('Project ' + c.data.id + ' created.', 'ok');
        await loadSession();
        route();
      } }, el('label', { for: 'new-project' }, 'Project id', pid), el('button', { type: 'submit', text: 'Create project' }),
      el('span', { id: 'new-project-help', class: 'muted', text: 'lower case letters, digits, - and _' }))] : null,
    el('h2', { text: 'Keys of ' + project() }), keysBox)) return;
  const k = await api('GET', `/v1/projects/${enc(project())}/keys`);
  const name = el('input', { id: 'key-name', required: true });
  const scope = el('select', { id: 'key-scope' }, ['reader', 'worker', 'operator', 'project-admin'].map((s) => el('option', { value: s, text: s })));
  const secret = el('output', { id: 'key-secret', class: 'mono' });
  fill(keysBox,
    k.ok ? table([
      { label: 'Name (principal)', get: (x) => x.name }, { label: 'Scope', get: (x) => x.scope }, { label: 'Prefix', get: (x) => el('span', { class: 'mono', text: x.prefix }) },
      { label: 'Created', get: (x) => [when(x.created_at), ' by ', x.created_by] }, { label: 'Revoked', get: (x) => (x.revoked_at ? when(x.revoked_at) : '') },
      { label: 'Limits', get: (x) => limitsText(x) },
      { label: 'Action', get: (x) => (x.revoked_at ? '' : button('Revoke', async () => {
        const d = await api('DELETE', `/v1/projects/${enc(project())}/keys/${enc(x.key_id)}`);
        if (d.status !== 204) return problem(d, 'Key not revoked');
        say('Key ' + x.name + ' revoked.', 'ok');
        route();
      }, 'danger', 'Revoke key ' + x.name)) }], k.data.items, 'API keys (secrets are never shown again)') : refused(k, 'Listing keys needs a project-admin key'),
    el('form', { class: 'row', onsubmit: async (ev) => {
      ev.preventDefault();
      const c = await api('POST', `/v1/projects/${enc(project())}/keys`, { name: name.value, scope: scope.value });
      if (!c.ok) return problem(c, 'Key not created');
      secret.textContent = 'New key (shown once): ' + c.data.key;
      say('Key ' + c.data.name + ' created.', 'ok');
    } }, el('label', { for: 'key-name' }, 'Key name', name), el('label', { for: 'key-scope' }, 'Scope', scope),
    el('button', { type: 'submit', text: 'Create key' })),
    secret);
}
