#!/usr/bin/env bash
# The cross builds, so that Windows and aarch64 stay built and run: the library, the tool and the
# examples for 64-bit Windows (Debian's MinGW-w64) and for aarch64 Linux (Debian's cross gcc,
# arm64 libraries through dpkg multiarch), each then run under emulation. Tests are not
# cross-built.
#   Windows, under Wine: `vkbert --help` works; `vkbert devices` and the attention example,
#     with no Vulkan driver there, fail with the "no Vulkan" message and exit 1, never crash,
#     both with Wine's own vulkan-1.dll (no display, so no driver behind it) and with none.
#   aarch64, under qemu-user, on the arm64 build of lavapipe: `vkbert devices`, a small
#     `vkbert demo` (checked against the float64 reference) and the attention example.
# For a fresh Debian 12 machine (called from .ci/run): installs its own packages, as root.
# Callable from any directory.   JOBS=2 (build parallelism)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work="$root/build-cross"
jobs=${JOBS:-2}
export DEBIAN_FRONTEND=noninteractive
mkdir -p "$work"
source "$root/.ci/apt-archive.sh"

# ---- packages ----
dpkg --add-architecture arm64
apt-get update -qq
apt-get install -y -qq --no-install-recommends gcc-mingw-w64-x86-64 wine64 \
    gcc-aarch64-linux-gnu libc6-dev:arm64 qemu-user-static dpkg-dev > /dev/null
# lavapipe for arm64 is extracted, not installed: installed, its ICD file would be read by this
# machine's own loader, which would then report failing to load an arm64 library to every
# test's validation messenger. Its libraries are installed (none of them is a driver).
arm64_deps=$(apt-cache depends --no-recommends --no-suggests mesa-vulkan-drivers:arm64 |
    awk '/^ *Depends: [^<]/ {print $2}')
# shellcheck disable=SC2086 # one package a word
apt-get install -y -qq --no-install-recommends $arm64_deps libcjson-dev:arm64 \
    libutf8proc-dev:arm64 libpcre2-dev:arm64 > /dev/null

# Builds the library and the tool with a toolchain file, installs them to a prefix, and builds
# the examples there as an outside project would (find_package).   $1 name, $2 toolchain
cross_build() {
    local build="$work/$1" toolchain="$root/cmake/$2"
    shift 2
    cmake -S "$root" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DVKBERT_BUILD_TESTS=OFF \
        "$@" > /dev/null
    cmake --build "$build" -j "$jobs" > /dev/null
    cmake --install "$build" --prefix "$build/prefix" > /dev/null
    cmake -S "$root/examples" -B "$build/examples" -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
        -Dvkbert_DIR="$build/prefix/lib/cmake/vkbert" > /dev/null
    cmake --build "$build/examples" -j "$jobs" > /dev/null
}

# ---- Windows ----
# cJSON, utf8proc and PCRE2 have no MinGW packages: they are built from Debian's source packages, read
# through a source list of this script's own (the machine's apt configuration is left alone),
# on the mirror that configuration uses.
deps_sources() {
    local apt="$work/apt" codename uri
    codename=$(debian_codename)
    uri=$(debian_archive_uri "$codename")
    mkdir -p "$apt/lists/partial"
    echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
        "$uri $codename main" > "$apt/sources.list"
    local options=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
        -o "Dir::State::Lists=$apt/lists")
    apt-get "${options[@]}" update -qq
    rm -rf "$work/sources"
    mkdir -p "$work/sources"
    (cd "$work/sources" && apt-get "${options[@]}" source -qq cjson utf8proc pcre2 > /dev/null 2>&1)
}

# Runs a Windows program under Wine, printing its output; fails unless it exits with $1.
wine_expect() {
    local expected=$1 status=0
    shift
    "$@" > "$work/wine.out" 2>&1 || status=$?
    grep -v '^wine: \|^[0-9a-f]*:err:' "$work/wine.out" || true
    if [ "$status" -ne "$expected" ]; then
        echo "cross.sh: $* exited with $status, not $expected" >&2
        exit 1
    fi
}

windows() {
    deps_sources
    cross_build win64 toolchain-mingw-w64-x86_64.cmake \
        -DVKBERT_CJSON_SOURCE="$(echo "$work"/sources/cjson-*/)" \
        -DVKBERT_UTF8PROC_SOURCE="$(echo "$work"/sources/utf8proc-*/)" \
        -DVKBERT_PCRE2_SOURCE="$(echo "$work"/sources/pcre2-*/)"
    local bin="$work/win64/prefix/bin"
    cp "$work/win64/examples/attention.exe" "$bin/" # beside the DLL, where Windows looks
    export WINEPREFIX="$work/wine" WINEDEBUG=-all
    local wine=/usr/lib/wine/wine64
    wine_expect 0 "$wine" "$bin/vkbert.exe" --help
    grep -q '^usage: vkbert <command>' "$work/wine.out"
    for loader in builtin none; do
        echo "== Windows, Wine's vulkan-1.dll: $loader"
        local override=
        [ "$loader" = none ] && override="vulkan-1="
        for program in "vkbert.exe devices" attention.exe; do
            # shellcheck disable=SC2086 # the program and its argument
            WINEDLLOVERRIDES=$override wine_expect 1 "$wine" "$bin"/$program
            grep -q 'no Vulkan' "$work/wine.out"
        done
    done
}

# ---- aarch64 ----
aarch64() {
    cross_build arm64 toolchain-aarch64-linux-gnu.cmake
    local mesa="$work/mesa-arm64"
    rm -rf "$mesa"
    mkdir -p "$mesa"
    (cd "$mesa" && apt-get download -qq mesa-vulkan-drivers:arm64 2> /dev/null)
    dpkg-deb -x "$mesa"/mesa-vulkan-drivers_*_arm64.deb "$mesa/root"
    local lib="$mesa/root/usr/lib/aarch64-linux-gnu/libvulkan_lvp.so"
    sed "s|\"library_path\": *\"[^\"]*\"|\"library_path\": \"$lib\"|" \
        "$mesa/root/usr/share/vulkan/icd.d/lvp_icd.aarch64.json" > "$mesa/lvp.json"
    # Only that driver; Mesa's device-select layer (an x86-64 library here) stays off.
    export VK_DRIVER_FILES="$mesa/lvp.json" VK_ICD_FILENAMES="$mesa/lvp.json" NODEVICE_SELECT=1
    export VKBERT_CACHE_DIR="$work/cache-arm64"
    local run="qemu-aarch64-static" bin="$work/arm64/prefix/bin"
    echo "== aarch64 under qemu-user"
    $run "$bin/vkbert" devices
    local start=$SECONDS
    $run "$bin/vkbert" demo --batch 1 --seq 16 --embed 64 --heads 2 --iterations 2
    echo "(demo: $((SECONDS - start)) s under emulation)"
    $run "$work/arm64/examples/attention"
}

windows
aarch64
echo "cross.sh: Windows and aarch64 builds done; both ran as expected"
