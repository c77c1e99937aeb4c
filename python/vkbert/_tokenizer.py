"""vkbert.Tokenizer: a model folder's tokenizer (vkbert_tokenizer_* of vkbert.h), with offsets,
special-tokens and attention masks, and decoding. It needs no device."""

import ctypes
import os

from . import _lib
from ._context import Handle
from ._lib import lib

FILE_RULES = _lib.TOKENIZER_FILE_RULES
"""max_length for the tokenizer.json's own truncation and padding sections, as tokenizers'
Tokenizer.from_file(path).encode applies them."""

_INT32 = (-(2**31), 2**31 - 1)


def _text(text, what):
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, not {type(text).__name__}")
    if "\0" in text:
        raise ValueError(f"{what} contains a NUL character")
    return text.encode("utf-8")


def _max_length(max_length):
    if not isinstance(max_length, int) or isinstance(max_length, bool):
        raise TypeError(f"max_length must be an int, not {max_length!r}")
    if max_length < FILE_RULES:
        raise ValueError(f"max_length must be a length, 0 (the folder's limit), -1 (none) or "
                         f"vkbert.FILE_RULES (-2), not {max_length}")
    return max_length


def _ids(ids, what="ids"):
    """A ctypes int32 array of any iterable of ints (numpy's included)."""
    if isinstance(ids, (str, bytes)):
        raise TypeError(f"{what} must be token ids, not {type(ids).__name__}")
    try:
        items = list(ids)
    except TypeError:
        raise TypeError(f"{what} must be an iterable of ints, not {type(ids).__name__}") from None
    for i, v in enumerate(items):
        if isinstance(v, bool) or not hasattr(v, "__index__"):
            raise TypeError(f"{what}[{i}] is {type(v).__name__}, not an int")
        if not _INT32[0] <= int(v) <= _INT32[1]:
            raise ValueError(f"{what}[{i}] = {int(v)} is not a token id")
    return (ctypes.c_int32 * len(items))(*[int(v) for v in items]), len(items)


def _take(pointer, n):
    return pointer[:n] if n else []


class Encoding:
    """One encoded input, as tokenizers' Encoding: ids, type_ids, special_tokens_mask (1 for
    the tokens the post-processor or padding added), attention_mask (0 for padding) and
    offsets, a (start, stop) tuple per token in characters of the text it came from ((0, 0)
    for added tokens). full_count: the length before truncation."""

    __slots__ = ("ids", "type_ids", "special_tokens_mask", "attention_mask", "offsets",
                 "full_count")

    def __init__(self, e):
        n = e.count
        self.ids = _take(e.ids, n)
        self.type_ids = _take(e.type_ids, n)
        self.special_tokens_mask = _take(e.special_tokens_mask, n)
        self.attention_mask = _take(e.attention_mask, n)
        flat = _take(e.offsets, 2 * n)
        self.offsets = list(zip(flat[0::2], flat[1::2]))
        self.full_count = e.full_count

    def __len__(self):
        return len(self.ids)

    def __repr__(self):
        return f"Encoding(ids={self.ids!r}, offsets={self.offsets!r})"


class Tokenizer(Handle):
    """The tokenizer of a model folder, as HuggingFace's fast tokenizer reads it (tokenizer.json,
    else vocab.txt with tokenizer_config.json), with the folder's length limit. Model.tokenizer
    is the same over a loaded model's, living as long as the model."""

    _owner = None

    def __init__(self, path):
        out = ctypes.c_void_p()
        _lib.check(lib.vkbert_tokenizer_load(os.fsencode(path), ctypes.byref(out)))
        self._own(out.value, lib.vkbert_tokenizer_destroy)

    @classmethod
    def _of(cls, owner, handle):
        """A view of a tokenizer that `owner` (a Model) owns and frees."""
        t = cls.__new__(cls)
        t._owner, t._handle = owner, handle
        return t

    @property
    def closed(self):
        return self._owner.closed if self._owner is not None else super().closed

    def close(self):
        if self._owner is None:  # a model's tokenizer goes with the model
            super().close()

    @property
    def max_length(self):
        """The folder's length limit (what max_length=0 means)."""
        return lib.vkbert_tokenizer_max_length(self._live())

    def encode(self, text, pair=None, max_length=0):
        """An Encoding of text (and pair), as tokenizers' Tokenizer.encode(text, pair).
        max_length: 0 the folder's limit, -1 none, vkbert.FILE_RULES the tokenizer.json's own
        truncation and padding, else a length."""
        first = _text(text, "text")
        second = None if pair is None else _text(pair, "pair")
        limit = _max_length(max_length)
        e = _lib.new(_lib.Encoding)
        try:
            _lib.check(lib.vkbert_tokenizer_encode(self._live(), first, second, limit,
                                                   ctypes.byref(e)))
            return Encoding(e)
        finally:
            lib.vkbert_encoding_free(ctypes.byref(e))

    def encode_batch(self, texts, pair=None, max_length=0):
        """encode of each text (each with the same pair), in order."""
        if isinstance(texts, str):
            raise TypeError("encode_batch takes a list of texts; encode takes one")
        return [self.encode(t, pair, max_length) for t in texts]

    def decode(self, ids, skip_special_tokens=True):
        """The text of ids, as tokenizers' Tokenizer.decode: the tokenizer.json's decoder, the
        special tokens left out when skip_special_tokens."""
        array, n = _ids(ids)
        out = ctypes.c_void_p()
        _lib.check(lib.vkbert_tokenizer_decode(self._live(), array, n,
                                               int(bool(skip_special_tokens)),
                                               ctypes.byref(out)))
        try:
            return ctypes.string_at(out.value).decode("utf-8")
        finally:
            lib.vkbert_free(out)

    def decode_batch(self, sequences, skip_special_tokens=True):
        """decode of each list of ids, in order."""
        return [self.decode(ids, skip_special_tokens) for ids in sequences]

    def token(self, id):
        """The token of an id, or None when no token has it."""
        if isinstance(id, bool) or not hasattr(id, "__index__"):
            raise TypeError(f"id must be an int, not {type(id).__name__}")
        if not _INT32[0] <= int(id) <= _INT32[1]:
            return None
        token = lib.vkbert_tokenizer_token(self._live(), int(id))
        return None if token is None else token.decode("utf-8")

    def token_id(self, token):
        """The id of a token (an added token's first, then the vocabulary's), or None."""
        found = lib.vkbert_tokenizer_token_id(self._live(), _text(token, "token"))
        return None if found < 0 else found
