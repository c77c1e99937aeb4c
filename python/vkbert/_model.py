"""vkbert.Model: a model folder from text to results (vkbert_model_* of vkbert.h)."""

import ctypes
import os

import numpy as np

from . import _lib
from ._context import Made
from ._lib import lib
from ._tokenizer import FILE_RULES, Tokenizer


def _texts(texts, what="texts"):
    """The texts as UTF-8 bytes, and whether a single str was given. sentence-transformers'
    encode() rule for a str: it is one text, and the result loses its first axis
    (SentenceTransformer.encode's input_was_string). Any other iterable is a list of texts."""
    single = isinstance(texts, str)
    try:
        items = [texts] if single else list(texts)
    except TypeError:
        raise TypeError(f"{what} must be a str or an iterable of str, not "
                        f"{type(texts).__name__}") from None
    out = []
    for i, t in enumerate(items):
        if not isinstance(t, str):
            raise TypeError(f"{what}[{i}] is {type(t).__name__}, not str")
        out.append(_utf8(t, f"{what}[{i}]"))
    return out, single


def _utf8(text, what):
    if "\0" in text:
        raise ValueError(f"{what} contains a NUL character")
    return text.encode("utf-8")


def _optional(text, what):
    if text is None:
        return None
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str or None, not {type(text).__name__}")
    return _utf8(text, what)


def _char_array(items):
    return (ctypes.c_char_p * len(items))(*items)


def _floats(array):
    return array.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


def _precision(precision):
    if precision not in _lib.PRECISIONS:
        raise ValueError(f"precision must be one of {sorted(_lib.PRECISIONS)}, not {precision!r}")
    return _lib.PRECISIONS[precision]


class Model(Made):
    """A HuggingFace BERT or sentence-transformers folder with its own pipeline (tokenizer,
    pooling, Dense, Normalize, prompts; or a sequence classifier's head).

    device: an index or a name substring for a context of the model's own (None: the best
    device, or VKBERT_DEVICE); context: a shared vkbert.Context instead. precision: "fp32",
    "fp16" (dense weights stored as fp16) or "int8" (dense weights as int8 blocks)."""

    _tokenizer = None

    def __init__(self, path, device=None, precision="fp32", *, context=None):
        folder = os.fsencode(path)
        config = _lib.new(_lib.ModelConfig, precision=_precision(precision))

        def load(ctx, out):
            return lib.vkbert_model_load(ctx, folder, ctypes.byref(config), out)

        self._create(device, context, load, lib.vkbert_model_destroy)

    @property
    def dimension(self):
        """The width of an embedding."""
        return lib.vkbert_model_dimension(self._live())

    @property
    def labels(self):
        """The classifier's label names (config.json's id2label), [] for an encoder."""
        h = self._live()
        return [lib.vkbert_model_label(h, i).decode() for i in range(lib.vkbert_model_labels(h))]

    def embed(self, texts, prompt_name=None, normalize=None, *, prompt=None):
        """float32 embeddings [n, dimension] of a list of texts ([dimension] for one str), as
        SentenceTransformer(path).encode(texts, prompt_name=...): the folder's prompt, pooling,
        Dense modules and Normalize. normalize: None follows the folder (or its Normalize
        module); True or False forces it for this call. prompt: a prompt's text instead of a
        name."""
        items, single = _texts(texts)
        if normalize not in (None, True, False):
            raise TypeError(f"normalize must be None, True or False, not {normalize!r}")
        options = _lib.new(
            _lib.EmbedOptions,
            prompt_name=_optional(prompt_name, "prompt_name"),
            prompt=_optional(prompt, "prompt"),
            normalize=0 if normalize is None else 1 if normalize else -1,
        )
        out = np.empty((len(items), self.dimension), dtype=np.float32)
        if items:
            self._call(lib.vkbert_model_embed, _char_array(items), len(items),
                       ctypes.byref(options), _floats(out))
        return out[0] if single else out

    def time_split(self):
        """Where the model's time has gone since it was loaded, summed over its calls: a dict
        of load_ms, tokenize_ms, prepare_ms, wait_ms, read_ms, gpu_ms (the device's own time,
        0 unless the context records timestamps) and passes. Subtract two readings to split
        one call."""
        split = _lib.new(_lib.TimeSplit)
        self._call(lib.vkbert_model_time_split, ctypes.byref(split))
        return {name: getattr(split, name) for name, _ in _lib.TimeSplit._fields_[1:]}

    def rerank(self, query, docs, raw_scores=False):
        """float32 scores [n] of (query, doc) pairs in the order of docs, with a one-label
        cross-encoder, as CrossEncoder.predict gives them: the folder's saved activation_fn,
        else the sigmoid of the logit (the logit with raw_scores). One str doc gives one
        score."""
        q = _optional(query, "query")
        if q is None:
            raise TypeError("query must be a str")
        items, single = _texts(docs, "docs")
        out = np.empty(len(items), dtype=np.float32)
        if items:
            self._call(lib.vkbert_model_rerank, q, _char_array(items), len(items),
                       int(bool(raw_scores)), _floats(out))
        return out[0] if single else out

    def classify(self, texts):
        """float32 scores [n, len(labels)] ([len(labels)] for one str), columns in the order of
        .labels: softmax, sigmoid or logits, by the rule of transformers' text-classification
        pipeline."""
        items, single = _texts(texts)
        labels = lib.vkbert_model_labels(self._live())
        out = np.empty((len(items), labels), dtype=np.float32)
        if items:
            self._call(lib.vkbert_model_classify, _char_array(items), len(items), _floats(out))
        return out[0] if single else out

    @property
    def tokenizer(self):
        """The model's tokenizer (a vkbert.Tokenizer), valid while the model is open."""
        if self._tokenizer is None:
            self._tokenizer = Tokenizer._of(self, lib.vkbert_model_tokenizer(self._live()))
        return self._tokenizer

    def tokenize(self, texts, pair=None, max_length=None):
        """The folder's tokenizer, as HuggingFace's fast tokenizer(texts) without padding, in the
        shape of `vkbert tokenize`'s JSON: a dict of "input_ids", "token_type_ids",
        "attention_mask", "special_tokens_mask" (lists of ints) and "offsets" (a [start, stop]
        list per token, in characters), each a list per text (one flat list for one str).
        pair: the second text of every input. max_length: None for the folder's limit, -1 for
        none, vkbert.FILE_RULES for the tokenizer.json's own truncation and padding."""
        items, single = _texts(texts)
        if max_length is None:
            max_length = 0
        elif not isinstance(max_length, int) or isinstance(max_length, bool):
            raise TypeError(f"max_length must be an int or None, not {max_length!r}")
        elif max_length < 1 and max_length not in (-1, FILE_RULES):
            raise ValueError(f"max_length must be positive, -1, vkbert.FILE_RULES or None, not "
                             f"{max_length}")
        keys = ("input_ids", "token_type_ids", "attention_mask", "special_tokens_mask", "offsets")
        result = {k: [] for k in keys}
        for text in items:
            e = self.tokenizer.encode(text.decode("utf-8"), pair, max_length)
            values = (e.ids, e.type_ids, e.attention_mask, e.special_tokens_mask,
                      [list(span) for span in e.offsets])
            for k, v in zip(keys, values):
                result[k].append(v)
        return {k: v[0] for k, v in result.items()} if single else result
