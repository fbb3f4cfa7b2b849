// What every browser suite shares (page.test.mjs and tests/browser/suites/):
// named checks that stop at the first failure with a screenshot and what
// the page shows, screenshots, polling for what is outside the page, and
// GETs of the API. Reads AGENTBUS_URL, AGENTBUS_TOKEN, SCREENSHOT, SHOTS and
// AGENTBUS_TEST_TIMEOUT_MS from the environment.

const env = process.env;
const BASE = (env.AGENTBUS_URL || '').replace(/\/+$/, '');
const TOKEN = env.AGENTBUS_TOKEN || '';
const SCREENSHOT = env.SCREENSHOT || '/tmp/agentbus-page.png';
const SHOTS = env.SHOTS || '/tmp/agentbus-web-';
const TIMEOUT = Number(env.AGENTBUS_TEST_TIMEOUT_MS || 30000);

export const byId = (page, id) => page.locator(`[data-testid="${id}"]`);

/** A screenshot of what the page shows now, as SHOTS + name + .png. */
export async function shot(page, name) {
  const path = `${SHOTS}${name}.png`;
  await page.screenshot({ path });
  console.log(`  screenshot: ${path}`);
}
export let passed = 0;

/** Run one named check; on failure: screenshot, message, exit 1. */
export async function check(name, page, fn) {
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

export class Failed extends Error {}

/** What the page shows, for a failure message: banner, buttons, the last events. */
export async function pageText(page) {
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
      const status = document.getElementById('status-line');
      if (status && !status.hidden) lines.push(`status line: ${text(status)}`);
      const events = [...document.querySelectorAll('#conversation > [data-testid]')].slice(-15);
      for (const el of events) lines.push(`[${el.dataset.testid}] ${text(el).slice(0, 200)}`);
      return lines.map((l) => `    ${l}`).join('\n');
    })
    .catch((e) => `    (could not read the page: ${e.message})`);
}

/** Fail unless `cond`, saying what was found. */
export function expect(cond, message) {
  if (!cond) throw new Error(message);
}

/** GET an API path with the token; its JSON. */
export async function apiGet(path) {
  const answer = await fetch(`${BASE}${path}`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  expect(answer.ok, `GET ${path} answered ${answer.status}`);
  return answer.json();
}

/** Wait until `fn()` is true (polled; for what is outside the page, such as a file on disk). */
export async function until(what, fn) {
  const deadline = Date.now() + TIMEOUT;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

