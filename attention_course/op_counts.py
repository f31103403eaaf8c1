"""What a record of operations says: the largest tensor created, the matrix products and their cost.

A record is the list of :class:`~attention_course.profiling.Op` tuples that
:func:`attention_course.profiling.record_ops` returns (plain named tuples: an ATen name, the shapes
read and created, whether the outputs are views). Chapter 08's checks read it here::

    (O, L), ops = record_ops(tiled_attention, Q, K, V, 16)
    biggest = largest_created(ops)          # the largest tensor an operation created

and so do the benchmarks that count the multiply-adds of a forward pass (:func:`matmul_flops`).
These functions only read a record; making one that can be trusted is ``profiling``'s job (which
imports them, so ``from attention_course.profiling import largest_created`` works too).
"""

from __future__ import annotations

__all__ = ["MATMUL_OPS", "largest_created", "matmul_flops", "matmuls"]

# The matrix products, as ATen runs them (torch.matmul, @, einsum, nn.Linear and
# F.scaled_dot_product_attention on the CPU all end up in one of these).
MATMUL_OPS = ("aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm", "aten.addbmm", "aten.matmul", "aten.dot", "aten.mv")


def _numel(shape) -> int:
    n = 1
    for size in shape:
        n *= size
    return n


def largest_created(ops) -> tuple[int, tuple | None]:
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


def matmuls(ops) -> list[tuple]:
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
