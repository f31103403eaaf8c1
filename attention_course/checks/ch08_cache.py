"""Chapter 08's checks of Exercise 8.3 (self-attention with a key-value cache).

The oracle is ``nn.MultiheadAttention`` (with biases that are not zero) over the whole sequence with a
causal mask: the answer must have its state_dict's entries, and, fed the sequence in pieces and carrying
its cache, give the same outputs, hold the keys of every token in its cache, keep two sequences apart,
and (recorded with :func:`attention_course.profiling.record_ops`) spend on a one-token step no more
than twice the multiply-adds that projecting the new token and attending over every key need.
"""

from __future__ import annotations

import torch
from torch import nn

from attention_course.op_counts import matmul_flops, matmuls
from attention_course.profiling import record_ops

__all__ = [
    "causal_reference",
    "check_cached_keys",
    "check_split",
    "check_state_dict",
    "check_step_cost",
    "check_two_sequences",
    "mha_with_biases",
]


# ---- Exercise 8.3 ---------------------------------------------------------------------------------------


def mha_with_biases(E, H):
    """nn.MultiheadAttention(E, H, batch_first=True) in eval mode, with biases that are not zero (so that a missing
    bias shows)."""
    mha = nn.MultiheadAttention(E, H, batch_first=True).eval()
    with torch.no_grad():
        mha.in_proj_bias.copy_(0.5 * torch.randn(3 * E))
        mha.out_proj.bias.copy_(0.5 * torch.randn(E))
    return mha


def check_state_dict(attention, mha):
    """attention's state_dict has exactly the entries (names and shapes) of mha's."""
    theirs = {name: tuple(t.shape) for name, t in mha.state_dict().items()}
    mine = {name: tuple(t.shape) for name, t in attention.state_dict().items()}
    E, H = mha.embed_dim, mha.num_heads
    assert mine == theirs, (
        f"KVCacheSelfAttention({E}, {H}).state_dict() should have exactly the entries of nn.MultiheadAttention({E}, "
        f"{H}, batch_first=True):\nexpected {theirs}\ngot      {mine}\n(in_proj_weight and in_proj_bias as "
        "nn.Parameter, out_proj an nn.Linear; no other parameters or persistent buffers)"
    )


def causal_reference(mha, x):
    """nn.MultiheadAttention over the whole sequence, query t attending keys 0..t (PyTorch's mask: True = may NOT
    attend)."""
    T = x.shape[1]
    out, _ = mha(x, x, x, attn_mask=~torch.ones(T, T, dtype=torch.bool).tril(), need_weights=False)
    return out


def _shape(t):
    return "None" if t is None else str(tuple(t.shape))


def _call(attention, x, cache, what):
    """attention(x, cache), with an error raised inside the answer's forward turned into a message that says where."""
    try:
        return attention(x, cache)
    except NotImplementedError:
        raise
    except (RuntimeError, IndexError) as error:
        K, V = cache if cache is not None else (None, None)
        raise AssertionError(
            f"{what}: forward(x, cache) raised {type(error).__name__} inside your code, with x {_shape(x)} and "
            f"{'no cache' if cache is None else f'a cache of K {_shape(K)} and V {_shape(V)}'}: {error}\n"
            "A shape error inside attention usually means that the keys and the values do not hold the same tokens: "
            "append the new keys to the cached K AND the new values to the cached V (torch.cat along the token "
            "dimension, dim=2), so that both have T_past + T_new rows, and attend over those"
        ) from None


def check_split(attention, mha, x, pieces, what, atol=1e-5):
    """Feed x in consecutive pieces of the given sizes, carrying the cache; compare with one causal call of mha."""
    expected = causal_reference(mha, x)
    outputs, cache, start = [], None, 0
    for size in pieces:
        result = _call(attention, x[:, start : start + size], cache, what)
        assert isinstance(result, tuple) and len(result) == 2, (
            f"{what}: forward should return (y, new_cache), got {type(result).__name__}"
        )
        y, cache = result
        B, T_new, E = x.shape[0], size, x.shape[2]
        assert tuple(y.shape) == (B, T_new, E), (
            f"{what}: y should have shape (B, T_new, d_model) = {(B, T_new, E)}, got {tuple(y.shape)}"
        )
        assert isinstance(cache, tuple) and len(cache) == 2, f"{what}: new_cache should be a tuple (K, V)"
        want = (B, mha.num_heads, start + size, E // mha.num_heads)
        for name, t in zip("KV", cache):
            assert tuple(t.shape) == want, (
                f"{what}: the new cache's {name} should have shape (B, n_heads, T_past + T_new, d_k) = {want}, "
                f"got {tuple(t.shape)}"
            )
        outputs.append(y)
        start += size
    got = torch.cat(outputs, dim=1)
    error = (got - expected).abs().max().item()
    assert error < atol, (
        f"{what}: the outputs differ from nn.MultiheadAttention with a causal mask by up to {error:.3g}.\n"
        + (
            "With one call and no cache this is plain causal self-attention: check the projections (in_proj_weight "
            "holds W_Q, W_K, W_V stacked, in that order), the split into heads, the scale 1 / sqrt(d_k) and out_proj"
            if len(pieces) == 1
            else "With a cache, new token t sits at position T_past + t: it may attend every cached token and the new "
            "tokens up to itself (the mask is aligned bottom-right: key j allowed iff j <= T_past + t); the new cache "
            "is the old one with the new keys and values appended along the token dimension"
        )
    )


def check_cached_keys(attention, mha, x):
    """The cache of one call on x holds the keys x W_K^T + b_K of every token, split into heads."""
    B, T, E = x.shape
    K, _ = _call(attention, x, None, "one call on the whole sequence")[1]
    K_expected = (x @ mha.in_proj_weight[E : 2 * E].T + mha.in_proj_bias[E : 2 * E]).reshape(B, T, mha.num_heads, -1)
    assert torch.allclose(K, K_expected.transpose(1, 2), atol=1e-5), (
        "the cached K should hold the keys x W_K^T + b_K of every token, split into heads (B, n_heads, T, d_k)"
    )


def check_two_sequences(attention, mha, x, x_other):
    """Two sequences decoded in turns with one module, as a beam search would: each gives its own causal output."""
    caches, outputs = {0: None, 1: None}, {0: [], 1: []}
    for t in range(x.shape[1]):
        for which, seq in ((0, x), (1, x_other)):
            y, caches[which] = _call(attention, seq[:, t : t + 1], caches[which], "decoding two sequences in turns")
            outputs[which].append(y)
    for which, seq in ((0, x), (1, x_other)):
        error = (torch.cat(outputs[which], dim=1) - causal_reference(mha, seq)).abs().max().item()
        assert error < 1e-5, (
            f"decoding two sequences in turns, each with its own cache, gives outputs off by {error:.3g}: the module "
            "must keep no state between calls (use only x, the cache it is given, and its parameters)"
        )


def check_step_cost(attention, mha, B, T_past):
    """The cost promise, recorded with record_ops: a one-token step's matrix products stay within twice the
    multiply-adds of projecting the new token and attending over every key; and its output is right."""
    E = mha.embed_dim
    x_long = torch.randn(B, T_past + 1, E)
    with torch.no_grad():
        _, cache = attention(x_long[:, :T_past])
        (y, _), ops = record_ops(attention, x_long[:, T_past:], cache)
    needed = B * 1 * 4 * E * E + 2 * B * 1 * (T_past + 1) * E  # projections of 1 token (3 E^2 + E^2), q K^T and A V
    spent = matmul_flops(ops)
    products = ", ".join(" x ".join(str(s) for s in op.inputs if len(s) >= 2) for op in matmuls(ops)) or "none"
    assert spent <= 2 * needed, (
        f"a one-token step with a cache of {T_past} tokens ran {spent:,} multiply-adds in matrix products, more than "
        f"twice the {needed:,} that projecting the new token and attending over {T_past + 1} keys need. The products "
        f"it ran (operand shapes): {products}. A step must project only the new tokens x (B, T_new, d_model) and "
        "reuse the cached keys and values"
    )
    torch.testing.assert_close(y, causal_reference(mha, x_long)[:, T_past:], atol=1e-5, rtol=1e-5)
