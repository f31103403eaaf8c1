# ruff: noqa: E741 (the contract's notation: O is attention's output, as in the chapter)
"""Chapter 08's checks of Exercise 8.2 (tiled attention, the backward pass).

The oracle is autograd through the softmax formula with the whole score matrix, in float64
(:func:`plain_gradients`), fed the formula's O and L (:func:`saved_forward`, so that a mistake in
Exercise 8.1 does not count here). The memory check records the call with
:func:`attention_course.profiling.record_ops`, as the forward pass's does.
"""

from __future__ import annotations

import torch

from attention_course.op_counts import largest_created
from attention_course.profiling import record_ops

from .ch08_common import fused_attention_over_all_keys, raises_value_error
from .ch08_tiled import plain_attention

__all__ = [
    "check_backward",
    "check_backward_memory",
    "check_backward_value_errors",
    "check_gradients",
    "plain_gradients",
    "saved_forward",
]


# ---- Exercise 8.2 ---------------------------------------------------------------------------------------


def plain_gradients(Q, K, V, dO, causal=False):
    """Autograd through the formula with the full score matrix, in float64: the gradients of sum(O * dO)."""
    Q64, K64, V64 = (t.detach().double().requires_grad_() for t in (Q, K, V))
    O, _ = plain_attention(Q64, K64, V64, causal)
    (O * dO.double()).sum().backward()
    return Q64.grad, K64.grad, V64.grad


def saved_forward(Q, K, V, causal=False):
    """O and L in the inputs' dtype, from the formula (so that a mistake in Exercise 8.1 does not count here)."""
    O, L = plain_attention(Q, K, V, causal)
    return O.to(Q.dtype), L.to(Q.dtype)


def check_gradients(result, Q, K, V, dO, causal, what, atol=1e-5):
    """Check tiled_attention_backward's (dQ, dK, dV) against autograd through the formula, in float64."""
    assert isinstance(result, tuple) and len(result) == 3, (
        f"{what}: tiled_attention_backward should return (dQ, dK, dV), got {type(result).__name__}"
    )
    expected = plain_gradients(Q, K, V, dO, causal)
    wrong = []
    for name, got, want, like in zip(("dQ", "dK", "dV"), result, expected, (Q, K, V)):
        assert tuple(got.shape) == tuple(like.shape), (
            f"{what}: {name} should have the shape of {name[1:]}, {tuple(like.shape)}, got {tuple(got.shape)}"
        )
        assert got.dtype == like.dtype, f"{what}: {name} should have the input's dtype {like.dtype}, got {got.dtype}"
        error = (got.double() - want).abs().max().item()
        if not error < atol:
            wrong.append(f"{name} (off by up to {error:.3g})")
    hint = ""
    if wrong and all(not w.startswith("dV") for w in wrong):
        hint = (
            " dV is right, so the weights are: look at dE = A * (dA - D), with dA = dO V_j^T and D = rowsum(dO * O) "
            "(the term that comes from the softmax's normalisation), and at the scale 1 / sqrt(d_k) in dQ and dK"
        )
    elif wrong:
        hint = (
            " Recompute each block's weights from the saved logsumexp, A_j = exp(E_j - L) with E_j = Q K_j^T / "
            "sqrt(d_k) (masked like the forward pass); then dV_j = A_j^T dO"
        )
    assert not wrong, f"{what}: these gradients differ from autograd through the formula: {', '.join(wrong)}.{hint}"


def check_backward(tiled_attention_backward, Q, K, V, dO, block_size, causal=False, what=None, atol=1e-5):
    """Call tiled_attention_backward with the formula's O and L: the arguments unchanged, the gradients autograd's."""
    what = what or f"Q {tuple(Q.shape)}, K {tuple(K.shape)}, block_size = {block_size}, causal={causal}"
    O, L = saved_forward(Q, K, V, causal)
    arguments = (Q, K, V, O, L, dO)
    copies = [t.clone() for t in arguments]
    result = tiled_attention_backward(*arguments, block_size, causal=causal)
    for name, before, after in zip(("Q", "K", "V", "O", "L", "dO"), copies, arguments):
        assert torch.equal(before, after), (
            f"{what}: tiled_attention_backward changed its argument {name}: compute into new tensors, never in place "
            "on the arguments"
        )
    check_gradients(result, Q, K, V, dO, causal, what, atol)


def check_backward_value_errors(tiled_attention_backward):
    """Every ValueError of Exercise 8.2's contract: those of 8.1, and O, L or dO of shapes that do not fit."""
    Q, K, V, dO = torch.randn(2, 4, 8), torch.randn(2, 6, 8), torch.randn(2, 6, 5), torch.randn(2, 4, 5)
    O, L = saved_forward(Q, K, V)
    broadcast = "PyTorch would broadcast it"
    cases = [
        ((Q, K, V, O, L, dO, 0), False, "block_size=0 (block_size must be at least 1)", ("block",)),
        (
            (Q, K, V, O, L, dO, 2),
            True,
            "causal=True, T_q = 4, T_k = 6 (causal needs T_q == T_k)",
            ("causal", "t_q", "t_k"),
        ),
        ((Q, torch.randn(2, 6, 7), V, O, L, dO, 2), False, "Q (2, 4, 8) and K (2, 6, 7): d_k differs", ()),
        ((Q, K, torch.randn(2, 5, 5), O, L, dO, 2), False, "K (2, 6, 8) and V (2, 5, 5): T_k differs", ()),
        (
            (Q, K[:1], V[:1], O, L, dO, 2),
            False,
            "Q (2, 4, 8), K (1, 6, 8): leading dimensions differ (PyTorch would broadcast them)",
            (),
        ),
        ((Q, K, V, O, L, dO[..., :3], 2), False, "dO (2, 4, 3) for O (2, 4, 5) (dO must have O's shape)", ()),
        (
            (Q, K, V, O[:, :1], L, dO, 2),
            False,
            f"O (2, 1, 5) for Q (2, 4, 8), V (2, 6, 5): O is (..., T_q, d_v) ({broadcast})",
            (),
        ),
        ((Q, K, V, O, L[0], dO, 2), False, f"L (4,) for Q (2, 4, 8): L is (..., T_q) ({broadcast})", ()),
    ]
    for arguments, causal, what, words in cases:
        raises_value_error(
            lambda arguments=arguments, causal=causal: tiled_attention_backward(*arguments, causal=causal),
            f"tiled_attention_backward with {what}",
            words,
        )


def check_backward_memory(tiled_attention_backward, T_q, T_k, causal, block_size=16):
    """The memory promise of the backward pass, recorded with record_ops; then the gradients."""
    Q, K, V, dO = torch.randn(T_q, 8), torch.randn(T_k, 8), torch.randn(T_k, 8), torch.randn(T_q, 8)
    O, L = saved_forward(Q, K, V, causal)
    result, ops = record_ops(tiled_attention_backward, Q, K, V, O, L, dO, block_size, causal=causal)
    call = f"tiled_attention_backward(..., block_size={block_size}, causal={causal}) with T_q = {T_q}, T_k = {T_k}"
    largest, op = largest_created(ops)
    assert largest < T_q * T_k, (
        f"{call} created a tensor of {largest} elements ({op.name}, output shape "
        f"{op.outputs[0] if op.outputs else '?'}); the score matrix has T_q * T_k = {T_q * T_k}, and the backward "
        "pass follows the forward pass's memory rule: recompute E_j, A_j, dA_j and dE_j for one block of keys at a "
        "time, and write that block's rows of dK and dV"
    )
    fused = fused_attention_over_all_keys(ops, block_size)
    assert fused is None, (
        f"{call} ran PyTorch's fused attention kernel {fused[0].name if fused else ''} on {fused[1] if fused else 0} "
        "keys at once (autograd through F.scaled_dot_product_attention does that): compute the gradients yourself, "
        "block of keys by block of keys, from the saved O and L"
    )
    check_gradients(result, Q, K, V, dO, causal, call)
