#!/usr/bin/env bash
# The lavapipe proof: the bundle as it would arrive, run in a private mount namespace where the
# repository and .venv (/work), the build machine's copies of what a GPU host would lack (the
# libraries only vkbert and its tests use, the Vulkan loader, the validation layer) and the
# compilers are hidden: bind-mounted /dev/null, or an empty tmpfs.
# Run as root, with the bundle unpacked under HOST (outside the hidden folder):
#   HOST=/tmp/gpuhost unshare -m --propagation private benchmarks/bundle-proof.sh COMMAND...
# e.g. COMMAND: PYTHON=/tmp/gpuhost/hostvenv/bin/python bash /tmp/gpuhost/vkbert-gpucheck/device-check.sh
# Environment: HOST (default /tmp/gpuhost), VENV (default the repository's .venv), HIDE (the
# folder made empty, default the one above the repository).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
host=${HOST:-/tmp/gpuhost}
venv=${VENV:-$root/.venv}
hide=${HIDE:-$(dirname "$root")}
lacking='libcjson.so.1 libutf8proc.so.2 libcriterion.so.3 libgit2.so.1.5 libnanomsg.so.5
    libhttp_parser.so.2.9 libmbedcrypto.so.7 libmbedtls.so.14 libmbedx509.so.1 libssh2.so.1
    libmicrohttpd.so.12 libopenblas.so.0 libgfortran.so.5 libquadmath.so.0 libvulkan.so.1'
for l in $lacking; do
    sys=$(ldconfig -p | awk -v s="$l" '$1 == s && /x86-64/ {print $NF; exit}')
    mount --bind /dev/null "$(readlink -f "$sys")" && echo "hidden: $(readlink -f "$sys")"
done
mount --bind /dev/null "$(readlink -f /usr/lib/x86_64-linux-gnu/libVkLayer_khronos_validation.so)"
mount -t tmpfs none /usr/share/vulkan/explicit_layer.d
for c in glslc glslangValidator x86_64-linux-gnu-gcc-12 x86_64-linux-gnu-cpp-12 clang-14 tcc; do
    p=$(command -v $c) && mount --bind /dev/null "$(readlink -f "$p")" && echo "hidden: $(readlink -f "$p")"
done
# A host Python with torch and sentence-transformers: the repository's .venv, under another name.
mkdir -p "$host/hostvenv" && mount --bind "$venv" "$host/hostvenv"
mount -t tmpfs none "$hide"
exec env -i PATH=/usr/bin:/bin HOME="$host" "$@"
