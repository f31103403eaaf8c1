"""Helpers of chapter 03's visible tests (the five steps of attention, in NumPy; 3.8 in PyTorch).

Each helper raises ``AssertionError`` with a message that says what was expected, what came back
and the likely fix; it prints nothing and returns quietly (or returns the answer's result) when
the answer is right. None of them computes an exercise's answer: expected values are written out
by hand in the test cells, or come from ``torch.softmax``.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from . import compare

__all__ = ["call", "close", "pair", "quiet", "torch_close", "torch_weights_over"]


def _show(values) -> str:
    """An array on one line, four decimals."""
    return str(np.round(np.asarray(values, dtype=float), 4).tolist())


def call(function, *args, hint: str, **kwargs):
    """``function(*args, **kwargs)``; an exception becomes one AssertionError naming the shapes and the hint."""
    shapes = ", ".join(str(tuple(np.shape(a))) for a in args)
    try:
        return function(*args, **kwargs)
    except NotImplementedError:
        raise
    except Exception as error:
        raise AssertionError(f"{function.__name__}(arguments of shapes {shapes}) raised {error!r}. {hint}") from None


def close(got, expected, what: str, hint: str = "", rtol: float = 1e-6, atol: float = 1e-12) -> None:
    """``got`` has the shape of ``expected`` and its values, within rtol and atol (the comparison is
    :func:`attention_course.checks.compare.close`)."""
    compare.close(got, expected, what, hint, rtol=rtol, atol=atol)


def pair(result, names: str):
    """The answer returned a pair (a tuple or a list of two): give it back as a tuple."""
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise AssertionError(f"expected a pair {names}, got {type(result).__name__}")
    return tuple(result)


def quiet(function, *args, what: str, hint: str, **kwargs):
    """``function(*args, **kwargs)`` must raise no NumPy RuntimeWarning (overflow, 0/0) and give finite values."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(action="always")
        got = function(*args, **kwargs)
    numpy_warnings = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    finite = bool(np.all(np.isfinite(np.asarray(got, dtype=float))))
    if numpy_warnings or not finite:
        raise AssertionError(
            f"{what} gave {_show(np.asarray(got, dtype=float))}"
            + (f" with NumPy warnings {numpy_warnings}" if numpy_warnings else "")
            + f". {hint}"
        )
    return got


def torch_close(got, expected, what: str, hint: str = "") -> None:
    """Two tensors of the same shape and dtype with equal values (torch.testing's default tolerances), and
    exactly 0 wherever ``expected`` is exactly 0 (a masked position)."""
    if tuple(got.shape) != tuple(expected.shape):
        raise AssertionError(f"{what}: expected shape {tuple(expected.shape)}, got {tuple(got.shape)}. {hint}".rstrip())
    if not torch.all(torch.isfinite(got)):
        raise AssertionError(f"{what}: got nan or inf, {got.tolist()}. {hint}".rstrip())
    try:
        torch.testing.assert_close(got, expected)
    except AssertionError:
        raise AssertionError(
            f"{what}: expected {[round(v, 4) for v in expected.flatten().tolist()]}, "
            f"got {[round(v, 4) for v in got.flatten().tolist()]}. {hint}".rstrip()
        ) from None
    zeros = expected == 0
    if torch.any(got[zeros] != 0):
        raise AssertionError(
            f"{what}: expected exactly 0 at the masked positions, got {got[zeros].tolist()} there. {hint}".rstrip()
        )


def torch_weights_over(scores: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """``torch.softmax`` of ``scores`` (one score per real position, True in the bool vector ``real``) placed
    at the real positions of a row of zeros as long as ``real``: the weights that masking should give."""
    row = torch.zeros(scores.shape[:-1] + (len(real),), dtype=scores.dtype)
    row[..., real] = torch.softmax(scores, dim=-1)
    return row
