"""vkbert.Attention: one multi-head self-attention layer (vkbert_attention_* of vkbert.h)."""

import ctypes

import numpy as np

from . import _lib
from ._context import Made
from ._lib import lib
from ._model import _floats, _precision

# The reference layer's state_dict keys (docs/semantics.md), in vkbert's field order.
_KEYS = {
    "q_weight": "q_proj.weight", "q_bias": "q_proj.bias",
    "k_weight": "k_proj.weight", "k_bias": "k_proj.bias",
    "v_weight": "v_proj.weight", "v_bias": "v_proj.bias",
    "out_weight": "out_proj.weight", "out_bias": "out_proj.bias",
}

# Mask dtypes the library reads as they are; any other bool, integer or real dtype is passed
# as `mask != 0` in bool, which keeps exactly which entries are masked (a float64 1e-50 would
# round to a float32 0).
_MASK_DTYPES = {
    np.dtype(np.float32): _lib.DTYPE_FLOAT32,
    np.dtype(np.bool_): _lib.DTYPE_BOOL,
    np.dtype(np.uint8): _lib.DTYPE_UINT8,
    np.dtype(np.int32): _lib.DTYPE_INT32,
    np.dtype(np.int64): _lib.DTYPE_INT64,
}


def _float32(value, what, shape):
    """A C-contiguous float32 copy or view of `value`. Any real floating dtype is taken:
    float64 rounds to float32, which the layer's first step (an fp32 matmul) does anyway;
    integers, bools and complex numbers are refused as a likely mistake."""
    a = np.asarray(value)
    if not np.issubdtype(a.dtype, np.floating):
        raise TypeError(f"{what} must be a floating-point array, not {a.dtype}")
    if shape is not None and a.shape != shape:
        raise ValueError(f"{what} has shape {list(a.shape)}, expected {list(shape)}")
    return np.ascontiguousarray(a, dtype=np.float32)


def _state_dict(weights, e):
    """The reference layer's keys; torch.nn.MultiheadAttention's in_proj_weight and
    in_proj_bias ([3E, E] and [3E], q, k, v stacked in that order) are split into them."""
    w = dict(weights)
    if "in_proj_weight" in w:
        weight = np.split(_float32(w.pop("in_proj_weight"), "in_proj_weight", (3 * e, e)), 3)
        bias = np.split(_float32(w.pop("in_proj_bias", None), "in_proj_bias", (3 * e,)), 3)
        for p, pw, pb in zip("qkv", weight, bias):
            w[f"{p}_proj.weight"], w[f"{p}_proj.bias"] = pw, pb
    missing = [k for k in _KEYS.values() if k not in w]
    unknown = [k for k in w if k not in _KEYS.values()]
    if missing or unknown:
        raise ValueError(f"weights: missing {missing}, unknown {unknown}; expected the keys "
                         f"{list(_KEYS.values())} (or MultiheadAttention's in_proj_*)")
    return {k: _float32(w[k], k, (e, e) if k.endswith("weight") else (e,)) for k in _KEYS.values()}


def _mask_shape_ok(shape, b, h, s):
    """The shapes of vkbert_mask (vkbert.h): [S], [B,S], [S,S], [B,S,S], and 4-D shapes whose
    dimensions are each 1 or that of [B,H,S,S]."""
    if len(shape) == 4:
        return all(d in (1, full) for d, full in zip(shape, (b, h, s, s)))
    return shape in {1: [(s,)], 2: [(b, s), (s, s)], 3: [(b, s, s)]}.get(len(shape), [])


def _mask(mask, b, h, s):
    """A vkbert_mask over a C-contiguous array (kept alive by the caller), or None."""
    if mask is None:
        return None, None
    a = np.asarray(mask)
    if a.dtype not in _MASK_DTYPES:
        if a.dtype.kind not in "biuf":
            raise TypeError(f"mask must be a bool, integer or real array, not {a.dtype}")
        a = a != 0
    if not _mask_shape_ok(a.shape, b, h, s):
        raise ValueError(
            f"mask has shape {list(a.shape)}; for x [{b},{s},E] and {h} heads it must be [S], "
            "[B,S], [S,S], [B,S,S] or 4-D with each dimension 1 or that of [B,H,S,S]")
    a = np.ascontiguousarray(a)
    m = _lib.new(_lib.Mask, data=a.ctypes.data, dtype=_MASK_DTYPES[a.dtype], ndim=a.ndim)
    m.shape[: a.ndim] = a.shape
    return m, a


class Attention(Made):
    """A multi-head self-attention layer: y = out_proj(softmax(q k^T / sqrt(d)) v), as the
    reference layer in eval mode (no dropout) and torch.nn.MultiheadAttention.

    weights maps the reference layer's state_dict keys (q_proj.weight [E,E], q_proj.bias [E],
    k_proj.*, v_proj.*, out_proj.*) to arrays, or is a MultiheadAttention state_dict
    (in_proj_weight, in_proj_bias, out_proj.*). Floating arrays of any precision are taken as
    float32. precision: "fp32", "fp16" (weights and activations stored as fp16) or "int8"
    (weights as int8 blocks of 32 with an fp32 scale each)."""

    def __init__(self, embed_dim, num_heads, weights, precision="fp32", *, device=None,
                 context=None):
        for name, v in (("embed_dim", embed_dim), ("num_heads", num_heads)):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive int, not {v!r}")
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not a multiple of num_heads {num_heads}")
        self.embed_dim, self.num_heads = int(embed_dim), int(num_heads)
        arrays = _state_dict(weights, self.embed_dim)
        w = _lib.new(_lib.AttentionWeights,
                     **{field: _floats(arrays[key]) for field, key in _KEYS.items()})
        config = _lib.new(_lib.AttentionConfig, precision=_precision(precision))

        def create(ctx, out):
            return _lib.attention_create(ctx, self.embed_dim, self.num_heads, ctypes.byref(w),
                                         ctypes.byref(config), out)

        self._create(device, context, create, lib.vkbert_attention_destroy)

    def forward(self, x, mask=None, causal=False):
        """y [B,S,E] float32 of x [B,S,E] (any real floating dtype, taken as float32).

        mask: None, or an array of one of vkbert_mask's shapes ([S], [B,S], [S,S], [B,S,S],
        [B,1,1,S], [B,1,S,S], [B,H,S,S]...) where 0 means masked: the opposite of torch's
        bool masks, where True means masked. A query row whose keys are all masked gives
        out_proj.bias (its attention output is zero) where torch gives NaN. causal: also mask
        the keys after each query."""
        a = np.asarray(x)
        if a.ndim != 3 or a.shape[2] != self.embed_dim or 0 in a.shape:
            raise ValueError(f"x has shape {list(a.shape)}, expected [B, S, {self.embed_dim}]")
        b, s, _ = a.shape
        a = _float32(a, "x", None)
        m, keep = _mask(mask, b, self.num_heads, s)
        options = _lib.new(_lib.AttentionOptions, causal=int(bool(causal)))
        y = np.empty_like(a)
        self._call(lib.vkbert_attention_forward_host, b, s, _floats(a),
                   ctypes.byref(m) if m is not None else None, ctypes.byref(options), _floats(y))
        del keep  # the mask's array lives until the call is done
        return y

    __call__ = forward
