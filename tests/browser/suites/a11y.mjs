// PAGE_SUITE=a11y (tests/all/serve.rs, tests/fixtures/scripts/web_a11y.toml):
// the page's accessibility, its phone width, and two bugs a server restart
// showed.
//
// * axe-core (the version in ../package.json, installed with
//   playwright-core outside the tree) finds no violation, contrast
//   included, on: the session list with sessions and a conversation with a
//   reply, a tool call and a pending approval (1280 px, light), the same
//   in dark mode, and the page at 390 px on a phone. It is put into the
//   page with page.evaluate of the file's text: the page's CSP (no inline
//   script) refuses page.addScriptTag, and evaluate runs through the
//   DevTools protocol, which the CSP does not govern, so the page keeps
//   its real CSP during the audit.
// * aria-live only on small status areas (never the conversation); a skip
//   link to the input; landmarks (header, nav of the sessions, main, the
//   composer as a labelled form); the focus back in the input after a
//   send, a switch of session and a reload.
// * One Send/Stop button: Send while idle, Stop while a turn runs.
// * At 390x844 (isMobile, hasTouch): every input, textarea and select at
//   16 px or more, every visible button at least 32x32 px, a one-line
//   status line.
// * The server restarts (the Rust test stops it and starts it on the same
//   port and data dir when this suite asks on stdout; it answers on
//   stdin): a "not reachable" banner shown meanwhile goes once the page
//   has reconnected; viewing a stored session after the restart adds no
//   event to it and leaves its `updated_at` and place in the list.
//
// Screenshots: a11y-light, a11y-dark, a11y-phone.

import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const require = createRequire(import.meta.url);

/** Ask the Rust test to do something to the server; wait for its answer. */
function restarter() {
  const reader = createInterface({ input: process.stdin });
  const lines = reader[Symbol.asyncIterator]();
  const ask = async (request, answer) => {
    console.log(`a11y: ${request}`);
    const { value, done } = await lines.next();
    if (done || value.trim() !== answer) throw new Error(`asked to ${request}, the test answered ${JSON.stringify(done ? null : value)}`);
  };
  // Stdin kept open would keep node running after the last check.
  ask.close = () => reader.close();
  return ask;
}

export async function run(page, ctx) {
  const ask = restarter();
  try {
    await checks(page, ctx, ask);
  } finally {
    ask.close();
  }
}

async function checks(page, ctx, ask) {
  const { check, byId, shot, expect, until, apiGet, BASE, TOKEN, launchBrowser } = ctx;
  const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  const selected = page.locator('[data-testid="session-item"][data-selected="true"]');
  const idle = () => page.locator('[data-testid="interrupt"]:disabled').waitFor({ state: 'attached' });
  const focusedId = (p) => p.evaluate(() => (document.activeElement ? document.activeElement.id : null));
  /** Wait until the input box has the focus. */
  const inputFocused = (p) => p.waitForFunction(() => document.activeElement && document.activeElement.id === 'input');

  /** axe-core on the page as it is now: fails on any violation; prints how many rules ran. */
  async function audit(p, what) {
    if (!(await p.evaluate(() => typeof window.axe === 'object'))) await p.evaluate(axeSource);
    const result = await p.evaluate(async () => {
      const r = await window.axe.run(document, { resultTypes: ['violations'] });
      return {
        rules: r.passes.length + r.violations.length + r.incomplete.length + r.inapplicable.length,
        applied: r.passes.length + r.violations.length,
        violations: r.violations.map((v) => `${v.id} (${v.impact}): ${v.help}\n    ` +
          v.nodes.slice(0, 5).map((n) => `${n.target.join(' ')}: ${n.failureSummary.replace(/\s+/g, ' ')}`).join('\n    ')),
      };
    });
    console.log(`  axe-core on ${what}: ${result.rules} rules checked (${result.applied} applied), ${result.violations.length} violations`);
    expect(result.rules > 50, `axe-core checked only ${result.rules} rules`);
    expect(result.violations.length === 0, `axe-core on ${what}:\n  ${result.violations.join('\n  ')}`);
  }

  /** Send `text` from the input box with Enter and wait for its turn to end. */
  async function say(text, reply) {
    await byId(page, 'input').fill(text);
    await byId(page, 'input').press('Enter');
    if (reply) await byId(page, 'message-assistant').filter({ hasText: reply }).waitFor();
    await idle();
  }

  let first;
  await check('a11y: the page loads; focus is in the input after a click on Send', page, async () => {
    await page.goto(`${BASE}/?token=${encodeURIComponent(TOKEN)}`);
    await byId(page, 'new-session').click();
    await selected.waitFor();
    first = await selected.getAttribute('data-session-id');
    await byId(page, 'input').fill('hello');
    await byId(page, 'send').click();
    await inputFocused(page);
    await byId(page, 'message-assistant').filter({ hasText: 'Hello from the scripted model.' }).waitFor();
    await idle();
    expect((await focusedId(page)) === 'input', `after the reply the focus is on #${await focusedId(page)}`);
    // The live status (read out, not shown) said so.
    await byId(page, 'live-status').filter({ hasText: 'Reply finished' }).waitFor({ state: 'attached' });
  });

  let second;
  await check('a11y: a second session with a reply, a tool call and a pending approval', page, async () => {
    await byId(page, 'new-session').click();
    await page.locator(`[data-testid="session-item"][data-selected="true"]:not([data-session-id="${first}"])`).waitFor();
    second = await selected.getAttribute('data-session-id');
    await byId(page, 'input').fill('/mode default');
    await byId(page, 'input').press('Enter');
    await page.locator('[data-testid="permission-mode"][data-mode="default"]').waitFor();
    await say('hello', 'Hello again from the scripted model.');
    await byId(page, 'input').fill('run a command');
    await byId(page, 'input').press('Enter');
    await page.locator('[data-testid="approval"][data-state="pending"]').waitFor();
    await page.locator('[data-testid="session-item"]').nth(1).waitFor();
  });

  await check('a11y: landmarks, a skip link, a labelled form; aria-live only on small status areas', page, async () => {
    const found = await page.evaluate(() => {
      const one = (sel) => document.querySelectorAll(sel).length;
      const composer = document.getElementById('composer');
      const live = [...document.querySelectorAll('[aria-live], [role="status"], [role="alert"], [role="log"]')];
      const conv = document.getElementById('conversation');
      return {
        header: one('header'),
        nav: one('nav'),
        navHasList: !!document.querySelector('nav #session-list'),
        main: one('main'),
        form: composer.tagName === 'FORM' ? composer.getAttribute('aria-label') || '' : '',
        inputLabel: document.getElementById('input').labels.length,
        skip: (document.querySelector('[data-testid="skip-link"]') || {}).textContent || '',
        firstTab: (() => {
          const all = [...document.querySelectorAll('a[href], button, textarea, input, select, [tabindex]')];
          return all.length ? all[0].dataset.testid : null;
        })(),
        liveOnConversation: live.some((el) => el === conv || el.contains(conv)),
        liveBig: live.filter((el) => el.querySelectorAll('*').length > 10).map((el) => el.id),
        liveIds: live.map((el) => el.id),
      };
    });
    expect(found.header >= 1 && found.nav === 1 && found.navHasList && found.main === 1, `landmarks: ${JSON.stringify(found)}`);
    expect(found.form !== '', 'the composer is not a form with an aria-label');
    expect(found.inputLabel === 1, 'the input box has no label');
    expect(/skip to conversation/i.test(found.skip), `the skip link says ${JSON.stringify(found.skip)}`);
    expect(found.firstTab === 'skip-link', `the first focusable element is ${found.firstTab}`);
    expect(!found.liveOnConversation, `a live region is on or in the conversation: ${found.liveIds}`);
    expect(found.liveBig.length === 0, `live regions that are not small: ${found.liveBig}`);
    expect(found.liveIds.includes('live-status'), `no status region: ${found.liveIds}`);
  });

  await check('a11y: the skip link (first in the tab order) shows when focused and puts the focus in the input', page, async () => {
    const skip = byId(page, 'skip-link');
    await byId(page, 'new-session').focus();
    await page.keyboard.press('Shift+Tab');
    expect((await focusedId(page)) === 'skip-link', `Shift+Tab from New session went to #${await focusedId(page)}`);
    const box = await skip.boundingBox();
    expect(box && box.y >= 0 && box.height > 0, `the focused skip link is not on screen: ${JSON.stringify(box)}`);
    await page.keyboard.press('Enter');
    await inputFocused(page);
    expect(!page.url().includes('#input'), `the skip link changed the address: ${page.url()}`);
  });

  await check('a11y: axe-core finds nothing on the list, a reply, a tool call and an approval (1280 px, light)', page, async () => {
    await audit(page, 'the session list and a conversation with a reply, a tool call and an approval (light)');
    await shot(page, 'a11y-light');
  });

  await check('a11y: axe-core finds nothing in dark mode, and the Send button reads at 4.5:1', page, async () => {
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.waitForFunction(() => getComputedStyle(document.body).backgroundColor !== 'rgb(255, 255, 255)');
    await audit(page, 'the same in dark mode');
    await shot(page, 'a11y-dark');
    await page.emulateMedia({ colorScheme: 'light' });
  });

  await check('a11y: the approval allowed, the turn ends with its answer', page, async () => {
    await byId(page, 'approval-allow-once').click();
    await byId(page, 'message-assistant').filter({ hasText: 'The command ran.' }).waitFor();
    await idle();
  });

  await check('a11y: switching sessions puts the focus in the input', page, async () => {
    await page.locator(`[data-testid="session-item"][data-session-id="${first}"] .session-open`).click();
    await page.locator(`[data-testid="session-item"][data-selected="true"][data-session-id="${first}"]`).waitFor();
    await inputFocused(page);
  });

  await check('a11y: after a reload with a session open the focus is in the input', page, async () => {
    await page.reload();
    await byId(page, 'message-assistant').filter({ hasText: 'Hello from the scripted model.' }).waitFor();
    await inputFocused(page);
  });

  /** Which of Send and Stop show, with their labels. */
  const shownButtons = (p) => p.evaluate(() => ['send', 'interrupt']
    .map((id) => document.getElementById(id))
    .filter((b) => b.checkVisibility())
    .map((b) => b.textContent.trim()));

  await check('a11y: one Send/Stop button: Send while idle, Stop while a turn runs; Stop ends it and the focus is back in the input', page, async () => {
    expect(JSON.stringify(await shownButtons(page)) === '["Send"]', `idle: ${JSON.stringify(await shownButtons(page))}`);
    await byId(page, 'input').fill('stall please');
    await byId(page, 'input').press('Enter');
    await page.locator('[data-testid="interrupt"]:enabled').waitFor();
    await page.locator('[data-testid="message-assistant"][data-streaming="true"]').filter({ hasText: /\S/ }).first().waitFor();
    expect(JSON.stringify(await shownButtons(page)) === '["Stop"]', `running: ${JSON.stringify(await shownButtons(page))}`);
    await byId(page, 'interrupt').click();
    await page.locator('[data-testid="result-line"][data-stop-reason="cancelled"]').waitFor();
    await idle();
    expect(JSON.stringify(await shownButtons(page)) === '["Send"]', `after the stop: ${JSON.stringify(await shownButtons(page))}`);
    await inputFocused(page);
  });

  // ---- The phone ----
  const browser = await launchBrowser();
  try {
    const phone = await browser.newContext({
      viewport: { width: 390, height: 844 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
    });
    const mobile = await phone.newPage();
    const errors = [];
    mobile.on('pageerror', (error) => errors.push(error.message));

    /** Inputs under 16 px, buttons under 32x32 px, as the page measures them. */
    const measure = () => mobile.evaluate(() => {
      const small = [];
      for (const field of document.querySelectorAll('input, textarea, select')) {
        const size = parseFloat(getComputedStyle(field).fontSize);
        if (size < 16) small.push(`${field.id || field.className || field.tagName} ${size}px`);
      }
      const tiny = [];
      let buttons = 0;
      for (const button of document.querySelectorAll('button')) {
        if (!button.checkVisibility({ visibilityProperty: true, opacityProperty: true })) continue;
        const r = button.getBoundingClientRect();
        if (r.width === 0 && r.height === 0) continue;
        buttons += 1;
        if (r.width < 32 || r.height < 32) tiny.push(`${button.dataset.testid || button.id || button.textContent.trim()} ${r.width.toFixed(1)}x${r.height.toFixed(1)}`);
      }
      return { small, tiny, buttons };
    });

    await check('a11y phone (390x844, touch): inputs at 16 px or more, every visible button at least 32x32 px', mobile, async () => {
      await mobile.goto(`${BASE}/?token=${encodeURIComponent(TOKEN)}#${encodeURIComponent(second)}`);
      await mobile.locator('[data-testid="message-assistant"]').filter({ hasText: 'The command ran.' }).waitFor();
      const closed = await measure();
      expect(closed.small.length === 0, `fields under 16 px: ${closed.small.join(', ')}`);
      expect(closed.buttons >= 3, `only ${closed.buttons} visible buttons measured`);
      expect(closed.tiny.length === 0, `buttons under 32 px: ${closed.tiny.join(', ')}`);
      await mobile.locator('[data-testid="toggle-sessions"]').tap();
      await mobile.locator('[data-testid="session-item"]').first().waitFor();
      const open = await measure();
      expect(open.tiny.length === 0, `with the session list open, buttons under 32 px: ${open.tiny.join(', ')}`);
      await mobile.locator(`[data-testid="session-item"][data-session-id="${second}"] .session-open`).tap();
      await mobile.locator('#sidebar').waitFor({ state: 'hidden' });
    });

    await check('a11y phone: one Send/Stop button, a status line of one line', mobile, async () => {
      expect(JSON.stringify(await shownButtons(mobile)) === '["Send"]', `buttons: ${JSON.stringify(await shownButtons(mobile))}`);
      const status = await mobile.evaluate(() => {
        const line = document.getElementById('status-line');
        const items = [...line.children].filter((el) => el.checkVisibility());
        const rects = items.map((el) => el.getBoundingClientRect());
        // On one line: every item starts above the bottom of every other.
        const oneRow = Math.max(...rects.map((r) => r.top)) < Math.min(...rects.map((r) => r.bottom));
        // And no item's own text wraps: its line boxes all start at one height
        // (the items may be taller than a line: the menus are 32 px buttons).
        const wrapped = items.filter((el) => {
          const range = document.createRange();
          range.selectNodeContents(el);
          const tops = [...range.getClientRects()].map((r) => r.top);
          return tops.length > 0 && Math.max(...tops) - Math.min(...tops) > 4;
        }).map((el) => el.innerText);
        return { items: items.length, oneRow, wrapped, text: line.innerText };
      });
      expect(status.items >= 2, `the status line shows ${status.items} items: ${status.text}`);
      expect(status.oneRow && status.wrapped.length === 0, `the status line takes more than one line: ${JSON.stringify(status)}`);
    });

    await check('a11y phone: axe-core finds nothing at 390 px', mobile, async () => {
      await audit(mobile, 'the page at 390 px (phone)');
      await shot(mobile, 'a11y-phone');
      expect(errors.length === 0, `the phone page threw: ${errors.join(' | ')}`);
    });
    await phone.close();
  } finally {
    await browser.close();
  }

  // ---- The server restarts ----
  const listed = async () => (await apiGet('/v1/sessions')).sessions.map((s) => `${s.id} ${s.updated_at}`);
  const eventsOf = async (id) => (await apiGet(`/v1/sessions/${id}/messages`)).events.length;
  let before;
  let firstEvents;
  await check('a11y: while the server is down a "not reachable" banner shows; it goes once the page has reconnected', page, async () => {
    await page.locator(`[data-testid="session-item"][data-session-id="${second}"] .session-open`).click();
    await page.locator(`[data-testid="session-item"][data-selected="true"][data-session-id="${second}"]`).waitFor();
    await byId(page, 'message-assistant').filter({ hasText: 'The command ran.' }).waitFor();
    before = await listed();
    firstEvents = await eventsOf(first);
    await ask('stop the server', 'stopped');
    await byId(page, 'new-session').click();
    const banner = page.locator('#banner');
    await banner.filter({ hasText: 'not reachable' }).waitFor();
    await ask('start the server', 'started');
    // The page reconnects by itself (its event streams retry); then the banner goes.
    await page.locator('#lifecycle-status:empty').waitFor({ state: 'attached' });
    await banner.waitFor({ state: 'hidden' });
  });

  await check('a11y: viewing a stored session after the restart does not change it (no event, same updated_at and place)', page, async () => {
    await page.locator(`[data-testid="session-item"][data-session-id="${first}"] .session-open`).click();
    await page.locator(`[data-testid="session-item"][data-selected="true"][data-session-id="${first}"]`).waitFor();
    await byId(page, 'message-assistant').filter({ hasText: 'Hello from the scripted model.' }).waitFor();
    await inputFocused(page);
    // Its event stream loaded it; the record's `busy` asks the session
    // itself, so whatever its load did is stored once this answers.
    await until('the viewed session is loaded', async () => (await apiGet(`/v1/sessions/${first}`)).loaded === true);
    const after = await listed();
    expect(JSON.stringify(after) === JSON.stringify(before), `the list changed:\n  before ${before.join('\n         ')}\n  after  ${after.join('\n         ')}`);
    const events = await eventsOf(first);
    expect(events === firstEvents, `viewing it stored ${events - firstEvents} more events`);
    const started = await page.locator('[data-testid="notice"][data-subtype="session_started"]').count();
    expect(started === 1, `the page shows ${started} session_started lines`);
  });
}
