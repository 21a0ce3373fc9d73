// console.mjs URL ADMIN_KEY OTHER_RUN SHOTS CHROMIUM - the console in chromium
// (playwright-core): a keyboard-only sign-in, a project and two operator keys
// made in the browser, a policy drafted, published, approved by the second
// key and activated, the convergence panel reaching 2 of 2, a run submitted
// and cancelled, the audit chain verified, another tenant's run not found.
// axe-core on every view (no serious or critical violation), no CSP
// violation, screenshots of every view at 1280x800 and 390x844.
import { chromium } from 'playwright-core';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const [url, admin, otherRun, shots, exe] = process.argv.slice(2);
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
let failed = 0;
const ok = (cond, what) => {
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${what}`);
  if (!cond) failed++;
};

const browser = await chromium.launch({ executablePath: exe, args: ['--no-sandbox', '--disable-gpu'] });
const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
const page = await ctx.newPage();
const cspViolations = [];
page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text()); });
page.on('pageerror', (e) => cspViolations.push('page error: ' + e.message));

async function audit(name) {
  await page.waitForTimeout(150);
  await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });
  await page.evaluate(axeSource);
  const r = await page.evaluate(async () => {
    const res = await window.axe.run(document, { resultTypes: ['violations'] });
    return res.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.length} nodes, e.g. ${v.nodes[0].target}`);
  });
  ok(r.length === 0, `axe ${name}: no serious or critical violation${r.length ? ': ' + r.join('; ') : ''}`);
}
const status = () => page.locator('#status').textContent();
async function signIn(key) {
  await page.goto(`${url}/console/`);
  await page.waitForSelector('#key');
  // keyboard only: the key field has the focus, Enter submits
  await page.keyboard.type(key);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#nav:not([hidden])');
}
async function signOut() {
  await page.click('#logout');
  await page.waitForSelector('#key');
}
async function newKey(name) {
  const before = (await page.locator('#key-secret').textContent()) || '';
  await page.fill('#key-name', name);
  await page.selectOption('#key-scope', 'operator');
  await page.click('text=Create key');
  // the new secret, not the previous key's still on the page
  await page.waitForFunction((b) => { const t = document.querySelector('#key-secret').textContent; return t.includes('awk_') && t !== b; }, before);
  return (await page.locator('#key-secret').textContent()).replace(/^.*: /, '').trim();
}

// a step that times out: say where the page was (its status line, its
// main text, a screenshot) rather than only which selector never came
try {
  // sign in (keyboard), the sign-in view checked first
  await page.goto(`${url}/console/`);
  await page.waitForSelector('#key');
  await audit('01-sign-in');
  ok(await page.evaluate(() => document.activeElement && document.activeElement.id === 'key'), 'the key field has the focus');
  await signIn(admin);
  ok(!page.url().includes('awk_'), 'the key is not in the URL');
  ok(await page.evaluate(() => localStorage.length === 0), 'nothing in localStorage');

  // projects and keys: create the project, select it, two operator keys
  await page.fill('#new-project', 'webcon');
  await page.click('text=Create project');
  await page.waitForFunction(() => [...document.querySelectorAll('#project option')].some((o) => o.value === 'webcon'));
  await page.selectOption('#project', 'webcon');
  await page.waitForSelector('text=Keys of webcon');
  const op1 = await newKey('op1');
  const op2 = await newKey('op2');
  ok(op1.startsWith('awk_') && op2.startsWith('awk_') && op1 !== op2, 'two keys created in the browser');
  await audit('02-projects-keys');

  // contracts: op1 drafts and publishes, op2 approves, op1 activates
  await signOut();
  await signIn(op1);
  await page.goto(`${url}/console/#/contracts/policy_routing/default`);
  await page.waitForSelector('#draft-body');
  await page.fill('#draft-body', JSON.stringify({ routes: [{ name: 'main', match: { task: 'chat' }, candidates: [{ provider: 'ollama', model: 'llama3' }] }] }));
  await page.click('text=Create draft');
  await page.waitForSelector('button:text("publish")');
  await page.click('button:text("publish")');
  await page.waitForSelector('button:text("approve")');
  await signOut();
  await signIn(op2);
  await page.goto(`${url}/console/#/contracts/policy_routing/default`);
  await page.waitForSelector('button:text("approve")');
  await page.click('button:text("approve")');
  await page.waitForFunction(() => /approve done/.test(document.querySelector('#status').textContent));
  await signOut();
  await signIn(op1);
  await page.goto(`${url}/console/#/contracts/policy_routing/default`);
  await page.waitForSelector('button:text("activate")');
  const t0 = Date.now();
  await page.click('button:text("activate")');
  await page.waitForFunction(() => /activate done/.test(document.querySelector('#status').textContent));
  let conv = '';
  try {
    await page.waitForFunction(() => { const s = document.querySelector('#conv-summary'); return s && /^2 of 2 processes/.test(s.textContent) && s.className === 'ok'; }, null, { timeout: 20000 });
    conv = await page.locator('#conv-summary').textContent();
  } catch (e) { conv = String(await page.locator('#convergence').textContent()); }
  ok(/^2 of 2 processes serve .* \(100%\)/.test(conv), `convergence reached 100% with two watch processes in ${Date.now() - t0} ms: ${conv}`);
  // a second draft, so the side-by-side diff has two revisions to compare
  await page.fill('#draft-body', JSON.stringify({ routes: [{ name: 'main', match: { task: 'chat' }, candidates: [{ provider: 'ollama', model: 'qwen' }] }] }));
  await page.click('text=Create draft');
  await page.waitForSelector('#diff-a');
  await page.click('text=Compare');
  await page.waitForSelector('text=Side by side');
  ok((await page.locator('table').last().textContent()).includes('replace'), 'the diff shows the replaced model');
  // roll back: the second revision activated, the first one comes back in one click (op1),
  // and op2's approval completes the rollback quorum and activates it
  await page.click('button:text("publish")');
  await page.waitForSelector('button:text("approve")');
  await signOut();
  await signIn(op2);
  await page.goto(`${url}/console/#/contracts/policy_routing/default`);
  await page.click('button:text("approve")');
  await page.waitForFunction(() => /approve done/.test(document.querySelector('#status').textContent));
  await signOut();
  await signIn(op1);
  await page.goto(`${url}/console/#/contracts/policy_routing/default`);
  await page.click('button:text("activate")');
  await page.waitForFunction(() => /activate done/.test(document.querySelector('#status').textContent));
  await page.waitForSelector('button:text("Roll back")');
  await page.click('button:text("Roll back")');
  await page.waitForFunction(() => /published, waiting for 1 approval/.test(document.querySelector('#status').textContent));
  await signOut();
  await signIn(op2);
  await page.goto(`${url}/console/#/contracts/policy_routing/default`);
  await page.click('button:text("approve")');
  await page.waitForFunction(() => /Rollback activated/.test(document.querySelector('#status').textContent));
  await page.waitForSelector('text=/^active \\(rollback to/');
  ok(true, 'a superseded revision rolled back from the console: requested by op1, activated by op2\'s approval');
  await signOut();
  await signIn(op1);
  await page.goto(`${url}/console/#/contracts/policy_routing/default`);
  await page.waitForSelector('#draft-body');
  await audit('03-contracts');

  // runs: submit a long run, see it in its view, cancel it
  await page.goto(`${url}/console/#/runs`);
  await page.waitForSelector('#run-workflow');
  await page.fill('#run-workflow', JSON.stringify([{ kind: 'sleep', args: { ms: 60000 } }]));
  await page.click('text=Submit run');
  await page.waitForSelector('#run-trace-id');
  ok(/^[0-9a-f]{32}$/.test((await page.locator('#run-trace-id').textContent()).trim()), 'the run view shows its trace id');
  await page.click('text=Cancel run');
  await page.waitForFunction(() => document.querySelector('#run-state') && document.querySelector('#run-state').textContent === 'cancelled');
  ok(true, 'the run was cancelled from the console');
  await audit('04-run-detail');
  await page.goto(`${url}/console/#/runs`);
  await page.waitForSelector('text=Runs of webcon');
  await audit('05-runs');

  // another tenant's run: not found, exactly like a missing one
  await page.goto(`${url}/console/#/runs/${otherRun}`);
  await page.waitForSelector('#run-missing');
  ok((await page.locator('#run-missing').textContent()).includes('E-RUN-001'), "another tenant's run answers not found (E-RUN-001)");

  // audit: verify the chain
  await page.goto(`${url}/console/#/audit`);
  await page.click('text=Verify the chain');
  await page.waitForFunction(() => /Chain intact: \d+ records/.test(document.querySelector('#verify-result').textContent));
  ok(true, 'audit chain verified: ' + await page.locator('#verify-result').textContent());
  await audit('06-audit');

  for (const [v, name] of [['ops', '07-relay-metrics'], ['budget', '08-budget'], ['tools', '09-mcp-tools']]) {
    await page.goto(`${url}/console/#/${v}`);
    await page.waitForSelector('main h1');
    await page.waitForTimeout(300);
    await audit(name);
  }

  // a phone width: every view still readable (nothing wider than the screen)
  await page.setViewportSize({ width: 390, height: 844 });
  for (const v of ['projects', 'contracts/policy_routing/default', 'runs', 'audit']) {
    await page.goto(`${url}/console/#/${v}`);
    await page.waitForSelector('main h1');
    await page.waitForTimeout(300);
    const wide = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    ok(wide <= 1, `phone width: ${v} fits (overflow ${wide}px)`);
    await page.screenshot({ path: `${shots}/phone-${v.split('/')[0]}.png`, fullPage: true });
  }
} catch (e) {
  ok(false, `${e.message.split('\n')[0]}\n  status: ${await status().catch(() => '?')}\n  url: ${page.url()}\n  main: ${(await page.locator('main').textContent().catch(() => '?')).slice(0, 600)}`);
  await page.screenshot({ path: `${shots}/failure.png`, fullPage: true }).catch(() => {});
}
ok(cspViolations.length === 0, `no CSP violation or page error${cspViolations.length ? ': ' + cspViolations.join('; ') : ''}`);
const sess = await page.evaluate(() => Object.keys(sessionStorage));
ok(sess.includes('awooop.key'), 'the key is kept in sessionStorage');
await browser.close();
console.log(failed ? `console: ${failed} failed` : 'console: all passed');
process.exit(failed ? 1 : 0);
