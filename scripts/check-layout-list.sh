#!/usr/bin/env bash
# Whether scripts/run-symbols.order (the functions a one-shot run
# executes, which the release link lays out together: scripts/ordered-gcc)
# still fits the code. A list that misses what a run executes leaves those
# functions scattered, and the one-shot run's memory grows by up to 64 KiB
# for each (README, "Performance"): a stop's cut once added some forty
# functions to the run and 3.6 MiB to its peak, while every name of the
# list was still in the build.
#
#   scripts/check-layout-list.sh [--run] [BINARY]   (default target/debug/agentbus)
#
# 1. How much of the list BINARY still defines, by demangled name: fails
#    under 90 %. Any build will do: the names are the same in debug and
#    release builds (generic functions a release build inlines away are
#    counted as present only when the binary still defines them, so a
#    debug build reads a little higher).
# 2. With --run (CI), BINARY being the debug build `cargo test --workspace`
#    makes, with the scripted model beside it: runs `agentbus run "hi"`
#    twice under valgrind's callgrind, as scripts/order-symbols.sh did when
#    it made the list, and all that again; fails when both pairs executed
#    more than $AGENTBUS_LAYOUT_NEW_LIMIT (10) functions that the record of
#    that time (scripts/run-symbols.debug, four pairs) lacks. Runs of one
#    build differ by up to forty functions (which thread waits first: the
#    allocator's, the locks' and the store's shutdown paths), but rarely
#    the same way twice; a change to the code a run executes adds dozens
#    to every run.
#
# Either failure says to remake the list: scripts/order-symbols.sh.
set -euo pipefail
export LC_ALL=C
run=
if [[ ${1:-} == --run ]]; then run=1; shift; fi
source "$(dirname "$0")/lib/one-shot.sh"
binary=${1:-$target/debug/agentbus}
# Absolute: the runs below start in a workspace of their own.
[[ $binary == /* ]] || binary=$PWD/$binary
order=$root/scripts/run-symbols.order
remake="  remake the list: scripts/order-symbols.sh (and see the run's memory with scripts/measure-run.sh)"
command -v nm > /dev/null || { echo "check-layout-list: nm is missing (apt-get install binutils)" >&2; exit 1; }
[[ -x $binary ]] || { echo "check-layout-list: no binary at $binary (cargo build first)" >&2; exit 1; }

listed=$(cut -f 2 "$order" | sort -u | grep -c .)
# By the demangled names (the list's second column): a debug build has
# the same functions under other symbols (its generic functions are
# instantiated in other crates).
present=$(nm -p --defined-only --demangle "$binary" | cut -d ' ' -f 3- |
    sed -E 's/\.llvm\.[0-9]+$//' | sort -u |
    comm -12 - <(cut -f 2 "$order" | sort -u) | wc -l)
echo "layout: $present of the $listed functions in scripts/run-symbols.order are in $(basename "$binary") ($(( present * 100 / listed )) %)"
if (( present * 10 < listed * 9 )); then
    echo "  the list is stale: it names functions the code no longer has" >&2
    echo "$remake" >&2
    exit 1
fi
[[ -n $run ]] || exit 0

agentbus=$binary
model=$(dirname "$binary")/scripted-model
[[ -x $model ]] || { echo "check-layout-list: no scripted model at $model (cargo test --workspace --no-run first)" >&2; exit 1; }
limit=${AGENTBUS_LAYOUT_NEW_LIMIT:-10}
printf '[[response]]\ntext = "Hello from the scripted model."\n%.0s' 1 2 3 4 > "$scratch/script.toml"
one_shot_start check-layout-list
for round in a b; do
    one_shot_callgrind check-layout-list "$scratch/calls.$round"
    # The names whose hash the record lacks.
    one_shot_executed "$agentbus" hashes "$scratch/calls.$round".? > "$scratch/executed.$round"
    sort -t $'\t' -k 1,1 "$scratch/executed.$round" | join -t $'\t' -v 1 - "$root/scripts/run-symbols.debug" |
        cut -f 2 | sort > "$scratch/new.$round"
done
comm -12 "$scratch/new.a" "$scratch/new.b" > "$scratch/new"
executed=$(wc -l < "$scratch/executed.a")
new=$(wc -l < "$scratch/new")
echo "layout: the one-shot run executed $executed functions of $(basename "$binary"); $new of them were not run when the list was made, in both of two pairs of runs (at most $limit may be)"
if (( new > limit )); then
    echo "  the list is stale: the run executes code it does not name, for example:" >&2
    head -40 "$scratch/new" | sed 's/^/    /' >&2
    echo "$remake" >&2
    exit 1
fi
