"""Chapter 09's visible-test helpers for reading through the layers and through latents: Exercise 9.4
(``attention_rollout``: a case worked by hand, products written out) and Exercise 9.5
(``PerceiverCrossAttention``: the formula written out head by head, and its cost recorded with
:func:`attention_course.profiling.record_ops`). :mod:`attention_course.checks.ch09` hands them on.
Nothing here implements an exercise.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from attention_course.profiling import largest_created, record_ops

from .ch09_common import _rows, _shape, check_state_dict

# ---- Exercise 9.4: attention_rollout ----------------------------------------------------------------------

# Two layers over two tokens, worked by hand. A_1 = [[1, 0], [0.5, 0.5]], A_2 = [[0, 1], [1, 0]] (the second swaps).
ROLLOUT_A1 = [[1.0, 0.0], [0.5, 0.5]]
ROLLOUT_A2 = [[0.0, 1.0], [1.0, 0.0]]
ROLLOUT_PLAIN = [[0.5, 0.5], [1.0, 0.0]]  # A_2 @ A_1
ROLLOUT_RESIDUAL = [[0.625, 0.375], [0.625, 0.375]]  # (A_2 / 2 + I / 2) @ (A_1 / 2 + I / 2)


def rollout_by_products(attentions, residual=True):
    """The rollout written out entry by entry in float64, one layer at a time (a slow oracle for small sizes)."""
    B, T, _ = attentions[0].shape
    result = [[[float(i == j) for j in range(T)] for i in range(T)] for _ in range(B)]
    for A in attentions:
        A = A.double().tolist()
        for entry in range(B):
            step = [
                [(0.5 * A[entry][i][j] + 0.5 * (i == j)) if residual else A[entry][i][j] for j in range(T)]
                for i in range(T)
            ]
            result[entry] = [
                [sum(step[i][k] * result[entry][k][j] for k in range(T)) for j in range(T)] for i in range(T)
            ]
    return torch.tensor(result, dtype=torch.float64)


def _rollout_hint(got, A1, A2, residual):
    eye = torch.eye(A1.shape[-1], dtype=A1.dtype)
    hat = (lambda A: 0.5 * A + 0.5 * eye) if residual else (lambda A: A)
    if torch.allclose(got, hat(A1) @ hat(A2), atol=1e-6):
        return "the product is in the wrong order: the last layer goes on the left, A_L @ ... @ A_1"
    if residual and torch.allclose(got, (A2 + eye) @ (A1 + eye), atol=1e-6):
        return "A + I has rows summing to 2: the residual is 0.5 * A + 0.5 * I"
    if residual and torch.allclose(got, A2 @ A1, atol=1e-6):
        return "this is the plain product: with residual=True first replace each A by 0.5 * A + 0.5 * I"
    if not residual and torch.allclose(got, (0.5 * A2 + 0.5 * eye) @ (0.5 * A1 + 0.5 * eye), atol=1e-6):
        return "residual=False is the plain product A_2 @ A_1, without the identity"
    return "compare with the product written out by hand"


def check_rollout_table(attention_rollout) -> None:
    """The hand-worked two-layer case, with and without the residual, for a batch of two, inputs unchanged."""
    A1, A2 = torch.tensor([ROLLOUT_A1] * 2), torch.tensor([ROLLOUT_A2] * 2)
    copies = [A1.clone(), A2.clone()]
    for residual, table in [(False, ROLLOUT_PLAIN), (True, ROLLOUT_RESIDUAL)]:
        got = attention_rollout([A1, A2], residual=residual)
        expected = torch.tensor([table] * 2)
        what = f"attention_rollout([A_1, A_2], residual={residual}) with A_1 = {ROLLOUT_A1}, A_2 = {ROLLOUT_A2}"
        assert isinstance(got, torch.Tensor) and got.shape == expected.shape, (
            f"{what}: expected shape (2, 2, 2), got {_shape(got)}"
        )
        assert torch.allclose(got, expected, atol=1e-6), (
            f"{what}: "
            f"expected\n{_rows(expected[0])}\ngot\n{_rows(got[0])}\n({_rollout_hint(got[0], A1[0], A2[0], residual)})"
        )
    assert all(torch.equal(a, b) for a, b in zip(copies, (A1, A2))), (
        "attention_rollout changed the matrices it was given"
    )


# ---- Exercise 9.5: PerceiverCrossAttention -----------------------------------------------------------------


def cross_attention_formula(module, latents, inputs, input_mask=None):
    """The block written out with the module's own weights: layer norms, each head's softmax (masked inputs -inf),
    the heads joined and projected, the residuals and the MLP. Returns (out, weights averaged over the heads)."""
    ln = nn.functional.layer_norm
    a = ln(
        latents,
        module.latent_norm.normalized_shape,
        module.latent_norm.weight,
        module.latent_norm.bias,
        module.latent_norm.eps,
    )
    x = ln(
        inputs,
        module.input_norm.normalized_shape,
        module.input_norm.weight,
        module.input_norm.bias,
        module.input_norm.eps,
    )
    attn = module.attn
    E, H = attn.embed_dim, attn.num_heads
    b_q, b_k, b_v = attn.in_proj_bias.split(E)
    if attn._qkv_same_embed_dim:  # input_dim == latent_dim: nn.MultiheadAttention keeps one in_proj_weight
        W_q, W_k, W_v = attn.in_proj_weight.split(E)
    else:
        W_q, W_k, W_v = attn.q_proj_weight, attn.k_proj_weight, attn.v_proj_weight
    q, k, v = a @ W_q.T + b_q, x @ W_k.T + b_k, x @ W_v.T + b_v
    heads, weights = [], []
    for h in range(H):
        cols = slice(h * E // H, (h + 1) * E // H)
        scores = q[..., cols] @ k[..., cols].transpose(-2, -1) / math.sqrt(E // H)  # (B, N, M)
        if isinstance(input_mask, torch.Tensor):
            scores = scores.masked_fill(~input_mask[:, None, :], -math.inf)
        w = torch.softmax(scores, dim=-1)
        weights.append(w)
        heads.append(w @ v[..., cols])
    h = latents + attn.out_proj(torch.cat(heads, dim=-1))
    return h + module.mlp(module.mlp_norm(h)), sum(weights) / H


def _perceiver(PerceiverCrossAttention, latent_dim, input_dim, num_heads):
    module = PerceiverCrossAttention(latent_dim, input_dim, num_heads)
    check_state_dict(module, "PerceiverCrossAttention", latent_dim=latent_dim, input_dim=input_dim, num_heads=num_heads)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    return module.eval()


def check_cross_attention(PerceiverCrossAttention) -> None:
    """(out, weights) against the formula written out, with and without a padding mask; masked weights exactly 0."""
    torch.manual_seed(5)
    module = _perceiver(PerceiverCrossAttention, 8, 3, 2)
    latents, inputs = torch.randn(2, 4, 8), torch.randn(2, 10, 3)
    mask = torch.ones(2, 10, dtype=torch.bool)
    mask[1, 6:] = False  # the second entry has 6 real inputs, then padding
    for input_mask in (None, mask):
        padding = "None" if input_mask is None else "with padding"
        what = f"PerceiverCrossAttention(8, 3, 2) on latents (2, 4, 8), inputs (2, 10, 3), input_mask {padding}"
        with torch.no_grad():
            result = module(latents, inputs, input_mask)
            expected_out, expected_w = cross_attention_formula(module, latents, inputs, input_mask)
        assert isinstance(result, tuple) and len(result) == 2, (
            f"{what}: expected (out, weights), got {type(result).__name__}"
        )
        out, weights = result
        assert out.shape == (2, 4, 8) and weights.shape == (2, 4, 10), (
            f"{what}: expected out (B, N, latent_dim) = (2, 4, 8) and weights (B, N, M) = (2, 4, 10) averaged "
            "over the heads, "
            f"got {_shape(out)} and {_shape(weights)}"
        )
        if isinstance(input_mask, torch.Tensor):
            assert torch.all(weights[1, :, 6:] == 0), (
                f"{what}: the weights at the masked inputs must be exactly 0, got {weights[1, 0, 6:].tolist()} "
                "(True marks a "
                "real input; nn.MultiheadAttention's key_padding_mask marks with True what to ignore: pass ~input_mask)"
            )
        assert torch.allclose(weights, expected_w, atol=1e-5), (
            f"{what}: weights, expected\n{_rows(expected_w[0])}\ngot\n{_rows(weights[0])}"
        )
        assert torch.allclose(out, expected_out, atol=1e-5), (
            f"{what}: out, expected\n{_rows(expected_out[0])}\ngot\n{_rows(out[0])}\n(h = latents + "
            "attention(latent_norm(latents), "
            "input_norm(inputs)), out = h + mlp(mlp_norm(h)): the residuals add the un-normalised latents and h)"
        )


def check_cross_attention_cost(PerceiverCrossAttention, M=128, N=4) -> None:
    """The cost promise, recorded with record_ops: with one batch entry no operation creates a tensor of M * M elements
    or more (the latents read the inputs; nothing compares an input with every other)."""
    module = _perceiver(PerceiverCrossAttention, 8, 3, 2)
    latents, inputs = torch.randn(1, N, 8), torch.randn(1, M, 3)
    mask = torch.ones(1, M, dtype=torch.bool)
    mask[0, M // 2 :] = False
    with torch.no_grad():
        for input_mask in (None, mask):
            _, ops = record_ops(module, latents, inputs, input_mask)
            largest, op = largest_created(ops)
            assert largest < M * M, (
                f"PerceiverCrossAttention on {M} inputs (mask {'None' if input_mask is None else 'given'}) "
                "created a tensor of "
                f"{largest:,} elements ({op.name}, shape {op.outputs[0] if op.outputs else '?'}), while M * M = "
                f"{M * M:,}: "
                "the block's cost must stay linear in M. Only the N latents query the inputs: the scores are (B, "
                "N, M), "
                "and the mask is (B, M), given to nn.MultiheadAttention as key_padding_mask, not spread into an "
                "(M, M) matrix"
            )
