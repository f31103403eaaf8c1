"""Chapter 08's checks of Exercise 8.4 (rotary position embeddings).

The oracle is the statement's hand-worked table (d = 4, base 10000, positions 0, 1, 2); a wrong result
is compared with the likely mistakes (the position off by one, the pairs turned the wrong way, cos and
sin swapped, the halves paired instead of neighbours, another pair's frequency) and the message names the
one it matches. Then the properties: leading
dimensions and float64 kept, a dot product that depends only on the offset, the ``base`` argument.
"""

from __future__ import annotations

import math

import torch

from .ch08_common import _close, _digits

__all__ = [
    "check_rotary_base",
    "check_rotary_offsets",
    "check_rotary_shapes",
    "check_rotary_sign",
    "check_rotary_table",
]


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
