#!/usr/bin/env bash
# The ABI check (README, "ABI"): the dynamic symbols that BUILD_DIR's libvkbert.so exports must
# be exactly abi/vkbert.symbols (committed, sorted) and exactly the VKBERT_API functions the
# installed headers declare. An accidental export, a removed or renamed call, or a header
# declaration without a definition fails with a diff.
#   .ci/abi-check.sh BUILD_DIR             check (CTest's abi_check runs this)
#   .ci/abi-check.sh BUILD_DIR --update    rewrite abi/vkbert.symbols after an intended change
# ELF only (Linux): nm from binutils.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:?usage: abi-check.sh BUILD_DIR [--update]}
list="$root/abi/vkbert.symbols"
lib="$build/libvkbert.so"
[ -e "$lib" ] || { echo "abi-check: no $lib (build the library first)" >&2; exit 2; }

exported=$(nm -D --defined-only "$lib" | awk '{print $NF}' | LC_ALL=C sort)
# A declaration keeps its name on the VKBERT_API line (clang-format breaks after the "(").
declared=$(grep -h '^VKBERT_API ' "$root"/include/vkbert*.h |
    sed -E 's/^VKBERT_API [^(]*[ *]([A-Za-z_][A-Za-z_0-9]*)\(.*/\1/' | LC_ALL=C sort)

if [ "${2:-}" = --update ]; then
    printf '%s\n' "$exported" > "$list"
    echo "abi-check: wrote $(wc -l < "$list") symbols to abi/vkbert.symbols"
    exit 0
fi
status=0
if ! diff -u "$list" <(printf '%s\n' "$exported") > /dev/null; then
    echo "abi-check: $lib exports other symbols than abi/vkbert.symbols (-: listed, +: exported)."
    echo "After an intended change: .ci/abi-check.sh $build --update, and say so in the commit."
    diff -u --label abi/vkbert.symbols --label "$lib" "$list" <(printf '%s\n' "$exported") || true
    status=1
fi
if ! diff -u <(printf '%s\n' "$declared") <(printf '%s\n' "$exported") > /dev/null; then
    echo "abi-check: the headers' VKBERT_API functions (-) and the exported symbols (+) differ:"
    diff -u --label include/vkbert*.h --label "$lib" <(printf '%s\n' "$declared") \
        <(printf '%s\n' "$exported") || true
    status=1
fi
[ "$status" = 0 ] && echo "abi-check: $(wc -l < "$list") symbols, as listed and declared"
exit "$status"
