#!/usr/bin/env bash
# The test suite's portable subset on a second Vulkan driver, Google's SwiftShader (subgroups of
# 4, at most 256 invocations per workgroup, a 1 GiB storage range, no 16-bit storage): only its
# two files are taken from Debian's chromium-common (docs/drivers.md), into
# build/swiftshader, and the loader is pointed at them with VK_DRIVER_FILES.
#
# The whole suite runs there, both kernel families and the minimum-device runs, but for what
# only measures or belongs to lavapipe alone: the tests labelled `swiftshader` (tests/CMakeLists.txt
# gives each run its labels; the build's tests/left-out.txt says what is left out, and why).
# The fused attention kernel once stopped most of this: SwiftShader's shader compiler ran out
# of memory on its fully unrolled per-head-size modules; one module per way of reading, with
# the head length a specialization constant, compiles in well under a second.
# Each process's address space is capped at 8 GB, so that a compiler that runs away fails its
# test instead of the machine.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd) # absolute: ctest runs each test in its own folder
dir="$build/swiftshader"
if [ ! -f "$dir/usr/lib/chromium/vk_swiftshader_icd.json" ]; then
    mkdir -p "$dir"
    (cd "$dir" && apt-get download chromium-common > /dev/null 2>&1 &&
        dpkg-deb --fsys-tarfile chromium-common_*.deb |
        tar -x ./usr/lib/chromium/libvk_swiftshader.so ./usr/lib/chromium/vk_swiftshader_icd.json &&
        rm chromium-common_*.deb)
fi
export VK_DRIVER_FILES="$dir/usr/lib/chromium/vk_swiftshader_icd.json"
"$build/vkbert" devices | grep -q SwiftShader || { echo "SwiftShader did not load" >&2; exit 1; }

# The suite's address space capped at 8 GB, as a soft limit: a client that needs more (Node's
# WebAssembly, in the serve test) raises its own to the hard limit.
ulimit -Sv 8000000
echo "swiftshader.sh: left out here, and why:"
awk -F '\t' '$1 == "swiftshader" { print "  " $2 ": " $3 }' "$build/tests/left-out.txt"
ctest --test-dir "$build" --output-on-failure -L '^swiftshader$'
# The real checkpoints against sentence-transformers on this driver too (the rest of the parity
# suite is left out above, for time).
status=0
"$root/.ci/parity.sh" "$build" -k "test_checkpoints and (fp32 or fp16 or serve or c_api) and not zip" ||
    status=$?
[ "$status" -eq 0 ] || [ "$status" -eq 77 ] || exit "$status"
