#!/usr/bin/env bash
# The prepared GPU check, for a session that has a device machine: build, run the tests on the
# real GPU (validation on), then `vkbert bench --json`, all inside ~10 minutes. Results land in
# $OUT (the device tool brings that folder back), or in ./device-check when OUT is unset.
set -uo pipefail
out=${OUT:-device-check}
mkdir -p "$out"
log() { echo "[device-check] $*" | tee -a "$out/summary.txt"; }

if ! command -v glslc > /dev/null || ! pkg-config --exists libcjson; then
    log "installing build dependencies"
    apt-get update -qq > /dev/null 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends build-essential \
        cmake pkg-config libvulkan-dev libvulkan-volk-dev glslc glslang-tools spirv-tools \
        vulkan-validationlayers libcriterion-dev libcjson-dev libopenblas-dev > /dev/null 2>&1
fi
cmake -S . -B build-device -DCMAKE_BUILD_TYPE=Release > "$out/configure.log" 2>&1 &&
    cmake --build build-device -j "$(nproc)" > "$out/build.log" 2>&1 || { log "build failed"; exit 1; }

./build-device/vkbert devices | tee "$out/devices.txt"
# Tests on the GPU: the default device is the first discrete GPU.
(cd build-device && timeout 300 ctest --output-on-failure -E bench_plot) > "$out/ctest.log" 2>&1
log "ctest exit $? (log in ctest.log)"
timeout 240 ./build-device/vkbert bench --cpu --json "$out/bench.json" > "$out/bench.txt" 2>&1
log "bench exit $? (bench.txt, bench.json)"
