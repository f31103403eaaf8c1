# ruff: noqa: E501
"""Chapter 01's answers written as whole cells, wrong and valid (tests/wrong_answers/__init__.py runs them).

Each function's body is an answer cell as a student writes it (the function is never called): its decorator
says which exercise it answers, what the student did and whether the answer is wrong or valid, and turns it
into the :class:`~wrong_answers.Variant` that ``ch01_rnn_limits.py`` lists in its place. The imports
are the names such a cell finds in the student's namespace (the export cell and the answers above it), here
for the linter.
"""

import numpy as np

from autograder.reference.ch01_rnn_limits import rnn_forward, rnn_step
from wrong_answers import valid


@valid("rnn_step", "a loop over the rows of a batch, float32 arithmetic")
def rnn_step_loop_over_rows_batch_float32():
    def rnn_step(x_t, h_prev, W_xh, W_hh, b_h):
        """One step, row by row."""
        if np.ndim(x_t) == 1:
            z = W_xh.astype(np.float32) @ x_t + W_hh.astype(np.float32) @ h_prev + b_h
            return np.tanh(z)
        return np.stack([rnn_step(x, h, W_xh, W_hh, b_h) for x, h in zip(x_t, h_prev)])


@valid("rnn_forward", "a preallocated array filled row by row")
def rnn_forward_preallocated():
    def rnn_forward(X, h0, W_xh, W_hh, b_h):
        """Run an Elman RNN over one sequence."""
        H = np.zeros((len(X), len(h0)))
        h = h0
        for t in range(len(X)):
            H[t] = h = rnn_step(X[t], h, W_xh, W_hh, b_h)
        return H


@valid("hidden_jacobian_norms", "the product rebuilt from scratch for every entry, with np.diag")
def hidden_jacobian_norms_rebuilt_per_entry():
    def hidden_jacobian_norms(X, h0, W_xh, W_hh, b_h):
        """Frobenius norms of the Jacobians of h_T with respect to h_1 .. h_T."""
        H = rnn_forward(X, h0, W_xh, W_hh, b_h)
        T, d = H.shape
        norms = []
        for i in range(T):
            J = np.eye(d)
            for k in range(T - 1, i, -1):  # d h_{k+1} / d h_k = diag(1 - h_{k+1}^2) W_hh, h_{k+1} = H[k]
                J = J @ np.diag(1 - H[k] ** 2) @ W_hh
            norms.append(np.sqrt((J**2).sum()))
        return np.array(norms)
