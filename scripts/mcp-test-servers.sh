#!/usr/bin/env bash
# Install the npm MCP reference servers the tests run against, into a cache
# outside the source tree, and print the directory holding their commands.
#
#   scripts/mcp-test-servers.sh          -> prints e.g. ~/.cache/agentbus/mcp-servers/node_modules/.bin
#
# Installed: @modelcontextprotocol/server-everything (mcp-server-everything)
# and @modelcontextprotocol/server-filesystem (mcp-server-filesystem).
# A second run with the same versions does nothing.
set -euo pipefail

EVERYTHING="@modelcontextprotocol/server-everything@2026.8.31"
FILESYSTEM="@modelcontextprotocol/server-filesystem@2026.8.31"
DIR="${AGENTBUS_MCP_SERVERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agentbus/mcp-servers}"
BIN="$DIR/node_modules/.bin"
STAMP="$DIR/installed-$(printf '%s %s' "$EVERYTHING" "$FILESYSTEM" | md5sum | cut -c1-12)"

if [ ! -f "$STAMP" ] || [ ! -x "$BIN/mcp-server-everything" ] || [ ! -x "$BIN/mcp-server-filesystem" ]; then
  mkdir -p "$DIR"
  [ -f "$DIR/package.json" ] || echo '{"name": "agentbus-mcp-test-servers", "private": true}' >"$DIR/package.json"
  echo "mcp-test-servers: installing $EVERYTHING $FILESYSTEM into $DIR" >&2
  npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error "$EVERYTHING" "$FILESYSTEM" >&2
  rm -f "$DIR"/installed-*
  touch "$STAMP"
fi
echo "$BIN"
