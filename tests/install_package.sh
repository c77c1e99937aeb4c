#!/usr/bin/env bash
# Installs the build into a scratch prefix, then builds the examples as an outside project
# through the CMake package (find_package(vkbert 0.3): the version check of the package) and
# examples/attention.c through pkg-config, and runs the version check and both attentions.
set -euo pipefail
build=$1 source=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build" --prefix "$scratch/prefix" > "$scratch/install.log"
test -f "$scratch/prefix/include/vkbert.h"
test -f "$scratch/prefix/include/vkbert_bench.h"
test -x "$scratch/prefix/bin/vkbert"
"$scratch/prefix/bin/vkbert" --help > /dev/null
# The soname follows the ABI policy (docs/c-api.md, "ABI"): libvkbert.so.MAJOR.MINOR before 1.0,
# then .MAJOR.
version() { sed -nE "s/^#define VKBERT_VERSION_$1 ([0-9]+)$/\1/p" "$source/include/vkbert.h"; }
major=$(version MAJOR) minor=$(version MINOR)
soname=libvkbert.so.$major
[ "$major" = 0 ] && soname=libvkbert.so.0.$minor
readelf -d "$scratch/prefix/lib"*/libvkbert.so | grep -q "Library soname: \[$soname\]" ||
    { echo "libvkbert.so's SONAME is not $soname" >&2; exit 1; }

cmake -S "$source/examples" -B "$scratch/cmake-build" -DCMAKE_PREFIX_PATH="$scratch/prefix" > /dev/null
cmake --build "$scratch/cmake-build" > /dev/null
# ... and refuses an older one: an older minor version before 1.0 (SameMinorVersion, where
# SameMajorVersion would accept it), an older major version after.
other=$([ "$major" = 0 ] && echo "0.$((minor - 1))" || echo "$((major - 1)).0")
mkdir "$scratch/other"
printf 'cmake_minimum_required(VERSION 3.25)\nproject(other LANGUAGES C)\nfind_package(vkbert %s REQUIRED)\n' \
    "$other" > "$scratch/other/CMakeLists.txt"
if cmake -S "$scratch/other" -B "$scratch/other/build" -DCMAKE_PREFIX_PATH="$scratch/prefix" \
    > /dev/null 2>&1; then
    echo "find_package(vkbert $other) accepted vkbert $major.$minor" >&2; exit 1
fi
LD_LIBRARY_PATH="$scratch/prefix/lib:${LD_LIBRARY_PATH:-}" "$scratch/cmake-build/version"
LD_LIBRARY_PATH="$scratch/prefix/lib:${LD_LIBRARY_PATH:-}" "$scratch/cmake-build/attention"
test -f "$scratch/prefix/include/vkbert_vulkan.h"
LD_LIBRARY_PATH="$scratch/prefix/lib:${LD_LIBRARY_PATH:-}" "$scratch/cmake-build/interop"

libdir=$(dirname "$(find "$scratch/prefix" -name vkbert.pc)")
export PKG_CONFIG_PATH="$libdir"
cc -std=c11 -Wall -Wextra -Werror "$source/examples/attention.c" -o "$scratch/pc-attention" \
   $(pkg-config --cflags --libs vkbert) -lm
LD_LIBRARY_PATH="$scratch/prefix/lib:$(pkg-config --variable=libdir vkbert):${LD_LIBRARY_PATH:-}" "$scratch/pc-attention"
# The headers from C++ (C++11, where the _INIT macros cannot be designated initializers).
if command -v c++ > /dev/null; then
    printf '%s\n' '#include <vkbert.h>' '#include <vkbert_bench.h>' \
        'int main() { vkbert_context_options o = VKBERT_CONTEXT_OPTIONS_INIT;' \
        '  vkbert_bench_result r = VKBERT_BENCH_RESULT_INIT;' \
        '  return vkbert_version() && o.struct_size && r.struct_size ? 0 : 1; }' > "$scratch/cxx.cpp"
    c++ -std=c++11 -Wall -Wextra -Werror -I"$scratch/prefix/include" -fsyntax-only "$scratch/cxx.cpp"
fi
# The installed library loads Vulkan at run time: no link-time libvulkan.
if readelf -d "$scratch/prefix/lib"*/libvkbert.so* | grep -q 'libvulkan'; then
    echo "libvkbert links libvulkan at link time" >&2; exit 1
fi
echo "install_package: CMake package and pkg-config both build and run"
