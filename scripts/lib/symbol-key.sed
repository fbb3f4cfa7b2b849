# A symbol's name as the layout list keeps it (scripts/run-symbols.order):
# the mangled (v0) name less what changes when nothing in the function
# does — each crate's hash (`Cs<hash>_`: another one when a dependency's
# version or features change), the back references into the name that
# those hashes' lengths move (`B<offset>_`), and the `.llvm.N` suffix LTO
# gives a function it makes global (another number at every build).
s/\.llvm\.[0-9]+$//
s/Cs[0-9A-Za-z]*_/C/g
s/B[0-9A-Za-z]*_/B_/g
