// Browser test of the agentbus web page (src/web) against a running
// `agentbus serve` whose model is the scripted one. Run through ./run.sh,
// which installs playwright-core outside the source tree and sets NODE_PATH.
//
// Environment: AGENTBUS_URL, AGENTBUS_TOKEN, EXPECTED_REPLY (the scripted
// reply to the first message), SLOW_PROMPT (a message whose reply streams
// slowly), FIRST_PROMPT (default "hello"), SCREENSHOT (default
// /tmp/agentbus-page.png), CHROMIUM (default /usr/bin/chromium),
// AGENTBUS_TEST_TIMEOUT_MS (each wait, default 30000).
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
const SCREENSHOT = env.SCREENSHOT || '/tmp/agentbus-page.png';
const CHROMIUM = env.CHROMIUM || '/usr/bin/chromium';
const TIMEOUT = Number(env.AGENTBUS_TEST_TIMEOUT_MS || 30000);

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
      const events = [...document.querySelectorAll('#conversation [data-testid]')].slice(-15);
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
