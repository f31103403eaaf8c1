"""Chapter 01: the likeliest wrong answers to Exercises 1.1-1.3, and other correct ways to write them."""

from wrong_answers import Variant
from wrong_answers.cells import ch01 as cells

STEP = "return np.tanh(x_t @ W_xh.T + h_prev @ W_hh.T + b_h)"
FACTOR = "jacobian = jacobian @ ((1.0 - H[i + 1] ** 2)[:, None] * W_hh)"

WRONG = [
    # Exercise 1.1, rnn_step
    Variant("rnn_step", "no tanh", replace=[(STEP, "return x_t @ W_xh.T + h_prev @ W_hh.T + b_h")]),
    Variant("rnn_step", "W_hh^T h instead of W_hh h", replace=[("h_prev @ W_hh.T", "h_prev @ W_hh")]),
    Variant("rnn_step", "no bias", replace=[(STEP, "return np.tanh(x_t @ W_xh.T + h_prev @ W_hh.T)")]),
    Variant(
        "rnn_step",
        "the bias added after the tanh",
        replace=[(STEP, "return np.tanh(x_t @ W_xh.T + h_prev @ W_hh.T) + b_h")],
    ),
    Variant(
        "rnn_step",
        "column-vector formula W_xh @ x_t, right for one sequence only (a batch fails)",
        replace=[(STEP, "return np.tanh(W_xh @ x_t + W_hh @ h_prev + b_h)")],
    ),
    Variant("rnn_step", "x_t @ W_xh without the transpose", replace=[("x_t @ W_xh.T", "x_t @ W_xh")]),
    # Exercise 1.2, rnn_forward
    Variant(
        "rnn_forward",
        "h0 included as the first row",
        replace=[("states = []", "states = [h0]")],
    ),
    Variant(
        "rnn_forward",
        "every step starts from h0 (the state is not carried)",
        replace=[("h = rnn_step(x_t, h, W_xh, W_hh, b_h)", "h = rnn_step(x_t, h0, W_xh, W_hh, b_h)")],
    ),
    Variant("rnn_forward", "the first input skipped", replace=[("for x_t in X:", "for x_t in X[1:]:")]),
    Variant(
        "rnn_forward",
        "the state updated in place (every row aliases one array, and h0 is overwritten)",
        replace=[
            ("    h = h0\n", "    h = h0\n    h[...] = h0\n"),
            ("h = rnn_step(x_t, h, W_xh, W_hh, b_h)", "h[...] = rnn_step(x_t, h, W_xh, W_hh, b_h)"),
        ],
    ),
    Variant(
        "rnn_forward", "returns a list of states, not an array", replace=[("return np.stack(states)", "return states")]
    ),
    # Exercise 1.3, hidden_jacobian_norms
    Variant(
        "hidden_jacobian_norms",
        "new factors multiplied on the left instead of the right",
        replace=[(FACTOR, "jacobian = ((1.0 - H[i + 1] ** 2)[:, None] * W_hh) @ jacobian")],
    ),
    Variant(
        "hidden_jacobian_norms",
        "the state one step too early in the tanh derivative (H[i] for h_{i+2})",
        replace=[("(1.0 - H[i + 1] ** 2)", "(1.0 - H[i] ** 2)")],
    ),
    Variant(
        "hidden_jacobian_norms",
        "no tanh derivative: powers of W_hh only",
        replace=[(FACTOR, "jacobian = jacobian @ W_hh")],
    ),
    Variant(
        "hidden_jacobian_norms",
        "diag(1 - h^2) on the right of W_hh",
        replace=[(FACTOR, "jacobian = jacobian @ (W_hh * (1.0 - H[i + 1] ** 2)[None, :])")],
    ),
    Variant(
        "hidden_jacobian_norms",
        "W_hh transposed in each factor",
        replace=[(FACTOR, "jacobian = jacobian @ ((1.0 - H[i + 1] ** 2)[:, None] * W_hh.T)")],
    ),
    Variant(
        "hidden_jacobian_norms",
        "spectral norm instead of the Frobenius norm",
        replace=[
            ("norms[T - 1] = np.linalg.norm(jacobian)", "norms[T - 1] = np.linalg.norm(jacobian, 2)"),
            ("norms[i] = np.linalg.norm(jacobian)", "norms[i] = np.linalg.norm(jacobian, 2)"),
        ],
    ),
    Variant(
        "hidden_jacobian_norms",
        "entries in reverse order (entry 0 is the identity)",
        replace=[("return norms", "return norms[::-1]")],
    ),
]

VALID = [
    Variant(
        "rnn_step",
        "column vectors, transposed back: (W_xh @ x_t.T + W_hh @ h_prev.T).T",
        replace=[(STEP, "return np.tanh((W_xh @ x_t.T + W_hh @ h_prev.T).T + b_h)")],
    ),
    Variant(
        "rnn_step",
        "einsum",
        replace=[
            (
                STEP,
                "return np.tanh(np.einsum('ij,...j->...i', W_xh, x_t) + np.einsum('ij,...j', W_hh, h_prev) + b_h)",
            )
        ],
    ),
    cells.rnn_step_loop_over_rows_batch_float32,
    cells.rnn_forward_preallocated,
    cells.hidden_jacobian_norms_rebuilt_per_entry,
]
