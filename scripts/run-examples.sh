#!/usr/bin/env bash
# Run every example of the library face (examples/*.rs) against the scripted
# model server: for each example, start `scripted-model` with its script
# (examples/scripts/NAME.toml) on a free port, run the example with
# AGENTBUS_EXAMPLE_BASE_URL pointing at it (and AGENTBUS_EXAMPLE_CHECK set, so
# that what the script makes the model do is checked), require exit status 0
# and no protocol violation in the server's log, and stop the server. Exits non-zero at the first failure, after showing the
# server's log.
#
# Usage: scripts/run-examples.sh [NAME...]   (default: every example)
set -euo pipefail
cd "$(dirname "$0")/.."

examples=("$@")
if [ ${#examples[@]} -eq 0 ]; then
    examples=(multi_turn long_conversation persistence custom_tool)
fi

echo "== building the examples and the scripted model"
# What the README's test command builds (it builds the examples and the
# binaries too): after it nothing is rebuilt, where `cargo build -p
# agentbus --examples` would rebuild much of the tree with other features.
cargo test --quiet --workspace --no-run
target_dir=$(cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
scripted_model="${target_dir:-target}/debug/scripted-model"

work=$(mktemp -d)
server_pid=""
stop_server() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}
trap 'stop_server; rm -rf "$work"' EXIT

for name in "${examples[@]}"; do
    script="examples/scripts/$name.toml"
    if [ ! -f "$script" ]; then
        echo "no script $script for example $name" >&2
        exit 1
    fi
    echo "== example $name"
    # Port 0: the server picks a free port and prints it.
    : >"$work/$name.out"
    "$scripted_model" --script "$script" --port 0 >"$work/$name.out" 2>"$work/$name.log" &
    server_pid=$!
    base_url=""
    for _ in $(seq 1 100); do
        base_url=$(sed -n 's|^listening on \(http://[^ ]*\)$|\1/v1|p' "$work/$name.out")
        if [ -n "$base_url" ]; then
            break
        fi
        if ! kill -0 "$server_pid" 2>/dev/null; then
            break
        fi
        sleep 0.1
    done
    if [ -z "$base_url" ]; then
        echo "scripted-model did not start for $name:" >&2
        cat "$work/$name.log" >&2
        exit 1
    fi
    status=0
    AGENTBUS_EXAMPLE_BASE_URL="$base_url" AGENTBUS_EXAMPLE_CHECK=1 \
        "${target_dir:-target}/debug/examples/$name" || status=$?
    stop_server
    if [ "$status" -ne 0 ]; then
        echo "example $name exited with status $status; the scripted model's log:" >&2
        cat "$work/$name.log" >&2
        exit 1
    fi
    # A request a real provider would reject, or a scripted call to a tool
    # the request did not offer, fails the example too.
    if grep -q '^  violation: ' "$work/$name.log"; then
        echo "example $name: the scripted model saw protocol violations; its log:" >&2
        cat "$work/$name.log" >&2
        exit 1
    fi
done
echo "== all examples passed: ${examples[*]}"
