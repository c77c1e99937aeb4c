#!/usr/bin/env bash
# `vkbert serve` with real clients (tests/serve): pytest with Debian's python3 in a fresh venv
# that sees Debian's numpy and pytest (--system-site-packages) and has the Python package
# installed offline (as .ci/python.sh does), to compare every route with the library's own
# results; curl; and Node's fetch with the openai npm package (tests/serve/node, installed by
# `npm ci --prefix tests/serve/node`; its test skips, saying why, without node or the package).
# Usage: .ci/serve.sh BUILD_DIR [LIBRARY_BUILD_DIR]: BUILD_DIR's `vkbert` is the server tested;
# the expected results come from LIBRARY_BUILD_DIR's libvkbert.so (default BUILD_DIR), loaded
# into python3 by the package. The sanitizer job (CTest's `serve_asan`) passes a plain build
# there: python3 has no sanitizer runtime to load a sanitized library with, and only the server
# needs to be sanitized. Exits 77 (CTest's skip) when the build has no `vkbert serve` (no
# libmicrohttpd), LIBRARY_BUILD_DIR has no library, or python3 lacks what it needs.
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$(dirname "$0")/.." && pwd)
python=/usr/bin/python3 # Debian's, with its packages; not a pyenv or conda one on PATH

status=0
help=$("$build/vkbert" serve --help 2>&1) || status=$?
if [ "$status" -ne 0 ]; then
    echo "serve: skipped, this build has no 'vkbert serve' (vkbert serve --help: exit $status)"
    echo "${help:-(no message)}" | head -3
    exit 77
fi
library_build=${2:-$build}
if [ ! -f "$library_build/libvkbert.so" ]; then
    echo "serve: skipped, no $library_build/libvkbert.so to compute the expected results with"
    exit 77
fi
library=$(cd "$library_build" && pwd)/libvkbert.so
name=serve
source "$source/.ci/python-venv.sh"

export VKBERT_LIBRARY="$library" VKBERT_CLI="$build/vkbert" VKBERT_VALIDATION=1
# -rs: the reasons of skips (node or the openai package missing) are printed.
cd "$scratch" && "$scratch/venv/bin/python" -m pytest -q -rs -p no:cacheprovider "$source/tests/serve"
