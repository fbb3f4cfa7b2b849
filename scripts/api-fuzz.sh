#!/usr/bin/env bash
# Fuzz the HTTP API of a real `agentbus serve` with schemathesis, against the
# OpenAPI document the daemon itself serves (/v1/openapi.json).
#
#   scripts/api-fuzz.sh            # build, start, fuzz, check, stop
#   AGENTBUS_API_FUZZ_EXAMPLES=200 scripts/api-fuzz.sh   # more cases per operation
#   AGENTBUS_API_FUZZ_SEED=7 scripts/api-fuzz.sh          # other cases: random, from seed 7
#
# What runs: the built `agentbus` binary, with a temporary workspace, data
# directory, home and configuration (an API token, and one model profile
# pointing at the test kit's `scripted-model` on a free port), and
# schemathesis with every check: no 5xx, and every answer's status, content
# type, headers and body as the document says; a request without the token
# refused; a deleted session gone; valid input accepted and invalid input
# refused. Its generation is deterministic (the same cases every run) and
# bounded by AGENTBUS_API_FUZZ_EXAMPLES cases per operation (default 40). A
# session with an approval request waiting is set up first and its ids given
# to schemathesis, so the approvals route is reached beyond its 404.
# Afterwards the daemon must still be alive and healthy, with no panic in
# its log, and a fuzzed decision must have been accepted for that request
# (and shown settled in the session, unless the fuzzer deleted it since).
# scripts/api_fuzz_hooks.py gives `POST /v1/sessions` a workspace
# that exists where the schema cannot say so (see there).
#
# Fuzzed requests may name any file: `/save PATH` writes there. So when run
# as root (as CI is), the daemon runs as the user `nobody`, which can write
# only its own data directory and the world-writable temporary folders.
#
# The SSE streams are fuzzed too: schemathesis reads at most one event of
# each, and fewer cases (scripts/api-fuzz.toml). Left out: the WebSocket
# (GET /v1/sessions/{id}/ws), since schemathesis cannot make the upgrade;
# tests/all/serve.rs covers it, and tests/all/api_contract.rs its JSON
# refusal of a plain GET.
#
# schemathesis (pinned below) is installed with pip into a virtualenv in
# ~/.cache/agentbus/schemathesis (or $AGENTBUS_SCHEMATHESIS_DIR), never into
# the source tree; a second run with the same version installs nothing.
# Exits non-zero on any failure, after printing the daemon's log.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
EXAMPLES="${AGENTBUS_API_FUZZ_EXAMPLES:-40}"
# Deterministic (the same cases every run, as CI wants) unless a seed is
# given to explore other cases.
if [ -n "${AGENTBUS_API_FUZZ_SEED:-}" ]; then
    generation=(--seed "$AGENTBUS_API_FUZZ_SEED")
else
    generation=(--generation-deterministic)
fi
TOKEN="api-fuzz-token"

# --- schemathesis, cached outside the tree -----------------------------------
dir="${AGENTBUS_SCHEMATHESIS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agentbus/schemathesis}"
venv="$dir/venv"
stamp="$dir/installed-$SCHEMATHESIS_VERSION"
if [ ! -f "$stamp" ] || [ ! -x "$venv/bin/schemathesis" ]; then
    echo "api-fuzz: installing schemathesis $SCHEMATHESIS_VERSION into $venv" >&2
    mkdir -p "$dir"
    rm -rf "$venv" "$dir"/installed-*
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION" >&2
    touch "$stamp"
fi
python="$venv/bin/python"

# --- the binaries ------------------------------------------------------------
echo "== api-fuzz: building agentbus and scripted-model" >&2
# What the README's test command builds (`cargo test --workspace` puts the
# binaries in target/debug): after it nothing is rebuilt, where `cargo build
# -p agentbus` would rebuild much of the tree with other features.
cargo test --quiet --workspace --no-run
target_dir=$(cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
bin="${target_dir:-$PWD/target}/debug"

# --- the daemon and its model ------------------------------------------------
work=$(mktemp -d)
model_pid=""
daemon_pid=""
stop() {
    # Only the two processes this script started, by their ids.
    for pid in "$daemon_pid" "$model_pid"; do
        if [ -n "$pid" ]; then
            kill "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    daemon_pid=""
    model_pid=""
}
trap 'stop; rm -rf "$work"' EXIT

# Wait for `pattern` (a sed expression printing the URL) in `file` while
# process `pid` lives; print the URL.
wait_for_url() {
    local file=$1 pattern=$2 pid=$3 url=""
    for _ in $(seq 1 300); do
        url=$(sed -n "$pattern" "$file")
        if [ -n "$url" ]; then
            echo "$url"
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            break
        fi
        sleep 0.1
    done
    return 1
}

mkdir -p "$work/workspace" "$work/home/.config" "$work/data"
as_user=()
daemon="$bin/agentbus"
if [ "$(id -u)" -eq 0 ]; then
    chmod 755 "$work"
    chown -R nobody "$work/home" "$work/data"
    as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
    # The build may sit where `nobody` cannot reach (under /root, say).
    cp "$bin/agentbus" "$work/agentbus"
    chmod 755 "$work/agentbus"
    daemon="$work/agentbus"
fi
"$bin/scripted-model" --script tests/fixtures/scripts/api_fuzz.toml --port 0 \
    >"$work/model.out" 2>"$work/model.log" &
model_pid=$!
if ! model_url=$(wait_for_url "$work/model.out" 's|^listening on \(http://[^ ]*\)$|\1/v1|p' "$model_pid"); then
    echo "api-fuzz: scripted-model did not start:" >&2
    cat "$work/model.log" >&2
    exit 1
fi

cat >"$work/config.toml" <<EOF
model = "scripted"
[server]
token = "$TOKEN"
[models.scripted]
provider = "openai"
model = "scripted"
base_url = "$model_url"
max_retries = 0
EOF

# The daemon runs in the temporary directory: whatever a fuzzed request
# makes it write (a `/save` of a relative path, say) stays there.
(
    cd "$work"
    exec "${as_user[@]}" env -u AGENTBUS_CONFIG -u AGENTBUS_DATA_DIR HOME="$work/home" \
        XDG_CONFIG_HOME="$work/home/.config" RUST_LOG=info \
        "$daemon" --config "$work/config.toml" --workspace "$work/workspace" \
        --data-dir "$work/data" serve --listen 127.0.0.1:0
) >"$work/daemon.out" 2>"$work/daemon.log" &
daemon_pid=$!
if ! api_url=$(wait_for_url "$work/daemon.log" 's|^agentbus: listening on \(http://[^ ]*\)$|\1|p' "$daemon_pid"); then
    echo "api-fuzz: agentbus serve did not start:" >&2
    cat "$work/daemon.log" >&2
    exit 1
fi
echo "== api-fuzz: agentbus serve on $api_url, model on $model_url" >&2

fail() {
    echo "api-fuzz: $1; the daemon's log (last 100 lines):" >&2
    tail -n 100 "$work/daemon.log" >&2
    exit 1
}

# --- an approval request waiting, for the approvals route -------------------
# Without one every decision would be a 404. A session asks to run `bash`
# (tests/fixtures/scripts/api_fuzz.toml); schemathesis gets its ids.
if ! approval=$("$python" - "$api_url" "$TOKEN" <<'EOF'
import json, sys, time, urllib.request
url, token = sys.argv[1], sys.argv[2]
def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method, headers={
        "Authorization": "Bearer " + token, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)
session = call("POST", "/v1/sessions", {})["id"]
call("POST", f"/v1/sessions/{session}/input", {"text": "fuzz approval"})
for _ in range(100):  # a hang guard: the request comes in milliseconds
    events = call("GET", f"/v1/sessions/{session}/messages")["events"]
    waiting = [e for e in events if e.get("type") == "approval_request"]
    if waiting:
        print(session, waiting[0]["request_id"])
        sys.exit(0)
    time.sleep(0.1)
sys.exit("no approval_request event arrived")
EOF
); then
    fail "could not set up an approval request"
fi
read -r approval_session approval_request <<<"$approval"
{
    cat scripts/api-fuzz.toml
    cat <<EOF

# Written by scripts/api-fuzz.sh: the approval request waiting.
[[operations]]
include-path = "/v1/sessions/{id}/approvals/{request_id}"
parameters = { "path.id" = "$approval_session", "path.request_id" = "$approval_request" }
EOF
} >"$work/api-fuzz.toml"

# --- schemathesis -------------------------------------------------------------
echo "== api-fuzz: schemathesis $SCHEMATHESIS_VERSION, $EXAMPLES cases per operation" >&2
status=0
hooks="$PWD/scripts"
# In the temporary folder: schemathesis keeps a cache in ./.schemathesis.
(cd "$work" && PYTHONPATH="$hooks" SCHEMATHESIS_HOOKS=api_fuzz_hooks \
    AGENTBUS_API_FUZZ_WORKSPACE="$work/workspace" \
    AGENTBUS_API_FUZZ_DECISIONS="$work/decisions" \
    "$venv/bin/schemathesis" --config-file "$work/api-fuzz.toml" run "$api_url/v1/openapi.json" \
    --header "Authorization: Bearer $TOKEN" \
    --checks all \
    --max-examples "$EXAMPLES" \
    "${generation[@]}" \
    --workers 1 \
    --request-timeout 10 \
    --exclude-path-regex '^/v1/sessions/\{id\}/ws$' \
    --no-color) || status=$?
if [ "$status" -ne 0 ]; then
    fail "schemathesis found failures (exit status $status)"
fi

# --- still alive and well ----------------------------------------------------
if ! kill -0 "$daemon_pid" 2>/dev/null; then
    fail "the daemon died during the run"
fi
if ! "$python" - "$api_url" "$TOKEN" "$approval_session" "$work/decisions" <<'EOF'; then
import json, os, sys, urllib.error, urllib.request
url, token, session, decisions = sys.argv[1:5]
def get(path):
    request = urllib.request.Request(url + path, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200, (path, response.status)
        return json.load(response)
health = get("/v1/health")
assert health.get("status") == "ok", health
print(f"api-fuzz: the daemon is healthy after the run ({health['sessions_loaded']} sessions loaded)")
# Each decision the server accepted, as the hooks wrote it down.
accepted = open(decisions).read().splitlines() if os.path.exists(decisions) else []
assert accepted, "no fuzzed decision was accepted: the approval route was not reached"
try:
    events = get(f"/v1/sessions/{session}/messages")["events"]
except urllib.error.HTTPError as error:
    # The stateful phase may delete the session once it is idle.
    assert error.code == 404, (session, error.code)
    print(f"api-fuzz: a fuzzed decision was accepted ({accepted[0]}); the session was deleted later")
else:
    settled = [e for e in events if e.get("subtype") == "approval_resolved"]
    assert settled, f"a decision was accepted ({accepted[0]}) but the session shows none settled"
    print(f"api-fuzz: a fuzzed decision settled the approval request: {settled[0].get('message')}")
EOF
    fail "the daemon is not healthy after the run, or the approval route was not reached"
fi
if grep -q "panicked" "$work/daemon.log"; then
    fail "the daemon's log shows a panic"
fi
stop
echo "== api-fuzz: passed"
