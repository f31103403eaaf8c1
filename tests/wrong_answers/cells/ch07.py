# ruff: noqa: E501
"""Chapter 07's answers written as whole cells, wrong and valid (tests/wrong_answers/__init__.py runs them).

Each function's body is an answer cell as a student writes it (the function is never called): its decorator
says which exercise it answers, what the student did and whether the answer is wrong or valid, and turns it
into the :class:`~wrong_answers.Variant` that ``ch07_transformer.py`` lists in its place. The imports
are the names such a cell finds in the student's namespace (the export cell and the answers above it), here
for the linter.
"""

import math

import torch

from wrong_answers import valid


@valid("sinusoidal_positions", "two Python loops with math.sin and math.cos")
def sinusoidal_positions_two_python_loops_math_sin():
    def sinusoidal_positions(length, dim):
        """(length, dim) float32: P[p, 2i] = sin(p / 10000^(2i/dim)), P[p, 2i+1] = cos(...)."""
        P = torch.zeros(length, dim)
        for p in range(length):
            for i in range(dim // 2):
                angle = p / 10000 ** (2 * i / dim)
                P[p, 2 * i] = math.sin(angle)
                P[p, 2 * i + 1] = math.cos(angle)
        return P


@valid("sinusoidal_positions", "float32 throughout, exp/log frequencies and torch.stack to interleave")
def sinusoidal_positions_float32_throughout_exp_log_frequencies():
    def sinusoidal_positions(length, dim):
        """(length, dim) float32 sinusoidal positions."""
        position = torch.arange(length, dtype=torch.float32).unsqueeze(1)  # (length, 1)
        div = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))  # (dim / 2,)
        angles = position * div  # (length, dim / 2)
        return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).reshape(length, dim)


@valid("sinusoidal_positions", "numpy, then torch.from_numpy(...).float()")
def sinusoidal_positions_numpy_then_torch_numpy_float():
    def sinusoidal_positions(length, dim):
        """(length, dim) float32 sinusoidal positions, computed with numpy."""
        import numpy as np

        angles = np.arange(length)[:, None] / 10000 ** (np.arange(0, dim, 2)[None, :] / dim)
        P = np.empty((length, dim))
        P[:, 0::2], P[:, 1::2] = np.sin(angles), np.cos(angles)
        return torch.from_numpy(P).float()
