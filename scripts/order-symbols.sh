#!/usr/bin/env bash
# Regenerates scripts/run-symbols.order: the functions a one-shot
# `agentbus run` executes, which build.rs hands to the linker
# (--symbol-ordering-file) so that the release binary keeps them together.
# A one-shot run then maps the pages of ~2 MB of code instead of pages
# scattered over the whole binary (the kernel maps 64 KiB around each page
# touched). Names not in a later build are skipped by the linker, so an old
# list only makes the layout less tight; regenerate it after a change to
# what a run executes (CI says when: scripts/check-layout-list.sh --run):
#
#   scripts/order-symbols.sh && scripts/measure-run.sh
#
# Runs `agentbus run "hi"` twice under valgrind's callgrind (a new store,
# then an existing one) against the scripted model, as measure-run.sh
# does, four times over: which thread waits first, and so which of the
# allocator's, the locks' and the store's shutdown paths a run takes,
# changes between runs, and the list has them all. Then the same with the debug build the tests make (`cargo test
# --workspace --no-run`), whose executed functions it records in
# scripts/run-symbols.debug: CI runs that build the same way and fails
# when it executes functions the record lacks. Needs valgrind (Debian's
# `valgrind` package) and python3.
set -euo pipefail

command -v valgrind > /dev/null || { echo "order-symbols: valgrind is missing (apt-get install valgrind)" >&2; exit 1; }
source "$(dirname "$0")/lib/one-shot.sh"
one_shot_build
(cd "$root" && cargo test --workspace --no-run --quiet)

rounds=(a b c d)
# Two responses for each of the two builds' pairs of runs.
printf '[[response]]\ntext = "Hello from the scripted model."\n%.0s' $(seq $(( 2 * 2 * ${#rounds[@]} ))) > "$scratch/script.toml"
one_shot_start order-symbols
for round in "${rounds[@]}"; do one_shot_callgrind order-symbols "$scratch/release.$round"; done

# Every function named in the call graphs that the binary defines, by its
# key (scripts/lib/symbol-key.sed: the symbol less what a dependency's new
# version changes; scripts/ordered-gcc finds the symbols again at every
# release link) and, after a tab, its demangled name (what
# scripts/check-layout-list.sh looks for in any build), sorted (where they
# sit within the group hardly matters; sorted, a remade list differs from
# the last only by what really changed).
one_shot_executed "$agentbus" keys "$scratch"/release.?.? > "$root/scripts/run-symbols.order"
echo "scripts/run-symbols.order: $(wc -l < "$root/scripts/run-symbols.order") functions"

# The debug build runs more functions (nothing is inlined), under the
# same names: the record CI compares its own run with. Hashes keep it
# small; the check prints the names it does not find.
one_shot_use debug
for round in "${rounds[@]}"; do one_shot_callgrind order-symbols "$scratch/debug.$round"; done
one_shot_executed "$agentbus" hashes "$scratch"/debug.?.? | cut -f 1 | LC_ALL=C sort -u \
    > "$root/scripts/run-symbols.debug"
echo "scripts/run-symbols.debug: $(wc -l < "$root/scripts/run-symbols.debug") functions of the debug build"
