#!/usr/bin/env bash
# Runs every libFuzzer harness of tests/fuzz for SECONDS each (default 30), each from a copy of
# its seed corpus (new inputs never land in the repository), after replaying the regression
# inputs. Exits non-zero when any harness finds a crash, leak, undefined behaviour, hang or
# runaway allocation; the input that did it is kept in <build>/fuzz-artifacts/<harness>/.
#
# Usage: tests/fuzz/run.sh [SECONDS]
# Needs clang and its runtime (Debian 12: clang libclang-rt-14-dev); builds build-fuzz (or
# $VKBERT_FUZZ_BUILD) when needed.
set -euo pipefail

seconds=${1:-30}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${VKBERT_FUZZ_BUILD:-$root/build-fuzz}
here=$root/tests/fuzz
harnesses=(npy safetensors config vocab tokenize tokenizer_json normalizer regex st_model
           serve_request)
declare -A dicts=([npy]=npy.dict [safetensors]=json.dict [config]=json.dict [vocab]=tokenize.dict
                  [tokenize]=tokenize.dict [tokenizer_json]=json.dict [normalizer]=json.dict
                  [regex]=regex.dict [st_model]=json.dict [serve_request]=serve.dict)

# Configured every time, so that an existing folder without VKBERT_FUZZ gets it; clang is
# forced because libFuzzer is clang's (a folder first configured with gcc fails with a message).
CC=clang cmake -S "$root" -B "$build" -DVKBERT_FUZZ=ON -DVKBERT_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzz >/dev/null

work=$(mktemp -d /tmp/vkbert_fuzz_XXXXXX)
trap 'rm -rf "$work"' EXIT
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
export TMPDIR=$work # the harnesses' model folders, left behind when a harness crashes

# Succeeds when the harness exited cleanly and never said it could not set itself up.
run_one() {
    local log=$1
    shift
    "$@" >"$log" 2>&1 && ! grep -q "vkbert fuzz setup failed" "$log"
}

failed=()
for h in "${harnesses[@]}"; do
    bin=$build/tests/fuzz/fuzz_$h
    artifacts=$build/fuzz-artifacts/$h
    mkdir -p "$work/$h" "$artifacts"
    cp "$here/corpus/$h"/* "$work/$h/"
    regressions=("$here/regressions/$h"/*)
    if [ -e "${regressions[0]}" ] &&
        ! run_one "$work/$h.replay.log" "$bin" -rss_limit_mb=2048 "${regressions[@]}"; then
        echo "fuzz_$h: a regression input fails again:"
        tail -n 40 "$work/$h.replay.log"
        failed+=("$h")
        continue
    fi
    if run_one "$work/$h.log" "$bin" "$work/$h" -max_total_time="$seconds" -rss_limit_mb=2048 \
        -timeout=25 -dict="$here/${dicts[$h]}" -artifact_prefix="$artifacts/" \
        -print_final_stats=1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$h.log")
        rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$h.log")
        echo "fuzz_$h: ok, ${runs:-?} runs in ${seconds} s (${rate:-?} exec/s)"
    else
        echo "fuzz_$h: FAILED; the input is in $artifacts:"
        tail -n 60 "$work/$h.log"
        failed+=("$h")
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzzing failed: ${failed[*]}"
    exit 1
fi
echo "fuzzing passed: ${harnesses[*]}"
