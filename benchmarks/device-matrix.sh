#!/usr/bin/env bash
# The device matrix, to show that every driver here runs every kernel: the kernel tests of both
# families and the encoder (every kernel, every family; .ci/swiftshader.sh runs the whole suite on
# SwiftShader in CI, this is the part that fits one run per driver on a shared machine) and
# `vkbert bench --quick` on every Vulkan driver this machine has or can extract, printed as ONE
# markdown table on stdout, for docs/benchmarks.md:
#   - the system's lavapipe, and the same at LP_NATIVE_VECTOR_WIDTH=128 and 512 (subgroups of
#     4 and 16 instead of 8);
#   - SwiftShader, its two files taken from Debian's chromium-common (as .ci/swiftshader.sh);
#   - Mesa 25's lavapipe from the release's backports (bookworm-backports), extracted beside the
#     build with whichever of its dependencies backports has newer (libdrm), found through
#     LD_LIBRARY_PATH: the backports source, on the mirror the machine's own sources use, goes
#     into a private apt folder, the system's sources are not touched;
#   - every device the loader lists by itself that is not a CPU (a real GPU).
# A driver that cannot be found or extracted gets a row that says so.
#
# usage: benchmarks/device-matrix.sh [BUILD_DIR]     (default build; vkbert and the tests built)
# Environment: MATRIX_DRIVERS (a regex of row names to run; default all), MATRIX_CASES (the
# bench cases; default one matmul and one attention layer, to keep --quick quick on a
# shared machine), MATRIX_TESTS=0 (skip the tests), MATRIX_SUBSET (a ctest regex instead of the
# kernel tests, the runs labelled `kernels` in tests/CMakeLists.txt). Logs and JSON land in
# BUILD_DIR/device-matrix.
# Drivers run one after another: each test run already uses the machine's cores.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd) # absolute: ctest runs each test in its own folder
out="$build/device-matrix"
mkdir -p "$out"
cases=${MATRIX_CASES:-matmul-1024x768x768 attention-base-b1-s128}
which_tests=(-L '^kernels$')
[ -n "${MATRIX_SUBSET:-}" ] && which_tests=(-R "$MATRIX_SUBSET")
log() { echo "[device-matrix] $*" >&2; }
source "$root/.ci/apt-archive.sh"
codename=$(debian_codename)
backports="$codename-backports"

# Extracts PATHS from the Debian package PKG (as apt-get download names it) into DEST.
extract() {
    local pkg=$1 dest=$2
    shift 2
    mkdir -p "$dest"
    (cd "$dest" && apt-get "${apt_private[@]}" download "$pkg" > /dev/null 2>&1 &&
        dpkg-deb --fsys-tarfile ./*.deb | tar -x --wildcards "$@" && rm ./*.deb)
}

swiftshader_icd() {
    local dir="$build/swiftshader" icd="usr/lib/chromium/vk_swiftshader_icd.json"
    [ -f "$dir/$icd" ] || extract chromium-common "$dir" \
        ./usr/lib/chromium/libvk_swiftshader.so "./$icd"
    [ -f "$dir/$icd" ] && echo "$dir/$icd"
}

# A private apt state that knows the release's backports only, from the mirror that the
# machine's sources name for the release itself.
apt_private=()
backports_apt() {
    local dir="$out/apt" uri
    if ! uri=$(debian_archive_uri "$codename"); then
        log "no mirror to take $backports from"
        return 1
    fi
    mkdir -p "$dir/lists/partial" "$dir/archives/partial" "$dir/parts"
    echo "deb $uri $backports main" > "$dir/sources.list"
    apt_private=(-o "Dir::Etc::SourceList=$dir/sources.list" -o "Dir::Etc::SourceParts=$dir/parts"
        -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache::Archives=$dir/archives"
        -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache=")
    apt-get "${apt_private[@]}" update > "$out/apt-update.log" 2>&1
}

# Mesa 25's lavapipe and the dependencies backports has; prints its ICD json.
mesa25_icd() {
    local dir="$build/mesa25" lib=usr/lib/x86_64-linux-gnu
    if [ ! -f "$dir/$lib/libvulkan_lvp.so" ]; then
        backports_apt || return 1
        extract "mesa-vulkan-drivers/$backports" "$dir" "./$lib/libvulkan_lvp.so" || return 1
        local dep
        for dep in $(apt-cache "${apt_private[@]}" show "mesa-vulkan-drivers/$backports" |
            sed -n 's/^Depends: //p' | head -1 | tr ',' '\n' | sed 's/ *(.*//; s/ //g'); do
            apt-cache "${apt_private[@]}" show "$dep/$backports" > /dev/null 2>&1 &&
                extract "$dep/$backports" "$dir" "./$lib/*.so*"
        done
    fi
    [ -f "$dir/$lib/libvulkan_lvp.so" ] || return 1
    cat > "$dir/lvp_icd.json" <<EOF
{"file_format_version": "1.0.0",
 "ICD": {"library_path": "$dir/$lib/libvulkan_lvp.so", "api_version": "1.4.0"}}
EOF
    echo "$dir/lvp_icd.json"
}

# One row: runs the subset and the bench with the environment given as NAME=VALUE arguments.
row() {
    local name=$1 slug
    shift
    slug=$(echo "$name" | tr -c 'A-Za-z0-9\n' '-')
    [[ "$name" =~ ${MATRIX_DRIVERS:-.} ]] || return 0
    log "$name: devices"
    local sg
    sg=$(env "$@" "$build/vkbert" devices 2> "$out/$slug.devices.err" |
        tee "$out/$slug.devices.txt" | awk '/subgroup size/ {print $3; exit}')
    if [ -z "$sg" ]; then
        echo "| $name | - | no device: $(tail -1 "$out/$slug.devices.err") | | | | |"
        return 0
    fi
    local tests="not run"
    if [ "${MATRIX_TESTS:-1}" != 0 ]; then
        log "$name: tests (log in $out/$slug.ctest.log)"
        # Verbosity 1: Criterion prints skipped tests only then ([SKIP] name: why).
        (ulimit -v 8000000 && env "$@" CRITERION_VERBOSITY_LEVEL=1 ctest --test-dir "$build" -V \
            "${which_tests[@]}") \
            > "$out/$slug.ctest.log" 2>&1
        tests=$(count_tests "$out/$slug.ctest.log")
    fi
    log "$name: vkbert bench --quick"
    local args=()
    for c in $cases; do args+=(--case "$c"); done
    env "$@" "$build/vkbert" bench --quick "${args[@]}" --json "$out/$slug.bench.json" \
        > "$out/$slug.bench.txt" 2>&1
    echo "| $name | $sg | $tests | $(bench_cells "$out/$slug.bench.json") |"
}

# passed / skipped / failed Criterion tests (skips for a reason; disabled tests are not
# counted); a test program that ended without its summary
# (a crash, a timeout) counts as one failure and is named.
count_tests() {
    awk '
        /Synthesis: Tested:/ {
            for (i = 1; i <= NF; i++) {
                if ($i == "Passing:") pass += $(i + 1)
                if ($i == "Failing:") fail += $(i + 1)
                if ($i == "Crashing:") fail += $(i + 1)
            }
            summaries++
        }
        /\[SKIP\]/ && !/Test is disabled/ { skip++ }
        /Test +#[0-9]+: .* \*\*\*/ { bad = bad " " $4 }
        /Start +[0-9]+:/ { programs++ }
        END {
            lost = programs - summaries
            printf "%d / %d / %d", pass, skip, fail + (lost > 0 ? lost : 0)
            if (lost > 0) printf " (%d programs without a summary:%s)", lost, bad
        }' "$1"
}

# The matmul and attention cells: GFLOP/s (fraction of the measured FMA peak), and the peak.
bench_cells() {
    python3 - "$1" << 'EOF'
import json, sys
try:
    run = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print("bench failed | | ")
    sys.exit()
def cell(prefix):
    found = [c for c in run.get("cases", []) if c["name"].startswith(prefix)]
    if not found:
        return "-"
    c = found[0]
    if "skipped" in c:
        return "skipped: " + c["skipped"]
    frac = c.get("peak_fraction")
    return "%.1f (%s)" % (c["gflops"], "%.2f" % frac if frac is not None else "no peak")
peak = run.get("peak_gflops")
print("%s | %s | %s" % (cell("matmul"), cell("attention"), "%.1f" % peak if peak else "-"))
EOF
}

echo "| driver | subgroup | tests passed / skipped / failed | matmul GFLOP/s (of peak) | attention GFLOP/s (of peak) | FMA peak GFLOP/s |"
echo "|---|---:|---|---:|---:|---:|"
lvp=$(ls /usr/share/vulkan/icd.d/lvp_icd.*.json 2> /dev/null | head -1)
if [ -n "$lvp" ]; then
    row "lavapipe (system)" VK_DRIVER_FILES="$lvp"
    row "lavapipe (system), 128-bit" VK_DRIVER_FILES="$lvp" LP_NATIVE_VECTOR_WIDTH=128
    row "lavapipe (system), 512-bit" VK_DRIVER_FILES="$lvp" LP_NATIVE_VECTOR_WIDTH=512
else
    echo "| lavapipe (system) | - | not installed (mesa-vulkan-drivers) | | | |"
fi
if icd=$(swiftshader_icd); then
    row "SwiftShader" VK_DRIVER_FILES="$icd"
else
    echo "| SwiftShader | - | could not extract chromium-common | | | |"
fi
mesa25="lavapipe (Mesa 25, backports)"
if [[ "$mesa25" =~ ${MATRIX_DRIVERS:-.} ]]; then
    if icd=$(mesa25_icd); then
        row "$mesa25" VK_DRIVER_FILES="$icd" \
            LD_LIBRARY_PATH="$build/mesa25/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    else
        echo "| $mesa25 | - | could not extract (see $out) | | | |"
    fi
fi
# Real GPUs: what the loader lists by itself, less the CPU drivers above.
"$build/vkbert" devices 2> /dev/null | awk '
    /^Device [0-9]+:/ { index_ = $2; sub(":", "", index_); name = $0; sub(/^Device [0-9]+: /, "", name) }
    /^  type / && $2 != "cpu" { print index_ "\t" name }' |
    while IFS=$'\t' read -r index name; do
        row "$name" VKBERT_DEVICE="$index"
    done
