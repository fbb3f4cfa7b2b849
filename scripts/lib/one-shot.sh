# Sourced by measure-run.sh and order-symbols.sh: what both need to run a
# one-shot `agentbus run` as a new user would, against the scripted model.
#
#   one_shot_build         build the release agentbus and scripted-model
#   one_shot_start NAME    start the scripted model on $scratch/script.toml
#                          (write it first) and make a fresh HOME whose
#                          config points at it; sets $url and $home. NAME
#                          prefixes the error when the model does not start.
#
# Sets $root, $target, $agentbus, $model and $scratch (a folder removed on
# exit, with the model process).

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
agentbus=$target/release/agentbus
model=$target/release/scripted-model
scratch=$(mktemp -d)
model_pid=
cleanup() {
    if [[ -n $model_pid ]]; then kill "$model_pid" 2>/dev/null || true; wait "$model_pid" 2>/dev/null || true; fi
    rm -rf "$scratch"
}
trap cleanup EXIT

one_shot_build() {
    (cd "$root" && cargo build --release --quiet -p agentbus -p agentbus-testkit --bin agentbus --bin scripted-model)
}

one_shot_start() {
    # The server says where it listens on the first line of its stdout.
    exec 3< <("$model" --script "$scratch/script.toml" 2> "$scratch/model.err")
    model_pid=$!
    local line=
    read -r -t 10 line <&3 || true
    url=${line#listening on }
    [[ $url == http://* ]] || { echo "$1: the scripted model did not start:" >&2; cat "$scratch/model.err" >&2; exit 1; }
    home=$scratch/home
    mkdir -p "$home/.config/agentbus" "$scratch/workspace"
    printf 'model = "s"\n[models.s]\nprovider = "openai"\nmodel = "scripted"\nbase_url = "%s/v1"\n' "$url" \
        > "$home/.config/agentbus/config.toml"
}
