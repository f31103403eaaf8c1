"""Helpers of chapter 05's visible tests: the padding that batches hold, the masked loss, weights of
the tests' own for the decoder, the five steps computed one step at a time, the additive score pair by
pair, and the comparisons that say what differs. The helpers of Exercises 5.1 and 5.6 (imagined
machines, one training step) are in :mod:`attention_course.checks.ch05_training`, and importable
from here too: the test cells import every helper from this module.

Each helper raises ``AssertionError`` with a message (expected vs got, the likely fix) and prints
nothing when the answer is right. Nothing here implements an exercise: the yardsticks are PyTorch's
own (``F.cross_entropy``, ``nn.GRUCell``, ``torch.autograd.grad``) or loops over single pairs.
"""

from __future__ import annotations

import contextlib
from random import getstate as python_rng_state
from random import seed as python_seed

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .ch05_training import (
    assert_autocast_step,
    assert_clipped_sgd_step,
    assert_picks,
    assert_refuses,
    assert_step_on_the_models_device,
    simulated_machine,
    toy_batch,
    toy_loss,
)

__all__ = [
    "assert_additive_pair_by_pair",
    "assert_autocast_step",
    "assert_batches_cover",
    "assert_clipped_sgd_step",
    "assert_like_cross_entropy",
    "assert_like_five_steps",
    "assert_no_padding",
    "assert_padding_within_bounds",
    "assert_picks",
    "assert_refuses",
    "assert_step_on_the_models_device",
    "batches_as_lists",
    "decoder_weights",
    "global_random_state_untouched",
    "load_weights",
    "require_attributes",
    "seed_everything",
    "simulated_machine",
    "toy_batch",
    "toy_loss",
]


def require_attributes(obj, owner: str, kinds: dict) -> None:
    """Each attribute of ``kinds`` ({name: type}) exists on ``obj`` with that type."""
    for name, kind in kinds.items():
        assert isinstance(getattr(obj, name, None), kind), (
            f"{owner} needs an attribute {name!r} of type {kind.__name__}"
        )


def load_weights(module, state: dict, what: str) -> None:
    """``module.load_state_dict(state)`` (strict), or an AssertionError that names the parameters expected."""
    try:
        module.load_state_dict(state)
    except RuntimeError as error:
        raise AssertionError(f"{what} should be exactly {sorted(state)}: {error}") from None


# --- Exercise 5.3: batches by length ----------------------------------------------------------


def batches_as_lists(batches) -> list[list[int]]:
    """The batches as lists of Python ints, to compare two lists of batches."""
    return [[int(i) for i in batch] for batch in batches]


def padding(lengths, batches) -> int:
    """Padding tokens: for each batch, its size times its longest length, minus its real lengths."""
    return sum(len(b) * max(lengths[int(i)] for i in b) - sum(lengths[int(i)] for i in b) for b in batches)


def assert_batches_cover(batches, n: int, batch_size: int, context: str = "") -> None:
    """Every index ``0 .. n-1`` exactly once, every batch between 1 and ``batch_size`` indices."""
    flat = sorted(int(i) for batch in batches for i in batch)
    assert flat == list(range(n)), f"every index 0..{n - 1} must appear exactly once ({context}), got batches {batches}"
    assert all(1 <= len(batch) <= batch_size for batch in batches), (
        f"batches must hold 1 to {batch_size} indices ({context}), got {batches}"
    )


def assert_no_padding(lengths, batches) -> None:
    """Every batch holds a single length (no padding at all)."""
    for batch in batches:
        assert len({lengths[int(i)] for i in batch}) == 1, (
            f"batch {batch} mixes the lengths {[lengths[int(i)] for i in batch]}: sort by length before cutting"
        )


def assert_padding_within_bounds(lengths, batches, batch_size: int) -> None:
    """The padding of ``batches`` is at most half that of random batches and at most 4 P + N (the statement's
    bounds)."""
    n = len(lengths)
    by_length = sorted(range(n), key=lambda i: lengths[i])
    sorted_padding = padding(lengths, [by_length[i : i + batch_size] for i in range(0, n, batch_size)])
    shuffled = np.random.default_rng(0).permutation(n).tolist()
    random_padding = padding(lengths, [shuffled[i : i + batch_size] for i in range(0, n, batch_size)])
    got = padding(lengths, batches)
    bound = min(0.5 * random_padding, 4 * sorted_padding + n)
    assert got <= bound, (
        f"{n} lengths in batches of {batch_size}: your batches hold {got} padding tokens; sorted batches hold "
        f"{sorted_padding} and random ones {random_padding}, and the bound is min(half of random, 4 x sorted + N) = "
        f"{bound:.0f}"
    )


def seed_everything(seed: int) -> None:
    """Seed the global random states of torch, NumPy and ``random``."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    python_seed(seed)


@contextlib.contextmanager
def global_random_state_untouched(seed: int):
    """Seed the global random states (torch, NumPy, ``random``) with ``seed``; after the block, they must be
    as they were: an answer with a generator of its own neither uses nor changes them."""
    seed_everything(seed)
    state = (torch.get_rng_state(), np.random.get_state()[1].copy(), python_rng_state())
    yield
    kept = (
        torch.equal(torch.get_rng_state(), state[0])
        and np.array_equal(np.random.get_state()[1], state[1])
        and python_rng_state() == state[2]
    )
    assert kept, (
        "length_bucketed_batches changed the global random state (torch, numpy or random): shuffle with a generator "
        "of your own, e.g. torch.Generator().manual_seed(seed), np.random.default_rng(seed) or random.Random(seed)"
    )


# --- Exercise 5.4: the masked loss ------------------------------------------------------------


def assert_like_cross_entropy(masked_cross_entropy, dtype: torch.dtype) -> None:
    """Two sentences of 4 and 2 real tokens (pad_id 1) in ``dtype``: the loss is F.cross_entropy(ignore_index=1)
    (every real token weighs the same), in ``dtype``, differentiable with its gradient, and the inputs unchanged."""
    logits = torch.randn(2, 5, 7, dtype=dtype, requires_grad=True)
    targets = torch.tensor([[4, 5, 6, 2, 1], [3, 2, 1, 1, 1]])  # pad_id = 1
    saved = (logits.detach().clone(), targets.clone())
    expected = F.cross_entropy(logits.reshape(-1, 7), targets.clone().reshape(-1), ignore_index=1)
    got = masked_cross_entropy(logits, targets, 1)
    assert torch.equal(logits.detach(), saved[0]) and torch.equal(targets, saved[1]), (
        "masked_cross_entropy must not modify logits or targets (use masked_fill, which returns a new tensor, "
        "or clone first)"
    )
    assert isinstance(got, torch.Tensor) and got.dtype == dtype, (
        f"for {dtype} logits the loss should be a {dtype} tensor, got {got!r}"
    )
    per_sentence = (F.cross_entropy(logits[0, :4], targets[0, :4]) + F.cross_entropy(logits[1, :2], targets[1, :2])) / 2
    if abs(float(got.detach()) - float(per_sentence.detach())) < 1e-6:
        hint = "the mean of the per-sentence means: divide the sum over all real tokens by their number"
    else:
        hint = "the mean over the real tokens: -log softmax(logits)[target] at the positions where targets != pad_id"
    assert torch.allclose(got.detach(), expected.detach(), atol=1e-6), (
        f"{dtype}: expected F.cross_entropy(ignore_index=1) = {float(expected.detach()):.5f}, got "
        f"{float(got.detach()):.5f}; expected {hint}"
    )
    assert got.requires_grad, (
        "the loss should carry gradients back to the logits: compute it with torch operations (no .item(), "
        ".detach() or NumPy)"
    )
    (grad,) = torch.autograd.grad(got, logits)
    (grad_expected,) = torch.autograd.grad(expected, logits)
    assert torch.allclose(grad, grad_expected, atol=1e-6), (
        f"{dtype}: the gradient differs from that of F.cross_entropy(ignore_index=1)"
    )


# --- Exercise 5.5: the decoder ----------------------------------------------------------------


def decoder_weights(vocab_size: int, emb_dim: int, hidden_dim: int, seed: int) -> dict:
    """A state_dict of the tests' own for an AttentionDecoder (embedding, rnn, combine, out)."""
    gen = torch.Generator().manual_seed(seed)
    V, E, H = vocab_size, emb_dim, hidden_dim
    return {
        "embedding.weight": torch.randn(V, E, generator=gen),
        "rnn.weight_ih_l0": torch.randn(3 * H, E, generator=gen) / 2,
        "rnn.weight_hh_l0": torch.randn(3 * H, H, generator=gen) / 2,
        "rnn.bias_ih_l0": torch.randn(3 * H, generator=gen) / 2,
        "rnn.bias_hh_l0": torch.randn(3 * H, generator=gen) / 2,
        "combine.weight": torch.randn(H, 2 * H, generator=gen) / 2,
        "combine.bias": torch.randn(H, generator=gen) / 2,
        "out.weight": torch.randn(V, H, generator=gen),
        "out.bias": torch.randn(V, generator=gen),
    }


def _five_steps(state, tgt_in, hidden, enc_outputs, src_mask, a_first=True, with_tanh=True):
    """Logits and weights of the five steps, one sentence and one step at a time (nn.GRUCell with the GRU's
    weights is one step of nn.GRU); ``a_first`` and ``with_tanh`` are step 5's choices."""
    (B, T), (V, H) = tgt_in.shape, state["out.weight"].shape
    cell = nn.GRUCell(state["embedding.weight"].shape[1], H)
    cell.load_state_dict(
        {
            "weight_ih": state["rnn.weight_ih_l0"],
            "weight_hh": state["rnn.weight_hh_l0"],
            "bias_ih": state["rnn.bias_ih_l0"],
            "bias_hh": state["rnn.bias_hh_l0"],
        }
    )
    step_logits, step_weights = torch.zeros(B, T, V), torch.zeros(B, T, enc_outputs.shape[1])
    for b in range(len(tgt_in)):
        s = hidden[b]  # s_0
        real = enc_outputs[b, src_mask[b]]  # the real source states h_i
        for pos in range(T):  # the target position t
            s = cell(state["embedding.weight"][tgt_in[b, pos]][None], s[None])[0]  # step 1: s_t
            alpha = torch.softmax(real @ s, dim=0)  # steps 2 and 3: softmax of s_t . h_i
            a = alpha @ real  # step 4: a_t
            z = state["combine.weight"] @ (torch.cat([a, s]) if a_first else torch.cat([s, a])) + state["combine.bias"]
            step_logits[b, pos] = state["out.weight"] @ (torch.tanh(z) if with_tanh else z) + state["out.bias"]  # 5
            step_weights[b, pos, : len(alpha)] = alpha
    return step_logits, step_weights


def assert_like_five_steps(decoder, state, tgt_in, hidden, enc_outputs, src_mask) -> None:
    """The decoder (holding the weights ``state``) gives the same outputs twice, and the logits and weights of the
    five steps computed one sentence and one step at a time; on a difference, which step differs."""
    with torch.no_grad():
        first = decoder(tgt_in, hidden, enc_outputs, src_mask)
        again = decoder(tgt_in, hidden, enc_outputs, src_mask)
        expected_logits, expected_weights = _five_steps(state, tgt_in, hidden, enc_outputs, src_mask)
    assert all(torch.equal(x, y) for x, y in zip(first, again)), (
        "the same inputs gave different logits or weights on two calls: is there dropout (or another random step) in "
        "your decoder? The exercise's decoder has none; leave it out"
    )
    logits, weights = first[0].detach(), first[1].detach()
    assert torch.allclose(weights, expected_weights, atol=1e-5), (
        f"the weights differ from the five steps computed one step at a time (largest difference "
        f"{float((weights - expected_weights).abs().max()):.3g}).\nexpected weights[0] =\n{expected_weights[0]}\n"
        f"got\n{weights[0]}\nCheck: the initial state `hidden` goes into the GRU (as (1, B, d)); the scores use the "
        "GRU's output at step t, s_t, not the state before it, s_{t-1}; the score is s_t . h_i, without scaling; the "
        "softmax runs over the source positions."
    )
    if torch.allclose(logits, expected_logits, atol=1e-5):
        return
    with torch.no_grad():
        swapped = _five_steps(state, tgt_in, hidden, enc_outputs, src_mask, a_first=False)[0]
        no_tanh = _five_steps(state, tgt_in, hidden, enc_outputs, src_mask, with_tanh=False)[0]
    assert not torch.allclose(logits, swapped, atol=1e-5), (
        "the logits are those of combine([s_t; a_t]): concatenate the attention vector first, [a_t; s_t]"
    )
    assert not torch.allclose(logits, no_tanh, atol=1e-5), (
        "the logits are those of out(combine([a_t; s_t])) without the tanh: step 5 is out(tanh(combine([a_t; s_t])))"
    )
    raise AssertionError(
        f"the weights are right, but the logits differ from out(tanh(combine([a_t; s_t]))) computed one step at a time "
        f"(largest difference {float((logits - expected_logits).abs().max()):.3g}); check step 5: [a_t; s_t] in this "
        "order, s_t the GRU's output at step t, tanh, then `out`."
    )


# --- Exercise 5.7: the additive score ---------------------------------------------------------


def assert_additive_pair_by_pair(score_class, seed: int = 7) -> None:
    """With weights of the tests' own loaded into ``score_class(3, 5, 4)``, in float32 and float64, the scores equal
    v^T tanh(W_q q_i + W_k k_j) computed for every pair (b, i, j); and gradients reach the queries and the keys."""
    gen = torch.Generator().manual_seed(seed)
    for dtype in (torch.float32, torch.float64):
        W_q, W_k = torch.randn(4, 3, generator=gen, dtype=dtype), torch.randn(4, 5, generator=gen, dtype=dtype)
        v = torch.randn(1, 4, generator=gen, dtype=dtype)
        score = score_class(query_dim=3, key_dim=5, attn_dim=4).to(dtype)
        score.load_state_dict({"W_q.weight": W_q, "W_k.weight": W_k, "v.weight": v})
        q, k = torch.randn(2, 6, 3, generator=gen, dtype=dtype), torch.randn(2, 7, 5, generator=gen, dtype=dtype)
        expected = torch.tensor(
            [
                [[float(v[0] @ torch.tanh(W_q @ q[b, i] + W_k @ k[b, j])) for j in range(7)] for i in range(6)]
                for b in range(2)
            ],
            dtype=dtype,
        )
        got = score(q, k)
        assert got.dtype == dtype, (
            f"for {dtype} queries, keys and weights the scores should be {dtype}, got {got.dtype}"
        )
        assert torch.allclose(got.detach(), expected, atol=1e-5), (
            f"{dtype}: the scores differ from v^T tanh(W_q q_i + W_k k_j) computed for every pair (b, i, j) (largest "
            f"difference {float((got.detach() - expected).abs().max()):.3g}); got[0, :2] =\n{got.detach()[0, :2]}\n"
            f"expected\n{expected[0, :2]}"
        )
    q.requires_grad_()
    k.requires_grad_()
    scores = score(q, k)
    assert scores.requires_grad, (
        "the scores should carry gradients: build them from the module's layers with torch operations"
    )
    scores.sum().backward()
    assert q.grad is not None and k.grad is not None and q.grad.abs().sum() > 0 and k.grad.abs().sum() > 0, (
        "no gradient reached the queries or the keys: compute the scores with torch operations (no .detach(), no numpy)"
    )
