# Sourced by measure-run.sh, order-symbols.sh and check-layout-list.sh:
# what they need to run a one-shot `agentbus run` as a new user would,
# against the scripted model.
#
#   one_shot_use PROFILE   run the binaries of $target/PROFILE (release
#                          until said otherwise)
#   one_shot_build         build the release agentbus and scripted-model
#   one_shot_start NAME    start the scripted model on $scratch/script.toml
#                          (write it first) and make a fresh HOME whose
#                          config points at it; sets $url and $home. NAME
#                          prefixes the error when the model does not start.
#   one_shot_callgrind NAME OUT
#                          `agentbus run "hi"` twice under valgrind's
#                          callgrind, a new store then an existing one
#                          (two of the script's responses); the call
#                          graphs in OUT.1 and OUT.2
#   one_shot_executed BINARY FORM CALLGRAPH...
#                          the functions of BINARY the call graphs
#                          executed, sorted, one a line, in FORM: `names`
#                          (demangled), `keys` (the key, scripts/lib/
#                          symbol-key.sed, a tab, the demangled name) or
#                          `hashes` (a hash of the demangled name, as
#                          scripts/run-symbols.debug keeps them, a tab,
#                          the name)
#
# Sets $root, $target, $agentbus, $model and $scratch (a folder removed on
# exit, with the model process).

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
scratch=$(mktemp -d)
model_pid=
cleanup() {
    if [[ -n $model_pid ]]; then kill "$model_pid" 2>/dev/null || true; wait "$model_pid" 2>/dev/null || true; fi
    rm -rf "$scratch"
}
trap cleanup EXIT

one_shot_use() {
    agentbus=$target/$1/agentbus
    model=$target/$1/scripted-model
}
one_shot_use release

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

one_shot_callgrind() {
    command -v valgrind > /dev/null || { echo "$1: valgrind is missing (apt-get install valgrind)" >&2; exit 1; }
    # A new store for the first run, whatever ran before.
    rm -rf "$home/.local" "$scratch/workspace"
    mkdir -p "$scratch/workspace"
    local run
    for run in 1 2; do
        (cd "$scratch/workspace" && env -i PATH="$PATH" HOME="$home" \
            valgrind --tool=callgrind --demangle=no --callgrind-out-file="$2.$run" \
            "$agentbus" run "hi" > "$scratch/out.$run" 2> "$scratch/err.$run") || {
            echo "$1: run $run failed:" >&2; cat "$scratch/err.$run" >&2; exit 1; }
    done
}

one_shot_executed() {
    local binary=$1 form=$2
    shift 2
    command -v nm > /dev/null || { echo "nm is missing (apt-get install binutils)" >&2; exit 1; }
    # Each defined symbol, its key and its demangled name, a line each.
    nm -p --defined-only "$binary" | awk '{ print $3 }' > "$scratch/symbols"
    paste -d '\t' "$scratch/symbols" <(sed -E -f "$root/scripts/lib/symbol-key.sed" "$scratch/symbols") \
        <(nm -p --defined-only --demangle "$binary" | cut -d ' ' -f 3- | sed -E 's/\.llvm\.[0-9]+$//') \
        > "$scratch/defined"
    python3 - "$form" "$scratch/defined" "$@" <<'PY'
import hashlib, re, sys
form, defined, graphs = sys.argv[1], sys.argv[2], sys.argv[3:]
names = {}
for line in open(defined):
    symbol, key, readable = line.rstrip("\n").split("\t", 2)
    if form == "keys":
        names[symbol] = key + "\t" + readable
    elif form == "hashes":
        names[symbol] = hashlib.sha1(readable.encode()).hexdigest()[:16] + "\t" + readable
    else:
        names[symbol] = readable
executed = set()
for path in graphs:
    for line in open(path):
        match = re.match(r"^c?fn=\(\d+\) (.+)$", line.rstrip("\n"))
        if match and match.group(1) in names:
            executed.add(names[match.group(1)])
print("\n".join(sorted(executed)))
PY
}
