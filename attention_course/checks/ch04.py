"""Helpers of chapter 04's visible tests (queries, keys and values, in PyTorch).

Each helper raises ``AssertionError`` with a message that says what was expected, what came back
and the likely fix; it prints nothing and returns quietly when the answer is right. The expected
values come from PyTorch's own modules and functions (``nn.MultiheadAttention``,
``torch.softmax``) or are worked out by hand in the test cells; the other computations here only
reproduce likely mistakes, to name them in the message.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from . import compare

__all__ = ["STATED", "close", "compare_with_torch", "copy_of_torch"]

STATED = {  # the chapter's stated tolerance (its introduction), by dtype: |got - want| <= atol + rtol * |want|
    torch.float32: {"rtol": 1e-4, "atol": 1e-5},
    torch.float64: {"rtol": 1e-5, "atol": 1e-6},
}


def _largest_difference(got, want) -> str:
    return f"{(got - want).abs().max().item():.3g}"


def _rounded(values) -> list[float]:
    return [round(v, 4) for v in values.flatten().tolist()]


def close(got, expected, what: str, hint: str = "", rtol: float = 1e-5, atol: float = 1e-8, dtype=None) -> None:
    """``got`` has the shape of ``expected`` (and ``dtype`` if given) and its values within rtol and atol, once
    ``expected`` is converted to ``got``'s dtype (the comparison is :func:`attention_course.checks.compare.close`)."""
    compare.close(got, expected, what, hint, rtol=rtol, atol=atol, dtype=dtype, cast=True)


def copy_of_torch(module_class, d_model: int, n_heads: int):
    """``(yours, nn.MultiheadAttention)`` with the same random weights and biases (torch's biases start at 0:
    random ones test yours too). Checks the four projections' attributes first."""
    mine = module_class(d_model, n_heads)
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        proj = getattr(mine, name, None)
        if not isinstance(proj, nn.Linear) or tuple(proj.weight.shape) != (d_model, d_model):
            raise AssertionError(
                f"{name} should be an nn.Linear({d_model}, {d_model}), got {proj!r}: the module needs four "
                "attributes q_proj, k_proj, v_proj and out_proj, each nn.Linear(embed_dim, embed_dim, bias=bias)"
            )
    theirs = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
    with torch.no_grad():
        nn.init.normal_(theirs.in_proj_bias)
        nn.init.normal_(theirs.out_proj.bias)
        # torch stacks the q, k and v projections in one (3 d_model, d_model) weight and one bias: thirds
        thirds = zip(theirs.in_proj_weight.chunk(3), theirs.in_proj_bias.chunk(3))
        for proj, (weight, bias) in zip((mine.q_proj, mine.k_proj, mine.v_proj), thirds):
            proj.weight.copy_(weight)
            proj.bias.copy_(bias)
        mine.out_proj.weight.copy_(theirs.out_proj.weight)
        mine.out_proj.bias.copy_(theirs.out_proj.bias)
    return mine, theirs


def _averaged(mine, query, key, n_heads: int, allowed, split: str, scale: float):
    """Head-averaged weights from your q_proj and k_proj, cut into heads one way (for the hints)."""
    B, d_model = query.shape[0], query.shape[2]
    d_k = d_model // n_heads

    def heads(x):
        if split == "straight":  # (B, T, d_model) read as (B, n_heads, T, d_k): a likely mistake
            return x.reshape(B, n_heads, x.shape[1], d_k)
        return x.reshape(B, x.shape[1], n_heads, d_k).permute(0, 2, 1, 3)

    with torch.no_grad():
        scores = heads(mine.q_proj(query)) @ heads(mine.k_proj(key)).transpose(-2, -1) / scale
        if allowed is not None:
            scores = scores.masked_fill(~allowed[:, None], float("-inf"))
        return torch.softmax(scores, dim=-1).mean(1)


def _weights_hint(mine, query, key, n_heads, key_mask, attn_mask, weights, tol) -> str:
    """What your head-averaged weights match, among the likely mistakes."""
    B, T_q, d_model = query.shape
    T_k, d_k = key.shape[1], d_model // n_heads
    padded = None if key_mask is None else key_mask[:, None, :].expand(B, T_q, T_k)
    window = None if attn_mask is None else attn_mask.expand(B, T_q, T_k)
    allowed = padded if window is None else window if padded is None else padded & window
    if torch.allclose(weights.sum(-1), torch.full((B, T_q), float(n_heads)), **tol) and n_heads > 1:
        return (
            f"each row of the returned weights sums to {n_heads}: average the heads' weights "
            "(mean over the head axis), do not add them"
        )
    candidates = [
        (
            "straight",
            math.sqrt(d_k),
            allowed,
            "your heads are cut by reshaping (B, T, d_model) straight to (B, n_heads, T, d_k), "
            "which puts features of different positions into one head: reshape to (B, T, n_heads, d_k), "
            "then transpose(1, 2)",
        ),
        (
            "heads",
            math.sqrt(d_model),
            allowed,
            f"each head must divide its scores by sqrt(d_k) = sqrt({d_k}), the size of its own "
            "queries and keys, not by sqrt(d_model)",
        ),
        (
            "heads",
            math.sqrt(T_q),
            allowed,
            f"the heads divide their scores by sqrt(T) = sqrt({T_q}), not by sqrt(d_k) = sqrt({d_k}): "
            "a scaled_dot_product_attention that takes d_k from q.shape[2] gets the number of positions "
            "on (B, n_heads, T, d_k) tensors; take it from q.shape[-1]",
        ),
    ]
    if padded is not None and window is not None:
        candidates += [
            (
                "heads",
                math.sqrt(d_k),
                padded | window,
                "your masks are combined with | (either one allows): a key must be "
                "allowed by both, key_padding_mask & attn_mask",
            ),
            (
                "heads",
                math.sqrt(d_k),
                window,
                "your module dropped the key padding mask when attn_mask was given: combine them, "
                "key_padding_mask[:, None, None, :] & attn_mask",
            ),
            (
                "heads",
                math.sqrt(d_k),
                padded,
                "your module dropped attn_mask when a key padding mask was given: combine them, "
                "key_padding_mask[:, None, None, :] & attn_mask",
            ),
        ]
    for split, scale, mask, hint in candidates:
        if (n_heads > 1 or split == "heads") and (n_heads > 1 or scale != math.sqrt(d_model)):
            if torch.allclose(weights, _averaged(mine, query, key, n_heads, mask, split, scale), **tol):
                return hint
    return (
        "head h uses features h * d_k .. (h + 1) * d_k - 1 of each projection (reshape to (B, T, n_heads, d_k), then "
        "transpose(1, 2)), each head divides its scores by sqrt(d_k), and a key must be allowed by both masks"
    )


def compare_with_torch(mine, theirs, query, key, value, key_padding_mask=None, attn_mask=None, what: str = "") -> None:
    """Your module and ``nn.MultiheadAttention`` on the same inputs and masks (the course's masks are True where
    attention is allowed; torch's boolean masks are True where it is NOT, so they are passed to torch inverted):
    shapes, exact zeros where a mask forbids attention, then weights and out within the chapter's stated tolerance."""
    B, T_q, d_model = query.shape
    T_k, n_heads = key.shape[1], theirs.num_heads
    try:
        with torch.no_grad():
            out, weights = mine(query, key, value, key_padding_mask=key_padding_mask, attn_mask=attn_mask)
    except RuntimeError as error:
        raise AssertionError(
            f"{what}: your module failed with {error}. Split each tensor into heads with its own length, "
            "x.reshape(B, x.shape[1], n_heads, d_k) (keys and values have T_k positions, queries T_q), and combine the "
            "masks into one that broadcasts to (B, n_heads, T_q, T_k)"
        ) from None
    with torch.no_grad():
        want_out, want_weights = theirs(
            query, key, value, average_attn_weights=True, need_weights=True,
            key_padding_mask=None if key_padding_mask is None else ~key_padding_mask,
            attn_mask=None if attn_mask is None else ~attn_mask,
        )  # fmt: skip
    if tuple(out.shape) != (B, T_q, d_model) or tuple(weights.shape) != (B, T_q, T_k):
        raise AssertionError(
            f"{what}: expected out of shape (B, T_q, d_model) = {(B, T_q, d_model)} and weights (B, T_q, T_k) = "
            f"{(B, T_q, T_k)}, got {tuple(out.shape)} and {tuple(weights.shape)}"
            + (": average the weights over the heads, weights.mean(dim=1)" if weights.dim() == 4 else "")
        )
    allowed = torch.ones((B, T_q, T_k), dtype=torch.bool)
    if key_padding_mask is not None:
        allowed = allowed & key_padding_mask[:, None, :]
    if attn_mask is not None:
        allowed = allowed & attn_mask
    if torch.any(weights[~allowed] != 0):
        raise AssertionError(
            f"{what}: the weights of the keys a query may not attend to must be exactly 0, got "
            f"{weights[~allowed].tolist()} there (the course's masks are True where attention is allowed; "
            "a key must be allowed by both masks, "
            "combined into one mask for all heads and applied to the scores before the softmax)"
        )
    tol = STATED[query.dtype]
    if not torch.allclose(weights, want_weights, **tol):
        raise AssertionError(
            f"{what}: your weights differ from nn.MultiheadAttention's by up to "
            f"{_largest_difference(weights, want_weights)}; "
            + _weights_hint(mine, query, key, n_heads, key_padding_mask, attn_mask, weights, tol)
        )
    if not torch.allclose(out, want_out, **tol):
        if n_heads == 1:
            hint = "out is out_proj(weights @ v_proj(value))"
        elif key is query:
            hint = (
                "merge the heads back with transpose(1, 2) to (B, T_q, n_heads, d_k) before reshaping to "
                "(B, T_q, d_model), then out_proj"
            )
        else:
            hint = "the values come from `value` (T_k positions); out = out_proj(the heads merged back to (B, T_q, d))"
        raise AssertionError(
            f"{what}: your weights match nn.MultiheadAttention's but out differs by up to "
            f"{_largest_difference(out, want_out)}: {hint}"
        )
