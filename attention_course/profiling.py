"""What PyTorch computes during a call: every operation, the shapes it reads and creates.

Chapter 08's tests look at *how* an answer computes, not only at what it returns: tiled attention
must never create a ``T_q x T_k`` tensor, and a cached decoding step must project only the new
tokens. :func:`record_ops` runs a function under a ``TorchDispatchMode`` (PyTorch's hook below
every operator, factory functions included) and returns, with the result, one :class:`Op` per
operation that ran::

    (O, L), ops = record_ops(tiled_attention, Q, K, V, 16)
    biggest = largest_created(ops)          # the largest tensor an operation created

A record is plain data (named tuples of strings, ints and tuples), so it can be read anywhere: in
the notebook, in nbgrader, and through the course's class grader, which runs the call in the
student's sandbox and records it there (``autograder/GRADING.md``).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

__all__ = ["Op", "record_ops", "largest_created", "matmuls", "matmul_flops", "MATMUL_OPS"]


class Op(NamedTuple):
    """One operation PyTorch ran: its ATen name, the shapes of the tensors it read and created."""

    name: str  # the ATen overload, e.g. "aten.mm.default", "aten.ones.default"
    inputs: tuple  # shapes (tuples of ints) of its tensor arguments, in order
    outputs: tuple  # shapes of the tensors it returned, in order
    is_view: bool  # True when its outputs share the memory of an input (view, slice, expand, ...)


# The matrix products, as ATen runs them (torch.matmul, @, einsum, nn.Linear and
# F.scaled_dot_product_attention on the CPU all end up in one of these).
MATMUL_OPS = ("aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm", "aten.addbmm", "aten.matmul", "aten.dot", "aten.mv")


class _Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops: list[Op] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        ins, _ = tree_flatten((args, kwargs))
        outs, _ = tree_flatten(out)
        self.ops.append(
            Op(
                name=str(func),
                inputs=tuple(tuple(t.shape) for t in ins if isinstance(t, torch.Tensor)),
                outputs=tuple(tuple(t.shape) for t in outs if isinstance(t, torch.Tensor)),
                is_view=bool(getattr(func, "is_view", False)),
            )
        )
        return out


def record_ops(fn, *args, **kwargs):
    """Call ``fn(*args, **kwargs)`` and record every PyTorch operation it runs.

    Returns ``(result, ops)``: what ``fn`` returned, and a list of :class:`Op`, in the order
    they ran. Operations on other threads, and work done outside PyTorch (NumPy), are not seen.
    """
    recorder = _Recorder()
    with recorder:
        result = fn(*args, **kwargs)
    return result, recorder.ops


def _numel(shape) -> int:
    n = 1
    for size in shape:
        n *= size
    return n


def largest_created(ops) -> tuple[int, Op | None]:
    """``(number of elements, op)`` of the largest tensor that an operation *created* (views,
    which share an input's memory, do not count); ``(0, None)`` when nothing was created."""
    best, where = 0, None
    for op in ops:
        if op.is_view:
            continue
        for shape in op.outputs:
            if _numel(shape) > best:
                best, where = _numel(shape), op
    return best, where


def matmuls(ops) -> list[Op]:
    """The matrix products among ``ops``."""
    return [op for op in ops if op.name.rsplit(".", 1)[0] in MATMUL_OPS]


def matmul_flops(ops) -> int:
    """Multiply-adds of the matrix products among ``ops``: for each product, the elements of its
    output times the length of the summed dimension (read off the first operand's last size)."""
    total = 0
    for op in matmuls(ops):
        if not op.outputs or not op.inputs:
            continue
        # addmm/baddbmm take (bias, a, b): the summed size is a's last; mm/bmm/dot/mv take (a, b).
        first = op.inputs[1] if op.name.split(".")[1] in ("addmm", "baddbmm", "addbmm") else op.inputs[0]
        inner = first[-1] if first else 1
        total += _numel(op.outputs[0]) * inner
    return total
