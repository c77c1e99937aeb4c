#!/usr/bin/env bash
# The test suite's portable subset on a second Vulkan driver, Google's SwiftShader (subgroups of
# 4, at most 256 invocations per workgroup, a 1 GiB storage range, no 16-bit storage): only its
# two files are taken from Debian's chromium-common (../shared/notes/DRIVERS.md), into
# build/swiftshader, and the loader is pointed at them with VK_DRIVER_FILES.
#
# The whole suite runs there, both kernel families, but for what only measures or belongs to
# lavapipe alone:
#   - the kernel tests' runs at lavapipe's other vector widths (*_sg4_*, *_sg16_*): each
#     asserts the subgroup size LP_NATIVE_VECTOR_WIDTH gives lavapipe; SwiftShader's is 4,
#     which the runs here already cover;
#   - the benchmark and the CLI timing tests (test_bench, test_cli, bench_plot), which only
#     measure, and install_package, which installs and builds and has no driver in it;
#   - the simd family's runs without shuffles (*_simd_noshuffle): on SwiftShader's 4-lane
#     subgroups the simd kernels never shuffle (their shuffles need one 8-lane subgroup
#     making up the workgroup), so these would repeat test_*_simd.
#   - for time (the whole suite takes 13 minutes there on 2 cores), test_threads (172 s: the
#     library's locking, which lavapipe exercises as well) and test_attention_gpu (201 s, which
#     passes; the gpu family's fused kernel and layers still run there in
#     test_attention_fused_gpu, test_encoder_gpu and test_limits_gpu).
# The fused attention kernel once stopped most of this: SwiftShader's shader compiler ran out
# of memory on its fully unrolled per-head-size modules; one module per way of reading, with
# the head length a specialization constant, compiles in well under a second.
# Each process's address space is capped at 8 GB, so that a compiler that runs away fails its
# test instead of the machine.
# fp16 weights skip there (no storageBuffer16BitAccess), with the reason printed.
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

left_out='_sg(4|16)_|^(test_bench|test_cli|bench_plot|install_package)$'
left_out+='|_simd_noshuffle$|^(test_threads|test_attention_gpu)$'
ulimit -v 8000000
ctest --test-dir "$build" --output-on-failure -E "$left_out"
