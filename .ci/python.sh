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

name=python
source "$source/.ci/python-venv.sh"
"$python" -c "import torch" 2> /dev/null ||
    echo "python: torch is missing (Debian: python3-torch); the attention tests will skip"

export VKBERT_LIBRARY="$build/libvkbert.so" VKBERT_CLI="$build/vkbert" VKBERT_VALIDATION=1
# The tests import the installed package, not the source tree beside them.
cd "$scratch" && "$scratch/venv/bin/python" -m pytest -q -p no:cacheprovider "$source/python/tests"

# Without VKBERT_LIBRARY the package finds the library installed in its prefix.
cmake --install "$build" --prefix "$scratch/venv" > /dev/null
env -u VKBERT_LIBRARY "$scratch/venv/bin/python" -c '
import vkbert, sys
assert vkbert._lib.lib._name.startswith(sys.prefix), vkbert._lib.lib._name
print("python: found", vkbert._lib.lib._name, "on", vkbert.devices()[0]["name"])'
