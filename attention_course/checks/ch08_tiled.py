# ruff: noqa: E741 (the contract's notation: O is attention's output, as in the chapter)
"""Chapter 08's checks of Exercise 8.1 (tiled attention, the forward pass).

The oracle is the softmax formula with the whole score matrix, in float64 (:func:`plain_attention`); a
wrong output is compared with the likely mistakes (a dropped block, the mask off by one or inside the
block, another scale) and the message names the one it matches. The memory check records the call with
:func:`attention_course.profiling.record_ops`: no tensor as large as the score matrix, and no fused
attention kernel of PyTorch's reading more than one block of keys at once.
"""

from __future__ import annotations

import math

import torch

from attention_course.op_counts import largest_created
from attention_course.profiling import record_ops

from .ch08_common import _close, _digits, _rows, fused_attention_over_all_keys

__all__ = [
    "check_attention_result",
    "check_large_scores",
    "check_tiled",
    "check_tiled_memory",
    "plain_attention",
]


# ---- Exercise 8.1 ---------------------------------------------------------------------------------------


def plain_attention(Q, K, V, causal=False, allowed=None, scale=None, masked_value=-math.inf):
    """The formula with the whole score matrix, in float64: (softmax(E) V, logsumexp of each row of E).

    ``allowed`` (T_q, T_k), True where a query may attend a key, replaces the causal mask (j <= i); ``scale``
    replaces 1 / sqrt(d_k); ``masked_value`` replaces -inf for the keys a query may not attend.
    """
    scale = 1 / math.sqrt(Q.shape[-1]) if scale is None else scale
    E = Q.double() @ K.double().transpose(-2, -1) * scale  # (..., T_q, T_k)
    T_q, T_k = E.shape[-2:]
    if allowed is None and causal:
        allowed = torch.ones(T_q, T_k, dtype=torch.bool).tril()
    if allowed is not None:
        E = E.masked_fill(~allowed, masked_value)
    return torch.softmax(E, dim=-1) @ V.double(), torch.logsumexp(E, dim=-1)


def _likely_O(O, Q, K, V, block_size, causal, atol):
    """What a wrong O matches, among the likely mistakes (compared with the formula computed each way), as a hint."""
    d_k, T_q, T_k = Q.shape[-1], Q.shape[-2], K.shape[-2]
    near = max(10 * atol, 1e-4)
    queries, keys = torch.arange(T_q)[:, None], torch.arange(T_k)[None, :]
    candidates = []
    if causal:
        candidates.append(
            (
                lambda: plain_attention(Q, K, V)[0],
                "O is the attention without any mask: with causal=True, fill the scores of the keys j > i "
                "with -inf, in every block",
            )
        )
        if block_size is not None:
            candidates.append(
                (
                    lambda: plain_attention(Q, K, V, allowed=keys % block_size <= queries)[0],
                    "O matches a mask that compares a key's position inside its block (0 .. block_size - 1) "
                    "with the query's: compare global positions, key start + j against query i",
                )
            )
        candidates.append(
            (
                lambda: plain_attention(Q, K, V, allowed=keys <= queries + 1)[0],
                "query i also attends key i + 1: key j is allowed if and only if j <= i",
            )
        )
        candidates.append(
            (
                lambda: plain_attention(Q, K, V, causal=True, masked_value=0.0)[0],
                "the masked scores count as 0, and exp(0 - m) is not 0: fill them with -inf, whose exp is 0",
            )
        )
    if block_size is not None and block_size < T_k:
        starts = list(range(block_size, T_k, block_size))
        last = starts[-1]
        for n in starts:
            missing = "the last, shorter block" if n == last and T_k - n < block_size else f"keys {n} to {T_k - 1}"
            candidates.append(
                (
                    lambda n=n: plain_attention(
                        Q, K[..., :n, :], V[..., :n, :], allowed=(keys[:, :n] <= queries) if causal else None
                    )[0],
                    f"O equals the attention over the first {n} keys only: {missing} never entered the sum "
                    f"(T_k = {T_k}, block_size = {block_size}): loop with range(0, T_k, block_size) and let "
                    "the last slice K[..., start:start + block_size, :] be shorter",
                )
            )
        candidates.append(
            (
                lambda: plain_attention(
                    Q, K[..., last:, :], V[..., last:, :], allowed=(keys[:, last:] <= queries) if causal else None
                )[0],
                f"O equals the attention over the last block of keys only ({last} to {T_k - 1}): each block "
                "replaced the running output and normaliser instead of being added to them, rescaled",
            )
        )
    candidates.append(
        (
            lambda: plain_attention(Q, K, V, causal, scale=1 / d_k)[0],
            "the scores are divided by d_k: divide them by sqrt(d_k)",
        )
    )
    candidates.append(
        (
            lambda: plain_attention(Q, K, V, causal, scale=1.0)[0],
            "the scores are not scaled: divide Q K_j^T by sqrt(d_k)",
        )
    )
    for compute, hint in candidates:
        if _close(O, compute(), near):
            return hint
    return None


def check_attention_result(
    result, Q, V, expected_O, expected_L, what, atol=1e-5, K=None, block_size=None, causal=False
):
    """Check tiled_attention's (O, L) against the formula's (expected_O, expected_L), in float64.

    Given K and block_size, a wrong O is also compared with the likely mistakes (a dropped block, the mask
    off by one or inside the block, another scale) and the message says which one it matches.
    """
    assert isinstance(result, tuple) and len(result) == 2, (
        f"{what}: tiled_attention should return a pair (O, L), got {type(result).__name__}"
    )
    O, L = result
    want_O, want_L = (*Q.shape[:-1], V.shape[-1]), tuple(Q.shape[:-1])
    assert tuple(O.shape) == want_O, f"{what}: O should have shape (..., T_q, d_v) = {want_O}, got {tuple(O.shape)}"
    assert tuple(L.shape) == want_L, f"{what}: L should have shape (..., T_q) = {want_L}, got {tuple(L.shape)}"
    assert O.dtype == Q.dtype and L.dtype == Q.dtype, (
        f"{what}: O and L should have the input's dtype {Q.dtype}, got {O.dtype} and {L.dtype}"
    )
    broken = ~(torch.isfinite(O).all(-1) & torch.isfinite(L))
    if broken.any():
        first_only = causal and broken.reshape(-1, broken.shape[-1]).any(0).nonzero().flatten().tolist() == [0]
        raise AssertionError(
            f"{what}: O or L holds inf or nan in {_rows(broken)}. "
            + (
                "Under the causal mask query 0 attends key 0 only, and your row 0 has nothing left: key j is "
                "allowed if and only if j <= i (not j < i); a row whose scores are all -inf gives nan"
                if first_only
                else "Subtract the running maximum before exp (exp(e - m)), and rescale with exp(m_old - m_new), "
                "which is 0 (not nan) while m_old is still -inf"
            )
        )
    difference = (O.double() - expected_O).abs()
    error = difference.max().item()
    if not error < atol:
        per_row = difference.amax(-1)  # (..., T_q)
        index = tuple(int(i) for i in (per_row == per_row.max()).nonzero()[0])  # (..., row) of the largest difference
        where = f"row {index[-1]}" + (f" of batch entry {index[:-1]}" if len(index) > 1 else "")
        hint = _likely_O(O, Q, K, V, block_size, causal, atol) if K is not None else None
        if hint is None and error < 1e-3:
            hint = (
                f"the values are close (the largest difference is {error:.2g}, above the tolerance {atol:g}): "
                "more likely precision lost somewhere than a wrong formula. Look for a lower precision (float16, "
                "bfloat16), exp of scores that were not reduced by the running maximum first, or a maximum that "
                "does not start at -inf"
            )
        if hint is None:
            hint = (
                "Likely fixes: when a block raises a row's maximum from m_old to m_new, multiply BOTH the running "
                "normaliser and the running output by exp(m_old - m_new); divide O by the normaliser once, at the "
                "end; a causal mask compares global positions (key start + j against query i)"
            )
        raise AssertionError(
            f"{what}: O differs from softmax(Q K^T / sqrt(d_k)) V by up to {error:.3g} in "
            f"{_rows(per_row >= atol)}.\n{where}:\n  expected {_digits(expected_O[index])}\n"
            f"  got      {_digits(O[index])}\n{hint}"
        )
    error = ((L.double() - expected_L).abs() / expected_L.abs().clamp(min=1.0)).max().item()
    if not error < atol:
        hint = "(the running maximum alone is not the logsumexp)"
        if K is not None:
            scores = Q.double() @ K.double().transpose(-2, -1) / math.sqrt(Q.shape[-1])
            if causal:
                scores = scores.masked_fill(~torch.ones(scores.shape[-2:], dtype=torch.bool).tril(), -math.inf)
            maximum = scores.amax(-1)
            if _close(L, maximum, 1e-4):
                hint = "L is each row's maximum: the logsumexp is m + log(normaliser)"
            elif _close(L, expected_L / math.log(2), 1e-4):
                hint = "L is in base 2: use the natural logarithm (torch.log), as log(sum_j exp(e_ij)) does"
            elif _close(L, expected_L - maximum, 1e-4):
                hint = "L is log(normaliser) without the maximum: the normaliser is relative to m, L = m + log(it)"
        raise AssertionError(
            f"{what}: L should be the logsumexp of each row of scaled scores, log(sum_j exp(e_ij)) = "
            f"m + log(normaliser); it differs by up to {error:.3g} (relative).\n"
            f"  expected {_digits(expected_L)}\n  got      {_digits(L)}\n{hint}"
        )


def check_tiled(tiled_attention, Q, K, V, block_size, causal=False, what=None, atol=1e-5):
    """Call tiled_attention(Q, K, V, block_size[, causal=True]): the inputs unchanged, (O, L) the formula's."""
    what = what or f"Q {tuple(Q.shape)}, K {tuple(K.shape)}, block_size = {block_size}, causal={causal}"
    copies = [t.clone() for t in (Q, K, V)]
    result = tiled_attention(Q, K, V, block_size, causal=True) if causal else tiled_attention(Q, K, V, block_size)
    for name, before, after in zip("QKV", copies, (Q, K, V)):
        assert torch.equal(before, after), (
            f"{what}: tiled_attention changed its argument {name}: compute into new tensors "
            "(scores = Q @ K_j^T * scale), never in place on the inputs"
        )
    check_attention_result(
        result, Q, V, *plain_attention(Q, K, V, causal), what, atol, K=K, block_size=block_size, causal=causal
    )


def check_large_scores(tiled_attention):
    """Scores up to 1e4 in magnitude (exp(1e4) overflows, exp(e - m) does not): finite and the formula's."""
    Q, K, V = torch.randn(6, 8), torch.randn(12, 8), torch.randn(12, 3)
    Q = Q * (1e4 / (Q @ K.T / math.sqrt(8)).abs().max())  # the largest score is now 1e4 in magnitude
    for causal in (False, True):
        K_use, V_use = (K[:6], V[:6]) if causal else (K, V)
        check_attention_result(
            tiled_attention(Q, K_use, V_use, 5, causal=causal),
            Q,
            V_use,
            *plain_attention(Q, K_use, V_use, causal),
            f"scores up to 1e4, causal={causal}",
            atol=1e-4,
        )


def check_tiled_memory(tiled_attention, T_q, T_k, causal, block_size=16):
    """The memory promise, recorded with record_ops: no tensor of T_q * T_k elements or more, and no fused
    attention kernel of PyTorch's reading more than block_size keys at once; then the values."""
    Q, K, V = torch.randn(T_q, 8), torch.randn(T_k, 8), torch.randn(T_k, 8)
    result, ops = record_ops(tiled_attention, Q, K, V, block_size, causal=causal)
    call = f"tiled_attention(Q, K, V, block_size={block_size}, causal={causal}) with T_q = {T_q}, T_k = {T_k}"
    largest, op = largest_created(ops)
    assert largest < T_q * T_k, (
        f"{call} created a tensor of {largest} elements ({op.name}, output shape "
        f"{op.outputs[0] if op.outputs else '?'}), but the full score matrix has T_q * T_k = {T_q * T_k} and tiled "
        "attention must never build anything that large, not even to slice it, nor as a mask. Compute the scores of "
        "one block at a time, Q @ K_j^T with K_j = K[..., start:start + block_size, :], and build the causal mask "
        "for that block only"
    )
    fused = fused_attention_over_all_keys(ops, block_size)
    assert fused is None, (
        f"{call} ran PyTorch's fused attention kernel {fused[0].name if fused else ''} on "
        f"{fused[1] if fused else 0} keys at once. That kernel (what F.scaled_dot_product_attention runs on 4-D "
        "inputs) is the tiled algorithm this exercise asks you to write: loop over blocks of K and V yourself and "
        "combine them with the running maximum, normaliser and output (calling it on one block of keys at a time "
        "is allowed)"
    )
    check_attention_result(
        result, Q, V, *plain_attention(Q, K, V, causal), call, K=K, block_size=block_size, causal=causal
    )
