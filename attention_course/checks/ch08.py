# ruff: noqa: E741 (the contract's notation: O is attention's output, as in the chapter)
"""Chapter 08's visible-test helpers (attention at scale): what the test cells of Exercises 8.1 to 8.4 call.

Each ``check_*`` function calls the answer it is given (the student's function or module), compares
what comes back with an independent oracle (the softmax formula with the whole score matrix in
float64, autograd through it, ``nn.MultiheadAttention``, the hand-worked rotary table), and raises
``AssertionError`` with a message that says what differs and, where the difference tells, the likely
fix. The memory and cost checks record the call with :func:`attention_course.profiling.record_ops`
(through the class grader the call runs in the student's sandbox and its record comes back; these
helpers run in the grader's process, as the test cell does). Nothing here implements an exercise.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from attention_course.profiling import largest_created, matmul_flops, matmuls, record_ops

__all__ = [
    "causal_reference",
    "check_attention_result",
    "check_backward",
    "check_backward_memory",
    "check_backward_value_errors",
    "check_cached_keys",
    "check_gradients",
    "check_large_scores",
    "check_rotary_base",
    "check_rotary_offsets",
    "check_rotary_shapes",
    "check_rotary_sign",
    "check_rotary_table",
    "check_split",
    "check_state_dict",
    "check_step_cost",
    "check_tiled",
    "check_tiled_memory",
    "check_two_sequences",
    "fused_attention_over_all_keys",
    "mha_with_biases",
    "plain_attention",
    "plain_gradients",
    "raises_value_error",
    "saved_forward",
]


# ---- shared ---------------------------------------------------------------------------------------------


def raises_value_error(call, what, words=()):
    """Check that call() raises a ValueError whose message mentions one of words."""
    try:
        call()
    except ValueError as error:
        message = str(error)
    except NotImplementedError:
        raise
    except Exception as other:  # noqa: BLE001 (any other error is the answer's, and the message says which)
        raise AssertionError(
            f"{what}: expected a ValueError that names the problem, got {type(other).__name__}: {other} "
            "(check the input yourself and raise ValueError with a message)"
        ) from None
    else:
        raise AssertionError(f"{what}: expected a ValueError")
    named = not words or any(word in message.lower() for word in words)
    assert named, (
        f"{what}: the ValueError's message should name the problem (mention {' or '.join(map(repr, words))}), "
        f"got: {message}"
    )


def _digits(values, limit=8):
    """Numbers with 8 significant digits: enough to see a difference of 1e-6 between two values near 1."""
    flat = torch.as_tensor(values).detach().double().flatten()
    shown = ", ".join(f"{v:.8g}" for v in flat[:limit].tolist())
    return f"[{shown}{', ...' if flat.numel() > limit else ''}]"


def _rows(mask):
    """'rows 0, 3 and 4' for a boolean (..., T) tensor (a row counts when it differs in any batch entry)."""
    rows = mask.reshape(-1, mask.shape[-1]).any(0).nonzero().flatten().tolist()
    if len(rows) == mask.shape[-1]:
        return f"every row (all {len(rows)})"
    shown = ", ".join(map(str, rows[:12])) + (", ..." if len(rows) > 12 else "")
    return f"row{'s' if len(rows) > 1 else ''} {shown} of {mask.shape[-1]}"


def _close(got, want, atol):
    """got and want (float64) agree within atol everywhere (nan anywhere: they do not)."""
    error = (got.double() - want).abs().max()
    return bool(error < atol)


def fused_attention_over_all_keys(ops, block_size):
    """The first call, in a record, of one of PyTorch's fused attention kernels (what F.scaled_dot_product_attention
    runs on 4-D inputs, and its backward) that read more than block_size keys at once: (op, number of keys), or None."""
    for op in ops:
        if "attention" in op.name and len(op.inputs) > 2:
            keys = op.inputs[2 if "backward" in op.name else 1]  # (query, key, ...) or (grad, query, key, ...)
            if len(keys) >= 2 and keys[-2] > block_size:
                return op, keys[-2]
    return None


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


# ---- Exercise 8.4 ---------------------------------------------------------------------------------------


def _table(positions, frequency=0.01):
    """The statement's hand-worked rotary table for the pairs (1, 0), (1, 0) (d = 4): rows [cos p, sin p, cos(p f),
    sin(p f)], f = 10000^(-2/4) = 1/100."""
    return torch.tensor(
        [[math.cos(p), math.sin(p), math.cos(p * frequency), math.sin(p * frequency)] for p in positions]
    )


def _rotary_hint(got, expected, positions):
    """What differs between a rotary result and the hand-worked table, and the likely fix."""
    near = 1e-4
    if _close(got, _table([p + 1 for p in positions]), near):
        return (
            "every row is turned as the next position (p + 1): position p turns pair i by p * base^(-2i/d), so "
            "position 0 is not turned at all"
        )
    if _close(got[:, 0::2], expected[:, 0::2], near) and _close(got[:, 1::2], -expected[:, 1::2], near):
        return (
            "the even entries are right and the odd ones have the wrong sign: the pairs turn the wrong way "
            "(by -angle). y[2i] = x[2i] cos - x[2i+1] sin, y[2i+1] = x[2i] sin + x[2i+1] cos"
        )
    if _close(got[:, 0::2], expected[:, 1::2], near) and _close(got[:, 1::2], expected[:, 0::2], near):
        return "cos and sin are swapped: y[2i] = x[2i] cos - x[2i+1] sin takes the cosine of the angle"
    if _close(got[:, 0:2], expected[:, 2:4], near):
        return (
            "pair 0 turns as pair 1 should (by p / 100): the pair index is off by one. Pair i turns by "
            "p * base^(-2i/d), so pair 0 turns by p * base^0 = p"
        )
    c, s = expected[:, 0], expected[:, 1]
    halves = torch.stack([c - s, torch.zeros_like(c), s + c, torch.zeros_like(c)], dim=-1)
    if _close(got, halves, near):
        return (
            "the pairs are the two halves (x[i], x[i + d/2]): this exercise pairs neighbours, (x[..., 0], "
            "x[..., 1]) and (x[..., 2], x[..., 3])"
        )
    wrong = ((got.double() - expected).abs() >= near).any(0)
    if not wrong[:2].any():
        return (
            "pair 0 (angle p) is right and pair 1 is not: pair i turns by p * base^(-2i/d); for d = 4 and base "
            "10000 pair 1 turns by p * 10000^(-2/4) = p / 100"
        )
    if not wrong[2:].any():
        return "pair 1 is right and pair 0 (angle p * base^0 = p) is not: look at how pair 0's entries are computed"
    return (
        f"entries {', '.join(f'y[{i}]' for i in wrong.nonzero().flatten().tolist())} differ: both entries of pair "
        "i = (x[2i], x[2i+1]) turn by the same angle p * base^(-2i/d): y[2i] = x[2i] cos - x[2i+1] sin, "
        "y[2i+1] = x[2i] sin + x[2i+1] cos"
    )


def check_rotary_table(rotary_embedding):
    """The statement's hand-worked table (d = 4, base 10000, positions 0, 1, 2), x left unchanged."""
    x = torch.tensor([[1.0, 0.0, 1.0, 0.0]] * 3)  # (T, d) = (3, 4): each pair is (1, 0)
    copy = x.clone()
    y = rotary_embedding(x, torch.arange(3))
    assert torch.equal(x, copy), (
        f"rotary_embedding changed its argument x (the input must be unchanged): x was\n{copy}\nand is now\n{x}\n"
        "Build the result in a new tensor (torch.empty_like(x), torch.stack, torch.cat) and compute both entries of "
        "each pair from the original x: written into x, the odd entries would be computed from the already rotated "
        "even ones"
    )
    assert isinstance(y, torch.Tensor) and tuple(y.shape) == (3, 4), (
        f"rotary_embedding should return a tensor shaped like x, (3, 4), got {getattr(y, 'shape', type(y).__name__)}"
    )
    assert y.dtype == torch.float32, f"the result should keep x's dtype float32, got {y.dtype}"
    expected = _table(range(3))
    if not _close(y, expected, 1e-4):
        rows = "\n".join(
            f"  position {p}: expected {_digits(want)}\n              got      {_digits(have)}"
            for p, (want, have) in enumerate(zip(expected, y))
        )
        raise AssertionError(
            "rotary_embedding of the pairs (1, 0) at positions 0, 1, 2 (d = 4: angles p and p / 100) should be the "
            f"table of the statement:\n{rows}\n{_rotary_hint(y, expected, range(3))}"
        )


def check_rotary_sign(rotary_embedding):
    """The pairs (0, 1) at position 1: y[2i] = -x[2i+1] sin, y[2i+1] = x[2i+1] cos."""
    x = torch.tensor([[0.0, 1.0, 0.0, 1.0]])
    y = rotary_embedding(x, torch.tensor([1]))
    expected = torch.tensor([[-math.sin(1), math.cos(1), -math.sin(0.01), math.cos(0.01)]])
    if not _close(y, expected, 1e-4):
        hint = (
            "x came back unturned, as at position 0: the angle uses positions[t], the position given for row t, "
            "not the row's index t"
            if _close(y, x.double(), 1e-6)
            else "y[2i] = x[2i] cos - x[2i+1] sin and y[2i+1] = x[2i] sin + x[2i+1] cos"
        )
        raise AssertionError(
            f"the pairs (0, 1) at position 1 should give {_digits(expected)}, got {_digits(y)}: {hint}"
        )


def check_rotary_shapes(rotary_embedding):
    """Leading dimensions and float64 are kept."""
    y = rotary_embedding(torch.ones(2, 3, 5, 8, dtype=torch.float64), torch.arange(5))
    assert tuple(y.shape) == (2, 3, 5, 8) and y.dtype == torch.float64, (
        f"for x (2, 3, 5, 8) float64 expected the same shape and dtype, got {tuple(y.shape)}, {y.dtype}"
    )


def check_rotary_offsets(rotary_embedding):
    """rotary(q, p) . rotary(k, p') depends only on p - p' (four pairs of positions two apart)."""
    q, k = torch.randn(1, 16, dtype=torch.float64), torch.randn(1, 16, dtype=torch.float64)
    q, k = q / q.norm(), k / k.norm()  # unit vectors: scores between -1 and 1
    dots = [
        float((rotary_embedding(q, torch.tensor([p])) * rotary_embedding(k, torch.tensor([p - 2]))).sum())
        for p in (3, 10, 40, 1002)
    ]
    assert max(dots) - min(dots) < 1e-3, (
        f"rotary(q, p) . rotary(k, p') should depend only on p - p'; for four pairs of positions with p - p' = 2 "
        f"got {dots}"
    )


def check_rotary_base(rotary_embedding):
    """The base argument: with base=100.0 pair 1 turns by p * 100^(-2/4) = p / 10."""
    y = rotary_embedding(torch.tensor([[1.0, 0.0, 1.0, 0.0]]), torch.tensor([2]), base=100.0)
    expected = _table([2], frequency=0.1)
    assert _close(y, expected, 1e-4), (
        f"with base=100.0 the pairs (1, 0) at position 2 should give {_digits(expected)} (pair 1 turns by "
        f"2 * 100^(-2/4) = 0.2), got {_digits(y)}: use the base argument"
    )
