// PAGE_SUITE=approvals: approvals you cannot miss, and quiet tool calls
// (tests/all/serve.rs
// `the_web_page_shows_a_waiting_approval_everywhere_and_keeps_tool_calls_quiet`, fixture
// tests/fixtures/scripts/web_approvals.toml). The server's sessions run in
// `acceptEdits` mode; WORKSPACE is the absolute workspace the sessions are
// made in (it holds notes.txt, "alpha\nbeta\n").
//
// A step calls read_file and edit_file by absolute path and a command
// that prints 1..12 and exits 3 (it asks). While it waits: the title
// starts with "(1) approval", the favicon is marked, the session is
// marked in the list (also while another session is open), a desktop
// notification is shown (the tab being hidden), and the card has the
// focus; `y` allows it once and all of that clears. The calls: one row
// "3 tool calls: read_file, edit_file, bash", each with its open/closed
// sign and aria-expanded, paths relative to the workspace, the edit's
// coloured diff once, the command's last lines first and its exit code,
// the whole output only when opened, the answer a badge on the call. Then
// "Always allow" for `rm -rf build` shows the rule `bash(rm -rf:*)` in a
// dialog first (Cancel sends nothing; `a` again and "Add" does), and `n`
// rejects a command. Last, a session the page does not show is given a
// command that asks (over the API): the page marks it and counts it in
// the title from the server's word (`pending_approvals` and the lifecycle
// stream's `approvals` events).
//
// Notifications: Playwright grants the permission
// (context.grantPermissions), and a stub of window.Notification installed
// by page.addInitScript records what the page shows (the real one shows
// nothing headless); its permission reads 'default' until the page asks
// (requestPermission, delegated to the real one), so the test sees that
// the page asks only after the click on the bell. The tab is "hidden" by
// an init script too: document.visibilityState and document.hidden read
// window.__hidden (Chromium headless has no way to hide a tab), and the
// test sets it and fires `visibilitychange`.
//
// Screenshots: approvals-waiting, approvals-confirm-always, tools-quiet.

export async function run(page, ctx) {
  const { context, check, byId, shot, expect, until, apiGet, env, BASE, TOKEN } = ctx;
  const WORKSPACE = env.WORKSPACE;

  await context.grantPermissions(['notifications'], { origin: new URL(BASE).origin });
  await page.addInitScript(() => {
    const Real = window.Notification;
    window.__notices = [];
    window.__permissionAsked = 0;
    window.__hidden = false;
    class RecordedNotification {
      constructor(title, options) {
        this.title = title;
        this.body = (options && options.body) || '';
        this.closed = false;
        window.__notices.push(this);
      }
      close() {
        this.closed = true;
      }
      static get permission() {
        return window.__permissionAsked ? Real.permission : 'default';
      }
      static async requestPermission() {
        window.__permissionAsked += 1;
        return Real.requestPermission();
      }
    }
    window.Notification = RecordedNotification;
    Object.defineProperty(Document.prototype, 'visibilityState', {
      configurable: true,
      get: () => (window.__hidden ? 'hidden' : 'visible'),
    });
    Object.defineProperty(Document.prototype, 'hidden', { configurable: true, get: () => !!window.__hidden });
  });
  const setHidden = (hidden) => page.evaluate((h) => {
    window.__hidden = h;
    document.dispatchEvent(new Event('visibilitychange'));
  }, hidden);

  /** A session made in WORKSPACE, opened in the page. */
  async function openSession(title) {
    const answer = await fetch(`${BASE}/v1/sessions`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ title, workspace: WORKSPACE }),
    });
    expect(answer.status === 201, `creating a session answered ${answer.status}`);
    return (await answer.json()).id;
  }
  const item = (id) => page.locator(`[data-testid="session-item"][data-session-id="${id}"]`);
  const pending = page.locator('[data-testid="approval"][data-state="pending"]');
  const idle = () => page.locator('[data-testid="interrupt"]:disabled').waitFor({ state: 'attached' });
  const title = () => page.evaluate(() => document.title);
  const icon = () => page.evaluate(() => document.querySelector('link[rel="icon"]').getAttribute('href'));
  const focused = () => page.evaluate(() => {
    const el = document.activeElement;
    return el ? [el.dataset.testid || el.tagName, el.dataset.requestId || ''] : null;
  });
  async function send(text) {
    await byId(page, 'input').fill(text);
    await byId(page, 'input').press('Enter');
  }

  let sessionId;
  await check('the bell asks for the notification permission only when clicked, and turns notifications on', page, async () => {
    sessionId = await openSession('approvals');
    await page.goto(`${BASE}/?token=${encodeURIComponent(TOKEN)}`);
    await item(sessionId).locator('.session-open').click();
    await page.locator(`[data-testid="session-item"][data-session-id="${sessionId}"][data-selected="true"]`).waitFor();
    await page.locator('[data-testid="input"]:enabled').waitFor();
    const bell = byId(page, 'notify-toggle');
    expect((await bell.getAttribute('aria-pressed')) === 'false', 'notifications are on before the bell was clicked');
    expect((await page.evaluate(() => window.__permissionAsked)) === 0, 'the page asked for the permission before any click');
    await bell.click();
    await page.locator('[data-testid="notify-toggle"][aria-pressed="true"]').waitFor();
    expect((await page.evaluate(() => window.__permissionAsked)) === 1, 'the click did not ask for the permission once');
    expect((await title()) === 'agentbus', `the title before any approval: ${JSON.stringify(await title())}`);
    expect((await icon()) === 'data:,', `the favicon before any approval: ${await icon()}`);
  });

  const bashCall = page.locator('[data-testid="tool-call"][data-call-id="b1"]');
  await check('with an approval waiting: "(1) approval" in the title, a marked favicon, a marked session, a notification, the card focused', page, async () => {
    await setHidden(true);
    await send('check the build');
    await pending.waitFor();
    expect((await pending.getAttribute('data-call-id')) === 'b1', 'the card is not for the command');
    await page.waitForFunction(() => document.title.startsWith('(1) approval \u00b7 '));
    const href = await icon();
    expect(href.startsWith('data:image/png;base64,') && href.length > 200, `the favicon: ${href.slice(0, 60)}`);
    const mark = item(sessionId).locator('[data-testid="session-waiting"]');
    await mark.waitFor();
    expect((await item(sessionId).getAttribute('data-waiting')) === 'true', 'the session is not marked as waiting');
    const notices = await page.evaluate(() => window.__notices.map((n) => ({ title: n.title, body: n.body, closed: n.closed })));
    expect(notices.length === 1 && /approval/.test(notices[0].title) && notices[0].body.includes('seq 1 12; exit 3') && !notices[0].closed,
      `the notifications: ${JSON.stringify(notices)}`);
    const requestId = await pending.getAttribute('data-request-id');
    await page.waitForFunction((id) => document.activeElement && document.activeElement.dataset.requestId === id, requestId);
    // "Allow once" is the main button, first, with its key.
    const buttons = await pending.locator('[data-testid="approval-actions"] button').evaluateAll((bs) =>
      bs.map((b) => [b.dataset.testid, b.classList.contains('primary'), b.getAttribute('aria-keyshortcuts')]));
    expect(JSON.stringify(buttons[0]) === '["approval-allow-once",true,"y"]' && buttons.filter((b) => b[1]).length === 1,
      `the buttons: ${JSON.stringify(buttons)}`);
    // The step's row opened to show the card.
    const group = byId(page, 'tool-group');
    expect((await group.count()) === 1, `${await group.count()} groups`);
    const head = await group.locator(':scope > summary').textContent();
    expect(head === '\u25be 3 tool calls: read_file, edit_file, bash', `the group says ${JSON.stringify(head)}`);
    expect((await group.locator(':scope > summary').getAttribute('aria-expanded')) === 'true', 'the open group is not aria-expanded');
    await setHidden(false);
    await shot(page, 'approvals-waiting');
  });

  await check('another session open, the page still counts and marks the waiting one', page, async () => {
    await byId(page, 'new-session').click();
    await page.locator(`[data-testid="session-item"][data-selected="true"]:not([data-session-id="${sessionId}"])`).waitFor();
    await page.locator('[data-testid="input"]:enabled').waitFor();
    await item(sessionId).locator('[data-testid="session-waiting"]').waitFor();
    expect((await title()).startsWith('(1) approval \u00b7 '), `the title: ${JSON.stringify(await title())}`);
    const others = await page.locator('[data-testid="session-item"][data-waiting="true"]').count();
    expect(others === 1, `${others} sessions marked as waiting`);
    await item(sessionId).locator('.session-open').click();
    await pending.waitFor();
    // Seen again in the replay: no second notification.
    expect((await page.evaluate(() => window.__notices.length)) === 1, 'a second notification for the same request');
  });

  await check('y allows it once: the card becomes a badge on its call, and the title, favicon, mark and notification clear', page, async () => {
    await pending.focus();
    await page.keyboard.press('y');
    const badge = bashCall.locator(':scope > summary [data-testid="approval"][data-outcome="allowed_once"]');
    await badge.filter({ hasText: 'Allowed once' }).waitFor();
    expect((await badge.locator('button, pre').count()) === 0, 'the badge still has buttons or the command');
    await page.waitForFunction(() => document.title === 'agentbus');
    expect((await icon()) === 'data:,', `the favicon after the answer: ${(await icon()).slice(0, 40)}`);
    await item(sessionId).locator('[data-testid="session-waiting"]').waitFor({ state: 'detached' });
    expect((await item(sessionId).getAttribute('data-waiting')) === 'false', 'the session is still marked');
    await page.waitForFunction(() => window.__notices.length === 1 && window.__notices[0].closed);
    await byId(page, 'message-assistant').filter({ hasText: 'Checked the build.' }).waitFor();
    await idle();
  });

  await check("quiet calls: signs and aria-expanded, relative paths, the edit's diff once, a command's last lines and exit code", page, async () => {
    // The command: exit 3, its last lines first; the rest only when opened.
    const result = page.locator('[data-testid="tool-result"][data-call-id="b1"]');
    await result.waitFor();
    const exit = result.locator('[data-testid="exit-code"]');
    expect((await exit.getAttribute('data-exit-code')) === '3' && (await exit.textContent()) === 'exit 3', `the exit code: ${await exit.textContent()}`);
    const preview = await result.locator('[data-testid="result-preview"]').textContent();
    expect(preview === '\u2026 9 earlier lines\n  10\n  11\n  12', `the command's preview: ${JSON.stringify(preview)}`);
    expect(await result.locator('[data-testid="result-output"]').isHidden(), 'the whole output shows while closed');
    // Under its call, in the step's row.
    const above = await result.evaluate((node) => node.previousElementSibling && node.previousElementSibling.dataset.callId);
    expect(above === 'b1', `the result follows ${JSON.stringify(above)}`);
    // The read: its path relative to the workspace; closed, then opened.
    const read = page.locator('[data-testid="tool-call"][data-call-id="r1"]');
    const readHead = read.locator(':scope > summary');
    expect((await readHead.textContent()) === '\u25b8 read_file(path: "notes.txt")', `the read says ${JSON.stringify(await readHead.textContent())}`);
    expect((await readHead.getAttribute('aria-expanded')) === 'false', 'the closed read is aria-expanded');
    // The edit: open, its coloured diff (as applied) once; its result says so in a line, nothing to open.
    const edit = page.locator('[data-testid="tool-call"][data-call-id="e1"]');
    const editHead = await edit.locator(':scope > summary').textContent();
    expect(editHead === '\u25be edit_file(path: "notes.txt")', `the edit says ${JSON.stringify(editHead)}`);
    await edit.locator('[data-testid="tool-diff"][data-diff-source="result"] .diff-add').filter({ hasText: '+ALPHA' }).waitFor();
    const editResult = page.locator('[data-testid="tool-result"][data-call-id="e1"]');
    await editResult.waitFor();
    expect((await editResult.locator('pre').count()) === 0, 'the edit\'s result repeats its output');
    const shown = await page.locator('[data-testid="tool-group"]').evaluate((g) => g.textContent.split('+ALPHA').length - 1);
    expect(shown === 1, `the change +ALPHA shows ${shown} times`);
    expect(!(await editResult.textContent()).includes(WORKSPACE), 'the edit\'s result names the absolute path');
    await page.locator('[data-testid="tool-group"]').scrollIntoViewIfNeeded();
    await shot(page, 'tools-quiet');
    // Opened: the whole output instead of the preview, the sign and aria-expanded follow.
    await result.locator(':scope > summary').click();
    await result.locator('[data-testid="result-output"]').waitFor();
    const all = await result.locator('[data-testid="result-output"]').textContent();
    expect(all === '1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12', `the whole output: ${JSON.stringify(all)}`);
    expect(await result.locator('[data-testid="result-preview"]').isHidden(), 'the preview still shows with the whole output');
    // aria-expanded follows on the details' toggle event, a task after the click.
    await result.locator(':scope > summary[aria-expanded="true"]').waitFor();
    await readHead.click();
    await page.locator('[data-testid="tool-call"][data-call-id="r1"] > summary[aria-expanded="true"]').waitFor();
    expect((await readHead.textContent()).startsWith('\u25be '), `opened, the read says ${await readHead.textContent()}`);
    // The row closes again: its calls hidden, its sign and aria-expanded too.
    const groupHead = page.locator('[data-testid="tool-group"] > summary');
    await groupHead.click();
    await page.locator('[data-testid="tool-group"] > summary[aria-expanded="false"]').waitFor();
    expect((await groupHead.textContent()).startsWith('\u25b8 3 tool calls'), `closed, the row says ${await groupHead.textContent()}`);
    expect(await read.isHidden(), 'the closed row still shows its calls');
  });

  await check('"Always allow" for rm -rf asks first in a dialog with the rule it adds; Cancel sends nothing', page, async () => {
    await send('clean up');
    await pending.waitFor();
    const requestId = await pending.getAttribute('data-request-id');
    await page.waitForFunction((id) => document.activeElement && document.activeElement.dataset.requestId === id, requestId);
    expect((await pending.locator('[data-testid="approval-allow-always"]').getAttribute('data-confirm')) === 'true', 'no confirmation is asked for rm -rf');
    await page.keyboard.press('a');
    const dialog = byId(page, 'confirm-always');
    await dialog.waitFor({ state: 'visible' });
    const rule = await dialog.locator('[data-testid="confirm-always-rule"]').textContent();
    expect(rule === 'bash(rm -rf:*)', `the dialog's rule: ${JSON.stringify(rule)}`);
    const command = await dialog.locator('[data-testid="confirm-always-command"]').textContent();
    expect(command === 'rm -rf build', `the dialog's command: ${JSON.stringify(command)}`);
    await shot(page, 'approvals-confirm-always');
    await dialog.locator('[data-testid="confirm-always-cancel"]').click();
    await dialog.waitFor({ state: 'detached' });
    // Nothing was sent: the request still waits (the next check answers it).
    expect((await pending.count()) === 1, 'the card no longer waits after Cancel');
    expect((await title()).startsWith('(1) approval'), `the title after Cancel: ${await title()}`);
  });

  await check('a, then "Add the rule and allow", always allows it with that rule', page, async () => {
    await page.waitForFunction(() => document.activeElement && document.activeElement.dataset.testid === 'approval');
    await page.keyboard.press('a');
    await byId(page, 'confirm-always-add').click();
    const badge = page.locator('[data-testid="tool-call"][data-call-id="d1"] > summary [data-testid="approval"][data-outcome="allowed_always"]');
    await badge.filter({ hasText: 'Always allowed: bash(rm -rf:*)' }).waitFor();
    await byId(page, 'message-assistant').filter({ hasText: 'Cleaned up.' }).waitFor();
    await idle();
    // The count comes back down with the lifecycle stream's `approvals`
    // event, which may come after the turn's end: wait for it.
    await until('the title is clear', async () => (await title()) === 'agentbus');
  });

  await check('n rejects a command: a "Rejected" badge on its call, and nothing ran', page, async () => {
    await send('say hello');
    await pending.waitFor();
    const requestId = await pending.getAttribute('data-request-id');
    await page.waitForFunction((id) => document.activeElement && document.activeElement.dataset.requestId === id, requestId);
    await page.keyboard.press('n');
    await page.locator('[data-testid="tool-call"][data-call-id="h1"] > summary [data-testid="approval"][data-outcome="rejected"]').filter({ hasText: 'Rejected' }).waitFor();
    await page.locator('[data-testid="tool-result"][data-call-id="h1"][data-error="true"]').waitFor();
    await byId(page, 'message-assistant').filter({ hasText: 'Left it alone.' }).waitFor();
    await idle();
    await until('the title is clear', async () => (await title()) === 'agentbus');
    expect((await icon()) === 'data:,', 'the favicon is still marked');
    expect((await page.evaluate(() => window.__notices.length)) === 1, 'a notification while the tab was shown');
  });

  await check('a session not open in the page that waits is marked from the server (pending_approvals, lifecycle `approvals`)', page, async () => {
    const other = await openSession('elsewhere');
    await item(other).waitFor();
    const answer = await fetch(`${BASE}/v1/sessions/${other}/input`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ text: 'work elsewhere' }),
    });
    expect(answer.status === 202, `the input answered ${answer.status}`);
    await item(other).locator('[data-testid="session-waiting"]').waitFor();
    await page.waitForFunction(() => document.title.startsWith('(1) approval \u00b7 '));
    expect((await icon()).startsWith('data:image/png'), 'the favicon is not marked');
    expect((await page.locator('[data-testid="session-item"][data-selected="true"]').getAttribute('data-session-id')) === sessionId,
      'the page left the open session');
    const listed = await apiGet(`/v1/sessions/${other}`);
    expect(listed.pending_approvals === 1, `the server says ${listed.pending_approvals} wait`);
    // Answered there: all clear.
    await item(other).locator('.session-open').click();
    await pending.waitFor();
    await page.waitForFunction(() => document.activeElement && document.activeElement.dataset.testid === 'approval');
    await page.keyboard.press('n');
    await byId(page, 'message-assistant').filter({ hasText: 'Did not work there.' }).waitFor();
    await idle();
    await item(other).locator('[data-testid="session-waiting"]').waitFor({ state: 'detached' });
    await until('the title is clear', async () => (await title()) === 'agentbus');
  });
}
