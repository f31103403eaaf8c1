"""Chapter 08's benchmark, part 2: the per-layer costs of Vaswani et al. (2017, Table 1), measured.

:func:`measure_layer_costs` measures, for one self-attention, recurrent and convolutional layer of width d
on n positions, the multiply-adds PyTorch ran (``attention_course.profiling``), the matrix products that
must run one after the other (:func:`longest_chain`, in the autograd graph) and the maximum path length
(:func:`fewest_layers`: the fewest layers between input position 0 and output position n - 1).
:mod:`experiments.benchmark_attention_at_scale` is the program.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from attention_course.profiling import matmul_flops, record_ops
from experiments.attention_memory import naive_attention


def conv_multiply_adds(ops) -> int:
    """Multiply-adds of the convolutions among ops: output elements x input channels x kernel width."""
    total = 0
    for op in ops:
        if op.name.startswith("aten.convolution") and op.outputs:
            weight = op.inputs[1]  # (out_channels, in_channels, k)
            total += math.prod(op.outputs[0]) * weight[1] * weight[2]
    return total


PRODUCT_NODES = (
    "MmBackward",
    "AddmmBackward",
    "BmmBackward",
    "MvBackward",
    "DotBackward",
    "ConvolutionBackward",
    "MatmulBackward",
    "BaddbmmBackward",
)


def _graph(root):
    """The autograd graph below root: (nodes in an order where every node comes before its inputs, edges)."""
    order, edges, seen, stack = [], {}, set(), [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node is None or node in seen:
            continue
        seen.add(node)
        edges[node] = [child for child, _ in node.next_functions if child is not None]
        stack.append((node, True))
        stack.extend((child, False) for child in edges[node])
    return order[::-1], edges


def _is_product(node) -> int:
    return int(type(node).__name__.startswith(PRODUCT_NODES))


def longest_chain(output) -> int:
    """Matrix products or convolutions in the longest chain of the autograd graph below output: the ones
    that must run one after the other, however many processors there are."""
    order, edges = _graph(output.grad_fn)
    depth = {}
    for node in reversed(order):  # inputs first
        depth[node] = _is_product(node) + max((depth[child] for child in edges[node]), default=0)
    return depth[output.grad_fn]


def depends(stack, depth: int, n: int, d: int) -> bool:
    """Whether output position n - 1 of stack(X, depth) depends on input position 0 (autograd)."""
    X = torch.randn(n, d, dtype=torch.float64, requires_grad=True)
    stack(X, depth)[n - 1].sum().backward()
    return bool(X.grad[0].abs().max() > 0)


def fewest_layers(stack, n: int, d: int) -> int:
    """The fewest layers of stack(X, depth) that connect input position 0 to output position n - 1: the
    layer's maximum path length, in layers (found by doubling, then bisection; dependence only grows
    with depth)."""
    high = 1
    while not depends(stack, high, n, d):
        high *= 2
        if high > 4 * n:
            return -1
    low = high // 2  # does not connect (or 0)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if depends(stack, middle, n, d) else (middle, high)
    return high


def recurrent_layer(X, W, U):
    """h_t = tanh(x_t W + h_(t-1) U) for t = 0 .. n-1; X (n, d) -> H (n, d)."""
    inputs = X @ W  # (n, d): every input projected at once
    h = torch.zeros(X.shape[1], dtype=X.dtype)
    states = []
    for t in range(X.shape[0]):
        h = torch.tanh(inputs[t] + h @ U)  # one product per step, each needing the previous h
        states.append(h)
    return torch.stack(states)


def measure_layer_costs(sizes=(256, 1024), d=64, k=3) -> dict:
    """Table 1 of Vaswani et al. (2017), measured for one layer of each kind: multiply-adds, the products in
    the longest chain of its autograd graph (they must run one after the other), and its maximum path
    length: the fewest layers that connect input position 0 to output position n - 1 (attention layers;
    sweeps of the recurrence, each one step further; causal dilated convolutions, dilation k^l)."""
    torch.manual_seed(0)
    W, U = torch.randn(d, d) / math.sqrt(d), torch.randn(d, d) / math.sqrt(d)
    conv = nn.Conv1d(d, d, k, bias=False)

    def convolution(X):  # one layer, "same" padding: (n, d) -> (n, d)
        return F.conv1d(X.T[None], conv.weight, padding=k // 2)[0].T

    def attention_stack(X, depth):  # depth self-attention layers
        for _ in range(depth):
            X = naive_attention(X, X, X)
        return X

    def recurrent_sweeps(X, depth):  # the recurrence as depth parallel sweeps: h_t <- tanh(x_t W + h_(t-1) U)
        inputs, h = X @ W.double(), torch.zeros_like(X)
        for _ in range(depth):  # after n sweeps h is the recurrent layer's output exactly
            h = torch.tanh(inputs + F.pad(h[:-1], (0, 0, 1, 0)) @ U.double())
        return h

    def dilated_stack(X, depth):  # causal dilated convolutions: output t reads t, t - D, ..., t - (k-1) D, D = k^l
        h = X.T[None]
        for layer in range(depth):
            h = F.conv1d(F.pad(h, ((k - 1) * k**layer, 0)), conv.weight.double(), dilation=k**layer)
        return h[0].T

    layers = {
        "self_attention": (
            "self-attention",
            "O(n^2 d)",
            "O(1)",
            "O(1)",
            lambda X: naive_attention(X, X, X),
            attention_stack,
        ),
        "recurrent": ("recurrent", "O(n d^2)", "O(n)", "O(n)", lambda X: recurrent_layer(X, W, U), recurrent_sweeps),
        "convolutional": (f"convolutional (k = {k})", "O(k n d^2)", "O(1)", "O(log_k(n))", convolution, dilated_stack),
    }
    rows = {}
    for name, (label, operations, sequential, path, layer, stack) in layers.items():
        row = rows[name] = {
            "label": label,
            "operations": operations,
            "sequential": sequential,
            "path": path,
            "multiply_adds": [],
            "sequential_operations": [],
            "path_length": [],
        }
        for n in sizes:
            X = torch.randn(n, d)
            _, ops = record_ops(layer, X)
            row["multiply_adds"].append(matmul_flops(ops) + conv_multiply_adds(ops))
            X.requires_grad_()
            row["sequential_operations"].append(longest_chain(layer(X)))
            row["path_length"].append(fewest_layers(stack, n, d))
    print(
        f"\n2. per-layer costs (Vaswani et al., 2017, Table 1), d = {d}, k = {k}, n = {' and '.join(map(str, sizes))}"
    )
    print(
        f"{'layer':<22} {'operations':>10} {'multiply-adds':>27} {'sequential':>10} {'measured':>11} "
        f"{'path':>12} {'measured':>9}"
    )
    for row in rows.values():
        adds = " / ".join(f"{a:,}" for a in row["multiply_adds"])
        sequential = " / ".join(map(str, row["sequential_operations"]))
        path = " / ".join(map(str, row["path_length"]))
        print(
            f"{row['label']:<22} {row['operations']:>10} {adds:>27} {row['sequential']:>10} {sequential:>11} "
            f"{row['path']:>12} {path:>9}"
        )
    return {"n": list(sizes), "d": d, "k": k, "rows": rows}
