#!/usr/bin/env bash
# Install acpx, the npm Agent Client Protocol client the `agentbus acp`
# tests drive, into a cache outside the source tree, and print the path of
# its command.
#
#   scripts/acpx.sh          -> prints e.g. ~/.cache/agentbus/acpx/node_modules/.bin/acpx
#
# A second run with the same version does nothing.
set -euo pipefail

ACPX="acpx@0.19.1"
DIR="${AGENTBUS_ACPX_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agentbus/acpx}"
BIN="$DIR/node_modules/.bin/acpx"
STAMP="$DIR/installed-$(printf '%s' "$ACPX" | md5sum | cut -c1-12)"

if [ ! -f "$STAMP" ] || [ ! -x "$BIN" ]; then
  mkdir -p "$DIR"
  [ -f "$DIR/package.json" ] || echo '{"name": "agentbus-acpx", "private": true}' >"$DIR/package.json"
  echo "acpx: installing $ACPX into $DIR" >&2
  npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error "$ACPX" >&2
  rm -f "$DIR"/installed-*
  touch "$STAMP"
fi
echo "$BIN"
