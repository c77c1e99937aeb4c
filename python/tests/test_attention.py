"""vkbert.Attention against torch.nn.MultiheadAttention (an implementation nobody here wrote),
run in float64 with the same weights: every mask form of vkbert_mask mapped to torch's
key_padding_mask or attn_mask, causal, fp32 and fp16, and the one documented difference (a
query whose keys are all masked)."""

import numpy as np
import pytest

import vkbert

torch = pytest.importorskip("torch")

B, S, E, H = 3, 7, 32, 4


def rel_l2(got, want):
    return np.linalg.norm(got - want) / np.linalg.norm(want)


@pytest.fixture(scope="module")
def mha():
    """MultiheadAttention with every parameter random (its biases start at zero), in float64."""
    torch.manual_seed(0)
    m = torch.nn.MultiheadAttention(E, H, batch_first=True).double().eval()
    for p in m.parameters():
        torch.nn.init.uniform_(p, -0.3, 0.3)
    return m


def reference_keys(m):
    """The reference layer's keys from MultiheadAttention's state dict: in_proj_weight is
    q, k and v stacked in that order (torch's F.multi_head_attention_forward splits it so)."""
    sd = {k: v.detach().numpy() for k, v in m.state_dict().items()}
    out = {"out_proj.weight": sd["out_proj.weight"], "out_proj.bias": sd["out_proj.bias"]}
    for i, p in enumerate("qkv"):
        out[f"{p}_proj.weight"] = sd["in_proj_weight"][i * E:(i + 1) * E]
        out[f"{p}_proj.bias"] = sd["in_proj_bias"][i * E:(i + 1) * E]
    return out


@pytest.fixture(scope="module")
def layers(mha):
    w = reference_keys(mha)
    with vkbert.Attention(E, H, w) as fp32, vkbert.Attention(E, H, w, precision="fp16") as fp16:
        yield {"fp32": fp32, "fp16": fp16}


@pytest.fixture(scope="module")
def x():
    return np.random.default_rng(1).standard_normal((B, S, E)).astype(np.float32)


def torch_forward(m, x, key_padding_mask=None, attn_mask=None):
    """torch's output in float64. Gradients stay on, which keeps MultiheadAttention off its
    fast path (whose nested tensors zero the rows of padded queries)."""
    t = torch.from_numpy(x.astype(np.float64))
    as_t = lambda a: None if a is None else torch.from_numpy(np.ascontiguousarray(a))
    y, _ = m(t, t, t, key_padding_mask=as_t(key_padding_mask), attn_mask=as_t(attn_mask),
             need_weights=False)
    return y.detach().numpy()


BOUNDS = {"fp32": 1e-5, "fp16": 3e-3}


def padding():
    """[B,S] keep-mask: sequence b keeps its first S - b keys."""
    keep = np.ones((B, S), dtype=bool)
    for b in range(B):
        keep[b, S - b:] = False
    return keep


def per_query(rng, batch_shape):
    keep = rng.random(batch_shape + (S, S)) < 0.6
    keep[..., np.arange(S), np.arange(S)] = True
    return keep


def to_torch_3d(keep_bhss):
    """vkbert keep [B,H,S,S] to torch's attn_mask [B*H,S,S] (True = masked; batch-major, as
    torch's docs give (N * num_heads, L, S))."""
    return ~keep_bhss.reshape(B * H, S, S)


def cases():
    """(name, vkbert mask, torch key_padding_mask, torch attn_mask)."""
    rng = np.random.default_rng(2)
    pad = padding()
    shared = pad[1]
    q = per_query(rng, (B,))
    heads = per_query(rng, (B, H))
    square = per_query(rng, ())
    yield "none", None, None, None
    yield "[S] shared padding", shared, np.broadcast_to(~shared, (B, S)), None
    yield "[B,S] padding", pad, ~pad, None
    yield "[B,1,1,S] padding", pad[:, None, None, :], ~pad, None
    yield "[S,S] shared", square, None, ~square
    yield "[B,S,S] per query", q, None, to_torch_3d(np.broadcast_to(q[:, None], (B, H, S, S)))
    yield "[B,1,S,S] per query", q[:, None], None, to_torch_3d(
        np.broadcast_to(q[:, None], (B, H, S, S)))
    yield "[B,H,S,S] per head", heads, None, to_torch_3d(heads)
    yield "[1,H,1,S] broadcast", heads[:1, :, :1, :], None, to_torch_3d(
        np.broadcast_to(heads[:1, :, :1, :], (B, H, S, S)))


CASES = list(cases())


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_multihead_attention(mha, layers, x, precision, case):
    _, keep, key_padding_mask, attn_mask = case
    want = torch_forward(mha, x, key_padding_mask, attn_mask)
    got = layers[precision].forward(x, mask=keep)
    assert got.dtype == np.float32 and got.shape == (B, S, E)
    assert rel_l2(got, want) <= BOUNDS[precision]


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int32, np.int64, np.float32,
                                   np.float64, np.int8, np.uint16])
def test_every_mask_dtype_means_the_same(mha, layers, x, dtype):
    """The library's dtypes are passed as they are, others as `mask != 0`; 0 = masked in all."""
    pad = padding()
    want = torch_forward(mha, x, key_padding_mask=~pad)
    mask = np.where(pad, 3, 0).astype(dtype)  # any non-zero keeps
    assert rel_l2(layers["fp32"].forward(x, mask=mask), want) <= 1e-5


def test_causal_is_torchs_upper_triangle(mha, layers, x):
    upper = np.triu(np.ones((S, S), dtype=bool), 1)  # torch: True = not allowed
    want = torch_forward(mha, x, attn_mask=upper)
    assert rel_l2(layers["fp32"].forward(x, causal=True), want) <= 1e-5
    pad = padding()
    want = torch_forward(mha, x, key_padding_mask=~pad, attn_mask=upper)
    assert rel_l2(layers["fp32"].forward(x, mask=pad, causal=True), want) <= 1e-5


def test_all_masked_rows_give_out_bias_where_torch_gives_nan(mha, layers, x):
    """vkbert.h: a query row whose keys are all masked has a zero attention output, so y is
    out_proj.bias; torch's softmax over only -inf gives NaN there."""
    keep = np.ones((B, S), dtype=bool)
    keep[1] = False
    want = torch_forward(mha, x, key_padding_mask=~keep)
    assert np.isnan(want[1]).all(), "torch gave numbers for the all-masked sequence"
    got = layers["fp32"].forward(x, mask=keep)
    bias = reference_keys(mha)["out_proj.bias"]
    np.testing.assert_allclose(got[1], np.broadcast_to(bias, (S, E)), rtol=0, atol=1e-6)
    rows = [0, 2]
    assert rel_l2(got[rows], want[rows]) <= 1e-5


def test_state_dict_of_multihead_attention_is_taken_as_is(mha, layers, x):
    sd = {k: v.detach().numpy() for k, v in mha.state_dict().items()}
    with vkbert.Attention(E, H, sd) as layer:
        np.testing.assert_array_equal(layer.forward(x), layers["fp32"].forward(x))


def test_float64_input_is_rounded_to_float32(layers, x):
    layer = layers["fp32"]
    np.testing.assert_array_equal(layer(x.astype(np.float64)), layer(x))


def test_shared_context(mha, x):
    w = reference_keys(mha)
    with vkbert.Context() as ctx:
        a = vkbert.Attention(E, H, w, context=ctx)
        b = vkbert.Attention(E, H, w, context=ctx)
        np.testing.assert_array_equal(a(x), b(x))
    assert a.closed and b.closed  # closing the context closed what was made on it
    with pytest.raises(ValueError, match="closed"):
        a(x)
