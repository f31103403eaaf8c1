"""What chapter 08's checks share: the ValueError check, numbers shown to 8 digits, the rows that differ,
a float64 comparison within a tolerance, and the search of a record for PyTorch's fused attention.

Used by the checks of Exercises 8.1 to 8.5 (``ch08_tiled``, ``ch08_backward``, ``ch08_cache``,
``ch08_rotary``, ``ch08_beam``); the test cells import :func:`raises_value_error` from
:mod:`attention_course.checks.ch08`.
"""

from __future__ import annotations

import torch

__all__ = [
    "fused_attention_over_all_keys",
    "raises_value_error",
]


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
