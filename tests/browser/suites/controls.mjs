// PAGE_SUITE=controls (tests/all/serve.rs, tests/fixtures/scripts/web_controls.toml):
// code you can use and the controls of the status line. A reply's fenced
// code blocks highlighted, with their language and Copy; an edit's diff
// keeps its red and green rows and gains token colours; Copy on a code
// block, a message (its Markdown), a command and a diff, read back from the
// clipboard; the model and mode menus (keyboard and mouse) send /model and
// /mode; the turn line in words with its cost; thinking open while it
// streams, closed with its time once the answer starts, and not flattened
// in a conversation taller than the window; an error shown once, as a card
// whose Retry sends the query again; a message whose POST failed marked
// "Not sent", with Retry. Screenshots: controls-code, controls-menus,
// controls-error.

export async function run(page, ctx) {
  const { context, check, byId, shot, expect, BASE, TOKEN } = ctx;
  const origin = new URL(BASE).origin;
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  const idle = () => page.locator('[data-testid="interrupt"]:disabled').waitFor({ state: 'attached' });
  const clipboard = () => page.evaluate(() => navigator.clipboard.readText());
  const results = byId(page, 'result-line');

  /** Send `text` from the input box and wait for its turn to end with `reply`. */
  async function turn(text, reply) {
    const before = await results.count();
    await byId(page, 'input').fill(text);
    await byId(page, 'input').press('Enter');
    if (reply) await byId(page, 'message-assistant').filter({ hasText: reply }).waitFor();
    await results.nth(before).waitFor();
    await idle();
  }

  /** Click a copy button: it says "Copied", and the clipboard holds what it copied. */
  async function copied(button) {
    await page.evaluate(() => navigator.clipboard.writeText('(nothing copied yet)'));
    await button.click();
    await button.and(page.locator('[data-copied="true"]')).waitFor();
    const label = await button.evaluate((b) => [getComputedStyle(b, '::before').content, b.getAttribute('aria-label')]);
    expect(label[0] === '"Copied"' && label[1] === 'Copied', `after a copy the button shows ${JSON.stringify(label)}`);
    return clipboard();
  }

  await check('a session opens', page, async () => {
    await page.goto(`${BASE}/?token=${encodeURIComponent(TOKEN)}`);
    await byId(page, 'new-session').click();
    await page.locator('[data-testid="session-item"][data-selected="true"]').waitFor();
    await page.locator('[data-testid="input"]:enabled').waitFor();
  });

  const rust = byId(page, 'code-block').filter({ has: page.locator('[data-testid="code-language"]', { hasText: /^rust$/ }) });
  await check('fenced code is highlighted with token classes (no style attributes) and labelled with its language or "text"', page, async () => {
    await turn('code please', 'Here is the function');
    await rust.waitFor();
    const labels = await byId(page, 'code-language').allTextContents();
    expect(JSON.stringify(labels) === '["rust","text"]', `the code blocks are labelled ${JSON.stringify(labels)}`);
    const tokens = await rust.locator('code').evaluate((code) => ({
      keyword: [...code.querySelectorAll('.token.keyword')].map((t) => t.textContent),
      comment: [...code.querySelectorAll('.token.comment')].map((t) => t.textContent),
      text: code.textContent,
      styled: code.closest('.msg').querySelectorAll('[style]').length,
      colours: [...new Set([...code.querySelectorAll('.token')].map((t) => getComputedStyle(t).color))].length,
    }));
    expect(tokens.keyword.includes('fn'), `no keyword token "fn": ${JSON.stringify(tokens)}`);
    expect(tokens.comment.includes('// the sum'), `no comment token: ${JSON.stringify(tokens)}`);
    expect(tokens.text.includes('fn add(a: i32, b: i32) -> i32 {'), `the code's text changed: ${JSON.stringify(tokens.text)}`);
    expect(tokens.styled === 0, `${tokens.styled} elements of the reply carry a style attribute`);
    expect(tokens.colours >= 3, `the tokens show ${tokens.colours} colours`);
    const plain = await byId(page, 'code-block').nth(1).locator('.token').count();
    expect(plain === 0, `the block without a language has ${plain} tokens`);
  });

  await check('Copy on a code block copies its code and says "Copied"', page, async () => {
    const text = await copied(rust.locator('[data-testid="copy-code"]'));
    expect(text === 'fn add(a: i32, b: i32) -> i32 {\n    // the sum\n    a + b\n}\n', `the clipboard holds ${JSON.stringify(text)}`);
  });

  await check('Copy on a message copies its Markdown source', page, async () => {
    const message = byId(page, 'message-assistant').filter({ hasText: 'Here is the function' });
    const text = await copied(message.locator('[data-testid="copy-message"]'));
    expect(text.startsWith('Here is the function:\n\n```rust\nfn add(') && text.includes('\n```\n3\n```'), `the clipboard holds ${JSON.stringify(text)}`);
    await shot(page, 'controls-code');
  });

  await check("an edit's diff keeps its red and green rows and gains token colours; Copy copies it as a unified diff", page, async () => {
    await turn('edit the code', 'Edited and checked.');
    const diff = page.locator('[data-testid="tool-call"][data-tool="edit_file"] [data-testid="tool-diff"][data-diff-source="result"]');
    await diff.waitFor();
    const rows = await diff.evaluate((pre) => [...pre.children].filter((n) => n.tagName === 'SPAN').map((row) => ({
      kind: row.className,
      text: row.textContent,
      tokens: [...row.querySelectorAll('.token')].map((t) => t.className),
      colour: getComputedStyle(row).color,
      background: getComputedStyle(row).backgroundColor,
    })));
    const del = rows.find((r) => r.kind === 'diff-del');
    const add = rows.find((r) => r.kind === 'diff-add');
    expect(del && del.text === '-    a + b' && add && add.text === '+    a.wrapping_add(b)', `the rows: ${JSON.stringify(rows)}`);
    expect(del.colour !== add.colour && del.background !== add.background && add.background !== 'rgba(0, 0, 0, 0)', `removed and added rows look alike: ${JSON.stringify([del, add])}`);
    expect(add.tokens.some((c) => c.includes('function')), `the added row has no function token: ${JSON.stringify(add.tokens)}`);
    const text = await copied(diff.locator('[data-testid="copy-diff"]'));
    expect(text.startsWith('--- a/lib.rs\n+++ b/lib.rs\n@@ ') && text.includes('\n-    a + b\n+    a.wrapping_add(b)\n'), `the clipboard holds ${JSON.stringify(text)}`);
  });

  await check('Copy on a command copies the command', page, async () => {
    const call = page.locator('[data-testid="tool-call"][data-tool="bash"]');
    const summary = await call.locator(':scope > summary').textContent();
    expect(summary.startsWith('\u25b8 bash(command: "grep -n wrapping_add lib.rs")'), `the call says ${JSON.stringify(summary)}`);
    // The button is in the opened call (never inside its summary, a control itself).
    await call.locator(':scope > summary').click();
    expect((await call.locator(':scope > summary [data-testid="copy-command"]').count()) === 0, 'Copy inside the summary');
    const text = await copied(call.locator('[data-testid="copy-command"]'));
    expect(text === 'grep -n wrapping_add lib.rs', `the clipboard holds ${JSON.stringify(text)}`);
  });

  const model = byId(page, 'status-model');
  const mode = byId(page, 'permission-mode');
  const menu = byId(page, 'status-menu');
  await check('the model menu lists the profiles; the keyboard picks one, which sends /model and the status line follows', page, async () => {
    await model.filter({ hasText: /^scripted$/ }).waitFor();
    expect((await model.evaluate((b) => b.tagName)) === 'BUTTON', 'the model is not a button');
    await model.focus();
    await page.keyboard.press('Enter');
    await menu.waitFor();
    const items = await menu.locator('[role="option"]').allTextContents();
    expect(items.includes('scripted') && items.includes('web'), `the menu lists ${JSON.stringify(items)}`);
    expect((await model.getAttribute('aria-expanded')) === 'true', 'the button does not say the menu is open');
    const selected = await menu.locator('[aria-selected="true"]').allTextContents();
    expect(JSON.stringify(selected) === '["scripted"]', `selected: ${JSON.stringify(selected)}`);
    await shot(page, 'controls-menus');
    const target = items.indexOf('web') - items.indexOf('scripted');
    for (let i = 0; i < Math.abs(target); i++) await page.keyboard.press(target > 0 ? 'ArrowDown' : 'ArrowUp');
    const active = await menu.evaluate((list) => document.getElementById(list.getAttribute('aria-activedescendant')).textContent);
    expect(active === 'web', `the keys moved to ${JSON.stringify(active)}`);
    await page.keyboard.press('Enter');
    await menu.waitFor({ state: 'hidden' });
    await byId(page, 'message-command').filter({ hasText: '/model web' }).waitFor();
    await model.filter({ hasText: /^web$/ }).waitFor();
    const focused = await page.evaluate(() => document.activeElement && document.activeElement.dataset.testid);
    expect(focused === 'status-model', `after the pick the focus is on ${JSON.stringify(focused)}`);
  });

  await check('Esc closes a menu without sending anything', page, async () => {
    const commands = await byId(page, 'message-command').count();
    await mode.click();
    await menu.waitFor();
    await page.keyboard.press('Escape');
    await menu.waitFor({ state: 'hidden' });
    expect((await byId(page, 'message-command').count()) === commands, 'Esc sent a command');
  });

  await check('the mode menu lists the four modes; a click sends /mode and the status line follows', page, async () => {
    await mode.click();
    await menu.waitFor();
    const items = await menu.locator('[role="option"]').allTextContents();
    expect(JSON.stringify(items) === '["default","accept-edits","plan","bypass"]', `the menu lists ${JSON.stringify(items)}`);
    await menu.locator('[role="option"][data-value="plan"]').click();
    await page.locator('[data-testid="permission-mode"][data-mode="plan"]').waitFor();
    await byId(page, 'message-command').filter({ hasText: '/mode plan' }).waitFor();
    expect((await mode.textContent()) === 'mode plan', `the status line says ${JSON.stringify(await mode.textContent())}`);
  });

  await check('the turn line says the turn in words, with its duration, tokens and cost', page, async () => {
    const first = await results.first().textContent();
    expect(/^Done · \d+\.\d s · [\d,]+ tokens$/.test(first), `the first turn line says ${JSON.stringify(first)}`);
    await turn('measure it', 'Measured.');
    const text = await results.last().textContent();
    expect(/^Done · \d+\.\d s · 1,500 tokens · \$0\.0081$/.test(text), `the turn line says ${JSON.stringify(text)}`);
    expect(!text.includes('end_turn'), 'the turn line names the stop reason');
  });

  await check('thinking is open while it streams; an interrupted turn says "Stopped"', page, async () => {
    const before = await results.count();
    await byId(page, 'input').fill('ponder this');
    await byId(page, 'input').press('Enter');
    const thinking = byId(page, 'thinking').filter({ hasText: 'Pondering' });
    await thinking.waitFor();
    await page.waitForFunction(() => {
      const node = [...document.querySelectorAll('[data-testid="thinking"]')].pop();
      return node && node.open && node.textContent.includes('Pondering');
    });
    await byId(page, 'interrupt').click();
    await results.nth(before).waitFor();
    const text = await results.nth(before).textContent();
    expect(text.startsWith('Stopped · '), `the turn line says ${JSON.stringify(text)}`);
    await idle();
  });

  await check('in a conversation taller than the window, opened thinking is not flattened to nothing', page, async () => {
    await turn('tall please', 'Line 50 of a long answer.');
    const tall = await page.evaluate(() => {
      const conv = document.getElementById('conversation');
      return { scroll: conv.scrollHeight, client: conv.clientHeight };
    });
    expect(tall.scroll > tall.client * 1.5, `the conversation is not taller than its window: ${JSON.stringify(tall)}`);
    await turn('think it over', 'Thought it over.');
    const thinking = byId(page, 'thinking').last();
    // Opened (a click on its head, when it has one), it must take room.
    const head = thinking.locator('summary');
    if ((await head.count()) > 0 && !(await thinking.evaluate((d) => d.open))) await head.click();
    await thinking.scrollIntoViewIfNeeded();
    const box = await thinking.evaluate((node) => {
      const text = node.querySelector('.thinking-text') || node;
      return { outer: node.getBoundingClientRect().height, text: text.getBoundingClientRect().height, content: text.textContent };
    });
    expect(box.content.includes('First the facts'), `the thinking shows ${JSON.stringify(box.content)}`);
    expect(box.outer > 20 && box.text > 10, `the opened thinking is flattened: ${JSON.stringify(box)}`);
  });

  await check('thinking closes once the answer starts, saying how long it took; a click opens it', page, async () => {
    await turn('think it over again', 'Thought it over.');
    const thinking = byId(page, 'thinking').last();
    const head = await thinking.locator('summary').textContent();
    expect(/^Thinking · \d+\.\d s$/.test(head), `the thinking says ${JSON.stringify(head)}`);
    expect(!(await thinking.evaluate((d) => d.open)), 'the thinking is still open after the answer');
    await thinking.locator('summary').click();
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="thinking"]')].pop().open);
  });

  await check('an error shows once, as a card; the turn line says "Failed"; Retry sends the query again', page, async () => {
    const before = await results.count();
    await byId(page, 'input').fill('break it');
    await byId(page, 'input').press('Enter');
    await results.nth(before).waitFor();
    await idle();
    const errors = byId(page, 'error');
    await errors.first().waitFor();
    const shown = await page.evaluate(() => [...document.querySelectorAll('#conversation *')]
      .filter((n) => n.children.length === 0 && n.textContent.includes('the scripted provider refused')).length);
    const cards = await errors.count();
    expect(cards === 1 && shown === 1, `the error is shown ${shown} times in ${cards} cards`);
    const line = await results.nth(before).textContent();
    expect(line.startsWith('Failed · ') && !line.includes('refused'), `the turn line says ${JSON.stringify(line)}`);
    await shot(page, 'controls-error');
    await errors.first().locator('[data-testid="retry"]').click();
    await byId(page, 'message-assistant').filter({ hasText: 'Worked on the second try.' }).waitFor();
    const users = await byId(page, 'message-user').filter({ hasText: 'break it' }).count();
    expect(users === 2, `the query was sent ${users} times`);
    await idle();
  });

  await check('a message whose POST fails is marked "Not sent", and its Retry sends it', page, async () => {
    let refused = 0;
    await page.route('**/v1/sessions/*/input', (route) => {
      refused += 1;
      return route.abort('connectionrefused');
    }, { times: 1 });
    await byId(page, 'input').fill('hello after a failure');
    await byId(page, 'input').press('Enter');
    const mark = byId(page, 'message-not-sent').filter({ hasText: 'hello after a failure' });
    await mark.waitFor();
    expect(refused === 1, `the input was refused ${refused} times`);
    const text = await mark.textContent();
    expect(text.includes('Not sent'), `the mark says ${JSON.stringify(text)}`);
    await mark.locator('[data-testid="retry-send"]').click();
    await byId(page, 'message-user').filter({ hasText: 'hello after a failure' }).waitFor();
    await mark.waitFor({ state: 'detached' });
    await byId(page, 'message-assistant').filter({ hasText: 'Hello from the scripted model.' }).waitFor();
    await idle();
  });

  await check('after a reload the conversation shows each error once and no "end_turn"', page, async () => {
    await page.reload();
    await byId(page, 'message-assistant').filter({ hasText: 'Hello from the scripted model.' }).waitFor();
    const cards = await byId(page, 'error').count();
    expect(cards === 1, `after the reload ${cards} error cards`);
    const lines = await results.allTextContents();
    expect(lines.length > 0 && lines.every((l) => /^(Done|Stopped|Failed) · /.test(l)), `the turn lines: ${JSON.stringify(lines)}`);
    await rust.waitFor();
    expect((await rust.locator('.token.keyword').count()) > 0, 'after the reload the code is not highlighted');
  });
}
