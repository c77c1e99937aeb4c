#!/usr/bin/env bash
# The Python package (python/): installed with Debian's pip into a fresh venv that sees
# Debian's numpy, torch and pytest (--system-site-packages), then its tests run against the
# build's library and vkbert program, with validation on. No network (--no-index): pip builds
# with the setuptools the venv sees (python/setup.py says why), as README.md's command does.
# Usage: .ci/python.sh BUILD_DIR. Exits 77 (CTest's skip) when pytest or venv is missing.
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$(dirname "$0")/.." && pwd)
python=/usr/bin/python3 # Debian's, with its packages; not a pyenv or conda one on PATH

# module:Debian package (Debian's python3 has venv without ensurepip until python3-venv)
for need in ensurepip:python3-venv pip:python3-pip pytest:python3-pytest numpy:python3-numpy \
    setuptools:python3-setuptools; do
    if ! "$python" -c "import ${need%%:*}" 2> /dev/null; then
        echo "python: skipped, $python has no ${need%%:*} (Debian: ${need#*:})"
        exit 77
    fi
done
"$python" -c "import torch" 2> /dev/null ||
    echo "python: torch is missing (Debian: python3-torch); the attention tests will skip"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$python" -m venv --system-site-packages "$scratch/venv"
# A copy of the package: an in-tree build would leave build/ and *.egg-info in the source.
cp -r "$source/python" "$scratch/src"
"$scratch/venv/bin/pip" install --no-index --quiet "$scratch/src"

export VKBERT_LIBRARY="$build/libvkbert.so" VKBERT_CLI="$build/vkbert" VKBERT_VALIDATION=1
# The tests import the installed package, not the source tree beside them.
cd "$scratch" && "$scratch/venv/bin/python" -m pytest -q -p no:cacheprovider "$source/python/tests"

# Without VKBERT_LIBRARY the package finds the library installed in its prefix.
cmake --install "$build" --prefix "$scratch/venv" > /dev/null
env -u VKBERT_LIBRARY "$scratch/venv/bin/python" -c '
import vkbert, sys
assert vkbert._lib.lib._name.startswith(sys.prefix), vkbert._lib.lib._name
print("python: found", vkbert._lib.lib._name, "on", vkbert.devices()[0]["name"])'
