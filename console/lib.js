/*
 * lib.js - what every view of the console shares: building the DOM (text
 * only: nothing the API returns is ever parsed as HTML), calling the API
 * with the key of this tab, the status line, tables, numbers and times,
 * polling with backoff, and the route generation that keeps a slow view
 * from painting over a newer one.
 *
 * Built into the binary as a C string: no two question marks in a row
 * anywhere in these files (C's trigraphs would rewrite some of them, and
 * the nullish operator is one); console_test.sh checks.
 */
'use strict';

export const KEY = 'awooop.key';
export const PROJECT = 'awooop.project';

/* Who is signed in (GET /v1/whoami) and the projects the key may see. */
export const session = { me: null, projects: [] };

export function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  add(e, kids);
  return e;
}

/* Appends kids (nested arrays, nodes, strings) leaving out null, undefined
 * and false: replaceChildren(null) would show the word "null". */
function add(e, kids) {
  for (const c of kids.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function fill(e, ...kids) {
  e.replaceChildren();
  add(e, kids);
  return e;
}

export function svg(tag, attrs, ...kids) {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) e.setAttribute(k, String(v));
  for (const c of kids.flat(Infinity)) if (c !== null && c !== undefined && c !== false) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

export function say(msg, cls) {
  const s = document.getElementById('status');
  s.textContent = msg;
  s.className = 'status ' + (cls || '');
}

export const project = () => sessionStorage.getItem(PROJECT) || '';
export const enc = encodeURIComponent;
export const short = (id) => (id && id.length > 16 ? id.slice(0, 8) + '…' + id.slice(-4) : id || '');
export const isPlatform = () => !!(session.me && session.me.platform);
/* The project selector for the /v1/platform/runs routes. */
export const inProject = (path) => path + (path.includes('?') ? '&' : '?') + 'project=' + enc(project());

export async function api(method, path, body, headers) {
  const h = Object.assign({ Authorization: 'Bearer ' + sessionStorage.getItem(KEY) }, headers || {});
  if (body !== undefined) h['Content-Type'] = 'application/json';
  let r;
  try {
    r = await fetch(path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  } catch (e) {
    return { status: 0, ok: false, data: { code: 'no answer', detail: 'the server did not answer (' + e.message + ')' } };
  }
  const ct = r.headers.get('content-type') || '';
  const data = ct.includes('json') ? await r.json().catch(() => null) : await r.text();
  return { status: r.status, ok: r.ok, data };
}

/* The stable code of an answer that is not 2xx. */
export function codeOf(res) {
  const d = res.data || {};
  return d.code || (d.error && d.error.data && d.error.data.code) || String(res.status);
}

/* Says in the status line why an action was refused (its code and detail). */
export function problem(res, what) {
  const d = res.data || {};
  const code = codeOf(res);
  say(`${what}: ${d.detail || d.title || 'refused'} (${code})`, 'bad');
  return code;
}

/* A sentence for a view the key may not read. */
export function refused(res, what) {
  const code = codeOf(res);
  const why = res.status === 403 ? 'this key\'s scope does not allow it'
    : res.status === 404 ? 'not found for this key' : res.status === 0 ? 'the server did not answer' : 'refused';
  return el('p', { class: 'muted', text: `${what}: ${why} (${code}).` });
}

/* /metrics holds every tenant's series: answered to a key of the platform
 * project only. The parsed series, or null when this key may not read them. */
export async function metrics() {
  const r = await fetch('/metrics', { cache: 'no-store', headers: { Authorization: 'Bearer ' + sessionStorage.getItem(KEY) } });
  if (!r.ok) return null;
  const out = [];
  for (const line of (await r.text()).split('\n')) {
    const m = /^([a-z_]+)(\{[^}]*\})?\s+(\S+)$/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const [, k, v] of (m[2] || '').matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/* ------------------------------------------------------------ formatting */

export const num = (n) => (n === null || n === undefined || Number.isNaN(n) ? '-' : Number(n).toLocaleString('en-US'));
export function usd(v) {
  if (v === null || v === undefined) return '-';
  if (v === 0) return '$0';
  return v < 0.01 ? '$' + v.toFixed(6) : '$' + v.toFixed(2);
}
export function ms(v) {
  if (v === null || v === undefined) return '-';
  return v < 1 ? v.toFixed(2) + ' ms' : v < 10 ? v.toFixed(1) + ' ms' : v < 10000 ? Math.round(v) + ' ms' : (v / 1000).toFixed(1) + ' s';
}
export function dur(a, b) {
  if (!a) return '-';
  const d = (b ? Date.parse(b) : Date.now()) - Date.parse(a);
  return d < 1000 ? d + ' ms' : d < 120000 ? (d / 1000).toFixed(1) + ' s' : d < 7200000 ? Math.round(d / 60000) + ' min' : (d / 3600000).toFixed(1) + ' h';
}
export function ago(ts) {
  if (!ts) return '-';
  const s = (Date.now() - Date.parse(ts)) / 1000;
  if (s < 0) return 'in ' + dur(new Date().toISOString(), ts);
  return s < 5 ? 'just now' : s < 90 ? Math.round(s) + ' s ago' : s < 5400 ? Math.round(s / 60) + ' min ago'
    : s < 129600 ? Math.round(s / 3600) + ' h ago' : Math.round(s / 86400) + ' days ago';
}
/* A timestamp as "2026-12-04 23:20:30" (UTC) with the relative time. */
export function when(ts) {
  if (!ts) return '-';
  return el('time', { datetime: ts, title: ts }, el('span', { class: 'abs', text: ts.slice(0, 19).replace('T', ' ') }), el('span', { class: 'muted rel', text: ago(ts) }));
}

/* A state as a word with a shape and a colour (never colour alone). */
const BADGE = {
  succeeded: 'ok', ok: 'ok', active: 'ok', approved: 'ok',
  failed: 'bad', refused: 'bad', cancelled: 'muted', denied: 'bad', revoked: 'bad', unavailable: 'bad', error: 'bad',
  waiting_approval: 'warn', waiting: 'warn', retry_wait: 'warn', published: 'warn', suspended: 'bad',
  queued: 'info', claimed: 'info', running: 'info', started: 'info', draft: 'muted', superseded: 'muted', suggested: 'muted',
};
export const WORDS = { waiting_approval: 'waiting for approval', retry_wait: 'waiting to retry', claimed: 'starting' };
export const badge = (s) => el('span', { class: 'badge ' + (BADGE[s] || 'muted'), text: WORDS[s] || s || '-' });

/* ------------------------------------------------------------ tables */

/* cols: [{label, get(row) -> node|string, num}], rows; caption says what it is. */
export function table(cols, rows, caption, opts) {
  const o = opts || {};
  return el('div', { class: 'scroll' },
    el('table', { id: o.id },
      caption ? el('caption', { text: caption }) : null,
      el('thead', {}, el('tr', {}, cols.map((c) => el('th', { scope: 'col', class: c.num ? 'num' : null, text: c.label })))),
      el('tbody', {}, rows.length ? rows.map((r) => el('tr', { class: o.rowClass ? o.rowClass(r) : null }, cols.map((c) => {
        const v = c.get(r);
        return el('td', { class: c.num ? 'num' : null }, v instanceof Node || Array.isArray(v) ? v : v === null || v === undefined ? '' : String(v));
      }))) : el('tr', {}, el('td', { colspan: cols.length, class: 'muted', text: o.empty || 'Nothing yet.' })))));
}

/* A definition list of [term, value] pairs; ids from the term. */
export function facts(pairs, prefix) {
  return el('dl', { class: 'facts' }, pairs.filter(Boolean).map(([k, v]) => [el('dt', { text: k }),
    el('dd', { id: prefix ? prefix + '-' + k.toLowerCase().replace(/[^a-z0-9]+/g, '-') : null }, v instanceof Node ? v : v === null || v === undefined ? '-' : String(v))]));
}

export const button = (text, onclick, cls, label) => el('button', { type: 'button', class: cls || null, 'aria-label': label || null, onclick }, text);
/* Asks before a destructive action: a modal <dialog> (the page behind it
 * inert), named by its title, the focus on the safe choice ("Keep it"), Esc
 * keeps it too, and the focus goes back where it was (or to the view when
 * that control was redrawn meanwhile). o: {title, text, action, extra?}
 * (every string shown as text). Resolves true when confirmed. */
export function confirmAction(o) {
  return new Promise((resolve) => {
    const opener = document.activeElement;
    const keep = el('button', { type: 'button', class: 'secondary', id: 'confirm-keep' }, 'Keep it');
    const go = el('button', { type: 'button', class: 'danger', id: 'confirm-go' }, o.action);
    const d = el('dialog', { id: 'confirm', class: 'confirm', 'aria-labelledby': 'confirm-h', 'aria-describedby': 'confirm-text' },
      el('h2', { id: 'confirm-h', text: o.title }), el('p', { id: 'confirm-text', text: o.text }), o.extra || null,
      el('p', { class: 'row' }, go, keep));
    let answer = false;
    go.addEventListener('click', () => { answer = true; d.close(); });
    keep.addEventListener('click', () => d.close());
    d.addEventListener('close', () => {
      d.remove();
      const back = opener && opener.isConnected && opener !== document.body ? opener : document.getElementById('main');
      back.focus();
      resolve(answer);
    });
    document.body.append(d);
    d.showModal();
    keep.focus();
  });
}
/* A button that asks first (confirmAction(ask)), then runs onclick. */
export const dangerButton = (text, ask, onclick, label) =>
  button(text, async () => { if (await confirmAction(ask)) onclick(); }, 'danger', label);
/* A JSON value, pretty; a region the keyboard can scroll. */
export const json = (v, label) => el('pre', { class: 'json', tabindex: '0', 'aria-label': label || 'JSON', text: JSON.stringify(v, null, 2) });

/* ------------------------------------------------------------ routes and polling */

/* Route generations: a view renders, and its polls go on, only while it is
 * still the route asked for last. */
export const nav = { gen: 0 };

export function view(g, title, ...kids) {
  if (g !== nav.gen) return false;
  const m = document.getElementById('main');
  fill(m, el('h1', { text: title }), kids);
  document.title = title + ' - awooop console';
  return true;
}

/* Calls fn now and again every base ms while the route lasts; fn returns
 * false to stop, throws or returns 'error' to back off (doubling up to
 * max). A hidden tab polls at the slowest pace. */
export function poll(g, base, fn, max) {
  let delay = base;
  const top = max || base * 10;
  const tick = async () => {
    if (g !== nav.gen) return;
    let r;
    try { r = await fn(); } catch (e) { r = 'error'; }
    if (r === false || g !== nav.gen) return;
    delay = r === 'error' ? Math.min(delay * 2, top) : base;
    setTimeout(tick, document.hidden ? top : delay);
  };
  tick();
}

/* Runs fns over items, at most n at once; the results in order. */
export async function pool(items, n, fn) {
  const out = new Array(items.length);
  let i = 0;
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, async () => {
    while (i < items.length) { const k = i++; out[k] = await fn(items[k], k); }
  }));
  return out;
}

/* The hash's query: #/calls?outcome=ok -> {outcome: 'ok'}. */
export function hashQuery() {
  const q = location.hash.split('?')[1] || '';
  return Object.fromEntries(new URLSearchParams(q));
}
export function setHashQuery(base, q) {
  const s = new URLSearchParams(Object.entries(q).filter(([, v]) => v !== '' && v !== null && v !== undefined)).toString();
  const h = base + (s ? '?' + s : '');
  if (location.hash !== h) history.replaceState(null, '', h);
}

/* A time range choice -> since (RFC 3339), or '' for any time. */
export const RANGES = [['15m', 'last 15 minutes', 900], ['1h', 'last hour', 3600], ['24h', 'last 24 hours', 86400], ['7d', 'last 7 days', 604800], ['', 'any time', 0]];
export function sinceOf(range) {
  const r = RANGES.find((x) => x[0] === range);
  return r && r[2] ? new Date(Date.now() - r[2] * 1000).toISOString() : '';
}
export const select = (id, options, value) => el('select', { id }, options.map(([v, t]) => el('option', { value: v, selected: v === value, text: t })));

/* A table wider than the screen scrolls sideways in its box: such a box is
 * made a focusable region (named by its caption) so the keyboard can scroll
 * it too; the others stay out of the tab order. */
function markScrollers() {
  document.querySelectorAll('#main .scroll').forEach((b) => {
    if (b.scrollWidth > b.clientWidth + 1) {
      const cap = b.querySelector('caption');
      b.setAttribute('tabindex', '0');
      b.setAttribute('role', 'region');
      b.setAttribute('aria-label', cap ? cap.textContent : 'table');
    } else ['tabindex', 'role', 'aria-label'].forEach((a) => b.removeAttribute(a));
  });
}
let marking = 0;
const markSoon = () => { if (!marking) marking = requestAnimationFrame(() => { marking = 0; markScrollers(); }); };
document.addEventListener('DOMContentLoaded', () => {
  new MutationObserver(markSoon).observe(document.getElementById('main'), { childList: true, subtree: true });
  window.addEventListener('resize', markSoon);
});
