// console.mjs - the console in chromium (playwright-core), driven through
// every action it offers, against a live server (console_test.sh sets it up
// and passes AW_CONSOLE: url, keys, run ids, the screenshot folder):
//  - / redirects to the console; a keyboard-only sign-in; the sign-in page
//    shows no "Sign out"; the key only in sessionStorage;
//  - the platform admin's overview of every project (20 a page), and what
//    needs attention in the selected one (a run denied there, after a
//    confirmation dialog: focus on "Keep it", Esc keeps it, focus back);
//  - with project "alpha" selected, the admin sees alpha's runs (newest
//    first), approves a waiting run as itself, reruns a run, submits a run
//    in alpha, sees a run made meanwhile appear without a reload, filters
//    (applied by the server: state, queue, created, text);
//  - the call log: filters (outcome, route or tool, run), a call made
//    meanwhile appearing live, a call's envelope;
//  - a project and two keys made in the browser; a policy drafted,
//    published, approved by the other key, activated, the convergence panel
//    reaching 2 of 2 with two watch processes, the side-by-side diff, the
//    one-step rollback to the previous revision, a revoke and what the
//    convergence panel says after it;
//  - the budget: chart (from GET .../budget/spend, split by model and by
//    key), per key, ledger, suspend (confirmed; who imposed it) and resume;
//  - every destructive action (deny, cancel, suspend, roll back, revoke)
//    asks first in an accessible dialog (axe with it open at both widths);
//  - the audit trail newest first and verified; tools and refusals in words;
//  - another tenant's run not found; tenant strings that look like markup
//    shown as text; no stray "null"; no CSP violation or page error;
//  - axe-core on every view at 1400 px and 390 px (no serious or critical
//    violation, nothing wider than the phone's screen); screenshots of each.
import { chromium } from 'playwright-core';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const C = JSON.parse(process.env.AW_CONSOLE);
const url = C.url;
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
let failed = 0;
const ok = (cond, what) => {
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${what}`);
  if (!cond) failed++;
};

const browser = await chromium.launch({ executablePath: C.chromium, args: ['--no-sandbox', '--disable-gpu'] });
const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
const page = await ctx.newPage();
const cspViolations = [];
page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text()); });
page.on('pageerror', (e) => cspViolations.push('page error: ' + e.message));
const requests = [];
page.on('request', (r) => requests.push(r.url()));
/* Confirms the dialog open (or waits for it first). */
async function confirm(expect) {
  await page.waitForSelector('dialog#confirm[open]');
  if (expect) ok((await page.locator('#confirm-h').textContent()).includes(expect), `the dialog asks: ${await page.locator('#confirm-h').textContent()}`);
  await page.click('#confirm-go');
  await page.waitForSelector('dialog#confirm', { state: 'detached' });
}

/* The API from the test itself (another client acting meanwhile). */
async function api(key, method, path, body) {
  const r = await fetch(url + path, { method, headers: { Authorization: 'Bearer ' + key, 'Content-Type': 'application/json' }, body: body ? JSON.stringify(body) : undefined });
  return r.json().catch(() => null);
}

const status = () => page.locator('#status').textContent();
/* How long to wait for the server to get somewhere (a run to end, a poll to
 * come round, watch processes to converge): generous, since `make test` runs
 * this beside another browser and a sanitizer build on two cores. */
const SLOW = 30000;
const waitStatus = (re) => page.waitForFunction((s) => new RegExp(s).test(document.querySelector('#status').textContent), re.source, { timeout: SLOW });
const views = [];

/* A view as it stands: a screenshot, axe, no stray "null" outside JSON. */
async function check(name) {
  await page.waitForTimeout(200);
  const w = page.viewportSize().width;
  await page.screenshot({ path: `${C.shots}/${w}-${name}.png`, fullPage: true });
  await page.evaluate(axeSource);
  const r = await page.evaluate(async () => {
    const res = await window.axe.run(document, { resultTypes: ['violations'] });
    return res.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.length} nodes, e.g. ${v.nodes[0].target}`);
  });
  ok(r.length === 0, `axe ${w}px ${name}: no serious or critical violation${r.length ? ': ' + r.join('; ') : ''}`);
  const stray = await page.evaluate(() => {
    const m = document.querySelector('main').cloneNode(true);
    m.querySelectorAll('pre, details, input, textarea').forEach((x) => x.remove());
    return /(^|\s)(null|undefined|NaN|\[object Object\])(\s|$)/.test(m.textContent);
  });
  ok(!stray, `${w}px ${name}: no stray null, undefined or NaN on the page`);
  if (w === 1400 && !name.includes('confirm') && !views.some((v) => v.name === name)) views.push({ name, hash: new URL(page.url()).hash });
}
async function signIn(key) {
  await page.goto(`${url}/console/`);
  await page.waitForSelector('#key');
  await page.keyboard.type(key); // keyboard only: the key field has the focus, Enter submits
  await page.keyboard.press('Enter');
  await page.waitForSelector('#nav:not([hidden])');
  await page.waitForSelector('#principal');
}
async function signOut() {
  await page.click('#logout');
  await page.waitForSelector('#key');
}
async function go(hash) {
  await page.click(`#nav a[href="#/${hash}"]`);
  await page.waitForFunction((h) => location.hash.startsWith('#/' + h), hash);
}
async function selectProject(p) {
  await page.selectOption('#project', p);
  await waitStatus(new RegExp(`Project ${p} selected`));
}
async function newKey(name) {
  const before = (await page.locator('#key-secret').textContent()) || '';
  await page.fill('#key-name', name);
  await page.selectOption('#key-scope', 'operator');
  await page.click('text=Create key');
  await page.waitForFunction((b) => { const t = document.querySelector('#key-secret').textContent; return t.includes('awk_') && t !== b; }, before);
  return (await page.locator('#key-secret').textContent()).replace(/^.*: /, '').trim();
}
const cells = (sel, col) => page.$$eval(`${sel} tbody tr`, (trs, c) => trs.map((tr) => (tr.children[c] ? tr.children[c].textContent.trim() : '')), col);
const openContract = async () => { await page.goto(`${url}/console/#/contracts/policy_routing/default`); await page.waitForSelector('#revisions'); };

try {
  // ---------------------------------------------------------------- sign in
  await page.goto(`${url}/`);
  ok(page.url() === `${url}/console/`, `/ redirects to the console (${page.url()})`);
  await page.waitForSelector('#key');
  ok(await page.evaluate(() => document.activeElement && document.activeElement.id === 'key'), 'the key field has the focus');
  ok(!(await page.isVisible('#logout')), 'the sign-in page shows no "Sign out"');
  await check('01-sign-in');
  await signIn(C.admin);
  ok(!page.url().includes('awk_'), 'the key is not in the URL');
  ok(await page.evaluate(() => localStorage.length === 0), 'nothing in localStorage');
  ok((await page.locator('#whoami').textContent()).includes('bootstrap (platform admin)'), 'who is signed in is shown');

  // ---------------------------------------------------------------- overview (platform)
  await selectProject('alpha');
  await page.waitForSelector('#glance');
  await page.waitForSelector('#waiting tbody tr');
  const glance = await cells('#glance', 0);
  ok(glance.includes('alpha') && glance.includes('outsider') && glance.length === 20, `the overview lists the first 20 projects (${glance.length}: ${glance.join(', ')})`);
  ok((await page.locator('#glance-page').textContent()) === 'Projects 1-20 of 22', 'the pager says which of the 22 projects are shown');
  await page.click('button:text("Next projects")');
  await page.waitForFunction(() => document.querySelectorAll('#glance tbody tr').length === 2);
  ok((await cells('#glance', 0)).join() === 'p19,p20', 'the next page lists the last two projects');
  ok(await page.isDisabled('button:text("Next projects")'), 'no page after the last');
  await page.click('button:text("Previous projects")');
  await page.waitForFunction(() => document.querySelectorAll('#glance tbody tr').length === 20);
  const alphaRow = await page.$$eval('#glance tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent.trim())).find((r) => r[0] === 'alpha'));
  ok(alphaRow && alphaRow[2] === '2' && Number(alphaRow[4]) >= 7 && alphaRow[5] === '3', `alpha at a glance: 2 waiting, its calls, 3 not ok (${alphaRow})`);
  const asks = (await cells('#waiting', 1)).join(' | ');
  ok(asks.includes('<img src=x onerror="window.__xss=1">') && (await page.$$('#main img')).length === 0,
    'a summary that looks like markup is shown as text');
  await check('02-overview');
  // deny where it is listed, as the signed-in principal - asked first
  const denySel = `button[aria-label="Deny run ${C.deny_run.slice(0, 8)}…${C.deny_run.slice(-4)}"]`;
  await page.focus(denySel);
  await page.keyboard.press('Enter');
  await page.waitForSelector('dialog#confirm[open]');
  ok(await page.evaluate(() => document.activeElement.id === 'confirm-keep'), 'the dialog opens with the focus on "Keep it"');
  ok((await page.locator('#confirm-text').textContent()).includes('drop the table <img src=x onerror="window.__xss=1">') && (await page.$$('dialog img')).length === 0,
    'the dialog shows what the run asks as text');
  await check('02b-confirm-deny');
  await page.keyboard.press('Escape');
  await page.waitForSelector('dialog#confirm', { state: 'detached' });
  ok(await page.evaluate((s) => document.activeElement === document.querySelector(s), denySel), 'Esc keeps it and gives the focus back to Deny');
  ok((await api(C.op1, 'GET', `/v1/platform/runs/${C.deny_run}`)).state === 'waiting_approval', 'a dialog dismissed denies nothing');
  await page.click(denySel);
  await confirm('Deny run');
  await waitStatus(/denied by bootstrap/);
  const denied = await api(C.op1, 'GET', `/v1/platform/runs/${C.deny_run}`);
  ok(denied.state === 'failed' && denied.error_code === 'E-RUN-009', `the run denied from the overview failed (${denied.state} ${denied.error_code})`);

  // ---------------------------------------------------------------- runs of the selected project
  await go('runs');
  await page.evaluate(() => { window.__noReload = 1; });
  await page.waitForSelector('#runs-table tbody tr a');
  let ids = (await page.$$eval('#runs-table tbody tr a', (as) => as.map((a) => a.getAttribute('href').slice(7))));
  ok(ids.includes(C.approve_run) && ids.includes(C.llm_run), 'the platform admin sees alpha\'s runs with alpha selected');
  ok(ids.join() === [...ids].sort().reverse().join(), 'runs are listed newest first');
  // a run submitted meanwhile by another client appears without a reload
  const sleeper = await api(C.op1, 'POST', '/v1/platform/runs', { workflow: [{ kind: 'sleep', args: { ms: 60000 } }] });
  await page.waitForSelector(`#runs-table a[href="#/runs/${sleeper.run_id}"]`, { timeout: SLOW });
  ok(await page.evaluate(() => window.__noReload === 1), 'a new run appeared in the list without a reload');
  // filters, all applied by the server: state, text, queue, created
  await page.selectOption('#run-state', 'failed');
  await page.waitForFunction(() => [...document.querySelectorAll('#runs-table tbody tr')].every((tr) => /failed/.test(tr.textContent)) &&
    document.querySelectorAll('#runs-table tbody tr a').length >= 2);
  ok(true, 'the state filter lists failed runs only');
  await page.selectOption('#run-state', '');
  await page.fill('#run-text', 'sleep');
  await page.waitForFunction((id) => { const a = [...document.querySelectorAll('#runs-table tbody tr a')]; return a.length === 1 && a[0].getAttribute('href').endsWith(id); }, sleeper.run_id);
  ok(requests.some((u) => u.includes('/v1/platform/runs?') && u.includes('q=sleep')), 'the text filter is asked of the server (q=sleep)');
  await page.fill('#run-text', C.mail_run.slice(0, 13));
  await page.waitForFunction((id) => { const a = [...document.querySelectorAll('#runs-table tbody tr a')]; return a.length === 1 && a[0].getAttribute('href').endsWith(id); }, C.mail_run);
  ok(true, 'the text filter finds a run by its id\'s beginning');
  await page.fill('#run-text', 'no-such-step');
  await page.waitForSelector('#runs-table td:text("No run matches these filters.")');
  ok(true, 'a text that matches nothing says so');
  await page.fill('#run-text', '');
  await page.selectOption('#run-queue', 'mail');
  await page.waitForFunction((id) => { const a = [...document.querySelectorAll('#runs-table tbody tr a')]; return a.length === 1 && a[0].getAttribute('href').endsWith(id); }, C.mail_run);
  ok(true, 'the queue filter finds the run of queue "mail"');
  ok(requests.some((u) => u.includes('queue=mail')), 'the queue filter is asked of the server');
  await page.selectOption('#run-queue', '');
  await page.selectOption('#run-range', '15m');
  await page.waitForFunction((n) => document.querySelectorAll('#runs-table tbody tr a').length === n, ids.length + 1);
  ok(true, 'created in the last 15 minutes: every run of this test');
  await page.selectOption('#run-range', 'custom');
  await page.fill('#run-until', '2020-01-01T00:00:00');
  await page.locator('#run-until').dispatchEvent('change');
  await page.waitForSelector('#runs-table td:text("No run matches these filters.")');
  ok(requests.some((u) => u.includes('created_to=2020-01-01T00%3A00%3A00.000Z')), 'between two times: created_to asked of the server, no run before 2020');
  await page.fill('#run-until', '');
  await page.locator('#run-until').dispatchEvent('change');
  await page.selectOption('#run-range', '');
  await check('03-runs');

  // approve a waiting run from its page, as the signed-in principal
  await page.click(`#runs-table a[href="#/runs/${C.approve_run}"]`);
  await page.waitForSelector('#wait-summary');
  ok((await page.locator('#wait-summary').textContent()) === 'deploy to prod', 'the waiting run says what it asks');
  await check('04-run-waiting');
  await page.click('section.callout button:text("Approve")');
  await waitStatus(/approved: it goes on/);
  await page.waitForFunction(() => document.querySelector('#run-state') && document.querySelector('#run-state').textContent === 'succeeded', null, { timeout: SLOW });
  const byCol = (await cells('table:has(caption:text("Newest first"))', 4)).join(',');
  ok(byCol.includes('bootstrap'), `approved as the signed-in principal, shown in the transitions (${byCol})`);
  ok(await page.evaluate(() => window.__noReload === 1), 'the run page followed the run to its end without a reload');

  // an agent step: its turns and tool calls from its journal, on the timeline
  await page.goto(`${url}/console/#/runs/${C.agent_run}`);
  await page.waitForSelector('#run-timeline');
  const agentTl = await page.locator('#run-timeline').textContent();
  ok(/3 turns, 2 tool calls/.test(agentTl), `the agent step counts its turns and tool calls (${agentTl.slice(0, 200)})`);
  ok(agentTl.includes('turn 1: model agent') && agentTl.includes('turn 2: tool echo__web') && agentTl.includes('asked for echo__web'),
    'each turn and each tool call is a row of the timeline');
  await check('05a-run-agent');

  // rerun: a new run from the same workflow and input
  await page.goto(`${url}/console/#/runs/${C.llm_run}`);
  await page.waitForSelector('#run-timeline');
  ok((await page.locator('#run-timeline').textContent()).includes('model call: chat'), 'the timeline shows the step\'s model call');
  await page.click('details:has(summary:text("Workflow and input")) summary');
  ok((await page.locator('main pre').last().textContent()).includes('<img src=x onerror=\\"window.__xss=1\\">'), 'a run\'s input that looks like markup is shown as text');
  await check('05-run-detail');
  await page.click('button:text("Rerun")');
  await waitStatus(/Rerun of .*: new run .* submitted/);
  await page.waitForFunction((old) => location.hash.startsWith('#/runs/') && !location.hash.endsWith(old), C.llm_run);
  const rerunId = page.url().split('/').pop();
  await page.waitForFunction(() => document.querySelector('#run-state') && document.querySelector('#run-state').textContent === 'succeeded', null, { timeout: SLOW });
  const rerun = await api(C.op1, 'GET', `/v1/platform/runs/${rerunId}`);
  const orig = await api(C.op1, 'GET', `/v1/platform/runs/${C.llm_run}`);
  ok(JSON.stringify(rerun.workflow) === JSON.stringify(orig.workflow) && JSON.stringify(rerun.input) === JSON.stringify(orig.input) && rerun.project === 'alpha',
    'the rerun is a new run of alpha with the same workflow and input');

  // submit in the selected project, then cancel
  await go('runs');
  await page.click('#submit-panel summary');
  await page.fill('#run-workflow', JSON.stringify([{ kind: 'sleep', args: { ms: 60000 } }]));
  await page.click('text=Submit run');
  await page.waitForSelector('#run-trace-id');
  ok((await page.locator('#run-project').textContent()) === 'alpha', 'a run submitted by the platform admin is created in the selected project');
  ok(/^[0-9a-f]{32}$/.test((await page.locator('#run-trace-id').textContent()).trim()), 'the run view shows its trace id');
  await page.click('text=Cancel run');
  await confirm('Cancel run');
  await page.waitForFunction(() => document.querySelector('#run-state') && document.querySelector('#run-state').textContent === 'cancelled');
  ok(true, 'the run was cancelled from the console');

  // ---------------------------------------------------------------- the call log
  await go('calls');
  await page.evaluate(() => { window.__noReload = 1; });
  await page.waitForSelector('#calls-table tbody tr a');
  const before = (await page.$$('#calls-table tbody tr')).length;
  ok(before >= 8, `the call log lists alpha's model and tool calls (${before})`);
  await page.selectOption('#call-outcome', '!ok');
  await page.waitForFunction(() => { const t = [...document.querySelectorAll('#calls-table tbody tr')]; return t.length === 3 && t.every((tr) => tr.className === 'notok'); });
  ok(true, 'outcome "not ok": the three calls that failed or were refused');
  await page.selectOption('#call-outcome', '');
  await page.fill('#call-target', 'echo__web');
  await page.click('form[aria-label="Filter calls"] button:text("Apply")');
  await page.waitForFunction(() => { const t = [...document.querySelectorAll('#calls-table tbody tr')]; return t.length === 3 && t.every((r) => /echo__web/.test(r.textContent) && /tool/.test(r.textContent)); });
  ok(true, 'route or tool: the three echo__web calls (one direct, two by the agent)');
  await page.fill('#call-target', '');
  await page.fill('#call-run', C.llm_run);
  await page.click('form[aria-label="Filter calls"] button:text("Apply")');
  await page.waitForFunction(() => { const t = [...document.querySelectorAll('#calls-table tbody tr')]; return t.length === 1 && /run-worker/.test(t[0].textContent); });
  ok(true, 'run: the model call the run\'s step made');
  await page.fill('#call-run', '');
  await page.selectOption('#call-kind', 'llm.call');
  await page.waitForFunction(() => [...document.querySelectorAll('#calls-table tbody tr')].every((tr) => tr.children[1].textContent === 'model'));
  // a call made meanwhile joins the top while the page is open (other
  // records may land too: the recorders write a little after a call ends)
  const seqOf = () => page.$$eval('#calls-table tbody tr a[href^="#/calls/"]', (as) => as.map((a) => Number(a.getAttribute('href').split('/').pop())));
  const top = Math.max(...(await seqOf()));
  const n0 = (await seqOf()).length;
  await api(C.agent, 'POST', '/v1/chat/completions', { model: 'chat', messages: [{ role: 'user', content: 'live' }] });
  await page.waitForFunction((t) => [...document.querySelectorAll('#calls-table tbody tr')].some((tr) =>
    Number(tr.querySelector('a').getAttribute('href').split('/').pop()) > t && tr.children[2].textContent === 'agent'), top, { timeout: SLOW });
  ok((await seqOf()).length > n0, 'the older calls stay listed under the new one');
  ok(await page.evaluate(() => window.__noReload === 1), 'a new call appeared in the log without a reload');
  await check('06-calls');
  await page.click('#calls-table tbody tr:first-child a');
  await page.waitForSelector('#call-upstream');
  ok((await page.locator('#call-upstream').textContent()) === 'openai' && (await page.locator('#call-outcome').textContent()) === 'ok',
    'a call\'s page shows its envelope (upstream, outcome)');
  ok((await page.locator('main pre').textContent()).includes('"tokens_in"'), 'the envelope as recorded');
  await check('07-call-detail');

  // ---------------------------------------------------------------- budget
  await go('budget');
  await page.waitForSelector('#spend-chart');
  await page.waitForSelector('#per-key-table');
  const bars = await page.$$eval('#spend-chart rect.bar', (rs) => rs.map((r) => Number(r.getAttribute('height'))));
  ok(bars.length === 48 && bars.some((h) => h > 0), `spend over time: 48 hourly bars, the current hour's not empty (${bars.filter((h) => h > 0).length} with spend)`);
  ok(requests.some((u) => u.includes('/budget/spend?bucket=hour&by=none')), 'the chart is drawn from the server\'s sums (GET .../budget/spend)');
  await page.selectOption('#chart-split', 'model');
  await page.waitForSelector('#chart-legend li');
  ok((await page.locator('#chart-legend').textContent()).includes('gpt-x'), 'split by model: the legend names the model that answered');
  ok((await cells('#spend-table', 1)).includes('gpt-x'), 'and the numbers name it per hour');
  await page.selectOption('#chart-split', 'key');
  await page.waitForFunction(() => /agent/.test((document.querySelector('#chart-legend') || {}).textContent || ''));
  ok(true, 'split by key: the legend names the agent key');
  await page.selectOption('#chart-size', 'day');
  await page.waitForFunction(() => document.querySelectorAll('#spend-chart rect').length >= 1 && /per day by key, 30 days/.test(document.querySelector('#chart-title').textContent));
  ok(true, 'per day by key: 30 days');
  await page.selectOption('#chart-size', 'hour');
  await page.selectOption('#chart-split', 'none');
  ok((await cells('#per-key-table', 0)).includes('agent'), 'spend per key lists the agent key');
  ok((await page.$$('#ledger tbody tr')).length > 5, 'the ledger is listed');
  await page.selectOption('#chart-metric', 'cost');
  await page.waitForFunction(() => document.querySelector('#chart-title').textContent.startsWith('Cost'));
  ok(true, 'the chart shows cost on request');
  await page.fill('#suspend-reason', '<b onmouseover="window.__xss=3">drill</b>');
  await page.click('button:text("Suspend model calls")');
  await page.waitForSelector('dialog#confirm[open]');
  ok((await page.locator('#confirm-text').textContent()).includes('Reason: "<b onmouseover="window.__xss=3">drill</b>"'), 'the suspension dialog quotes the reason as text');
  await check('08a-confirm-suspend');
  await confirm('Suspend the model calls of alpha');
  await page.waitForSelector('#suspension');
  ok((await page.locator('#suspended-by').textContent()) === 'bootstrap' && (await page.locator('#suspension').textContent()).includes('imposed by the platform'),
    'the suspension shows who imposed it');
  ok((await page.locator('#suspended-reason').textContent()) === '<b onmouseover="window.__xss=3">drill</b>', 'the reason is shown as text');
  await check('08-budget-suspended');
  await page.click('button:text("Resume model calls")');
  await waitStatus(/Model calls resumed/);
  await page.waitForSelector('#suspension', { state: 'detached' });
  ok(true, 'suspended and resumed from the console');

  // ---------------------------------------------------------------- audit, system
  await go('audit');
  await page.waitForSelector('#audit-table tbody tr');
  const seqs = (await cells('#audit-table', 0)).map(Number);
  ok(seqs.length > 10 && seqs.every((s, i) => i === 0 || s < seqs[i - 1]), 'the audit trail lists newest first');
  await page.click('text=Verify the chain');
  await page.waitForFunction(() => /Chain intact: \d+ records/.test(document.querySelector('#verify-result').textContent));
  ok(true, 'audit chain verified: ' + await page.locator('#verify-result').textContent());
  await check('09-audit');
  await go('system');
  await page.waitForSelector('#tools');
  await page.waitForSelector('#jobs');
  ok((await cells('#tools', 0)).includes('echo__web'), 'the project\'s tools are listed');
  ok((await cells('#refusals', 0)).includes('the tool is not offered to this project'), 'a refusal is said in words, not as a label string');
  await check('10-system');

  // ---------------------------------------------------------------- a project, keys, a contract's life
  await go('keys');
  await page.fill('#new-project', 'webcon');
  await page.click('text=Create project');
  await page.waitForFunction(() => [...document.querySelectorAll('#project option')].some((o) => o.value === 'webcon'));
  await selectProject('webcon');
  await page.waitForSelector('text=Keys of webcon');
  const op1 = await newKey('op1');
  const op2 = await newKey('op2');
  ok(op1.startsWith('awk_') && op2.startsWith('awk_') && op1 !== op2, 'two keys created in the browser');
  await check('11-keys');
  // op1 drafts and publishes, op2 approves, op1 activates
  await signOut();
  await signIn(op1);
  ok((await page.locator('#whoami').textContent()).includes('op1 (operator of webcon)'), 'an operator sees who it is');
  await openContract();
  await page.fill('#draft-body', JSON.stringify({ routes: [{ name: 'main', match: { task: 'chat' }, candidates: [{ provider: 'ollama', model: 'llama3' }] }] }));
  await page.click('text=Create draft');
  await page.waitForSelector('button:text("Publish")');
  await page.click('button:text("Publish")');
  await page.waitForSelector('button:text("Approve")');
  await signOut();
  await signIn(op2);
  await openContract();
  await page.click('button:text("Approve")');
  await waitStatus(/approved\./);
  await signOut();
  await signIn(op1);
  await openContract();
  const t0 = Date.now();
  await page.click('button:text("Activate")');
  await waitStatus(/activated\./);
  let conv = '';
  try {
    await page.waitForFunction(() => { const s = document.querySelector('#conv-summary'); return s && /^2 of 2 processes/.test(s.textContent) && s.className === 'ok'; }, null, { timeout: 2 * SLOW });
    conv = await page.locator('#conv-summary').textContent();
  } catch (e) { conv = String(await page.locator('#convergence').textContent()); }
  ok(/^2 of 2 processes serve .* \(100%\)/.test(conv), `convergence reached 100% with two watch processes in ${Date.now() - t0} ms: ${conv}`);
  // a second revision, compared side by side, then activated
  await page.fill('#draft-body', JSON.stringify({ routes: [{ name: 'main', match: { task: 'chat' }, candidates: [{ provider: 'ollama', model: 'qwen' }] }] }));
  await page.click('text=Create draft');
  await page.waitForSelector('#diff-a');
  ok((await cells('#revisions', 1))[0].startsWith('draft'), 'revisions are listed newest first');
  await page.click('button:text("Compare")');
  await page.waitForSelector('text=Side by side');
  ok((await page.locator('table:has(caption:text("What changes"))').textContent()).includes('replace'), 'the diff shows the replaced model');
  await page.click('button:text("Publish")');
  await page.waitForSelector('button:text("Approve")');
  await signOut();
  await signIn(op2);
  await openContract();
  await page.click('button:text("Approve")');
  await waitStatus(/approved\./);
  await signOut();
  await signIn(op1);
  await openContract();
  await page.click('button:text("Activate")');
  await waitStatus(/activated\./);
  // the one-step rollback: op1 asks, op2's approval completes the quorum and activates it
  await page.click('button:text("Roll back to the previous revision")');
  await confirm('Roll back policy_routing/default');
  await waitStatus(/published, waiting for 1 approval/);
  await page.click('#revisions tbody tr:first-child button:text("View")');
  ok((await page.locator('#revision-body pre').textContent()).includes('llama3'), 'the rollback revision restores the earlier body (viewed in the console)');
  await signOut();
  await signIn(op2);
  await openContract();
  await page.click('button:text("Approve")');
  await waitStatus(/Rollback activated/);
  await page.waitForSelector('text=/rollback to/');
  ok((await page.locator('#active-summary').textContent()).includes('a rollback to'), 'rolled back in one step from the console');
  const hist = await cells('#history', 1);
  ok(hist.includes('op1') && hist.includes('op2'), `the history says who did what (${[...new Set(hist)].join(', ')})`);
  await check('12-contracts');
  // a run of another tenant: not found, exactly like a missing one
  await page.goto(`${url}/console/#/runs/${C.other_run}`);
  await page.waitForSelector('#run-missing');
  ok((await page.locator('#run-missing').textContent()).includes('E-RUN-001'), "another tenant's run answers not found (E-RUN-001)");
  // revoked: the convergence panel says nothing is served any more
  await signOut();
  await signIn(C.admin);
  await selectProject('webcon');
  await openContract();
  await page.click('#revisions button:text("Revoke")');
  await confirm('Revoke revision');
  await waitStatus(/revoked\./);
  await page.waitForFunction(() => /was revoked: no revision is active/.test((document.querySelector('#conv-summary') || {}).textContent || ''), null, { timeout: SLOW });
  ok(true, 'after a revoke the convergence panel says: ' + await page.locator('#conv-summary').textContent());
  ok((await page.locator('#active-summary').textContent()).startsWith('No revision is active'), 'and no revision is active');
  await page.waitForFunction(() => {
    const c = [...document.querySelectorAll('#convergence caption')].find((x) => x.textContent === 'Recent activations');
    const t = c && c.closest('table').querySelector('tbody tr');
    return t && /revoked/.test(t.children[1].textContent) && /^2 of 2$/.test(t.children[3].textContent) && /^0 of 2$/.test(t.children[4].textContent);
  }, null, { timeout: SLOW });
  ok(true, 'the revoked activation: learned by 2 of 2 once, serving now 0 of 2');

  // ---------------------------------------------------------------- the phone's width
  await selectProject('alpha');
  await page.setViewportSize({ width: 390, height: 844 });
  for (const v of views) {
    if (v.name === '01-sign-in') continue;
    await page.goto(`${url}/console/${v.hash}`);
    await page.waitForSelector('main h1');
    await page.waitForTimeout(800);
    const wide = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    ok(wide <= 1, `phone width: ${v.name} fits (overflow ${wide}px)`);
    await check(v.name);
  }
  // a confirmation dialog at the phone's width
  const late = await api(C.op1, 'POST', '/v1/platform/runs', { workflow: [{ kind: 'sleep', args: { ms: 60000 } }] });
  await page.goto(`${url}/console/#/runs/${late.run_id}`);
  await page.waitForSelector('text=Cancel run');
  await page.click('text=Cancel run');
  await page.waitForSelector('dialog#confirm[open]');
  const dw = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  ok(dw <= 1, `phone width: the dialog fits (overflow ${dw}px)`);
  await check('14-confirm-cancel');
  await page.click('#confirm-keep');
  await page.waitForSelector('dialog#confirm', { state: 'detached' });
  await signOut();
  await check('01-sign-in');
} catch (e) {
  if (process.env.AW_DEBUG) console.log(requests.filter((u) => u.includes('/v1/')).slice(-12).join('\n'));
  ok(false, `${e.message.split('\n')[0]}\n  status: ${await status().catch(() => '?')}\n  url: ${page.url()}\n  main: ${(await page.locator('main').textContent().catch(() => '?')).slice(0, 600)}`);
  await page.screenshot({ path: `${C.shots}/failure.png`, fullPage: true }).catch(() => {});
}
ok(await page.evaluate(() => window.__xss === undefined), 'no tenant string ran as code');
ok(cspViolations.length === 0, `no CSP violation or page error${cspViolations.length ? ': ' + cspViolations.join('; ') : ''}`);
await signIn(C.admin).catch(() => {});
const sess = await page.evaluate(() => Object.keys(sessionStorage));
ok(sess.includes('awooop.key'), 'the key is kept in sessionStorage');
await browser.close();
console.log(failed ? `console: ${failed} failed` : 'console: all passed');
process.exit(failed ? 1 : 0);
