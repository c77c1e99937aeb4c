"""Tiny model folders for the tests, written as transformers and sentence-transformers save
them: config.json, model.safetensors (F32), vocab.txt; for a sentence-transformers folder
also modules.json, sentence_bert_config.json, 1_Pooling/config.json, 2_Normalize and
config_sentence_transformers.json with prompts."""

import json
import os
import struct

import numpy as np

VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "a", "dog",
    "ran", "far", "away", "query", ":", "passage", "hello", "world", "!", ".", ",", "big", "small",
    "red", "blue", "##s", "##ing", "run", "fast", "slow", "and", "or", "is", "was", "it", "good",
]

PROMPTS = {"query": "query: ", "passage": "passage : "}


def save_safetensors(path, tensors):
    """The safetensors layout: a little-endian u64 header length, the JSON header (names,
    dtypes, shapes, byte ranges; padded with spaces to 8 bytes), then the raw data."""
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def _bert_tensors(rng, hidden, layers, inter, positions, labels, fill, edit):
    def linear(out, inp):  # nn.Linear's init: uniform in +-1/sqrt(in)
        bound = 1 / np.sqrt(inp)
        return rng.uniform(-bound, bound, (out, inp)), rng.uniform(-bound, bound, out)

    def norm():
        return 1 + 0.1 * rng.standard_normal(hidden), 0.1 * rng.standard_normal(hidden)

    prefix = "bert." if labels else ""
    t = {}
    t["embeddings.word_embeddings.weight"] = rng.standard_normal((len(VOCAB), hidden))
    t["embeddings.position_embeddings.weight"] = rng.standard_normal((positions, hidden))
    t["embeddings.token_type_embeddings.weight"] = rng.standard_normal((2, hidden))
    t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"] = norm()
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value",
                     "attention.output.dense"):
            t[p + name + ".weight"], t[p + name + ".bias"] = linear(hidden, hidden)
        ln = p + "attention.output.LayerNorm"
        t[ln + ".weight"], t[ln + ".bias"] = norm()
        t[p + "intermediate.dense.weight"], t[p + "intermediate.dense.bias"] = linear(inter, hidden)
        t[p + "output.dense.weight"], t[p + "output.dense.bias"] = linear(hidden, inter)
        t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"] = norm()
    t["pooler.dense.weight"], t["pooler.dense.bias"] = linear(hidden, hidden)
    for name, value in (fill or {}).items():
        t[name] = np.full(t[name].shape, value)
    if edit:
        edit(t)
    t = {prefix + k: v for k, v in t.items()}
    if labels:  # BertForSequenceClassification keeps its head beside "bert."
        t["classifier.weight"], t["classifier.bias"] = linear(labels, hidden)
    return t


def write_bert(path, seed=1, hidden=24, layers=2, heads=2, inter=40, positions=64, labels=(),
               fill=None, edit=None):
    """A BertModel folder, or a BertForSequenceClassification one with the given label names;
    `fill` sets whole tensors (names without "bert.") to one value, and `edit`, given those
    tensors by name, may change any of them in place."""
    os.makedirs(path, exist_ok=True)
    rng = np.random.default_rng(seed)
    save_safetensors(os.path.join(path, "model.safetensors"),
                     _bert_tensors(rng, hidden, layers, inter, positions, len(labels), fill,
                                   edit))
    config = {
        "architectures": ["BertForSequenceClassification" if labels else "BertModel"],
        "model_type": "bert", "hidden_size": hidden, "num_hidden_layers": layers,
        "num_attention_heads": heads, "intermediate_size": inter,
        "max_position_embeddings": positions, "type_vocab_size": 2, "vocab_size": len(VOCAB),
        "layer_norm_eps": 1e-12, "hidden_act": "gelu", "position_embedding_type": "absolute",
    }
    if labels:
        config["id2label"] = {str(i): name for i, name in enumerate(labels)}
        config["label2id"] = {name: i for i, name in enumerate(labels)}
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(path, "vocab.txt"), "w") as f:
        f.write("\n".join(VOCAB) + "\n")
    return path


def write_sentence_transformer(path, seed=2):
    """A sentence-transformers folder: the BERT at the root, mean pooling without the prompt,
    Normalize, and PROMPTS with "query" the default."""
    write_bert(path, seed)
    modules = [("", "Transformer"), ("1_Pooling", "Pooling"), ("2_Normalize", "Normalize")]
    entries = [{"idx": i, "name": str(i), "path": p, "type": f"sentence_transformers.models.{t}"}
               for i, (p, t) in enumerate(modules)]
    files = {
        "modules.json": entries,
        "sentence_bert_config.json": {"max_seq_length": 48, "do_lower_case": False},
        "1_Pooling/config.json": {
            "word_embedding_dimension": 24, "pooling_mode_cls_token": False,
            "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_weightedmean_tokens": False,
            "pooling_mode_lasttoken": False, "include_prompt": False,
        },
        "config_sentence_transformers.json": {
            "prompts": PROMPTS, "default_prompt_name": "query", "similarity_fn_name": "cosine",
        },
    }
    for name, content in files.items():
        os.makedirs(os.path.dirname(os.path.join(path, name)), exist_ok=True)
        with open(os.path.join(path, name), "w") as f:
            json.dump(content, f)
    os.makedirs(os.path.join(path, "2_Normalize"), exist_ok=True)
    return path


def write_test_folders(root):
    """The tests' four folders under root (a pathlib.Path): a sentence-transformers model, a plain
    BERT, a 3-label classifier and a one-label cross-encoder; their paths by name."""
    return {
        "st": write_sentence_transformer(str(root / "st")),
        "plain": write_bert(str(root / "plain"), seed=3),
        "classifier": write_bert(str(root / "classifier"), seed=4,
                                 labels=("negative", "neutral", "positive")),
        "cross": write_bert(str(root / "cross"), seed=5, labels=("relevant",)),
    }
