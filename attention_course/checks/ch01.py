"""Helpers of chapter 01's visible tests (the recurrent network and its limits, in NumPy).

Each helper raises ``AssertionError`` with a message that says what was expected, what came back
and the likely fix; it prints nothing and returns quietly (or returns the answer's result) when
the answer is right. The expected values are worked out by hand in the test cells, or come from an
independent oracle here (finite differences).
"""

from __future__ import annotations

import numpy as np

from . import compare

__all__ = ["call", "close", "jacobian_norms_by_differences"]


def call(function, *args, hint: str):
    """``function(*args)``; an exception becomes one AssertionError naming the arguments' shapes and the hint."""
    shapes = ", ".join(str(np.shape(a)) for a in args)
    try:
        return function(*args)
    except NotImplementedError:
        raise
    except Exception as error:
        raise AssertionError(f"{function.__name__}(arguments of shapes {shapes}) raised {error!r}. {hint}") from None


def close(got, expected, what: str, hint: str = "", likely_mistakes: dict | None = None, rtol=1e-5, atol=1e-8) -> None:
    """``got`` has the shape of ``expected`` and its values (``np.allclose``); when it matches one of
    ``likely_mistakes`` ({what the mistake is: the value it gives}), the message names that mistake instead of
    ``hint``. (The comparison is :func:`attention_course.checks.compare.close`.)"""
    compare.close(got, expected, what, hint, rtol=rtol, atol=atol, likely_mistakes=likely_mistakes)


def jacobian_norms_by_differences(X, h0, W_xh, W_hh, b_h, eps: float = 1e-6) -> np.ndarray:
    """The oracle of Exercise 1.3 by central differences: for each i, nudge h_{i+1} by +-eps in each coordinate,
    run the remaining steps of tanh(W_xh x + W_hh h + b_h), and take the Frobenius norm of how h_T moves."""

    def run(h, rows):  # the state after reading the rows of X given, starting from h
        for x in rows:
            h = np.tanh(W_xh @ x + W_hh @ h + b_h)
        return h

    def moves(i, e):  # column of d h_T / d h_{i+1} along the unit vector e
        state = run(h0, X[: i + 1])  # h_{i+1}
        return (run(state + eps * e, X[i + 1 :]) - run(state - eps * e, X[i + 1 :])) / (2 * eps)

    unit = np.eye(len(h0))
    return np.asarray([np.linalg.norm(np.column_stack([moves(i, e) for e in unit])) for i in range(len(X))])
