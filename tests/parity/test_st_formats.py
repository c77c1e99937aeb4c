"""vkbert against sentence-transformers on the folders the pinned library (6.2) saves.

Tiny random BERTs become SentenceTransformers (Transformer, Pooling in every mode, Dense with
each activation, Normalize, prompts, a length limit) and CrossEncoders (one label and three,
with the activation_fn the library writes), saved with the library's own save(). Then
`vkbert embed` must give SentenceTransformer(DIR).encode(texts) (cosine >= 0.99999, relative
L2 <= 1e-4 per text), and `vkbert rerank` (one label) or `vkbert classify --query` (several)
CrossEncoder(DIR).predict(pairs) (|difference| <= 1e-4 relative). The real all-MiniLM-L6-v2,
as shipped and re-saved by the library: test_checkpoints.py.

Needs VKBERT_CLI (the vkbert program) and sentence_transformers; skips, saying why, without
either. Run offline: HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1."""

import json
import os
import sys

import parity  # benchmarks/parity.py, on the path by conftest.py
import pytest


def _skip(reason):
    print(f"test_st_formats: skipped: {reason}", file=sys.stderr)
    pytest.skip(reason, allow_module_level=True)


CLI = os.environ.get("VKBERT_CLI")
if not CLI or not os.access(CLI, os.X_OK):
    _skip("set VKBERT_CLI to the vkbert program")
try:
    import numpy as np
    import torch
    from sentence_transformers import CrossEncoder, SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import (
        Dense,
        Normalize,
        Pooling,
        Transformer,
    )
    from transformers import (
        BertConfig,
        BertForSequenceClassification,
        BertModel,
        BertTokenizerFast,
    )
except ImportError as e:
    _skip(f"sentence_transformers cannot be imported: {e}")

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "far", "query", "passage", ":"]
LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)]
VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS + LETTERS
         + ["##" + c for c in LETTERS] + ["##s", "##ing", ".", "!", ","])

TEXTS = [
    "the cat sat on the mat.",
    "a dog ran far!",
    "hello",
    "the quick brown fox jumps over the lazy dog while the cat sat on the mat",
    "Cats RAN, dogs sat.",
    "",
]
QUERY = "the cat"


def cli(*args):
    return parity._run(CLI, list(args))


def randomize(model, seed):
    """Weights far from the tiny init, so that every part of the model shows in the output."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.3)


def bert_folder(path, labels=0, seed=0):
    """A BERT checkpoint (a BertForSequenceClassification with labels) and its tokenizer."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=24,
                        max_position_embeddings=40, num_labels=max(labels, 1))
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config) if labels else BertModel(config)
    randomize(model, seed)
    model.save_pretrained(str(path))
    BertTokenizerFast(str(path / "vocab.txt")).save_pretrained(str(path))
    return str(path)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return bert_folder(tmp_path_factory.mktemp("bert"), seed=1)


def check_embed(model_dir, texts=TEXTS):
    """vkbert embed against SentenceTransformer(DIR).encode, text by text."""
    want = SentenceTransformer(str(model_dir)).encode(texts, convert_to_numpy=True)
    got = parity.vkbert_embed(CLI, str(model_dir), texts)
    assert got.shape == want.shape, f"{model_dir}: shape {got.shape}, want {want.shape}"
    cos, rel, _ = parity.compare(want, got)
    i = int(np.argmax(rel))
    assert cos.min() >= 0.99999 and rel.max() <= 1e-4, \
        f"{model_dir}: cosine {cos.min()}, relative L2 {rel[i]} on text {i}"


# ---- SentenceTransformer.save ----

ACTS = {
    "tanh": torch.nn.Tanh,
    "identity": torch.nn.Identity,
    "relu": torch.nn.ReLU,
    "gelu": torch.nn.GELU,
    "sigmoid": torch.nn.Sigmoid,
}

# (pooling_mode, include_prompt, Dense activations, Normalize, max_seq_length)
ST_CASES = [
    ("mean", True, [], True, None),
    ("cls", False, ["tanh"], False, None),
    ("max", True, ["relu"], True, 12),
    ("mean_sqrt_len_tokens", True, ["gelu"], False, None),
    ("weightedmean", False, ["sigmoid"], True, None),
    ("lasttoken", False, ["identity"], False, 9),
    (("cls", "max", "mean"), False, ["tanh", "gelu"], True, None),
    (("cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken"), True, [], False,
     None),
]


def case_id(case):
    mode, include, acts, normalize, limit = case
    name = "+".join(mode) if isinstance(mode, tuple) else mode
    return f"{name}-prompt{int(include)}-{'-'.join(acts) or 'nodense'}-n{int(normalize)}-{limit}"


@pytest.mark.parametrize("case", ST_CASES, ids=case_id)
def test_sentence_transformer(case, base, tmp_path):
    mode, include_prompt, acts, normalize, limit = case
    torch.manual_seed(7)
    modules = [Transformer(base)]
    modules.append(Pooling(modules[0].get_embedding_dimension(), pooling_mode=mode,
                           include_prompt=include_prompt))
    width = modules[1].get_embedding_dimension()
    for k, act in enumerate(acts):
        modules.append(Dense(width, 10 - 3 * k, activation_function=ACTS[act]()))
        width = 10 - 3 * k
    if normalize:
        modules.append(Normalize())
    model = SentenceTransformer(modules=modules, prompts={"query": "query : "},
                                default_prompt_name="query")
    if limit:
        model.max_seq_length = limit
    model.save(str(tmp_path / "st"))
    saved = json.loads((tmp_path / "st" / "modules.json").read_text())
    assert saved[0]["type"] == "sentence_transformers.base.modules.transformer.Transformer"
    check_embed(tmp_path / "st")


# ---- CrossEncoder.save ----

def cross_encoder(tmp_path, labels, activation_fn):
    source = bert_folder(tmp_path / "source", labels=labels, seed=2 + labels)
    model = CrossEncoder(source, activation_fn=activation_fn)
    model.save(str(tmp_path / "ce"))
    return str(tmp_path / "ce")


def assert_scores_match(got, want, what):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, want {want.shape}"
    bound = 1e-4 * np.maximum(1.0, np.abs(want))
    assert np.all(np.abs(got - want) <= bound), f"{what}: {got} vs {want}"


@pytest.mark.parametrize("act", [None, "identity", "tanh", "sigmoid"])
def test_cross_encoder_one_label(act, tmp_path):
    model_dir = cross_encoder(tmp_path, 1, ACTS[act]() if act else None)
    saved = json.loads((tmp_path / "ce" / "config_sentence_transformers.json").read_text())
    assert saved["model_type"] == "CrossEncoder" and saved["activation_fn"].startswith("torch.")
    want = CrossEncoder(model_dir).predict([(QUERY, t) for t in TEXTS])
    ranked = json.loads(cli("rerank", "--model", model_dir, "--query", QUERY, "--json", "--",
                            *TEXTS))
    got = [0.0] * len(TEXTS)
    for item in ranked:
        got[item["index"]] = item["score"]
    assert_scores_match(got, want, f"rerank, activation {act}")


@pytest.mark.parametrize("act", [None, "softmax", "sigmoid"])
def test_cross_encoder_three_labels(act, tmp_path):
    fn = {"softmax": torch.nn.Softmax(dim=1), "sigmoid": torch.nn.Sigmoid()}.get(act)
    model_dir = cross_encoder(tmp_path, 3, fn)
    want = CrossEncoder(model_dir).predict([(QUERY, t) for t in TEXTS])
    rows = json.loads(cli("classify", "--model", model_dir, "--query", QUERY, "--json", "--",
                          *TEXTS))
    got = [[0.0] * 3 for _ in TEXTS]
    for i, row in enumerate(rows):
        for item in row:
            got[i][int(item["label"].rsplit("_", 1)[1])] = item["score"]
    assert_scores_match(got, want, f"classify --query, activation {act}")
