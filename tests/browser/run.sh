#!/usr/bin/env bash
# Browser test of the web page (src/web) against a running `agentbus serve`.
#
#   AGENTBUS_URL=http://127.0.0.1:PORT AGENTBUS_TOKEN=TOKEN \
#   EXPECTED_REPLY='text of the scripted reply' SLOW_PROMPT='prompt whose reply streams slowly' \
#   tests/browser/run.sh
#
#   PAGE_SUITE=rewind AGENTBUS_URL=... AGENTBUS_TOKEN=... REWIND_FILE=/abs/notes.txt \
#   REWIND_PROMPT='prompt whose turn edits it' CONFLICT_PROMPT='another such prompt' \
#   tests/browser/run.sh
#
#   PAGE_SUITE=controls AGENTBUS_URL=... AGENTBUS_TOKEN=... tests/browser/run.sh
#   (suites/controls.mjs against tests/fixtures/scripts/web_controls.toml)
#   PAGE_SUITE=a11y AGENTBUS_URL=... AGENTBUS_TOKEN=... tests/browser/run.sh
#   (suites/a11y.mjs; it asks on stdout for a restart of the server)
#   PAGE_SUITE=approvals AGENTBUS_URL=... AGENTBUS_TOKEN=... WORKSPACE=/abs/dir \
#   tests/browser/run.sh   (suites/approvals.mjs; fixture web_approvals.toml)
#   PAGE_SUITE=sessions AGENTBUS_URL=... AGENTBUS_TOKEN=... LONG_SESSION=ID \
#   SLOW_PROMPT='prompt whose reply streams slowly' tests/browser/run.sh
#   (suites/sessions.mjs: the session list, and a long session's turns)
#
# Optional: FIRST_PROMPT (the first message, default "hello"), SCREENSHOT
# (default /tmp/agentbus-page.png), CHROMIUM (default /usr/bin/chromium),
# AGENTBUS_TEST_TIMEOUT_MS (each wait, default 30000).
#
# Nothing is installed into the source tree: playwright-core (the version in
# package.json) goes to ~/.cache/agentbus/browser-test, and Debian's chromium
# is installed with apt-get when it is missing and we are root. Playwright's
# own browser download is never used. A second run installs nothing.
# `run.sh --install-only` installs both and exits (what .ci/run does first).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
INSTALL_ONLY=0
if [ "${1:-}" = "--install-only" ]; then INSTALL_ONLY=1; fi

# PAGE_SUITE=rewind runs the rewind checks alone (see page.test.mjs);
# PAGE_SUITE=approvals the suite in suites/approvals.mjs.
case "${PAGE_SUITE:-page}" in
  page) REQUIRED="AGENTBUS_URL AGENTBUS_TOKEN EXPECTED_REPLY SLOW_PROMPT" ;;
  rewind) REQUIRED="AGENTBUS_URL AGENTBUS_TOKEN REWIND_FILE REWIND_PROMPT CONFLICT_PROMPT" ;;
  controls) REQUIRED="AGENTBUS_URL AGENTBUS_TOKEN" ;;
  # suites/a11y.mjs: asks on stdout for the server to be stopped and
  # started again, and reads the answers on stdin (tests/all/serve.rs).
  a11y) REQUIRED="AGENTBUS_URL AGENTBUS_TOKEN" ;;
  approvals) REQUIRED="AGENTBUS_URL AGENTBUS_TOKEN WORKSPACE" ;;
  sessions) REQUIRED="AGENTBUS_URL AGENTBUS_TOKEN LONG_SESSION SLOW_PROMPT" ;;
  *) echo "browser test: PAGE_SUITE is page, rewind, controls, a11y, approvals or sessions, not ${PAGE_SUITE}" >&2; exit 2 ;;
esac
for var in $REQUIRED; do
  if [ "$INSTALL_ONLY" = 0 ] && [ -z "${!var:-}" ]; then
    echo "browser test: $var is not set (see the top of $0)" >&2
    exit 2
  fi
done

# The test's own modules must parse too.
for module in "$HERE"/*.mjs "$HERE"/suites/*.mjs; do
  if [ -f "$module" ] && ! node --check "$module"; then
    echo "browser test: $module does not parse" >&2
    exit 1
  fi
done

# The page's JavaScript must at least parse: every module of src/web/js, as
# a module (`--input-type=module` reads the source from stdin).
for module in "$HERE"/../../src/web/js/*.js; do
  if ! node --input-type=module --check <"$module"; then
    echo "browser test: $module does not parse as an ES module" >&2
    exit 1
  fi
done
# And the test's own modules: the shared helpers and the suites.
for module in "$HERE"/lib.mjs "$HERE"/suites/*.mjs; do
  if ! node --check "$module"; then
    echo "browser test: $module does not parse" >&2
    exit 1
  fi
done

# Debian's Chromium.
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
export CHROMIUM
if [ ! -x "$CHROMIUM" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "browser test: installing chromium (apt-get)" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
  else
    echo "browser test: $CHROMIUM not found; install it with: sudo apt-get install -y chromium" >&2
    exit 2
  fi
fi

# playwright-core, into a cache folder (idempotent: a stamp per package.json).
DIR="${AGENTBUS_BROWSER_TEST_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agentbus/browser-test}"
STAMP="$DIR/installed-$(md5sum <"$HERE/package.json" | cut -c1-12)"
mkdir -p "$DIR"
exec 9>"$DIR/.lock"
flock 9 # two runs at once install once
if [ ! -f "$STAMP" ] || [ ! -f "$DIR/node_modules/playwright-core/package.json" ]; then
  echo "browser test: installing playwright-core into $DIR" >&2
  cp "$HERE/package.json" "$DIR/package.json"
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error >&2
  rm -f "$DIR"/installed-*
  touch "$STAMP"
fi
exec 9>&-

if [ "$INSTALL_ONLY" = 1 ]; then
  echo "browser test: $CHROMIUM and playwright-core in $DIR are ready" >&2
  exit 0
fi

NODE_PATH="$DIR/node_modules" exec node "$HERE/page.test.mjs"
