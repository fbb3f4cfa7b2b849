#!/usr/bin/env bash
# Measures a one-shot `agentbus run "hi"` as a new user would run it: the
# release binary, a fresh temporary HOME (its config in
# ~/.config/agentbus/config.toml, its store in ~/.local/share/agentbus), a
# fresh workspace as the current directory, and the scripted model server
# (tests/kit) on loopback as the model. Each run goes through
# `/usr/bin/time -v`; the script prints every run's peak resident memory
# (RSS) and wall time, then the median and the maximum of each.
#
#   scripts/measure-run.sh [RUNS]      (default 10)
#
# Builds the release binaries first (`cargo build --release -p agentbus -p agentbus-testkit --bin agentbus
# --bin scripted-model`), into $CARGO_TARGET_DIR (or ./target). Needs
# /usr/bin/time (Debian's `time` package).
set -euo pipefail

runs=${1:-10}
[[ -x /usr/bin/time ]] || { echo "measure-run: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
source "$(dirname "$0")/lib/one-shot.sh"
one_shot_build

# The layout list (scripts/order-symbols.sh) names functions demangled,
# which the dependencies' versions and features leave alone but changes to
# the code move: say how much of it this build still has (scripts/
# check-layout-list.sh fails under 90 %).
"$root/scripts/check-layout-list.sh" "$agentbus" || true

# One plain reply per run (the script's responses are consumed in order).
for _ in $(seq "$runs"); do
    printf '[[response]]\ntext = "Hello from the scripted model."\nusage = { input_tokens = 12, output_tokens = 7 }\n'
done > "$scratch/script.toml"
one_shot_start measure-run

echo "agentbus run \"hi\" against the scripted model at $url ($runs runs, $(nproc) cores)"
rss=()
wall=()
for i in $(seq "$runs"); do
    started=$EPOCHREALTIME
    (cd "$scratch/workspace" && env -i PATH="$PATH" HOME="$home" \
        /usr/bin/time -v -o "$scratch/time.$i" "$agentbus" run "hi" > "$scratch/out.$i" 2> "$scratch/err.$i") || {
        echo "measure-run: run $i failed:" >&2; cat "$scratch/err.$i" "$scratch/time.$i" >&2; exit 1; }
    seconds=$(echo "$EPOCHREALTIME - $started" | bc -l)
    grep -q "Hello from the scripted model." "$scratch/out.$i" || {
        echo "measure-run: run $i printed something else:" >&2; cat "$scratch/out.$i" >&2; exit 1; }
    kib=$(sed -n 's/^\s*Maximum resident set size (kbytes): //p' "$scratch/time.$i")
    printf 'run %2d: peak RSS %6.1f MiB, wall %.3f s\n' "$i" "$(echo "$kib / 1024" | bc -l)" "$seconds"
    rss+=("$kib")
    wall+=("$seconds")
done

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
maximum() { printf '%s\n' "$@" | sort -g | tail -1; }
printf 'peak RSS: median %.1f MiB, max %.1f MiB\n' \
    "$(echo "$(median "${rss[@]}") / 1024" | bc -l)" "$(echo "$(maximum "${rss[@]}") / 1024" | bc -l)"
printf 'wall time: median %.3f s, max %.3f s\n' "$(median "${wall[@]}")" "$(maximum "${wall[@]}")"
