"""Reference implementations for 01_rnn_limits.

GENERATED from solutions/01_rnn_limits/01_rnn_limits.ipynb by `python -m autograder generate`: the cells tagged
"export" and every autograded-answer cell, in order, without the solution markers.
Do not edit: edit the notebook and regenerate.
"""
import numpy as np


def rnn_step(x_t, h_prev, W_xh, W_hh, b_h):
    """One step of an Elman RNN: tanh(W_xh x_t + W_hh h_prev + b_h).

    x_t: (d_in,) or (B, d_in); h_prev: (d,) or (B, d); W_xh: (d, d_in); W_hh: (d, d); b_h: (d,).
    Returns the new hidden state, (d,) or (B, d).
    """
    return np.tanh(x_t @ W_xh.T + h_prev @ W_hh.T + b_h)


def rnn_forward(X, h0, W_xh, W_hh, b_h):
    """Run an Elman RNN over one sequence.

    X: (T, d_in), row t-1 is x_t; h0: (d,); W_xh: (d, d_in); W_hh: (d, d); b_h: (d,).
    Returns H: (T, d), row t-1 is h_t (h0 itself is not included).
    """
    h = h0
    states = []
    for x_t in X:
        h = rnn_step(x_t, h, W_xh, W_hh, b_h)
        states.append(h)
    return np.stack(states)


def hidden_jacobian_norms(X, h0, W_xh, W_hh, b_h):
    """Frobenius norms of the Jacobians of the last state h_T with respect to each state h_1 .. h_T.

    X: (T, d_in); h0: (d,); W_xh: (d, d_in); W_hh: (d, d); b_h: (d,).
    Returns a (T,) array; entry i is ||d h_T / d h_{i+1}||_F, so the last entry is sqrt(d).
    """
    H = rnn_forward(X, h0, W_xh, W_hh, b_h)
    T, d = H.shape
    norms = np.empty(T)
    jacobian = np.eye(d)
    norms[T - 1] = np.linalg.norm(jacobian)
    for i in range(T - 2, -1, -1):
        # d h_T / d h_{i+1} = (d h_T / d h_{i+2}) diag(1 - h_{i+2}^2) W_hh, and h_{i+2} is H[i + 1]
        jacobian = jacobian @ ((1.0 - H[i + 1] ** 2)[:, None] * W_hh)
        norms[i] = np.linalg.norm(jacobian)
    return norms
