#!/usr/bin/env bash
# The GPU check, run from the bundle that benchmarks/bundle.sh makes (docs/benchmarks.md, "The GPU
# check, from a bundle"): no package registry, no compiler. On the GPU host:
#   tar -xf vkbert-gpucheck.tar.xz && bash vkbert-gpucheck/device-check.sh
# Steps: `vkbert devices`; the test suite on the GPU with validation on; `vkbert bench`;
# benchmarks/peers.py (vkbert against sentence-transformers on CUDA). Each step's exit code goes to
# summary.txt and the next step runs whatever it was; the exit code is 1 if any step failed.
# Every result lands in $OUT (the GPU lending tool brings that folder back), else in
# ./device-check-results/<time>, written as it goes, so a host taken away mid-run keeps the rest.
# Environment: OUT; VKBERT_DEVICE (index or name; default the first discrete GPU); PYTHON (for
# peers.py, default python3); CTEST_JOBS (default 4); CTEST_TIMEOUT (the whole suite, default
# 300 s); CTEST_PER_TEST (each test, default 180 s); CTEST_ARGS (more ctest arguments);
# BENCH_TIMEOUT (180 s), BENCH_ARGS; PEERS_TIMEOUT (360 s), PEERS_ARGS (e.g. --repeat 1).
set -uo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ -f "$bundle/MANIFEST.txt" ] || { echo "device-check: $bundle is no bundle (benchmarks/bundle.sh)" >&2; exit 2; }
out=${OUT:-$PWD/device-check-results/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" && out=$(cd "$out" && pwd)
failed=0
log() { echo "[device-check] $*" | tee -a "$out/summary.txt"; }
regex_escape() { printf '%s' "$1" | sed 's/[]\/$*.^[|]/\\&/g'; }
replacement_escape() { printf '%s' "$1" | sed 's/[\\|&]/\\&/g'; }

# CTest's files name the build machine's source and build folders; rewrite them to where the
# bundle lies now, once (build/.bundle-paths records the paths they name). Placeholders first,
# so that an old path inside a new one is not rewritten twice.
relocate() {
    local paths=$bundle/build/.bundle-paths old_src old_build
    old_src=$(sed -n 's/^SOURCE=//p' "$paths")
    old_build=$(sed -n 's/^BUILD=//p' "$paths")
    [ "$old_src" = "$bundle/src" ] && [ "$old_build" = "$bundle/build" ] && return 0
    find "$bundle/build" -name '*.cmake' -type f -exec sed -i \
        -e "s|$(regex_escape "$old_build")|@@VKBERT_BUILD@@|g" \
        -e "s|$(regex_escape "$old_src")|@@VKBERT_SOURCE@@|g" \
        -e "s|@@VKBERT_BUILD@@|$(replacement_escape "$bundle/build")|g" \
        -e "s|@@VKBERT_SOURCE@@|$(replacement_escape "$bundle/src")|g" {} + || return 1
    printf 'SOURCE=%s\nBUILD=%s\n' "$bundle/src" "$bundle/build" > "$paths"
    log "relocated the CTest files from $old_build to $bundle/build"
}

# The bundle's libraries first, then the host's LD_LIBRARY_PATH (NVIDIA's libraries may be
# found only through it), then lib/fallback-active: those of lib/fallback the host lacks
# (use_fallback). bin/vkbert sets the same for itself. Not VK_ICD_FILENAMES: the loader must
# find the host's driver by itself.
host_ld=${LD_LIBRARY_PATH:-}
active=$bundle/lib/fallback-active
export LD_LIBRARY_PATH=$bundle/lib${host_ld:+:$host_ld}:$active
export VK_LAYER_PATH=$bundle/layers
export VKBERT_CACHE_DIR=${VKBERT_CACHE_DIR:-$bundle/cache}

# The Vulkan drivers' manifests the loader would read (the usual folders, or the user's list).
icd_files() {
    local list=${VK_DRIVER_FILES:-${VK_ICD_FILENAMES:-}}
    if [ -n "$list" ]; then tr ':' '\n' <<< "$list"; return; fi
    ls /etc/vulkan/icd.d/*.json /usr/local/share/vulkan/icd.d/*.json \
        /usr/share/vulkan/icd.d/*.json "${HOME:-/nonexistent}"/.local/share/vulkan/icd.d/*.json 2> /dev/null
}
# A driver manifest's library as a path: beside the manifest, or a bare name found as dlopen
# would (LD_LIBRARY_PATH, then ldconfig's cache); empty when it is nowhere.
icd_library() {
    local lib dir
    lib=$(sed -n 's/.*"library_path"[^"]*"\([^"]*\)".*/\1/p' "$1" | head -1)
    case $lib in
        /*) [ -e "$lib" ] && echo "$lib" ;;
        */*) [ -e "$(dirname "$1")/$lib" ] && echo "$(dirname "$1")/$lib" ;;
        *) for dir in ${LD_LIBRARY_PATH//:/ }; do
               [ -e "$dir/$lib" ] && { echo "$dir/$lib"; return; }
           done
           /sbin/ldconfig -p 2> /dev/null | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}' ;;
    esac
}
# ldd's "not found" for vkbert, the validation layer and every driver: libraries, or versions
# of them (an older libstdc++ than the layer's), that the host lacks.
missing_libs() {
    local f icd lib
    command -v ldd > /dev/null || return 0
    for f in "$bundle/build/vkbert" "$bundle/layers/libVkLayer_khronos_validation.so"; do
        ldd "$f" 2>&1 | grep 'not found' | sort -u | sed "s|^|  $(basename "$f"): |"
    done
    for icd in $(icd_files); do
        [ -f "$icd" ] || { echo "  $icd: no such file"; continue; }
        lib=$(icd_library "$icd")
        if [ -z "$lib" ]; then echo "  $icd: its library_path is nowhere on this host"; continue; fi
        ldd "$lib" 2>&1 | grep 'not found' | sort -u | sed "s|^|  $(basename "$lib") ($icd): |"
    done
}

# Links into $active, one by one, the libraries of lib/fallback that ldd finds missing (and
# then theirs): only those, so that nothing the host has is shadowed by an older copy.
use_fallback() {
    local name added=1
    while [ "$added" = 1 ]; do
        added=0
        for name in $(missing_libs | grep -o 'lib[A-Za-z0-9_+.-]*\.so\.[0-9]*' | sort -u); do
            [ -e "$bundle/lib/fallback/$name" ] && [ ! -e "$active/$name" ] || continue
            ln -s "../fallback/$name" "$active/$name" && added=1
        done
    done
    log "from lib/fallback: $(ls "$active" | paste -sd ' ')"
}

host_facts() {
    log "bundle: $(sed -n 's/^commit: //p' "$bundle/MANIFEST.txt"), at $bundle; results in $out"
    log "host: $(uname -srm), $(ldd --version 2>&1 | head -1)"
    log "host GPUs: $( (nvidia-smi -L || echo 'no nvidia-smi') 2> /dev/null | paste -sd ';')"
    log "Vulkan driver manifests: $(icd_files | paste -sd ' ')"
    log "VKBERT_DEVICE=${VKBERT_DEVICE:-(unset: the first discrete GPU)}"
    rm -rf "$active" && mkdir -p "$active"
    local missing
    missing=$(missing_libs)
    [ -z "$missing" ] && return 0
    log "the host lacks (ldd):"$'\n'"$missing"
    use_fallback
    missing=$(missing_libs)
    [ -z "$missing" ] || log "still missing:"$'\n'"$missing"
}

# Why `vkbert devices` failed, in the terms of the host: glibc, the driver, its libraries.
diagnose() {
    local need have=$(ldd --version 2>&1 | head -1 | grep -o '[0-9]\+\.[0-9]\+$')
    need=$(sed -n 's/^glibc_needed: //p' "$bundle/MANIFEST.txt")
    log "  $(head -3 "$out/devices.txt")"
    if [ -n "$need" ] && [ "$(printf '%s\n' "$need" "${have:-0}" | sort -V | head -1)" != "$need" ]; then
        log "  glibc too old: the bundle needs $need, the host has ${have:-an unknown one}"
    fi
    [ -n "$(icd_files)" ] || log "  no Vulkan driver manifest (ICD json) in /etc/vulkan/icd.d," \
        "/usr/share/vulkan/icd.d: in a container, NVIDIA_DRIVER_CAPABILITIES needs 'graphics' (or 'all')"
    log "  see devices.txt; VK_LOADER_DEBUG=all bin/vkbert devices shows the loader's view"
}

# `vkbert devices` lists without opening a context, so the validation layer is tried with one
# embedding of the bundle's model (which also shows the model on the device).
step_devices() {
    "$bundle/bin/vkbert" devices > "$out/devices.txt" 2>&1 || { diagnose; return 1; }
    echo "--- VKBERT_VALIDATION=1 vkbert embed (the bundle's layer and model):" >> "$out/devices.txt"
    VKBERT_VALIDATION=1 "$bundle/bin/vkbert" embed --model "$bundle/model" "hello" 2>&1 |
        cut -c 1-120 >> "$out/devices.txt" && return 0
    log "  vkbert embed with validation failed (devices.txt); the layer's libstdc++ needs" \
        "$(sed -n 's/^layer needs: //p' "$bundle/MANIFEST.txt")"
    return 1
}

# Left out, by their labels (tests/CMakeLists.txt): the lavapipe-only subgroup widths (sg_width:
# they assert lavapipe's sizes) and what checks the build, not the GPU (build_machine:
# install_package, abi_check, bench_plot). 4 tests at a time: they share one GPU, and each runs
# 2 workers (--jobs 2).
step_ctest() {
    local skipped name
    # A per-test limit under the suite's, so that a hung test still leaves ctest's summary.
    sed -i -E "s/TIMEOUT \"[0-9]+\"/TIMEOUT \"${CTEST_PER_TEST:-180}\"/g" \
        "$bundle/build/tests/CTestTestfile.cmake"
    (cd "$bundle/build" && VKBERT_VALIDATION=1 timeout -k 10 "${CTEST_TIMEOUT:-300}" \
        ctest -j "${CTEST_JOBS:-4}" --output-on-failure -LE '^(sg_width|build_machine)$' \
        ${CTEST_ARGS:-}) \
        >> "$out/ctest.log" 2>&1
    local rc=$?
    # Skipped tests (exit 77) print why, but ctest shows the output of failures only.
    skipped=$(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/p' "$out/ctest.log")
    for name in $skipped; do
        echo "skipped $name: $(sed -n "/Testing: $name\$/,/<end of output>/p" \
            "$bundle/build/Testing/Temporary/LastTest.log" | sed -n '/^------/,/<end of output>/p' |
            grep -v '^------\|<end of output>' | paste -sd ' ')"
    done >> "$out/ctest.log"
    cp "$bundle/build/Testing/Temporary/LastTest.log" "$out/ctest-full.log" 2> /dev/null
    return $rc
}

# --quick --repeat 3: every case, 3 timed runs each, the whole set 3 times for the spreads.
# BENCH_ARGS may add --cpu (OpenBLAS on the host's cores) where the GPU's time allows.
step_bench() {
    timeout -k 10 "${BENCH_TIMEOUT:-180}" "$bundle/bin/vkbert" bench --quick --repeat 3 \
        ${BENCH_ARGS:-} --json "$out/bench.json" >> "$out/bench.txt" 2>&1
}

# The host's own Python, with its own libraries: the bundle's stay out of its LD_LIBRARY_PATH
# (an older libcrypto or libz of ours could break its imports); bin/vkbert sets them for vkbert.
step_peers() {
    local script=$bundle/src/benchmarks/peers.py python=${PYTHON:-python3} why=
    [ -f "$script" ] || why="the bundle has no benchmarks/peers.py"
    [ -n "$why" ] || env LD_LIBRARY_PATH="$host_ld" "$python" -c \
        'import torch, transformers, sentence_transformers' > /dev/null 2>&1 ||
        why="$python cannot import torch, transformers and sentence_transformers"
    if [ -n "$why" ]; then echo "peers: skipped, $why" | tee -a "$out/peers.log"; return 77; fi
    env LD_LIBRARY_PATH="$host_ld" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
        timeout -k 10 "${PEERS_TIMEOUT:-360}" "$python" "$script" --gpu-check \
        --cli "$bundle/bin/vkbert" --model "$bundle/model" --texts-dir "$bundle/texts" \
        --out "$out" ${PEERS_ARGS:-} \
        >> "$out/peers.log" 2>&1
}

# One step: its exit code and time to summary.txt; 77 is a skip, anything else non-zero a failure.
step() {
    local name=$1 t0=$SECONDS rc
    log "$name: running"
    "step_$name"
    rc=$?
    case $rc in
        0) log "$name: ok ($((SECONDS - t0)) s)" ;;
        77) log "$name: skipped (exit 77, $((SECONDS - t0)) s)" ;;
        *) log "$name: FAILED, exit $rc ($((SECONDS - t0)) s)"; failed=1 ;;
    esac
}

log "started $(date -u +%Y-%m-%dT%H:%M:%SZ)"
relocate || { log "relocation failed"; failed=1; }
host_facts
step devices
step ctest
log "ctest: $(grep -E 'tests passed|tests failed' "$out/ctest.log" | tail -1 || echo 'no summary')"
step bench
step peers
log "finished $(date -u +%Y-%m-%dT%H:%M:%SZ): $([ $failed = 0 ] && echo 'all steps ok' || echo 'some step FAILED')"
exit $failed
