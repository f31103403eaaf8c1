"""Helpers of chapter 06's visible tests: a scorer small enough to work out by hand, and the comparison
of an importance map with the values worked out.

Each helper raises ``AssertionError`` with a message (expected vs got, the likely fix) and prints
nothing when the answer is right. Nothing here implements an exercise.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

__all__ = ["assert_importances", "linear_scorer", "occlusion_of"]


def linear_scorer() -> nn.Module:
    """A scorer of three source ids and two target tokens: source id k (0 to 3) has the one-number embedding k,
    and ``score(ids) = W @ [emb(ids[0]), emb(ids[1]), emb(ids[2])]`` with ``W = [[1, 0, 0], [0, 2, -1]]``.

    Built from torch's own modules, so that it runs where the answer runs."""
    scorer = nn.Sequential(nn.Embedding(4, 1), nn.Flatten(0), nn.Linear(3, 2, bias=False))
    with torch.no_grad():
        scorer[0].weight.copy_(torch.arange(4.0)[:, None])
        scorer[2].weight.copy_(torch.tensor([[1.0, 0.0, 0.0], [0.0, 2.0, -1.0]]))
    return scorer


def assert_importances(got, expected, hint: str, name: str = "occlusion_importance") -> None:
    """``got`` is a NumPy array of the shape of ``expected`` (T_dec, T_enc) and equal to it within 1e-6."""
    expected = np.asarray(expected, dtype=float)
    assert isinstance(got, np.ndarray), (
        f"{name} should return a NumPy array, got {type(got).__module__}.{type(got).__name__}: "
        "end with .detach().cpu().numpy()"
    )
    assert np.shape(got) == expected.shape, (
        f"expected shape (T_dec, T_enc) = {expected.shape}: one row per target token, one column per source "
        f"position; got {np.shape(got)}"
    )
    np.testing.assert_allclose(
        np.asarray(got, dtype=float),
        expected,
        atol=1e-6,
        err_msg=f"{hint}; expected {expected.tolist()}, got {np.asarray(got).tolist()}",
    )


def occlusion_of(occlusion_importance, scorer, ids, replace_id):
    """``occlusion_importance(scorer, ids, replace_id)``; an error raised inside (other than NotImplementedError)
    becomes an AssertionError that says what went in."""
    try:
        return occlusion_importance(scorer, ids, replace_id)
    except NotImplementedError:
        raise
    except Exception as error:
        raise AssertionError(
            f"occlusion_importance(scorer, {ids!r}, {replace_id}) raised {type(error).__name__}: {error}. The scorer "
            f"takes a source of exactly {len(ids)} ids: hide position i by replacing its id with replace_id in a "
            "copy of the source, without deleting it"
        ) from None
