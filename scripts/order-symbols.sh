#!/usr/bin/env bash
# Regenerates scripts/run-symbols.order: the functions a one-shot
# `agentbus run` executes, which build.rs hands to the linker
# (--symbol-ordering-file) so that the release binary keeps them together.
# A one-shot run then maps the pages of ~2 MB of code instead of pages
# scattered over the whole binary (the kernel maps 64 KiB around each page
# touched). Names not in a later build are skipped by the linker, so an old
# list only makes the layout less tight; regenerate it after large changes:
#
#   scripts/order-symbols.sh && scripts/measure-run.sh
#
# Runs `agentbus run "hi"` twice under valgrind's callgrind (a new store,
# then an existing one) against the scripted model, as measure-run.sh
# does. Needs valgrind (Debian's `valgrind` package) and python3.
set -euo pipefail

command -v valgrind > /dev/null || { echo "order-symbols: valgrind is missing (apt-get install valgrind)" >&2; exit 1; }
source "$(dirname "$0")/lib/one-shot.sh"
one_shot_build

printf '[[response]]\ntext = "Hello from the scripted model."\n%.0s' 1 2 > "$scratch/script.toml"
one_shot_start order-symbols
for run in 1 2; do
    (cd "$scratch/workspace" && env -i PATH="$PATH" HOME="$home" \
        valgrind --tool=callgrind --demangle=no --callgrind-out-file="$scratch/calls.$run" \
        "$agentbus" run "hi" > "$scratch/out.$run" 2> "$scratch/err.$run") || {
        echo "order-symbols: run $run failed:" >&2; cat "$scratch/err.$run" >&2; exit 1; }
done

# Every function named in the call graphs that the binary defines, by its
# key (scripts/lib/symbol-key.sed: the symbol less what a dependency's new
# version changes; scripts/ordered-gcc finds the symbols again at every
# release link) and, after a tab, its demangled name (what
# scripts/check-layout-list.sh looks for in any build), sorted (where they sit within the group hardly matters;
# sorted, a remade list differs from the last only by what really changed).
nm -p --defined-only "$agentbus" | awk '{ print $3 }' > "$scratch/symbols"
paste -d '\t' "$scratch/symbols" <(sed -E -f "$root/scripts/lib/symbol-key.sed" "$scratch/symbols") \
    <(nm -p --defined-only --demangle "$agentbus" | cut -d ' ' -f 3- | sed -E 's/\.llvm\.[0-9]+$//') \
    > "$scratch/defined"
python3 - "$scratch/defined" "$scratch/calls.1" "$scratch/calls.2" > "$root/scripts/run-symbols.order" <<'PY'
import re, sys
keys = {}
for line in open(sys.argv[1]):
    symbol, key, readable = line.rstrip("\n").split("\t", 2)
    keys[symbol] = key + "\t" + readable
names = set()
for path in sys.argv[2:]:
    for line in open(path):
        match = re.match(r"^c?fn=\(\d+\) (.+)$", line.rstrip("\n"))
        if match and match.group(1) in keys:
            names.add(keys[match.group(1)])
print("\n".join(sorted(names)))
PY
echo "scripts/run-symbols.order: $(wc -l < "$root/scripts/run-symbols.order") functions"
