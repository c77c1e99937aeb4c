"""Wrong types and shapes are refused in Python, before any library call; a library failure
is a vkbert.Error with the status's name and the library's message."""

import os
import subprocess
import sys

import numpy as np
import pytest

import folder
import vkbert

E, H = 8, 2


def weights(e=E):
    rng = np.random.default_rng(0)
    w = {f"{p}_proj.weight": rng.standard_normal((e, e)) for p in ("q", "k", "v", "out")}
    w.update({f"{p}_proj.bias": rng.standard_normal(e) for p in ("q", "k", "v", "out")})
    return w


@pytest.fixture(scope="module")
def layer():
    with vkbert.Attention(E, H, weights()) as a:
        yield a


def test_devices_and_version():
    found = vkbert.devices()
    assert found and all(d["name"] and d["type"] for d in found)
    assert [d["index"] for d in found] == list(range(len(found)))
    with vkbert.Context(device=0) as ctx:
        assert ctx.device["name"] == found[0]["name"]
    assert vkbert.version() == vkbert.__version__


def test_context_keeps_its_caches_in_cache_dir(tmp_path, monkeypatch):
    elsewhere = tmp_path / "environment"
    monkeypatch.setenv("VKBERT_CACHE_DIR", str(elsewhere))
    with vkbert.Context(cache_dir=tmp_path / "mine") as ctx, vkbert.Attention(
        E, H, weights(), context=ctx
    ) as a:
        a.forward(np.zeros((1, 4, E), np.float32))
    assert any(p.name.startswith("pipelines-") for p in (tmp_path / "mine").iterdir())
    assert not elsewhere.exists()
    with pytest.raises(TypeError, match="cache_dir"):
        vkbert.Context(cache_dir=1)


def test_missing_folder_is_a_library_error(tmp_path):
    missing = str(tmp_path / "nothing_here")
    with pytest.raises(vkbert.Error) as e:
        vkbert.Model(missing)
    assert e.value.status == "VKBERT_ERROR_INVALID_ARGUMENT"
    assert "nothing_here" in e.value.message and e.value.status in str(e.value)


def test_unknown_prompt_is_a_library_error(folders):
    with vkbert.Model(folders["st"]) as m:
        with pytest.raises(vkbert.Error, match="nope") as e:
            m.embed(["hello"], prompt_name="nope")
        assert e.value.status == "VKBERT_ERROR_INVALID_ARGUMENT"
        assert m.embed("hello").shape == (m.dimension,)  # the model still works
        with pytest.raises(vkbert.Error, match="classifier"):
            m.classify(["hello"])


def test_unknown_device_is_a_library_error():
    with pytest.raises(vkbert.Error) as e:
        vkbert.Context(device="no such device anywhere")
    assert e.value.status == "VKBERT_ERROR_NO_DEVICE"


@pytest.mark.parametrize("bad, error", [
    (np.zeros((2, 3, E), dtype=np.int32), TypeError),
    (np.zeros((2, 3, E), dtype=np.complex64), TypeError),
    (np.zeros((3, E), dtype=np.float32), ValueError),
    (np.zeros((2, 3, E + 1), dtype=np.float32), ValueError),
    (np.zeros((0, 3, E), dtype=np.float32), ValueError),
])
def test_bad_x(layer, bad, error):
    with pytest.raises(error):
        layer.forward(bad)


@pytest.mark.parametrize("bad, error", [
    (np.ones((2, 3), dtype=np.complex64), TypeError),
    (np.array([["a"] * 3] * 2), TypeError),
    (np.ones((3, 2), dtype=bool), ValueError),      # neither [B,S] nor [S,S]
    (np.ones((2, 3, 3, 3), dtype=bool), ValueError),  # 3 heads, the layer has 2
    (np.ones((2, 2, 3, 3, 1), dtype=bool), ValueError),
    (np.ones((4,), dtype=bool), ValueError),
])
def test_bad_masks(layer, bad, error):
    with pytest.raises(error):
        layer.forward(np.zeros((2, 3, E), dtype=np.float32), mask=bad)


def test_bad_weights():
    w = weights()
    with pytest.raises(ValueError, match="q_proj.bias"):
        vkbert.Attention(E, H, {k: v for k, v in w.items() if k != "q_proj.bias"})
    with pytest.raises(ValueError, match="unknown"):
        vkbert.Attention(E, H, dict(w, extra=w["q_proj.bias"]))
    with pytest.raises(ValueError, match="k_proj.weight"):
        vkbert.Attention(E, H, dict(w, **{"k_proj.weight": np.zeros((E, E + 1))}))
    with pytest.raises(TypeError, match="out_proj.bias"):
        vkbert.Attention(E, H, dict(w, **{"out_proj.bias": np.zeros(E, dtype=np.int64)}))
    with pytest.raises(ValueError, match="multiple"):
        vkbert.Attention(E, 3, w)
    with pytest.raises(ValueError, match="precision"):
        vkbert.Attention(E, H, w, precision="fp8")


def test_bad_text_arguments(folders):
    with vkbert.Model(folders["st"]) as m:
        with pytest.raises(TypeError):
            m.embed(["fine", 3])
        with pytest.raises(TypeError):
            m.embed(42)
        with pytest.raises(ValueError, match="NUL"):
            m.embed(["a\0b"])
        with pytest.raises(TypeError):
            m.embed(["fine"], normalize="yes")
        with pytest.raises(TypeError):
            m.embed(["fine"], prompt_name=1)
        with pytest.raises(ValueError):
            m.tokenize("fine", max_length=0)
    with pytest.raises(ValueError, match="precision"):
        vkbert.Model(folders["st"], precision="int4")


def test_a_library_that_is_not_there_is_an_import_error_naming_it(tmp_path):
    missing = str(tmp_path / "libvkbert.so")
    env = dict(os.environ, VKBERT_LIBRARY=missing)
    done = subprocess.run([sys.executable, "-c", "import vkbert"], env=env, capture_output=True,
                          text=True, cwd=os.path.dirname(os.path.dirname(vkbert.__file__)))
    assert done.returncode != 0
    assert "ImportError" in done.stderr and missing in done.stderr


# Finite weights whose activations overflow float32: the embeddings' LayerNorm scaled to 3e38.
HUGE = {"embeddings.LayerNorm.weight": 3e38, "embeddings.LayerNorm.bias": 3e38}


def _refuses_non_finite(call):
    with pytest.raises(vkbert.Error, match=r"non-finite values \(inf or NaN\)") as e:
        call()
    assert e.value.status == "VKBERT_ERROR_DEVICE_LIMIT"


def test_non_finite_results_are_library_errors(tmp_path):
    plain = folder.write_bert(str(tmp_path / "plain"), fill=HUGE)
    cross = folder.write_bert(str(tmp_path / "cross"), labels=("relevant",), fill=HUGE)
    with vkbert.Model(plain) as m:
        _refuses_non_finite(lambda: m.embed(["the cat sat", "a dog"]))
    with vkbert.Model(cross) as m:
        _refuses_non_finite(lambda: m.rerank("the cat", ["a dog", "the mat"]))
        _refuses_non_finite(lambda: m.classify(["the cat"]))
