#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer:
# configures build-asan with -DVKBERT_SANITIZE=ON, builds it and runs ctest there. Every
# sanitizer report of every process (the test binaries, Criterion's per-test children, the
# `vkbert` tool the tests spawn, install_package's installed tool and examples) goes to a log
# file; the script fails if any was written, even when ctest passed (Criterion does not fail
# a test whose child reports leaks at exit). Callable from any directory.
#   JOBS=2 (build parallelism)   extra arguments go to ctest (e.g. -R test_api)
#
# The server's tests run too (CTest's serve_asan: .ci/serve.sh with build-asan's `vkbert`): the
# spawned `vkbert serve` processes inherit the options below, so their reports, LeakSanitizer's
# at the exit after SIGTERM included, land in the logs. python3 computes the expected results
# with a plain build's library (a sanitized one needs the runtime loaded first): the README's
# `build`, as .ci/run makes it before this job (another: -DVKBERT_SERVE_LIBRARY_BUILD=DIR on
# build-asan); without it serve_asan is skipped, and said so below.
#
# Built with clang (the sanitizer job is the clang one), with its shared runtime
# (-shared-libsan, CMakeLists.txt): clang's default static runtime lives in each executable
# only, so install_package's examples, built without -fsanitize against the sanitized
# libvkbert.so, had none. With one shared runtime every process, sanitized or not, reports
# through it, and LeakSanitizer's frame-pointer unwinding still reaches the system libraries'
# frames, so tests/lsan.supp's library-name suppressions match as they did with gcc.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build-asan"
jobs=${JOBS:-2}

cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DVKBERT_SANITIZE=ON > /dev/null
cmake --build "$build" -j "$jobs"

work="$build/sanitize"
logs="$work/logs"
rm -rf "$logs"
mkdir -p "$logs"

# Every test runs, install_package included: it builds examples/attention.c without
# -fsanitize against the installed (sanitized) libvkbert.so, which then loads the shared ASan
# runtime itself, found through the library's runpath (see verify_asan_link_order below); the
# linker's warnings about tmpnam in that runtime are harmless.
#
# The Vulkan loader dlclose()s the validation layer and the driver (lavapipe) at
# vkDestroyInstance, before LeakSanitizer runs at exit: their leaks then have only
# "<unknown module>" frames, which no suppression can name. This preloaded no-op dlclose keeps
# every library mapped, so that their leaks are reported (and suppressed) by library name.
# (The loader of Debian 12, 1.3.239, predates VK_LOADER_DISABLE_DYNAMIC_LIBRARY_UNLOADING.)
cc -shared -fPIC -O2 -o "$work/keep_loaded.so" -x c - <<'C'
int dlclose(void *handle)
{
    (void)handle;
    return 0;
}
C
export LD_PRELOAD="$work/keep_loaded.so${LD_PRELOAD:+:$LD_PRELOAD}"

# verify_asan_link_order=0: the runtime is not first in the library list, because of the
#   preload above, and in install_package's examples, which are built without -fsanitize
#   against the installed (sanitized) libvkbert.so and so load the runtime as a dependency.
# log_path: reports go to $logs/*.<pid>, whichever process (or grandchild) writes them.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:print_stacktrace=1:\
verify_asan_link_order=0:strict_string_checks=1:detect_stack_use_after_return=1:\
check_initialization_order=1:log_path=$logs/asan"
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="suppressions=$root/tests/ubsan.supp:halt_on_error=1:print_stacktrace=1:\
report_error_type=1:log_path=$logs/ubsan"

library_build=$(sed -n 's/^VKBERT_SERVE_LIBRARY_BUILD:PATH=//p' "$build/CMakeCache.txt")
if [ -n "$library_build" ] && [ ! -f "$library_build/libvkbert.so" ]; then
    echo "sanitize.sh: no $library_build/libvkbert.so (a build without the sanitizers):" \
        "serve_asan will be skipped" >&2
fi

status=0
ctest --test-dir "$build" --output-on-failure "$@" || status=$?

count=0
while IFS= read -r -d '' f; do
    echo "==== sanitizer report $f"
    cat "$f"
    count=$((count + 1))
done < <(find "$logs" -type f -print0 | sort -z)
if [ "$count" -ne 0 ]; then
    echo "sanitize.sh: $count sanitizer report(s), above" >&2
    exit 1
fi
if [ "$status" -ne 0 ]; then
    echo "sanitize.sh: ctest failed" >&2
    exit "$status"
fi
echo "sanitize.sh: the suite passes with no sanitizer report"
