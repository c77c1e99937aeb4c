"""vkbert.Model against the C API's own results (the vkbert program, which calls the same
library through vkbert.h): embed with prompts and normalization, rerank, classify, tokenize;
and what the package itself decides (a str input, empty lists, threads, closing)."""

import threading

import numpy as np
import pytest

import folder
import vkbert

TEXTS = [
    "the cat sat on the mat.",
    "a dog ran far away!",
    "hello",
    "the big red dog and the small blue cat was running very fast , or slow .",
    "it was good",
]


@pytest.fixture(scope="module")
def st(folders):
    with vkbert.Model(folders["st"]) as m:
        yield m


def test_embed_matches_the_cli(st, folders, cli, tmp_path):
    want = cli.embed(tmp_path, folders["st"], TEXTS)
    got = st.embed(TEXTS)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), st.dimension) == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    # The folder's Normalize module: unit rows.
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1, rtol=1e-5)


def test_time_split_grows_with_each_call(folders):
    with vkbert.Model(folders["st"]) as m:
        loaded = m.time_split()
        assert loaded["load_ms"] > 0 and loaded["passes"] == 0 and loaded["tokenize_ms"] == 0
        m.embed(TEXTS * 10)  # 50 texts: two batches of 32 and 18
        once = m.time_split()
        assert once["passes"] == 2 and once["load_ms"] == loaded["load_ms"]
        for phase in ("tokenize_ms", "prepare_ms"):
            assert once[phase] > 0, phase
        assert once["wait_ms"] + once["read_ms"] > 0
        m.embed(TEXTS)
        twice = m.time_split()
        assert twice["passes"] == 3
        assert all(twice[k] >= once[k] for k in once)


@pytest.mark.parametrize("prompt_name", ["query", "passage"])
def test_prompt_names_match_the_cli(st, folders, cli, tmp_path, prompt_name):
    want = cli.embed(tmp_path, folders["st"], TEXTS, "--prompt-name", prompt_name)
    np.testing.assert_allclose(st.embed(TEXTS, prompt_name=prompt_name), want, rtol=0, atol=1e-6)


def test_a_prompt_text_matches_the_cli(st, folders, cli, tmp_path):
    want = cli.embed(tmp_path, folders["st"], TEXTS, "--prompt", "hello world ")
    np.testing.assert_allclose(st.embed(TEXTS, prompt="hello world "), want, rtol=0, atol=1e-6)


def test_normalize_overrides_the_folder_per_call(st, folders, cli, tmp_path):
    raw = cli.embed(tmp_path, folders["st"], TEXTS, "--no-normalize")
    np.testing.assert_allclose(st.embed(TEXTS, normalize=False), raw, rtol=0, atol=1e-6)
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1)
    # The next call without the switch is back to the folder's rule.
    np.testing.assert_allclose(np.linalg.norm(st.embed(TEXTS), axis=1), 1, rtol=1e-5)


def test_normalize_true_on_a_folder_without_normalize(folders, cli, tmp_path):
    want = cli.embed(tmp_path, folders["plain"], TEXTS, "--normalize")
    raw = cli.embed(tmp_path, folders["plain"], TEXTS)
    with vkbert.Model(folders["plain"]) as m:
        np.testing.assert_allclose(m.embed(TEXTS), raw, rtol=0, atol=1e-6)
        got = m.embed(TEXTS, normalize=True)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    np.testing.assert_allclose(got, raw / np.linalg.norm(raw, axis=1, keepdims=True), atol=1e-6)


def test_a_str_gives_one_row_without_the_first_axis(st):
    """SentenceTransformer.encode's rule: a str input returns embeddings[0]."""
    one = st.embed(TEXTS[0])
    assert one.shape == (st.dimension,)
    np.testing.assert_array_equal(one, st.embed([TEXTS[0]])[0])
    assert st.embed([]).shape == (0, st.dimension)
    assert st.embed(t for t in TEXTS[:2]).shape == (2, st.dimension)


def test_fp16_is_close_to_fp32(st, folders):
    with vkbert.Model(folders["st"], precision="fp16") as half:
        got = half.embed(TEXTS)
    want = st.embed(TEXTS)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) <= 3e-3


def test_rerank_matches_the_cli(folders, cli):
    query = "the cat"
    ranked = cli.json("rerank", "--model", folders["cross"], "--query", query, "--json", "--",
                      *TEXTS)
    want = np.zeros(len(TEXTS), dtype=np.float32)
    for r in ranked:
        want[r["index"]] = r["score"]
    with vkbert.Model(folders["cross"]) as m:
        assert m.labels == ["relevant"]
        got = m.rerank(query, TEXTS)
        logits = m.rerank(query, TEXTS, raw_scores=True)
        assert np.isscalar(m.rerank(query, TEXTS[0]))
    assert got.dtype == np.float32 and got.shape == (len(TEXTS),)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-logits.astype(np.float64))), atol=1e-6)


def test_classify_matches_the_cli(folders, cli):
    labels = ["negative", "neutral", "positive"]
    rows = cli.json("classify", "--model", folders["classifier"], "--json", "--", *TEXTS)
    with vkbert.Model(folders["classifier"]) as m:
        assert m.labels == labels  # config.json's id2label, in order
        got = m.classify(TEXTS)
        assert m.classify(TEXTS[1]).shape == (3,)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), 3)
    for i, row in enumerate(rows):
        for entry in row:
            assert got[i, labels.index(entry["label"])] == pytest.approx(entry["score"], abs=1e-6)
    np.testing.assert_allclose(got.sum(axis=1), 1, rtol=1e-5)  # a single-label softmax


def test_tokenize_matches_the_cli_and_the_vocabulary(st, folders, cli):
    want = cli.json("tokenize", "--model", folders["st"], "--", *TEXTS)
    assert st.tokenize(TEXTS) == want
    ids = {t: i for i, t in enumerate(folder.VOCAB)}
    expect = [ids[t] for t in ("[CLS]", "the", "cat", "sat", "[SEP]")]
    assert st.tokenize("the cat sat") == {"input_ids": expect, "token_type_ids": [0] * 5,
                                          "attention_mask": [1] * 5,
                                          "special_tokens_mask": [1, 0, 0, 0, 1],
                                          "offsets": [[0, 0], [0, 3], [4, 7], [8, 11], [0, 0]]}
    pair = st.tokenize("hello", pair="world")
    assert pair["input_ids"] == [ids[t] for t in ("[CLS]", "hello", "[SEP]", "world", "[SEP]")]
    assert pair["token_type_ids"] == [0, 0, 0, 1, 1]
    assert len(st.tokenize(TEXTS[3], max_length=6)["input_ids"]) == 6


def test_threads_with_their_own_models_agree_with_one_thread(folders):
    """Each thread owns a Model (and so a context); ctypes releases the GIL during each call,
    so both run in the library at once. Correctness only, not timing."""
    texts = TEXTS * 8
    with vkbert.Model(folders["st"]) as m:
        want = m.embed(texts)
    results, errors = {}, []

    def work(k):
        try:
            with vkbert.Model(folders["st"]) as own:
                results[k] = [own.embed(texts) for _ in range(3)]
        except Exception as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(2):
        for got in results[k]:
            np.testing.assert_array_equal(got, want)


def test_close_and_shared_context(folders):
    with vkbert.Model(folders["st"]) as m:
        pass
    assert m.closed
    with pytest.raises(ValueError, match="closed"):
        m.embed(TEXTS)
    m.close()  # twice is harmless
    with vkbert.Context() as ctx:
        a = vkbert.Model(folders["st"], context=ctx)
        b = vkbert.Model(folders["plain"], context=ctx)
        assert a.embed("hello").shape == (24,) and b.dimension == 24
    assert a.closed and b.closed
