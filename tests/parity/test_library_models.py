"""Models built by the libraries' own classes, with odd shapes, against those libraries:
random-initialised BertModel and BertForSequenceClassification saved by transformers in F32, F16
and BF16, compared with SentenceTransformer.encode, CrossEncoder.predict and
pipeline("text-classification"). The sentence-transformers modules (every pooling mode, Dense
with each activation, Normalize, prompts, limits) as the library saves them: test_st_formats.py."""

import json
import os
import subprocess

import numpy as np
import pytest

import parity

torch = pytest.importorskip("torch", reason="torch is not installed (tests/python-env.sh)")
transformers = pytest.importorskip("transformers", reason="transformers is not installed")
st = pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
from sentence_transformers.sentence_transformer.modules import (  # noqa: E402
    Pooling, Transformer)

FP32_COSINE, FP32_REL_L2 = 0.99999, 1e-4
SCORE_TOL = 1e-4

# The odd shapes: widths that are not multiples of 64, heads of 24 and 40, 3 and 5 layers,
# intermediate sizes that are not multiples of 4, a small vocabulary, 40 positions.
SHAPES = {
    "h120_heads5x24_l3": dict(hidden_size=120, num_attention_heads=5, num_hidden_layers=3,
                              intermediate_size=130, max_position_embeddings=40),
    "h80_heads2x40_l5": dict(hidden_size=80, num_attention_heads=2, num_hidden_layers=5,
                             intermediate_size=97, max_position_embeddings=64),
}
DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}

WORDS = ("the a is was of and to in on it that cat dog sat mat ran far away hello world "
         "what capital france paris city big small red blue fast slow good bad one two three "
         "text model vector word quick brown fox jumps over lazy").split()


def vocabulary():
    """A small WordPiece vocabulary: the specials, the words, single characters and their ##
    forms (so that most text splits into known pieces), some CJK and accented letters."""
    chars = sorted(set("abcdefghijklmnopqrstuvwxyz0123456789.,!?;:'\"()-") | set("éèàüößçñ"))
    cjk = list("北京是中国的首都我爱自然语言处理東京日本語")
    return (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS + chars
            + ["##" + c for c in chars if c.isalnum()] + cjk)


def texts():
    return parity.hard_texts() + [
        "the quick brown fox jumps over the lazy dog",
        "hello world, what is the capital of france? paris!",
        "Unknown wordpieces: zyxwvut qqq éé",
    ]


def write_tokenizer(folder, positions):
    """The tokenizer as transformers builds it from vocab.txt (HF tokenizers underneath), saved
    with save_pretrained: tokenizer.json, vocab.txt and tokenizer_config.json."""
    os.makedirs(folder, exist_ok=True)
    vocab_path = os.path.join(folder, "vocab.txt")
    with open(vocab_path, "w", encoding="utf-8") as f:
        f.write("\n".join(vocabulary()) + "\n")
    tok = transformers.BertTokenizerFast(vocab_file=vocab_path, model_max_length=positions)
    tok.save_pretrained(folder)


def bert_config(shape, **extra):
    return transformers.BertConfig(vocab_size=len(vocabulary()), type_vocab_size=2,
                                   hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                                   **SHAPES[shape], **extra)


def save_model(model, folder, dtype, positions):
    """Weights scaled up from the initializer's 0.02 so that the layers' nonlinearities and
    the layer norms see ranges like a trained model's, then saved in dtype."""
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" not in name:
                p.mul_(4.0)
    model.to(dtype).save_pretrained(folder)
    write_tokenizer(folder, positions)


def bert_folder(tmp, shape, dtype="F32"):
    path = os.path.join(tmp, f"bert_{shape}_{dtype}")
    if not os.path.exists(path):
        torch.manual_seed(0)
        model = transformers.BertModel(bert_config(shape), add_pooling_layer=True)
        save_model(model, path, DTYPES[dtype], SHAPES[shape]["max_position_embeddings"])
    return path


def reference_st(folder):
    return st.SentenceTransformer(folder, device="cpu", model_kwargs={"dtype": torch.float32})


def check_embed(cli, folder):
    """vkbert embed against SentenceTransformer(folder).encode on every text."""
    t = texts()
    ref = reference_st(folder).encode(t, convert_to_numpy=True)
    got = parity.vkbert_embed(cli, folder, t)
    cos, rel, _ = parity.compare(ref, got)
    i = int(np.argmax(rel))
    assert cos.min() >= FP32_COSINE and rel.max() <= FP32_REL_L2, \
        f"worst: cosine {cos.min():.7f}, rel. L2 {rel[i]:.2e} on {t[i][:40]!r}"


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    return str(tmp_path_factory.mktemp("library_models"))


def st_folder(tmp, name, modules, **kwargs):
    path = os.path.join(tmp, name)
    st.SentenceTransformer(modules=modules, device="cpu", **kwargs).save(path)
    return path


def transformer(tmp, shape="h120_heads5x24_l3", dtype="F32", max_seq_length=None):
    return Transformer(bert_folder(tmp, shape, dtype), max_seq_length=max_seq_length,
                       model_kwargs={"dtype": torch.float32})


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_bert_model_saved_by_transformers(cli, tmp, shape, dtype):
    """A plain BertModel folder (no modules.json): sentence-transformers wraps it in a mean
    pooling, as vkbert does."""
    check_embed(cli, bert_folder(tmp, shape, dtype))


def test_pooling_modes_out_of_order_are_refused(cli, tmp):
    """sentence-transformers concatenates a list of modes in the list's order; vkbert in a fixed
    order (cls, max, mean, ...), so another order is refused clearly, not answered wrongly."""
    t = transformer(tmp)
    folder = st_folder(tmp, "pool_mean_cls",
                       [t, Pooling(t.get_embedding_dimension(), pooling_mode=("mean", "cls"))])
    done = subprocess.run([cli, "embed", "--model", folder, "hello"], capture_output=True,
                          text=True)
    assert done.returncode != 0 and done.stdout == ""
    assert "pooling_mode" in done.stderr and "order" in done.stderr, done.stderr


# ---- heads ----

def classifier_folder(tmp, name, shape, **config):
    path = os.path.join(tmp, name)
    if not os.path.exists(path):
        torch.manual_seed(3)
        model = transformers.BertForSequenceClassification(bert_config(shape, **config))
        save_model(model, path, torch.float32, SHAPES[shape]["max_position_embeddings"])
    return path


PAIRS_QUERY = "what is the capital of france?"


@pytest.mark.parametrize("raw", [False, True], ids=["default_activation", "raw_logits"])
def test_cross_encoder_predict(cli, tmp, raw):
    folder = classifier_folder(tmp, "cross_encoder", "h120_heads5x24_l3", num_labels=1)
    docs = texts()
    model = st.CrossEncoder(folder, device="cpu")
    kwargs = {"activation_fn": torch.nn.Identity()} if raw else {}
    ref = np.asarray(model.predict([(PAIRS_QUERY, d) for d in docs], **kwargs))
    got = parity.vkbert_rerank(cli, folder, PAIRS_QUERY, docs, raw=raw)
    np.testing.assert_allclose(got, ref, rtol=SCORE_TOL, atol=SCORE_TOL)


CLASSIFIERS = {
    "one_label": dict(num_labels=1),
    "three_labels": dict(num_labels=3, id2label={0: "neg", 1: "neutral", 2: "pos"},
                         label2id={"neg": 0, "neutral": 1, "pos": 2}),
    "multi_label": dict(num_labels=4, problem_type="multi_label_classification"),
    "regression": dict(num_labels=1, problem_type="regression"),
}


@pytest.mark.parametrize("kind", list(CLASSIFIERS))
def test_text_classification_pipeline(cli, tmp, kind):
    """vkbert classify against pipeline("text-classification", top_k=None), whose default
    function_to_apply depends on problem_type and num_labels."""
    folder = classifier_folder(tmp, f"classifier_{kind}", "h80_heads2x40_l5",
                               **CLASSIFIERS[kind])
    t = [x for x in texts() if x]  # the pipeline refuses no text, but gives [] for none
    pipe = transformers.pipeline("text-classification", model=folder, device="cpu", top_k=None,
                                 truncation=True)
    ref = pipe(t)
    got = json.loads(parity._run(cli, ["classify", "--model", folder, "--json", "--", *t]))
    assert len(got) == len(ref)
    for i, (r, g) in enumerate(zip(ref, got)):
        want = {d["label"]: d["score"] for d in r}
        have = {d["label"]: d["score"] for d in g}
        assert want.keys() == have.keys(), (i, want, have)
        for label in want:
            assert abs(want[label] - have[label]) <= SCORE_TOL * max(1, abs(want[label])), \
                (kind, t[i][:30], label, want[label], have[label])


# ---- a BERT with XLM-R's tokenizer (paraphrase-multilingual-MiniLM-L12-v2's shape) ----

def multilingual_folder(tmp):
    """A BertModel whose vocabulary is a SentencePiece Unigram model's, trained by sentencepiece
    and converted by transformers as XLM-R's (Precompiled normalizer, Metaspace, <s> A </s>),
    saved by sentence-transformers with mean pooling."""
    import tok_zoo  # tests/parity/tok_zoo.py
    shape = "h120_heads5x24_l3"
    positions = SHAPES[shape]["max_position_embeddings"]
    tokenizer_dir = tok_zoo.sentencepiece_folder(os.path.join(tmp, "xlmr_tokenizer"), "nmt_nfkc",
                                                 model_max_length=positions)
    tokenizer = transformers.AutoTokenizer.from_pretrained(tokenizer_dir)
    bert = os.path.join(tmp, "multilingual_bert")
    torch.manual_seed(5)
    config = bert_config(shape, pad_token_id=tokenizer.pad_token_id)
    config.vocab_size = len(tokenizer)
    model = transformers.BertModel(config, add_pooling_layer=True)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" not in name:
                p.mul_(4.0)
    model.save_pretrained(bert)
    tokenizer.save_pretrained(bert)
    t = Transformer(bert, model_kwargs={"dtype": torch.float32})
    return st_folder(tmp, "multilingual_st", [t, Pooling(t.get_embedding_dimension(), "mean")])


def test_bert_with_xlmr_unigram_tokenizer(cli, tmp):
    pytest.importorskip("sentencepiece", reason="sentencepiece is not installed")
    check_embed(cli, multilingual_folder(tmp))
