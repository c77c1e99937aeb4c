"""Shared fixtures: the model folders (written once per session) and the vkbert CLI, whose
output is the C API's own result to compare the package with."""

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import folder


@pytest.fixture(scope="session")
def folders(tmp_path_factory):
    return folder.write_test_folders(tmp_path_factory.mktemp("models"))


def _cli_path():
    """VKBERT_CLI, else the vkbert program beside VKBERT_LIBRARY (a build tree), else PATH."""
    given = os.environ.get("VKBERT_CLI")
    if given:
        return given
    lib = os.environ.get("VKBERT_LIBRARY")
    beside = os.path.join(os.path.dirname(lib), "vkbert") if lib else None
    return beside if beside and os.access(beside, os.X_OK) else shutil.which("vkbert")


@pytest.fixture(scope="session")
def cli():
    """cli(*args): the vkbert program's stdout; cli.json(*args) parsed; cli.embed(...) the
    embeddings of `vkbert embed`."""
    path = _cli_path()
    if not path:
        pytest.skip("no vkbert program (set VKBERT_CLI) to compare the package with")

    class Cli:
        def __call__(self, *args):
            done = subprocess.run([path, *args], capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            return done.stdout

        def json(self, *args):
            return json.loads(self(*args))

        def embed(self, out_dir, model, texts, *options):
            """`vkbert embed` of texts, read back from its .npy output."""
            out = os.path.join(str(out_dir), "cli.npy")
            self("embed", "--model", model, "--output", out, *options, "--", *texts)
            return np.load(out)

    return Cli()
