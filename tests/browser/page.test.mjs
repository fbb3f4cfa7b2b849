// Browser test of the agentbus web page (src/web) against a running
// `agentbus serve` whose model is the scripted one. Run through ./run.sh,
// which installs playwright-core outside the source tree and sets NODE_PATH.
//
// Environment: AGENTBUS_URL, AGENTBUS_TOKEN, EXPECTED_REPLY (the scripted
// reply to the first message), SLOW_PROMPT (a message whose reply streams
// slowly), FIRST_PROMPT (default "hello"), EXPECTED_THINKING (the model's
// thinking before that reply, checked when set), SCREENSHOT (default
// /tmp/agentbus-page.png), CHROMIUM (default /usr/bin/chromium),
// AGENTBUS_TEST_TIMEOUT_MS (each wait, default 30000).
//
// Approvals (checked when APPROVAL_PROMPT is set; the session is switched
// to `default` mode with /mode first): APPROVAL_PROMPT (a message whose
// scripted reply calls `bash` with APPROVAL_COMMAND, then answers with the
// tool's result), EDIT_PROMPT (one whose reply calls `edit_file` replacing
// EDIT_OLD with EDIT_NEW in an existing file).
//
// Every wait is Playwright's own (locator.waitFor / waitForFunction): no
// fixed sleeps. Exits 1 at the first failed check, with a screenshot.

import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// ES module imports ignore NODE_PATH; require() honours it.
const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');

const env = process.env;
const BASE = (env.AGENTBUS_URL || '').replace(/\/+$/, '');
const TOKEN = env.AGENTBUS_TOKEN || '';
const EXPECTED_REPLY = env.EXPECTED_REPLY || '';
const SLOW_PROMPT = env.SLOW_PROMPT || '';
const FIRST_PROMPT = env.FIRST_PROMPT || 'hello';
const EXPECTED_THINKING = env.EXPECTED_THINKING || '';
const SCREENSHOT = env.SCREENSHOT || '/tmp/agentbus-page.png';
const CHROMIUM = env.CHROMIUM || '/usr/bin/chromium';
const TIMEOUT = Number(env.AGENTBUS_TEST_TIMEOUT_MS || 30000);
const APPROVAL_PROMPT = env.APPROVAL_PROMPT || '';
const APPROVAL_COMMAND = env.APPROVAL_COMMAND || '';
const EDIT_PROMPT = env.EDIT_PROMPT || '';
const EDIT_OLD = env.EDIT_OLD || '';
const EDIT_NEW = env.EDIT_NEW || '';
if (APPROVAL_PROMPT && !(APPROVAL_COMMAND && EDIT_PROMPT && EDIT_OLD && EDIT_NEW)) {
  console.error('browser test: APPROVAL_PROMPT needs APPROVAL_COMMAND, EDIT_PROMPT, EDIT_OLD and EDIT_NEW too');
  process.exit(2);
}

for (const [name, value] of Object.entries({ AGENTBUS_URL: BASE, AGENTBUS_TOKEN: TOKEN, EXPECTED_REPLY, SLOW_PROMPT })) {
  if (!value) {
    console.error(`browser test: ${name} is not set`);
    process.exit(2);
  }
}

const byId = (page, id) => page.locator(`[data-testid="${id}"]`);
let passed = 0;

/** Run one named check; on failure: screenshot, message, exit 1. */
async function check(name, page, fn) {
  try {
    await fn();
    passed += 1;
    console.log(`ok ${passed} - ${name}`);
  } catch (error) {
    const message = String(error && error.message ? error.message : error).replace(/\x1b\[[0-9;]*m/g, '');
    console.error(`not ok - ${name}`);
    console.error(`  ${message.split('\n').join('\n  ')}`);
    if (page) {
      console.error(`  the page shows:\n${await pageText(page)}`);
      await page.screenshot({ path: SCREENSHOT, fullPage: true }).catch(() => {});
      console.error(`  screenshot of the failure: ${SCREENSHOT}`);
    }
    throw new Failed();
  }
}

class Failed extends Error {}

/** What the page shows, for a failure message: banner, buttons, the last events. */
async function pageText(page) {
  return page
    .evaluate(() => {
      const text = (el) => (el ? el.textContent.replace(/\s+/g, ' ').trim() : '');
      const button = (id) => {
        const el = document.querySelector(`[data-testid="${id}"]`);
        return el ? `${id} ${el.disabled ? 'disabled' : 'enabled'}` : `${id} missing`;
      };
      const lines = [];
      const missing = document.getElementById('token-missing');
      if (missing && !missing.hidden) lines.push(`token message: ${text(missing)}`);
      const banner = document.getElementById('banner');
      if (banner && !banner.hidden) lines.push(`banner: ${text(banner)}`);
      lines.push(`${button('input')}, ${button('send')}, ${button('interrupt')}`);
      lines.push(`session connection: ${text(document.getElementById('session-conn')) || 'ok'}`);
      const mode = document.getElementById('session-mode');
      if (mode && !mode.hidden) lines.push(`header: ${text(mode)}`);
      const events = [...document.querySelectorAll('#conversation > [data-testid]')].slice(-15);
      for (const el of events) lines.push(`[${el.dataset.testid}] ${text(el).slice(0, 200)}`);
      return lines.map((l) => `    ${l}`).join('\n');
    })
    .catch((e) => `    (could not read the page: ${e.message})`);
}

/** Fail unless `cond`, saying what was found. */
function expect(cond, message) {
  if (!cond) throw new Error(message);
}

async function main() {
  const profile = mkdtempSync(join(tmpdir(), 'agentbus-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
    viewport: { width: 1280, height: 800 },
  });
  context.setDefaultTimeout(TIMEOUT);
  const page = context.pages()[0] || (await context.newPage());

  // Anything the page's own JavaScript throws fails the test at the end.
  const pageErrors = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') console.log(`  (page console: ${message.text()})`);
  });

  try {
    await check('the page loads with the token and hides it from the address bar', page, async () => {
      await page.goto(`${BASE}/?token=${encodeURIComponent(TOKEN)}`);
      await byId(page, 'new-session').waitFor({ state: 'visible' });
      expect(!page.url().includes(TOKEN), `the token is still in the address: ${page.url()}`);
    });

    let sessionId;
    await check('New session creates a session, lists it and selects it', page, async () => {
      await byId(page, 'new-session').click();
      const selected = page.locator('[data-testid="session-item"][data-selected="true"]');
      await selected.waitFor();
      sessionId = await selected.getAttribute('data-session-id');
      expect(sessionId, 'the selected session has no data-session-id');
      await page.locator('[data-testid="input"]:enabled').waitFor();
    });

    await check(`Enter sends "${FIRST_PROMPT}" and the user message is shown`, page, async () => {
      await byId(page, 'input').fill(FIRST_PROMPT);
      await byId(page, 'input').press('Enter');
      await byId(page, 'message-user').filter({ hasText: FIRST_PROMPT }).waitFor();
      expect((await byId(page, 'input').inputValue()) === '', 'the input box was not emptied');
    });

    await check(`the streamed reply "${EXPECTED_REPLY}" appears`, page, async () => {
      await byId(page, 'message-assistant').filter({ hasText: EXPECTED_REPLY }).first().waitFor();
    });

    if (EXPECTED_THINKING) {
      await check('the thinking shows apart, before the reply, and is not the reply', page, async () => {
        const thinking = byId(page, 'thinking').filter({ hasText: EXPECTED_THINKING }).first();
        await thinking.waitFor();
        const follows = await thinking.evaluate((node) => {
          const reply = [...document.querySelectorAll('[data-testid="message-assistant"]')].pop();
          return !!reply && !!(node.compareDocumentPosition(reply) & Node.DOCUMENT_POSITION_FOLLOWING);
        });
        expect(follows, 'the reply does not follow the thinking');
        const inReply = await byId(page, 'message-assistant').filter({ hasText: EXPECTED_THINKING }).count();
        expect(inReply === 0, 'the thinking is shown as the reply');
      });
    }

    await check('the turn ends with an end_turn result line and Interrupt disabled', page, async () => {
      const line = byId(page, 'result-line').first();
      await line.waitFor();
      const reason = await line.getAttribute('data-stop-reason');
      expect(reason === 'end_turn', `the first result line says ${JSON.stringify(await line.textContent())}`);
      await page.locator('[data-testid="interrupt"]:disabled').waitFor({ state: 'attached' });
    });

    await check('the session list shows the title of the first message', page, async () => {
      await page.locator(`[data-testid="session-item"][data-session-id="${sessionId}"]`).filter({ hasText: FIRST_PROMPT }).waitFor();
    });

    await check('a slow reply streams and Interrupt is enabled while it runs', page, async () => {
      await byId(page, 'input').fill(SLOW_PROMPT);
      await byId(page, 'send').click();
      await page.locator('[data-testid="interrupt"]:enabled').waitFor();
      await page.locator('[data-testid="message-assistant"][data-streaming="true"]').filter({ hasText: /\S/ }).first().waitFor();
    });

    await check('Interrupt ends the turn with a cancelled result line', page, async () => {
      await byId(page, 'interrupt').click();
      const line = byId(page, 'result-line').nth(1);
      await line.waitFor();
      const text = await line.textContent();
      expect(text.includes('cancelled'), `the second result line says ${JSON.stringify(text)}`);
      expect((await line.getAttribute('data-stop-reason')) === 'cancelled', 'data-stop-reason is not cancelled');
      await page.locator('[data-testid="interrupt"]:disabled').waitFor({ state: 'attached' });
    });

    await check('the session usage counts both turns', page, async () => {
      await byId(page, 'usage').filter({ hasText: 'over 2 turns' }).waitFor();
    });

    await check('a reload replays the stored conversation once (token from sessionStorage, session from #)', page, async () => {
      await page.reload();
      await page.locator(`[data-testid="session-item"][data-session-id="${sessionId}"][data-selected="true"]`).waitFor();
      await byId(page, 'result-line').nth(1).waitFor();
      const users = await byId(page, 'message-user').count();
      const results = await byId(page, 'result-line').count();
      expect(users === 2 && results === 2, `after the reload: ${users} user messages and ${results} result lines, expected 2 and 2`);
      const replies = await byId(page, 'message-assistant').filter({ hasText: EXPECTED_REPLY }).count();
      expect(replies === 1, `after the reload the reply is shown ${replies} times`);
    });

    if (APPROVAL_PROMPT) {
      await check('the header shows the permission mode, and /mode default changes it', page, async () => {
        await page.locator('[data-testid="permission-mode"][data-mode="bypass"]').waitFor();
        await byId(page, 'input').fill('/mode default');
        await byId(page, 'send').click();
        await page.locator('[data-testid="permission-mode"][data-mode="default"]').waitFor();
        await page.locator('[data-testid="notice"][data-subtype="mode"]').waitFor();
        const badge = await byId(page, 'permission-mode').textContent();
        expect(badge.includes('default'), `the header says ${JSON.stringify(badge)}`);
      });

      const pending = page.locator('[data-testid="approval"][data-state="pending"]');
      await check('a command that asks shows an approval card under its call with the command and the choices', page, async () => {
        await byId(page, 'input').fill(APPROVAL_PROMPT);
        await byId(page, 'send').click();
        await pending.waitFor();
        expect((await pending.getAttribute('data-tool')) === 'bash', 'the card is not for bash');
        const command = await pending.locator('[data-testid="approval-command"]').textContent();
        expect(command === APPROVAL_COMMAND, `the card shows the command ${JSON.stringify(command)}`);
        const reason = await pending.locator('[data-testid="approval-reason"]').textContent();
        expect(reason.trim() !== '', 'the card gives no reason');
        for (const [id, label] of [['approval-allow-once', 'Allow once'], ['approval-allow-always', 'Always allow'], ['approval-reject', 'Reject']]) {
          const text = await pending.locator(`[data-testid="${id}"]:enabled`).textContent();
          expect(text.startsWith(label), `the ${id} button says ${JSON.stringify(text)}`);
        }
        // Right under the tool call it asks about.
        const callId = await pending.getAttribute('data-call-id');
        const above = await pending.evaluate((card) => card.previousElementSibling && card.previousElementSibling.dataset.callId);
        expect(above === callId, `the card follows ${JSON.stringify(above)}, not the call ${callId}`);
      });

      await check('Reject with a message closes the card and the model reads the message', page, async () => {
        const card = page.locator('[data-testid="approval"]').last();
        const callId = await card.getAttribute('data-call-id');
        const message = 'not on this machine, please';
        await card.locator('[data-testid="approval-message"]').fill(message);
        await card.locator('[data-testid="approval-reject"]').click();
        await page.locator('[data-testid="approval"][data-state="resolved"][data-outcome="rejected"]').filter({ hasText: `Rejected: ${message}` }).waitFor();
        expect((await card.locator('button').count()) === 0, 'the closed card still has buttons');
        await page.locator(`[data-testid="tool-result"][data-call-id="${callId}"][data-error="true"]`).filter({ hasText: message }).waitFor();
        await byId(page, 'message-assistant').filter({ hasText: message }).waitFor();
        await page.locator('[data-testid="interrupt"]:disabled').waitFor({ state: 'attached' });
      });

      let requestId;
      await check('an edit that asks shows its diff, and is pending again after a reload', page, async () => {
        await byId(page, 'input').fill(EDIT_PROMPT);
        await byId(page, 'send').click();
        await pending.waitFor();
        requestId = await pending.getAttribute('data-request-id');
        expect((await pending.getAttribute('data-tool')) === 'edit_file', 'the card is not for edit_file');
        const removed = await pending.locator('.diff-del').allTextContents();
        const added = await pending.locator('.diff-add').allTextContents();
        expect(removed.join('').includes(`- ${EDIT_OLD}`) && added.join('').includes(`+ ${EDIT_NEW}`),
          `the diff shows ${JSON.stringify(removed)} -> ${JSON.stringify(added)}`);
        await page.reload();
        const again = page.locator(`[data-testid="approval"][data-request-id="${requestId}"]`);
        await again.locator('[data-testid="approval-allow-once"]:enabled').waitFor();
        expect((await again.getAttribute('data-state')) === 'pending', 'after the reload the card is not pending');
        expect((await again.count()) === 1, 'after the reload the card is shown more than once');
        // The rejected one stays closed.
        await page.locator('[data-testid="approval"][data-outcome="rejected"]').waitFor();
      });

      await check('Allow once closes the card, and the edit runs', page, async () => {
        const card = page.locator(`[data-testid="approval"][data-request-id="${requestId}"]`);
        const callId = await card.getAttribute('data-call-id');
        await card.locator('[data-testid="approval-allow-once"]').click();
        await page.locator(`[data-testid="approval"][data-request-id="${requestId}"][data-outcome="allowed_once"]`).filter({ hasText: 'Allowed once' }).waitFor();
        await page.locator(`[data-testid="tool-result"][data-call-id="${callId}"][data-error="false"]`).waitFor();
        await page.locator('[data-testid="interrupt"]:disabled').waitFor({ state: 'attached' });
        expect((await pending.count()) === 0, 'a card is still pending');
      });
    }

    await check('a long session list shows 100 at a time and Show more the rest', page, async () => {
      // More than a page of sessions.
      for (let i = 0; i < 101; i++) {
        const answer = await fetch(`${BASE}/v1/sessions`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ title: `bulk ${i}` }),
        });
        expect(answer.status === 201, `creating a session answered ${answer.status}`);
      }
      await page.reload();
      await byId(page, 'more-sessions').waitFor();
      const shown = await byId(page, 'session-item').count();
      expect(shown === 100, `the list shows ${shown} sessions, expected 100`);
      await byId(page, 'more-sessions').click();
      await page.waitForFunction(() => document.querySelectorAll('[data-testid="session-item"]').length > 100);
      const all = await byId(page, 'session-item').count();
      const listed = (await (await fetch(`${BASE}/v1/sessions`, { headers: { Authorization: `Bearer ${TOKEN}` } })).json()).sessions.length;
      expect(all === listed, `after Show more the list shows ${all} of ${listed} sessions`);
      expect((await byId(page, 'more-sessions').count()) === 0, 'Show more is still there');
    });

    await check('the page threw no JavaScript errors', page, async () => {
      expect(pageErrors.length === 0, `errors: ${pageErrors.join(' | ')}`);
    });

    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    console.log(`screenshot: ${SCREENSHOT}`);
    console.log(`${passed} passed, 0 failed`);
  } finally {
    await context.close().catch(() => {});
    rmSync(profile, { recursive: true, force: true });
  }
}

main().catch((error) => {
  if (!(error instanceof Failed)) console.error(`browser test: ${error && error.stack ? error.stack : error}`);
  console.log(`${passed} passed, 1 failed`);
  process.exit(1);
});
