#!/usr/bin/env bash
# How much of scripts/run-symbols.order (the functions a one-shot run
# executes, by keys that a dependency's new version leaves alone: see
# scripts/ordered-gcc) a build of `agentbus` still defines. Fails under 90 %, saying how to remake the list: a list that
# names functions the code no longer has lays out less of what a run
# touches, and the one-shot run's memory grows (README, "Performance").
#
#   scripts/check-layout-list.sh [BINARY]   (default target/debug/agentbus)
#
# Any build will do: the names are the same in debug and release builds
# (generic functions a release build inlines away are counted as present
# only when the binary still defines them, so a debug build reads a little
# higher).
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "$0")/.." && pwd)
binary=${1:-${CARGO_TARGET_DIR:-$root/target}/debug/agentbus}
order=$root/scripts/run-symbols.order
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
    echo "  the list is stale: remake it with scripts/order-symbols.sh, then scripts/measure-run.sh to see the run's memory" >&2
    exit 1
fi
