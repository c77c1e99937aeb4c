#!/usr/bin/env bash
# The ABI check (docs/c-api.md, "ABI"), two parts:
#  - symbols: the dynamic symbols that BUILD_DIR's libvkbert.so exports must be exactly
#    abi/vkbert.symbols (committed, sorted) and exactly the VKBERT_API functions the headers
#    declare: an accidental export, a removed or renamed call, a declaration without a
#    definition fails with a diff;
#  - types (abigail-tools): every public function's type, with the structs and enums it reaches,
#    against abi/vkbert.abi, with abidiff. A release build has no DWARF to read, so the types
#    come from a probe: a small shared object compiled here with -g from the installed headers,
#    exporting one pointer typed as each public function. What it reads is the headers alone,
#    whatever the build type or compiler of BUILD_DIR (gcc's and clang's probes compare equal).
# A moved struct member, a changed parameter, a renumbered enumerator fails with abidiff's report.
#   .ci/abi-check.sh BUILD_DIR             check (CTest's abi_check runs this)
#   .ci/abi-check.sh BUILD_DIR --update    rewrite both files after an intended change
# Exit 77 (CTest: skipped) when the symbols match but abidw/abidiff are not installed
# (Debian: abigail-tools). ELF only (Linux): nm from binutils.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:?usage: abi-check.sh BUILD_DIR [--update]}
symbols="$root/abi/vkbert.symbols" types="$root/abi/vkbert.abi"
lib="$build/libvkbert.so"
[ -e "$lib" ] || { echo "abi-check: no $lib (build the library first)" >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

nm -D --defined-only "$lib" | awk '{print $NF}' | LC_ALL=C sort > "$scratch/exported"
# A declaration keeps its name on the VKBERT_API line (clang-format breaks after the "(").
grep -h '^VKBERT_API ' "$root"/include/vkbert*.h |
    sed -E 's/^VKBERT_API [^(]*[ *]([A-Za-z_][A-Za-z_0-9]*)\(.*/\1/' | LC_ALL=C sort > "$scratch/declared"

# The probe: __typeof__ (GNU C, here only) gives each function's type without restating it.
probe_types() {
    {
        for h in "$root"/include/vkbert*.h; do echo "#include \"$(basename "$h")\""; done
        sed -E 's/.*/__typeof__(\&&) const abi_& = \&&;/' "$scratch/declared"
    } > "$scratch/probe.c"
    "${CC:-cc}" -std=gnu11 -g -O0 -shared -fPIC -I "$root/include" "$scratch/probe.c" \
        -o "$scratch/probe.so"
    abidw --no-corpus-path --no-comp-dir-path --no-show-locs --type-id-style hash \
        "$scratch/probe.so" > "$1"
}
have_abigail() { command -v abidw > /dev/null && command -v abidiff > /dev/null; }

if [ "${2:-}" = --update ]; then
    cp "$scratch/exported" "$symbols"
    echo "abi-check: wrote $(wc -l < "$symbols") symbols to abi/vkbert.symbols"
    have_abigail || { echo "abi-check: abigail-tools missing, abi/vkbert.abi not written" >&2; exit 1; }
    probe_types "$types"
    echo "abi-check: wrote the public types to abi/vkbert.abi"
    exit 0
fi

status=0
if ! cmp -s "$symbols" "$scratch/exported"; then
    echo "abi-check: $lib exports other symbols than abi/vkbert.symbols (-: listed, +: exported)."
    diff -u --label abi/vkbert.symbols --label "$lib" "$symbols" "$scratch/exported" || true
    status=1
fi
if ! cmp -s "$scratch/declared" "$scratch/exported"; then
    echo "abi-check: the headers' VKBERT_API functions (-) and the exported symbols (+) differ:"
    diff -u --label 'include/vkbert*.h' --label "$lib" "$scratch/declared" "$scratch/exported" ||
        true
    status=1
fi
if ! have_abigail; then
    [ "$status" = 0 ] || exit "$status"
    echo "abi-check: symbols as listed; types not checked: install abigail-tools (abidw, abidiff)"
    exit 77
fi
probe_types "$scratch/probe.abi"
if ! abidiff "$types" "$scratch/probe.abi" > "$scratch/report"; then
    echo "abi-check: the public types differ from abi/vkbert.abi (abidiff, old -> new):"
    cat "$scratch/report"
    status=1
fi
if [ "$status" != 0 ]; then
    echo "After an intended change: .ci/abi-check.sh $build --update, and say so in the commit."
    exit "$status"
fi
echo "abi-check: $(wc -l < "$symbols") symbols as listed and declared, types as abi/vkbert.abi"
