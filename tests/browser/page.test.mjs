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
// The rest follows tests/fixtures/scripts/web_page.toml (the workspace has
// notes.txt, "alpha\nbeta\n", and .claude/commands/review.md; the default
// profile takes images, and a profile `web` with a context window and
// prices does not): a Markdown reply, raw HTML that must not run, a tool
// call's argument order, an edit's and a new file's diffs, the model's
// plan as a panel (in place, after a reload, gone after /clear), images pasted,
// dropped and picked with the Image button (refused when no image or over
// 5 MB, sent with a query, shown as thumbnails, again after a reload), the
// slash command suggestions, `/review src/main.rs` and `/help`, the status
// line through /model, the notice of a profile without images, /usage and
// /mode, Esc, and the page at phone width. Screenshots go to SHOTS +
// NAME.png (default /tmp/agentbus-web-NAME.png): markdown, diff, plan,
// attachments, images, commands, image-notice, approval, phone,
// phone-sessions.
//
// PAGE_SUITE=NAME (not page or rewind) runs suites/NAME.mjs instead
// (`run(page, ctx)`; its variables are described there).
//
// PAGE_SUITE=rewind runs the rewind checks instead (tests/all/serve.rs,
// tests/fixtures/scripts/web_rewind.toml): REWIND_FILE (the absolute path of
// a file of the session's workspace), REWIND_PROMPT (a message whose turn
// runs a command and edits that file), CONFLICT_PROMPT (another message
// whose turn edits it). A turn edits the file; after a reload, "Rewind to
// here" on its message shows the preview's diff and what cannot be taken
// back, and "Restore code and conversation" puts the file back byte for
// byte and switches the page to the fork, its input holding the message
// again; there a second turn edits it, the test changes the file itself,
// and the dialog shows the conflict, which "Code only" leaves alone.
// Screenshots: rewind, rewind-conflict.
//
// Any other PAGE_SUITE=NAME runs tests/browser/suites/NAME.mjs, whose
// run(page, ctx) gets the helpers of lib.mjs and the browser context
// (controls: code highlighting and copy, the status line's menus, the
// turn line, thinking, errors; see that file).
//
// Every wait is Playwright's own (locator.waitFor / waitForFunction): no
// fixed sleeps. Exits 1 at the first failed check, with a screenshot.

import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// The generic helpers live in lib.mjs, shared with the suites in suites/.
import {
  BASE, TOKEN, SCREENSHOT, TIMEOUT, Failed, apiGet, byId, check, expect, pageText, passed, shot, until,
} from './lib.mjs';

// ES module imports ignore NODE_PATH; require() honours it.
const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');

const env = process.env;
const EXPECTED_REPLY = env.EXPECTED_REPLY || '';
const SLOW_PROMPT = env.SLOW_PROMPT || '';
const FIRST_PROMPT = env.FIRST_PROMPT || 'hello';
const EXPECTED_THINKING = env.EXPECTED_THINKING || '';
const CHROMIUM = env.CHROMIUM || '/usr/bin/chromium';
const APPROVAL_PROMPT = env.APPROVAL_PROMPT || '';
const APPROVAL_COMMAND = env.APPROVAL_COMMAND || '';
const EDIT_PROMPT = env.EDIT_PROMPT || '';
const EDIT_OLD = env.EDIT_OLD || '';
const EDIT_NEW = env.EDIT_NEW || '';
if (APPROVAL_PROMPT && !(APPROVAL_COMMAND && EDIT_PROMPT && EDIT_OLD && EDIT_NEW)) {
  console.error('browser test: APPROVAL_PROMPT needs APPROVAL_COMMAND, EDIT_PROMPT, EDIT_OLD and EDIT_NEW too');
  process.exit(2);
}

const SUITE = env.PAGE_SUITE || 'page';
const REWIND_FILE = env.REWIND_FILE || '';
const REWIND_PROMPT = env.REWIND_PROMPT || '';
const CONFLICT_PROMPT = env.CONFLICT_PROMPT || '';
// Any other PAGE_SUITE is a file suites/NAME.mjs exporting run(page, ctx),
// each with the variables it needs beyond the URL and token.
const SUITES = { approvals: ['WORKSPACE'], sessions: ['LONG_SESSION', 'SLOW_PROMPT'] };
const required = SUITE === 'rewind'
  ? { AGENTBUS_URL: BASE, AGENTBUS_TOKEN: TOKEN, REWIND_FILE, REWIND_PROMPT, CONFLICT_PROMPT }
  : SUITE !== 'page'
    ? Object.fromEntries([['AGENTBUS_URL', BASE], ['AGENTBUS_TOKEN', TOKEN], ...(SUITES[SUITE] || []).map((name) => [name, env[name] || ''])])
    : { AGENTBUS_URL: BASE, AGENTBUS_TOKEN: TOKEN, EXPECTED_REPLY, SLOW_PROMPT };
for (const [name, value] of Object.entries(required)) {
  if (!value) {
    console.error(`browser test: ${name} is not set`);
    process.exit(2);
  }
}

/**
 * A PNG drawn on a canvas in the page, as base64: a small picture with a
 * label, or (`noise`) random opaque pixels, which do not compress.
 */
async function drawPng(page, { width, height, label, noise }) {
  return page.evaluate(async ({ width, height, label, noise }) => {
    const canvas = document.createElement('canvas');
    canvas.width = width;
    canvas.height = height;
    const ctx = canvas.getContext('2d');
    if (noise) {
      const pixels = ctx.createImageData(width, height);
      for (let at = 0; at < pixels.data.length; at += 65536) crypto.getRandomValues(pixels.data.subarray(at, at + 65536));
      for (let at = 3; at < pixels.data.length; at += 4) pixels.data[at] = 255;
      ctx.putImageData(pixels, 0, 0);
    } else {
      ctx.fillStyle = '#2f6fde';
      ctx.fillRect(0, 0, width, height);
      ctx.fillStyle = '#ffd54f';
      ctx.beginPath();
      ctx.arc(width * 0.25, height * 0.5, height * 0.3, 0, 2 * Math.PI);
      ctx.fill();
      ctx.fillStyle = '#ffffff';
      ctx.font = `bold ${Math.round(height / 7)}px sans-serif`;
      ctx.fillText(label || 'agentbus', width * 0.5, height * 0.56, width * 0.46);
    }
    const blob = await new Promise((resolve) => canvas.toBlob(resolve, 'image/png'));
    const bytes = new Uint8Array(await blob.arrayBuffer());
    let binary = '';
    for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    return btoa(binary);
  }, { width, height, label, noise });
}

/**
 * Dispatch a `type` event ('paste' or 'drop') carrying `files` (`{name,
 * type, base64}`, or `{name, type, size}` for a file of zero bytes of
 * that size) on the input box, as a browser does for Ctrl+V or a drop;
 * `text` is put on the clipboard too. Whether the page cancelled it.
 */
async function dispatchFiles(page, type, files, text) {
  return byId(page, 'input').evaluate((box, { type, files, text }) => {
    const transfer = new DataTransfer();
    for (const f of files) {
      const bytes = f.base64 ? Uint8Array.from(atob(f.base64), (c) => c.charCodeAt(0)) : new Uint8Array(f.size);
      transfer.items.add(new File([bytes], f.name, { type: f.type }));
    }
    if (text) transfer.setData('text/plain', text);
    box.focus();
    const init = { bubbles: true, cancelable: true };
    const event = type === 'paste'
      ? new ClipboardEvent('paste', { ...init, clipboardData: transfer })
      : new DragEvent('drop', { ...init, dataTransfer: transfer });
    if (type === 'drop') box.dispatchEvent(new DragEvent('dragover', { ...init, dataTransfer: transfer }));
    return !box.dispatchEvent(event);
  }, { type, files, text });
}

/** Whether every image under `locator` has been decoded (the CSP let its data: URL load). */
async function imagesLoaded(locator) {
  return locator.evaluateAll((imgs) => imgs.length > 0 && imgs.every((img) => img.complete && img.naturalWidth > 0));
}

/** The rewind checks (PAGE_SUITE=rewind): see the top of this file. */
async function rewindChecks(page) {
  const original = readFileSync(REWIND_FILE);
  const selected = page.locator('[data-testid="session-item"][data-selected="true"]');
  const dialog = byId(page, 'rewind-dialog');
  const idle = () => page.locator('[data-testid="interrupt"]:disabled').waitFor({ state: 'attached' });

  /** Send `text` and wait for its turn to end. */
  async function turn(text, reply) {
    await byId(page, 'input').fill(text);
    await byId(page, 'input').press('Enter');
    await byId(page, 'message-assistant').filter({ hasText: reply }).waitFor();
    await byId(page, 'result-line').last().waitFor();
    await idle();
  }

  let sessionId;
  await check('a session whose turn runs a command and edits the file', page, async () => {
    await page.goto(`${BASE}/?token=${encodeURIComponent(TOKEN)}`);
    await byId(page, 'new-session').click();
    await selected.waitFor();
    sessionId = await selected.getAttribute('data-session-id');
    await page.locator('[data-testid="input"]:enabled').waitFor();
    await turn(REWIND_PROMPT, 'Edited the notes.');
    await page.locator('[data-testid="tool-result"][data-error="false"]').nth(1).waitFor();
    const now = readFileSync(REWIND_FILE);
    expect(!now.equals(original), 'the turn did not change the file');
  });

  const message = byId(page, 'message-user').filter({ hasText: REWIND_PROMPT });
  const button = message.locator('[data-testid="rewind-here"]');
  await check('after a reload each user message has a "Rewind to here" button, labelled and reachable by keyboard', page, async () => {
    await page.reload();
    await page.locator(`[data-testid="session-item"][data-session-id="${sessionId}"][data-selected="true"]`).waitFor();
    await byId(page, 'message-assistant').filter({ hasText: 'Edited the notes.' }).waitFor();
    await button.waitFor({ state: 'attached' });
    expect((await button.evaluate((b) => b.tagName)) === 'BUTTON', 'the action is not a button');
    const label = await button.getAttribute('aria-label');
    expect(label.startsWith('Rewind to here') && label.includes(REWIND_PROMPT), `its label: ${JSON.stringify(label)}`);
    // Shown once it has the keyboard's focus; Enter opens the dialog.
    await button.focus();
    const shown = await button.evaluate((b) => document.activeElement === b && getComputedStyle(b).opacity);
    expect(shown === '1', `focused, the button is ${JSON.stringify(shown)}`);
    await page.keyboard.press('Enter');
    await dialog.waitFor({ state: 'visible' });
  });

  const file = (action) => dialog.locator(`[data-testid="rewind-file"][data-action="${action}"]`);
  await check('the dialog shows what the turn changed: the file to restore with its diff, and what cannot be taken back', page, async () => {
    const restore = file('restore');
    await restore.waitFor();
    const name = REWIND_FILE.split('/').pop();
    expect((await restore.getAttribute('data-path')) === name, `the file is ${await restore.getAttribute('data-path')}`);
    const rows = await restore.locator('[data-testid="rewind-diff"] span').evaluateAll((spans) => spans.map((s) => [s.className, s.textContent]));
    const removed = rows.filter(([c]) => c === 'diff-del').map(([, t]) => t);
    const added = rows.filter(([c]) => c === 'diff-add').map(([, t]) => t);
    expect(JSON.stringify(removed) === '["-ALPHA"]' && JSON.stringify(added) === '["+alpha"]', `the diff: ${JSON.stringify(rows)}`);
    const colours = await restore.locator('[data-testid="rewind-diff"]').evaluate((pre) => [
      getComputedStyle(pre.querySelector('.diff-del')).color,
      getComputedStyle(pre.querySelector('.diff-add')).color,
    ]);
    expect(colours[0] !== colours[1], `removed and added lines look alike: ${colours}`);
    const cannot = await byId(page, 'rewind-cannot-restore').textContent();
    expect(/1 command ran/.test(cannot), `what cannot be taken back: ${JSON.stringify(cannot)}`);
    expect(await byId(page, 'rewind-overwrite').isHidden(), 'an overwrite checkbox without a conflict');
    for (const id of ['rewind-both', 'rewind-conversation', 'rewind-code']) {
      await page.locator(`[data-testid="${id}"]:enabled`).waitFor();
    }
    // Only a preview so far.
    expect(!readFileSync(REWIND_FILE).equals(original), 'the preview changed the file');
    await shot(page, 'rewind');
  });

  let forkId;
  await check('"Restore code and conversation" puts the file back byte for byte and shows the fork, the message in the input again', page, async () => {
    await byId(page, 'rewind-both').click();
    await dialog.waitFor({ state: 'hidden' });
    await page.locator(`[data-testid="session-item"][data-selected="true"]:not([data-session-id="${sessionId}"])`).waitFor();
    forkId = await selected.getAttribute('data-session-id');
    await until('the file is back as it was', () => readFileSync(REWIND_FILE).equals(original));
    const fork = await apiGet(`/v1/sessions/${forkId}`);
    expect(Array.isArray(fork.parent) && fork.parent[0] === sessionId, `the fork's parent: ${JSON.stringify(fork.parent)}`);
    await page.locator('[data-testid="input"]:enabled').waitFor();
    const typed = await byId(page, 'input').inputValue();
    expect(typed === REWIND_PROMPT, `the input holds ${JSON.stringify(typed)}`);
    // The fork holds the conversation before the message.
    await byId(page, 'notice').first().waitFor();
    expect((await byId(page, 'message-user').count()) === 0, 'the fork shows the message rewound past');
    expect(page.url().endsWith('#' + forkId), `the address is ${page.url()}`);
  });

  const conflictMessage = byId(page, 'message-user').filter({ hasText: CONFLICT_PROMPT });
  await check('in the fork a turn edits the file, which someone then changes: after a reload the dialog shows the conflict', page, async () => {
    await turn(CONFLICT_PROMPT, 'Changed them again.');
    const edited = readFileSync(REWIND_FILE);
    expect(!edited.equals(original), 'the second turn did not change the file');
    writeFileSync(REWIND_FILE, Buffer.concat([edited, Buffer.from('changed by someone else\n')]));
    await page.reload();
    await page.locator(`[data-testid="session-item"][data-session-id="${forkId}"][data-selected="true"]`).waitFor();
    await byId(page, 'message-assistant').filter({ hasText: 'Changed them again.' }).waitFor();
    await idle();
    await conflictMessage.locator('[data-testid="rewind-here"]').click();
    await dialog.waitFor({ state: 'visible' });
    const conflict = file('conflict');
    await conflict.waitFor();
    await conflict.locator('[data-testid="rewind-conflict"]').waitFor();
    const added = await conflict.locator('[data-testid="rewind-diff"] .diff-add').allTextContents();
    expect(JSON.stringify(added) === '["+changed by someone else"]', `the conflict's diff adds ${JSON.stringify(added)}`);
    const box = byId(page, 'rewind-overwrite');
    await box.waitFor();
    expect(!(await box.isChecked()), 'overwrite is checked already');
    const label = await page.locator('#rewind-overwrite-row').textContent();
    expect(label.includes('Overwrite files changed by someone else'), `the checkbox says ${JSON.stringify(label)}`);
    await shot(page, 'rewind-conflict');
  });

  await check('"Code only" without overwrite leaves the file as someone left it, stays in the session and says so', page, async () => {
    const theirs = readFileSync(REWIND_FILE);
    await byId(page, 'rewind-code').click();
    const result = byId(page, 'rewind-result');
    await result.waitFor();
    await result.locator('[data-testid="rewind-file"][data-action="conflict"]').filter({ hasText: 'left as it is' }).waitFor();
    expect(readFileSync(REWIND_FILE).equals(theirs), 'the file someone changed was overwritten');
    expect((await selected.getAttribute('data-session-id')) === forkId, 'the page left the session');
    const sessions = await apiGet('/v1/sessions');
    expect(sessions.sessions.length === 2, `${sessions.sessions.length} sessions, expected the first and its fork`);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    const focused = await page.evaluate(() => document.activeElement && document.activeElement.dataset.testid);
    expect(focused === 'rewind-here', `after the dialog closes the focus is on ${JSON.stringify(focused)}`);
  });
}

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

async function main() {
  const profile = mkdtempSync(join(tmpdir(), 'agentbus-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 800 },
  });
  context.setDefaultTimeout(TIMEOUT);
  const page = context.pages()[0] || (await context.newPage());

  // Anything the page's own JavaScript throws fails the test at the end;
  // so does any dialog (a reply's HTML must never open one).
  const pageErrors = [];
  const dialogs = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    dialog.dismiss().catch(() => {});
  });
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') console.log(`  (page console: ${message.text()})`);
  });

  try {
    if (SUITE !== 'page') {
      if (SUITE === 'rewind') {
        await rewindChecks(page);
      } else {
        // A suite of its own (suites/NAME.mjs): run(page, ctx).
        const suite = await import(`./suites/${SUITE}.mjs`);
        const launchBrowser = () => chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
        await suite.run(page, { context, env, check, byId, shot, expect, until, apiGet, pageText, BASE, TOKEN, TIMEOUT, launchBrowser });
      }
      await check('the page threw no JavaScript errors', page, async () => {
        expect(pageErrors.length === 0, `errors: ${pageErrors.join(' | ')}`);
        expect(dialogs.length === 0, `a JavaScript dialog opened: ${dialogs.join(' | ')}`);
      });
      console.log(`${passed} passed, 0 failed`);
      return;
    }

    await check('a link with a wrong token ends at a clean address, sets no cookie and says the token was refused', page, async () => {
      await page.goto(`${BASE}/?token=not-the-token`);
      await page.locator('#token-missing').waitFor({ state: 'visible' });
      expect(page.url() === `${BASE}/`, `the address: ${page.url()}`);
      const text = await page.locator('#token-missing-text').textContent();
      expect(text.includes('refused'), `the message: ${text}`);
      const cookie = (await context.cookies()).find((c) => c.name === 'agentbus_token');
      expect(!cookie, 'a wrong token set a cookie');
    });

    await check('the printed link ends at an address without the token, and the page works there after a reload', page, async () => {
      const opened = await page.goto(`${BASE}/?token=${encodeURIComponent(TOKEN)}`);
      // The server redirected (303) to a clean address: the token never
      // reached the page's own history entry.
      const redirect = opened.request().redirectedFrom();
      expect(redirect && (await redirect.response()).status() === 303, 'the link was not answered with a redirect');
      expect(page.url() === `${BASE}/`, `the address after the redirect: ${page.url()}`);
      await byId(page, 'new-session').waitFor({ state: 'visible' });
      await page.reload();
      expect(page.url() === `${BASE}/`, `the address after a reload: ${page.url()}`);
      await byId(page, 'new-session').waitFor({ state: 'visible' });
      const listed = await page.evaluate(async () => (await fetch('/v1/sessions')).status);
      expect(listed === 200, `the API by the page's cookie after the reload: ${listed}`);
      const cookie = (await context.cookies()).find((c) => c.name === 'agentbus_token');
      expect(cookie && cookie.httpOnly && cookie.sameSite === 'Strict', `the cookie: ${JSON.stringify(cookie && { ...cookie, value: '…' })}`);
      expect(await page.evaluate(() => !document.cookie.includes('agentbus_token')), 'the page\'s script can read the cookie');
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

    await check('the message and the session name the token that sent and made them (admin)', page, async () => {
      const message = byId(page, 'message-user').filter({ hasText: FIRST_PROMPT });
      await message.locator('[data-testid="message-by"]').filter({ hasText: 'by admin' }).waitFor();
      const row = page.locator(`[data-testid="session-item"][data-session-id="${sessionId}"]`);
      await row.locator('[data-testid="session-by"]').filter({ hasText: 'admin' }).waitFor();
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
      expect(text.startsWith('Stopped'), `the second result line says ${JSON.stringify(text)}`);
      expect((await line.getAttribute('data-stop-reason')) === 'cancelled', 'data-stop-reason is not cancelled');
      await page.locator('[data-testid="interrupt"]:disabled').waitFor({ state: 'attached' });
    });

    await check('the interrupted partial reply is kept, so it is not marked as lost', page, async () => {
      // An interrupt stores what streamed (an `assistant` event marked
      // interrupted); only a reply that no `assistant` event completes
      // (its node died mid-reply) is marked as not kept.
      await page.locator('[data-testid="message-assistant"]').filter({ hasText: 'This reply starts' }).first().waitFor();
      const marks = await byId(page, 'not-kept').count();
      expect(marks === 0, `${marks} replies are marked as not kept after an interrupt`);
    });

    await check('the session usage counts both turns', page, async () => {
      await page.locator('[data-testid="usage"][data-turns="2"]').waitFor();
      const title = await byId(page, 'usage').getAttribute('title');
      expect(title.endsWith('over 2 turns'), `the usage says ${JSON.stringify(title)}`);
    });

    await check('a reload replays the stored conversation once (token from the cookie, session from #)', page, async () => {
      await page.reload();
      await page.locator(`[data-testid="session-item"][data-session-id="${sessionId}"][data-selected="true"]`).waitFor();
      await byId(page, 'result-line').nth(1).waitFor();
      const users = await byId(page, 'message-user').count();
      const results = await byId(page, 'result-line').count();
      expect(users === 2 && results === 2, `after the reload: ${users} user messages and ${results} result lines, expected 2 and 2`);
      const replies = await byId(page, 'message-assistant').filter({ hasText: EXPECTED_REPLY }).count();
      expect(replies === 1, `after the reload the reply is shown ${replies} times`);
    });

    // ---- What tests/fixtures/scripts/web_page.toml answers (prompts below) ----

    await check('the status line shows the profile, the agent, the mode and the usage', page, async () => {
      await byId(page, 'status-line').waitFor();
      const model = await byId(page, 'status-model').textContent();
      expect(model === 'scripted', `the status line names the profile ${JSON.stringify(model)}`);
      const agent = await byId(page, 'status-agent').textContent();
      expect(agent === 'agent build', `the status line names the agent ${JSON.stringify(agent)}`);
      await page.locator('[data-testid="permission-mode"][data-mode="bypass"]').waitFor();
      expect(await byId(page, 'status-cost').isHidden(), 'a cost is shown for a profile without prices');
    });

    const markdownReply = byId(page, 'message-assistant').filter({ hasText: 'Plan for the parser' });
    await check('a Markdown reply is rendered: heading, bold, inline code, a fenced code block, a table, a link, an image as a link', page, async () => {
      await byId(page, 'input').fill('markdown please');
      await byId(page, 'input').press('Enter');
      await page.locator('[data-testid="message-assistant"][data-streaming="false"]').filter({ hasText: 'diagram' }).waitFor();
      const found = await markdownReply.last().evaluate((msg) => {
        const mono = (el) => (el ? getComputedStyle(el).fontFamily : '');
        const code = msg.querySelector('pre > code');
        const link = msg.querySelector('a');
        return {
          h1: msg.querySelector('h1') && msg.querySelector('h1').textContent,
          strong: msg.querySelector('strong') && msg.querySelector('strong').textContent,
          em: msg.querySelector('em') && msg.querySelector('em').textContent,
          inline: msg.querySelector('p > code') && msg.querySelector('p > code').textContent,
          inlineFont: mono(msg.querySelector('p > code')),
          code: code && code.textContent,
          codeClass: code && code.className,
          codeFont: mono(code),
          bodyFont: getComputedStyle(document.body).fontFamily,
          headers: [...msg.querySelectorAll('table th')].map((th) => th.textContent),
          rows: msg.querySelectorAll('table tbody tr').length,
          link: link && { href: link.getAttribute('href'), target: link.target, rel: link.rel },
          raw: /\*\*|^#|```/m.test(msg.textContent),
          images: msg.querySelectorAll('img').length,
          image: [...msg.querySelectorAll('a')].map((a) => [a.textContent, a.getAttribute('href')]).find(([text]) => text.includes('diagram')),
        };
      });
      expect(found.h1 === 'Plan for the parser', `the heading: ${JSON.stringify(found.h1)}`);
      expect(found.strong === 'bold' && found.em === 'emphasis', `bold and emphasis: ${found.strong}, ${found.em}`);
      expect(found.inline === 'inline_code()', `inline code: ${JSON.stringify(found.inline)}`);
      expect(found.code === 'fn main() {\n    println!("hello from a code block");\n}\n', `the code block: ${JSON.stringify(found.code)}`);
      expect(found.codeClass === 'language-rust', `the code block's class: ${found.codeClass}`);
      for (const font of [found.codeFont, found.inlineFont]) {
        expect(/monospace/.test(font) && font !== found.bodyFont, `code is in ${font}, the text in ${found.bodyFont}`);
      }
      expect(JSON.stringify(found.headers) === '["Step","Status"]' && found.rows === 2, `the table: ${found.headers} with ${found.rows} rows`);
      expect(found.link && found.link.href === 'https://example.com/docs' && found.link.target === '_blank' && /noopener/.test(found.link.rel),
        `the link: ${JSON.stringify(found.link)}`);
      expect(!found.raw, 'Markdown syntax is still shown');
      expect(found.images === 0 && JSON.stringify(found.image) === JSON.stringify(['[image: diagram]', 'https://example.com/diagram.png']),
        `the image: ${found.images} img elements, link ${JSON.stringify(found.image)}`);
      await markdownReply.last().scrollIntoViewIfNeeded();
      await shot(page, 'markdown');
    });

    await check('raw HTML and javascript: links from the model are shown as text and never run', page, async () => {
      await byId(page, 'input').fill('unsafe html please');
      await byId(page, 'input').press('Enter');
      const reply = byId(page, 'message-assistant').filter({ hasText: 'Nothing above ran.' });
      await reply.waitFor();
      await page.locator('[data-testid="interrupt"]:disabled').waitFor({ state: 'attached' });
      const found = await reply.evaluate((msg) => ({
        elements: [...msg.querySelectorAll('img, script, iframe, [onerror], a[href^="javascript"]')].map((e) => e.outerHTML),
        text: msg.textContent,
        // The page's own scripts are files under /assets/ (vendor and modules); nothing else.
        scripts: [...document.scripts].filter((script) => !new URL(script.src || 'about:blank', location.href).pathname.startsWith('/assets/')).length,
      }));
      expect(found.elements.length === 0, `the reply made elements: ${found.elements.join(' ')}`);
      expect(found.text.includes('<img src=x onerror=alert(1)>') && found.text.includes('<script>alert(2)</script>'),
        `the reply does not show the HTML as text: ${JSON.stringify(found.text)}`);
      expect(found.scripts === 0, `the page has ${found.scripts} script elements besides its own files`);
      expect(dialogs.length === 0, `a dialog opened: ${dialogs.join(' | ')}`);
    });

    await check("a tool call's arguments are shown in the model's order", page, async () => {
      await byId(page, 'input').fill('read in order');
      await byId(page, 'input').press('Enter');
      const call = page.locator('[data-testid="tool-call"][data-tool="read_file"]');
      await call.waitFor();
      const summary = await call.locator('summary').textContent();
      expect(summary === '\u25b8 read_file(path: "notes.txt", offset: 2, limit: 1)', `the call says ${JSON.stringify(summary)}`);
      const input = await call.locator('pre').textContent();
      expect(JSON.stringify(Object.keys(JSON.parse(input))) === '["path","offset","limit"]', `the whole input: ${input}`);
      await byId(page, 'message-assistant').filter({ hasText: 'Read it.' }).waitFor();
    });

    await check('an edit shows its path first and its diff, red and green, then the diff as applied', page, async () => {
      await byId(page, 'input').fill('rewrite notes please');
      await byId(page, 'input').press('Enter');
      const call = page.locator('[data-testid="tool-call"][data-tool="edit_file"]').last();
      await call.waitFor();
      const summary = await call.locator('summary').textContent();
      expect(summary === '\u25be edit_file(path: "notes.txt")', `the call says ${JSON.stringify(summary)}`);
      // From the result: with its hunk header (line numbers) and context.
      const diff = call.locator('[data-testid="tool-diff"][data-diff-source="result"]');
      await diff.waitFor();
      const rows = await diff.locator('span').evaluateAll((spans) => spans.map((s) => [s.className, s.textContent]));
      expect(JSON.stringify(rows) === JSON.stringify([
        ['diff-hunk', '@@ -1,2 +1,3 @@'], ['diff-del', '-alpha'], ['diff-add', '+ALPHA'], ['diff-add', '+alpha two'], ['diff-ctx', ' beta'],
      ]), `the diff: ${JSON.stringify(rows)}`);
      const colours = await diff.evaluate((pre) => {
        const color = (sel) => getComputedStyle(pre.querySelector(sel)).color;
        return { del: color('.diff-del'), add: color('.diff-add'), ctx: color('.diff-ctx'), addBg: getComputedStyle(pre.querySelector('.diff-add')).backgroundColor };
      });
      expect(colours.del !== colours.add && colours.del !== colours.ctx && colours.add !== colours.ctx, `colours: ${JSON.stringify(colours)}`);
      expect(colours.addBg !== 'rgba(0, 0, 0, 0)', `an added line has no background: ${JSON.stringify(colours)}`);
      const result = await page.locator('[data-testid="tool-result"]').last().locator('summary').textContent();
      expect(/^\u2514 Edited \S*notes\.txt: 1 replacement\.$/.test(result), `the result says ${JSON.stringify(result)}`);
      await byId(page, 'message-assistant').filter({ hasText: 'Rewrote the first line.' }).waitFor();
    });

    await check('a new file of 30 lines shows all of them, scrolling', page, async () => {
      await byId(page, 'input').fill('write the numbers file');
      await byId(page, 'input').press('Enter');
      const call = page.locator('[data-testid="tool-call"][data-tool="write_file"]');
      await call.waitFor();
      const summary = await call.locator('summary').textContent();
      expect(summary === '\u25be write_file(path: "numbers.txt", lines: 30)', `the call says ${JSON.stringify(summary)}`);
      const diff = call.locator('[data-testid="tool-diff"]');
      const added = await diff.locator('.diff-add').allTextContents();
      expect(added.length === 30 && added[0] === '+line 1' && added[29] === '+line 30', `the diff shows ${added.length} lines: ${added.slice(0, 3)}`);
      const box = await diff.evaluate((pre) => ({ overflow: getComputedStyle(pre).overflowY, scroll: pre.scrollHeight, client: pre.clientHeight }));
      expect(box.overflow === 'auto' && box.scroll > box.client, `the long diff does not scroll: ${JSON.stringify(box)}`);
      await byId(page, 'message-assistant').filter({ hasText: 'Wrote numbers.txt.' }).waitFor();
      await page.locator('[data-testid="tool-call"][data-tool="edit_file"]').last().scrollIntoViewIfNeeded();
      await shot(page, 'diff');
    });

    /** Send a slash command; its typed line shows, then its answer of `subtype`. */
    async function command(text, subtype) {
      await byId(page, 'input').fill(text);
      await byId(page, 'input').press('Enter');
      const echo = byId(page, 'message-command').filter({ hasText: text }).last();
      await echo.waitFor();
      const next = await echo.evaluate((node) => node.nextElementSibling && [node.nextElementSibling.dataset.testid, node.nextElementSibling.dataset.subtype]);
      expect(JSON.stringify(next) === JSON.stringify(['notice', subtype]), `after ${text} comes ${JSON.stringify(next)}`);
      return echo.evaluate((node) => node.nextElementSibling.textContent);
    }

    await check("the model's plan is a panel above the input, updated in place, kept after a reload, gone after /clear", page, async () => {
      await byId(page, 'input').fill('work through a checklist');
      await byId(page, 'input').press('Enter');
      await byId(page, 'message-assistant').filter({ hasText: 'Working through the checklist.' }).waitFor();
      const calls = await page.locator('[data-testid="tool-call"][data-tool="todo_write"] > summary').allTextContents();
      expect(JSON.stringify(calls) === JSON.stringify(['\u25b8 todo_write(3 items)', '\u25b8 todo_write(3 items)']), `the calls say ${JSON.stringify(calls)}`);
      const shown = async () => ({
        panels: await byId(page, 'plan').count(),
        visible: await byId(page, 'plan').isVisible(),
        progress: await byId(page, 'plan-progress').textContent(),
        items: await byId(page, 'plan-item').evaluateAll((items) => items.map((li) => [li.dataset.status, li.textContent])),
      });
      const latest = JSON.stringify({
        panels: 1,
        visible: true,
        progress: '1 of 3 done',
        items: [['completed', '\u2611Read the notes'], ['in_progress', '\u25d0Counting the lines'], ['pending', '\u2610Report back']],
      });
      const live = JSON.stringify(await shown());
      expect(live === latest, `the panel shows ${live}`);
      const styles = await byId(page, 'plan-item').evaluateAll((items) => items.map((li) => getComputedStyle(li).fontWeight + ' ' + getComputedStyle(li).color));
      expect(styles[1] !== styles[2] && styles[0] !== styles[2], `the items look alike: ${JSON.stringify(styles)}`);
      await shot(page, 'plan');
      await page.reload();
      await byId(page, 'message-assistant').filter({ hasText: 'Working through the checklist.' }).waitFor();
      await byId(page, 'plan-item').first().waitFor();
      const replayed = JSON.stringify(await shown());
      expect(replayed === latest, `after the reload the panel shows ${replayed}`);
      await command('/clear', 'cleared');
      await byId(page, 'plan').waitFor({ state: 'hidden' });
    });

    // ---- Images with a query (the profile `scripted` takes them) ----

    const chips = byId(page, 'attachment');
    const screenshotPng = await drawPng(page, { width: 320, height: 200, label: 'screenshot' });
    await check('a pasted screenshot waits above the input as a chip; what is no image or over 5 MB is refused, saying why; × removes it', page, async () => {
      const cancelled = await dispatchFiles(page, 'paste', [{ name: 'screenshot.png', type: 'image/png', base64: screenshotPng }]);
      expect(cancelled, 'the paste of an image was left to the text box');
      await chips.first().waitFor();
      expect((await chips.getAttribute('data-media-type')) === 'image/png', 'the chip is not a PNG');
      expect(await imagesLoaded(chips.locator('img')), 'the chip shows no picture');
      // A text file calling itself a PNG, and a file over 5 MB: refused here, before anything is sent.
      await dispatchFiles(page, 'paste', [{ name: 'notes.png', type: 'image/png', base64: Buffer.from('not a picture').toString('base64') }]);
      await byId(page, 'attach-error').filter({ hasText: 'notes.png is not a PNG, JPEG, GIF or WebP image' }).waitFor();
      await dispatchFiles(page, 'drop', [{ name: 'huge.png', type: 'image/png', size: 5 * 1024 * 1024 + 1 }]);
      await byId(page, 'attach-error').filter({ hasText: 'huge.png is 5,242,881 bytes; an image may be at most 5 MB (5,242,880 bytes)' }).waitFor();
      expect((await chips.count()) === 1, `${await chips.count()} chips, expected 1`);
      // Text on the clipboard is pasted as text, as ever.
      const textCancelled = await dispatchFiles(page, 'paste', [], 'just words');
      expect(!textCancelled, 'a paste of text was taken by the page');
      await chips.first().locator('[data-testid="attachment-remove"]').click();
      await byId(page, 'attachments').waitFor({ state: 'hidden' });
      expect((await chips.count()) === 0, 'the removed chip is still there');
    });

    await check('a dropped image and one picked with the Image button (a 3 MB photo, larger than other bodies may be) wait together', page, async () => {
      await dispatchFiles(page, 'drop', [{ name: 'screenshot.png', type: 'image/png', base64: screenshotPng }]);
      await chips.first().waitFor();
      expect(await byId(page, 'attach-error').isHidden(), 'an error shows after a good drop');
      const photo = Buffer.from(await drawPng(page, { width: 1000, height: 1000, noise: true }), 'base64');
      expect(photo.length > 1024 * 1024 && photo.length < 5 * 1024 * 1024, `the photo is ${photo.length} bytes`);
      const [chooser] = await Promise.all([page.waitForEvent('filechooser'), byId(page, 'attach').click()]);
      expect(chooser.isMultiple(), 'the picker takes one file only');
      await chooser.setFiles({ name: 'photo.png', mimeType: 'image/png', buffer: photo });
      await chips.nth(1).waitFor();
      expect(await imagesLoaded(chips.locator('img')), 'a chip shows no picture');
      await shot(page, 'attachments');
    });

    const pictures = byId(page, 'message-user').filter({ hasText: 'describe these pictures' });
    await check('the images go with the query: the model receives both, the transcript shows their thumbnails, the chips are gone', page, async () => {
      await byId(page, 'input').fill('describe these pictures');
      await byId(page, 'input').press('Enter');
      await pictures.waitFor();
      await byId(page, 'attachments').waitFor({ state: 'hidden' });
      const thumbs = pictures.locator('[data-testid="message-image"]');
      await thumbs.nth(1).waitFor();
      expect((await thumbs.count()) === 2, `${await thumbs.count()} thumbnails`);
      await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="message-image"]')].every((img) => img.complete));
      expect(await imagesLoaded(thumbs), 'a thumbnail did not load (the CSP, or the data)');
      // The scripted model answers so only to a PNG it received, and echoes what it got.
      const reply = byId(page, 'message-assistant').filter({ hasText: 'I see it:' });
      await reply.waitFor();
      const text = await reply.textContent();
      expect(text.includes('describe these pictures') && text.split('[image: image/png]').length === 3, `the model got ${JSON.stringify(text)}`);
      await page.locator('[data-testid="interrupt"]:disabled').waitFor({ state: 'attached' });
      await page.locator('#conversation').evaluate((conv) => { conv.scrollTop = conv.scrollHeight; });
      await shot(page, 'images');
      await thumbs.first().click();
      expect(await thumbs.first().evaluate((img) => img.classList.contains('enlarged')), 'a click does not enlarge the thumbnail');
      await thumbs.first().click();
    });

    await check('after a reload the message shows its thumbnails again, from the stored event', page, async () => {
      await page.reload();
      const thumbs = pictures.locator('[data-testid="message-image"]');
      await thumbs.nth(1).waitFor();
      await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="message-image"]')].every((img) => img.complete));
      expect((await thumbs.count()) === 2 && (await imagesLoaded(thumbs)), 'the thumbnails are not shown after the reload');
      await page.locator('[data-testid="input"]:enabled').waitFor();
      await byId(page, 'message-assistant').filter({ hasText: 'I see it:' }).waitFor();
      // The replay ends at the bottom, below the thumbnails.
      const gap = await page.locator('#conversation').evaluate((conv) => conv.scrollHeight - conv.scrollTop - conv.clientHeight);
      expect(gap < 48, `after the reload the conversation is ${gap} px above its end`);
    });

    // ---- The workspace's custom command (.claude/commands/review.md) ----

    const suggestions = byId(page, 'command-suggestions');
    await check('typing / offers the commands, the built-in ones then the custom /review; Tab completes', page, async () => {
      await byId(page, 'input').fill('');
      await byId(page, 'input').pressSequentially('/');
      await suggestions.waitFor();
      const names = await byId(page, 'command-suggestion').evaluateAll((items) => items.map((i) => [i.dataset.name, i.dataset.custom]));
      expect(names.length > 10 && names[0][0] === 'help' && names[0][1] === 'false', `the list begins ${JSON.stringify(names.slice(0, 2))}`);
      expect(JSON.stringify(names[names.length - 1]) === '["review","true"]', `the list ends ${JSON.stringify(names.slice(-2))}`);
      await byId(page, 'input').pressSequentially('re');
      await shot(page, 'commands');
      await byId(page, 'input').pressSequentially('v');
      const offered = await byId(page, 'command-suggestion').allTextContents();
      expect(offered.length === 1 && offered[0].includes('/review [file]') && offered[0].includes('Review a file for bugs'), `for /rev: ${JSON.stringify(offered)}`);
      await byId(page, 'input').press('Tab');
      await suggestions.waitFor({ state: 'hidden' });
      const value = await byId(page, 'input').inputValue();
      expect(value === '/review ', `Tab made ${JSON.stringify(value)}`);
    });

    await check('/review src/main.rs runs the command: the model receives its body with the argument', page, async () => {
      await byId(page, 'input').pressSequentially('src/main.rs');
      await byId(page, 'input').press('Enter');
      const typed = byId(page, 'message-user').filter({ hasText: '/review src/main.rs' });
      await typed.waitFor();
      // Served only for a request whose message holds the body with src/main.rs in place.
      await byId(page, 'message-assistant').filter({ hasText: 'Reviewed src/main.rs.' }).waitFor();
      const prompt = await typed.locator('[data-testid="message-prompt"] pre').textContent();
      expect(prompt.startsWith('Review the code in src/main.rs.\n\nLook for:'), `the model received ${JSON.stringify(prompt)}`);
      await page.locator('[data-testid="interrupt"]:disabled').waitFor({ state: 'attached' });
    });

    await check('/help lists /review with its file; images waiting stay for the next message', page, async () => {
      await dispatchFiles(page, 'paste', [{ name: 'screenshot.png', type: 'image/png', base64: screenshotPng }]);
      await chips.first().waitFor();
      const answer = await command('/help', 'help');
      expect(/\/review \[file\]\s+Review a file for bugs, security issues and style \(\S*\.claude\/commands\/review\.md\)/.test(answer),
        `/help answered ${JSON.stringify(answer)}`);
      await byId(page, 'attach-error').filter({ hasText: 'A slash command takes no images' }).waitFor();
      expect((await chips.count()) === 1, 'the image did not stay');
      await chips.first().locator('[data-testid="attachment-remove"]').click();
      await byId(page, 'attachments').waitFor({ state: 'hidden' });
    });

    await check('a slash command is echoed above its answer; the status line follows /model, context and cost', page, async () => {
      const answer = await command('/model web', 'model_switched');
      expect(answer.includes('web'), `/model answered ${JSON.stringify(answer)}`);
      await byId(page, 'status-model').filter({ hasText: /^web$/ }).waitFor();
      await byId(page, 'input').fill('measure context');
      await byId(page, 'input').press('Enter');
      await byId(page, 'message-assistant').filter({ hasText: 'Measured.' }).waitFor();
      await page.locator('[data-testid="interrupt"]:disabled').waitFor({ state: 'attached' });
      const context = byId(page, 'context-usage');
      await context.waitFor();
      const percent = Number(await context.getAttribute('data-percent'));
      const text = await byId(page, 'context-text').textContent();
      expect(percent > 0 && percent < 100 && text === `context ${percent}%`, `the context figure: ${JSON.stringify(text)} (${percent})`);
      // 1200 in x $3 + 300 out x $15 per million tokens.
      await byId(page, 'status-cost').filter({ hasText: '$0.0081' }).waitFor();
      const usage = await command('/usage', 'usage');
      expect(usage.includes('Cost: $0.0081'), `/usage answered ${JSON.stringify(usage)}`);
    });

    await check('a profile without images (`web`) says so in a notice; the text still goes', page, async () => {
      await dispatchFiles(page, 'paste', [{ name: 'screenshot.png', type: 'image/png', base64: screenshotPng }]);
      await chips.first().waitFor();
      await byId(page, 'input').fill('a picture the profile leaves out');
      await byId(page, 'input').press('Enter');
      const typed = byId(page, 'message-user').filter({ hasText: 'a picture the profile leaves out' });
      await typed.waitFor();
      const notice = page.locator('[data-testid="notice"][data-subtype="notice"]').filter({ hasText: 'does not take images' });
      await notice.waitFor({ state: 'visible' });
      const text = await notice.textContent();
      expect(text.includes('`web`') && text.includes('images = true'), `the notice says ${JSON.stringify(text)}`);
      expect((await typed.locator('[data-testid="message-image"]').count()) === 0, 'the message shows an image the model did not get');
      await byId(page, 'message-assistant').filter({ hasText: 'Only your words reached me.' }).waitFor();
      await page.locator('[data-testid="interrupt"]:disabled').waitFor({ state: 'attached' });
      await notice.scrollIntoViewIfNeeded();
      await shot(page, 'image-notice');
    });

    await check('a command answered before its POST returns is still echoed above its answer', page, async () => {
      const answers = page.locator('[data-testid="notice"][data-subtype="model"]');
      const before = await answers.count();
      // Hold the POST's answer until the command's answer is on the page.
      await page.route('**/input', async (route) => {
        const response = await route.fetch();
        await answers.nth(before).waitFor();
        await route.fulfill({ response });
      });
      try {
        await byId(page, 'input').fill('/model');
        await byId(page, 'input').press('Enter');
        await answers.nth(before).waitFor();
        const echo = byId(page, 'message-command').filter({ hasText: /^\/model$/ }).last();
        await echo.waitFor();
        const next = await echo.evaluate((node) => node.nextElementSibling && node.nextElementSibling.dataset.subtype);
        expect(next === 'model', `after /model comes ${JSON.stringify(next)}`);
      } finally {
        await page.unroute('**/input');
      }
    });

    await check('/mode plan changes the status line', page, async () => {
      const answer = await command('/mode plan', 'mode');
      expect(answer.includes('plan'), `/mode answered ${JSON.stringify(answer)}`);
      await page.locator('[data-testid="permission-mode"][data-mode="plan"]').waitFor();
      const badge = await byId(page, 'permission-mode').textContent();
      expect(badge === 'mode plan', `the status line says ${JSON.stringify(badge)}`);
    });

    await check('a command sent during a reply waits listed above the input; Esc interrupts the reply, then it runs', page, async () => {
      await byId(page, 'input').fill('stall again');
      await byId(page, 'input').press('Enter');
      await page.locator('[data-testid="message-assistant"][data-streaming="true"]').filter({ hasText: /\S/ }).first().waitFor();
      await byId(page, 'status-running').waitFor();
      const usages = page.locator('[data-testid="notice"][data-subtype="usage"]');
      const answered = await usages.count();
      await byId(page, 'input').fill('/usage');
      await byId(page, 'input').press('Enter');
      await byId(page, 'queued-input').filter({ hasText: '/usage' }).waitFor();
      const cancelled = page.locator('[data-testid="result-line"][data-stop-reason="cancelled"]');
      const before = await cancelled.count();
      await page.keyboard.press('Escape');
      await cancelled.nth(before).waitFor();
      await page.locator('[data-testid="interrupt"]:disabled').waitFor({ state: 'attached' });
      await byId(page, 'status-running').waitFor({ state: 'hidden' });
      // The queued command ran after the turn: typed line, then its answer, after the result line.
      await usages.nth(answered).waitFor();
      await byId(page, 'queued').waitFor({ state: 'hidden' });
      const order = await usages.nth(answered).evaluate((node) => [node.previousElementSibling.dataset.testid, node.previousElementSibling.previousElementSibling.dataset.stopReason]);
      expect(JSON.stringify(order) === '["message-command","cancelled"]', `before the answer: ${JSON.stringify(order)}`);
    });

    if (APPROVAL_PROMPT) {
      await check('/mode default (sent with the button) changes the status line again', page, async () => {
        await byId(page, 'input').fill('/mode default');
        await byId(page, 'send').click();
        await page.locator('[data-testid="permission-mode"][data-mode="default"]').waitFor();
        await byId(page, 'message-command').filter({ hasText: '/mode default' }).waitFor();
        const badge = await byId(page, 'permission-mode').textContent();
        expect(badge === 'mode default', `the status line says ${JSON.stringify(badge)}`);
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
      await check('an edit that asks shows its path and diff in the card, and is pending again after a reload', page, async () => {
        await byId(page, 'input').fill(EDIT_PROMPT);
        await byId(page, 'send').click();
        await pending.waitFor();
        requestId = await pending.getAttribute('data-request-id');
        expect((await pending.getAttribute('data-tool')) === 'edit_file', 'the card is not for edit_file');
        const path = await pending.locator('[data-testid="approval-path"]').textContent();
        expect(path === 'edit notes.txt', `the card names ${JSON.stringify(path)}`);
        const removed = await pending.locator('[data-testid="approval-diff"] .diff-del').allTextContents();
        const added = await pending.locator('[data-testid="approval-diff"] .diff-add').allTextContents();
        expect(JSON.stringify(removed) === JSON.stringify([`-${EDIT_OLD}`]) && JSON.stringify(added) === JSON.stringify([`+${EDIT_NEW}`]),
          `the diff shows ${JSON.stringify(removed)} -> ${JSON.stringify(added)}`);
        // The call above leaves the change to the card while it waits.
        const callId = await pending.getAttribute('data-call-id');
        await page.locator(`[data-testid="tool-call"][data-call-id="${callId}"] [data-testid="tool-diff"]`).waitFor({ state: 'hidden' });
        await pending.scrollIntoViewIfNeeded();
        await shot(page, 'approval');
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
        // Settled, the card leaves the change to the call, now as applied.
        await page.locator(`[data-testid="tool-call"][data-call-id="${callId}"] [data-testid="tool-diff"][data-diff-source="result"]`).waitFor();
        await card.locator('[data-testid="approval-diff"]').waitFor({ state: 'hidden' });
      });
    }

    await check('at phone width (375 px) nothing scrolls sideways, the input shows, the session list opens as a panel', page, async () => {
      await page.setViewportSize({ width: 375, height: 800 });
      await byId(page, 'toggle-sessions').waitFor();
      await byId(page, 'session-item').first().waitFor({ state: 'hidden' });
      const sizes = await page.evaluate(() => ({
        doc: document.documentElement.scrollWidth,
        body: document.body.scrollWidth,
        view: window.innerWidth,
        conversation: document.getElementById('conversation').clientHeight,
      }));
      expect(sizes.doc <= sizes.view && sizes.body <= sizes.view, `the page is wider than the screen: ${JSON.stringify(sizes)}`);
      expect(sizes.conversation >= 300, `the conversation has ${sizes.conversation} px`);
      const input = await byId(page, 'input').boundingBox();
      expect(input && input.x >= 0 && input.x + input.width <= 375 && input.y >= 0 && input.y + input.height <= 800,
        `the input is at ${JSON.stringify(input)}`);
      await page.locator('#conversation').evaluate((conv) => { conv.scrollTop = conv.scrollHeight; });
      await shot(page, 'phone');
      await byId(page, 'toggle-sessions').click();
      const selected = page.locator('[data-testid="session-item"][data-selected="true"]');
      await selected.waitFor();
      await shot(page, 'phone-sessions');
      await selected.locator('.session-open').click();
      await selected.waitFor({ state: 'hidden' });
      await page.setViewportSize({ width: 1280, height: 800 });
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
