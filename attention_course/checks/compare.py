"""The visible tests' one comparison of an answer with its expected value: shape, dtype, values.

Chapters 01 to 04 each hand their test cells a ``close`` with the chapter's own tolerances and
argument order (``checks.ch01.close`` ... ``checks.ch04.close``); each of them calls
:func:`close` here, so that a wrong shape, a wrong dtype or wrong values read the same way in
every chapter. It takes NumPy arrays (and lists, numbers) or PyTorch tensors, compares with
``np.allclose`` or ``torch.allclose`` (``|got - expected| <= atol + rtol * |expected|``), prints
nothing when the answer is right, and otherwise raises ``AssertionError`` with a message that says
what differs: the values themselves when there are a few, else the largest difference and where it
is; then the likely mistake the answer matches, if one is given, or the hint.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["close"]

FEW = 12  # up to this many values, a message shows them all


def _listed(values) -> list:
    return np.round(np.asarray(values, dtype=float), 6).tolist()


def _where_it_differs(got: np.ndarray, expected: np.ndarray) -> str:
    with np.errstate(invalid="ignore"):
        difference = np.where(got == expected, 0.0, np.abs(got - expected))  # (equal infinities do not differ)
    if np.isnan(difference).any():
        index = np.unravel_index(int(np.isnan(difference).argmax()), got.shape)
        return f"got {got[index]} at index {tuple(int(i) for i in index)}, where {expected[index]:.6g} was expected"
    index = np.unravel_index(int(difference.argmax()), got.shape)
    return (
        f"they differ by up to {difference[index]:.3g}, at index {tuple(int(i) for i in index)} "
        f"(expected {expected[index]:.6g}, got {got[index]:.6g})"
    )


def _message(what: str, got, expected, explanation: str) -> str:
    """``what``: the values, or where they differ most; then the explanation."""
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    if expected.size <= FEW:
        values = f"expected {_listed(expected)}, got {_listed(got)}"
    else:
        values = _where_it_differs(got, expected)
    return f"{what}: {values}. {explanation}".rstrip()


def close(
    got,
    expected,
    what: str,
    hint: str = "",
    *,
    rtol: float,
    atol: float,
    dtype=None,
    cast: bool = False,
    likely_mistakes: dict | None = None,
) -> None:
    """``got`` has the shape of ``expected`` and its values within ``rtol`` and ``atol``.

    Tensors: both are detached; ``got`` must have ``dtype`` if it is given, and the dtype of
    ``expected`` unless ``cast`` (then ``expected`` is converted to ``got``'s dtype first). Anything
    else is compared as an array of floats. ``likely_mistakes`` ({what the mistake is: the value it
    gives}): when the answer matches one of them (within the default tolerances of ``allclose``),
    the message names that mistake instead of ``hint``.
    """
    if isinstance(expected, torch.Tensor):
        got, expected = got.detach(), expected.detach()
        if tuple(got.shape) != tuple(expected.shape):
            raise AssertionError(
                f"{what}: expected shape {tuple(expected.shape)}, got {tuple(got.shape)}. {hint}".rstrip()
            )
        if dtype is not None and got.dtype != dtype:
            raise AssertionError(f"{what}: expected dtype {dtype} (the inputs' dtype), got {got.dtype}")
        if cast:
            expected = expected.to(got.dtype)
        elif got.dtype != expected.dtype:
            raise AssertionError(f"{what}: expected dtype {expected.dtype}, got {got.dtype}. {hint}".rstrip())
        if torch.allclose(got, expected, rtol=rtol, atol=atol):
            return
        matches = [
            name
            for name, value in (likely_mistakes or {}).items()
            if torch.allclose(got, torch.as_tensor(value).to(got.dtype))
        ]
        got, expected = got.double().cpu().numpy(), expected.double().cpu().numpy()
    else:
        expected = np.asarray(expected, dtype=float)
        if np.shape(got) != expected.shape:
            raise AssertionError(f"{what}: expected shape {expected.shape}, got {np.shape(got)}. {hint}".rstrip())
        got = np.asarray(got, dtype=float)
        if np.allclose(got, expected, rtol=rtol, atol=atol):
            return
        matches = [name for name, value in (likely_mistakes or {}).items() if np.allclose(got, value)]
    raise AssertionError(_message(what, got, expected, (matches or [hint])[0]))
