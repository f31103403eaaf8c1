"""Chapter 03: the likeliest wrong answers to Exercises 3.1-3.8, and other correct ways to write them."""

from wrong_answers import Variant
from wrong_answers.cells import ch03 as cells

SHIFT = "shifted = e - np.max(e, axis=axis, keepdims=True)"
NORMALISE = "return exp / np.sum(exp, axis=axis, keepdims=True)"
STATE = "return np.tanh(W_c @ np.concatenate([a_t, s_t]))"
MASK = 'scores = scores.masked_fill(~src_mask[:, None, :], float("-inf"))'

WRONG = [
    # Exercise 3.1, attention_scores
    Variant("attention_scores", "s_t @ H (H's rows taken as columns)", replace=[("return H @ s_t", "return s_t @ H")]),
    Variant("attention_scores", "element-wise product without the sum", replace=[("return H @ s_t", "return H * s_t")]),
    Variant(
        "attention_scores", "summed over the wrong axis", replace=[("return H @ s_t", "return (H * s_t).sum(axis=0)")]
    ),
    Variant(
        "attention_scores",
        "weights instead of scores (a softmax already)",
        replace=[("return H @ s_t", "e = H @ s_t\n    return np.exp(e) / np.exp(e).sum()")],
    ),
    Variant(
        "attention_scores",
        "cosine similarity instead of the dot product",
        replace=[("return H @ s_t", "return H @ s_t / (np.linalg.norm(H, axis=1) * np.linalg.norm(s_t))")],
    ),
    # Exercise 3.2, softmax
    Variant("softmax", "no maximum subtracted", replace=[(SHIFT, "shifted = e")]),
    Variant("softmax", "one global maximum, not one per row", replace=[(SHIFT, "shifted = e - np.max(e)")]),
    Variant(
        "softmax",
        "the minimum subtracted instead of the maximum",
        replace=[(SHIFT, "shifted = e - np.min(e, axis=axis, keepdims=True)")],
    ),
    Variant(
        "softmax",
        "the mean subtracted instead of the maximum",
        replace=[(SHIFT, "shifted = e - np.mean(e, axis=axis, keepdims=True)")],
    ),
    Variant("softmax", "the sum without keepdims", replace=[(NORMALISE, "return exp / np.sum(exp, axis=axis)")]),
    Variant(
        "softmax",
        "the axis argument ignored (always the last axis)",
        replace=[
            (SHIFT, "shifted = e - np.max(e, axis=-1, keepdims=True)"),
            (NORMALISE, "return exp / np.sum(exp, axis=-1, keepdims=True)"),
        ],
    ),
    Variant("softmax", "the sum over all entries", replace=[(NORMALISE, "return exp / np.sum(exp)")]),
    Variant(
        "softmax",
        "the input modified in place",
        replace=[
            ("e = np.asarray(e, dtype=float)\n", "e = np.asarray(e)\n"),
            (SHIFT, "e -= np.max(e, axis=axis, keepdims=True)\n    shifted = e"),
        ],
    ),
    # Exercise 3.3, attention_vector
    Variant("attention_vector", "H @ alpha", replace=[("return alpha @ H", "return H @ alpha")]),
    Variant(
        "attention_vector",
        "weights renormalised to sum to one",
        replace=[("return alpha @ H", "return alpha @ H / alpha.sum()")],
    ),
    Variant(
        "attention_vector",
        "element-wise product without the sum",
        replace=[("return alpha @ H", "return alpha[:, None] * H")],
    ),
    Variant(
        "attention_vector",
        "summed over the wrong axis",
        replace=[("return alpha @ H", "return (alpha[:, None] * H).sum(axis=1)")],
    ),
    Variant(
        "attention_vector",
        "a softmax applied to alpha again",
        replace=[("return alpha @ H", "return (np.exp(alpha) / np.exp(alpha).sum()) @ H")],
    ),
    # Exercise 3.4, attentional_state
    Variant(
        "attentional_state",
        "[s_t; a_t] instead of [a_t; s_t]",
        replace=[(STATE, "return np.tanh(W_c @ np.concatenate([s_t, a_t]))")],
    ),
    Variant("attentional_state", "no tanh", replace=[(STATE, "return W_c @ np.concatenate([a_t, s_t])")]),
    Variant(
        "attentional_state",
        "the concatenation multiplied from the left",
        replace=[(STATE, "return np.tanh(np.concatenate([a_t, s_t]) @ W_c)")],
    ),
    Variant(
        "attentional_state",
        "a_t and s_t added instead of concatenated",
        replace=[(STATE, "return np.tanh(W_c[:, : len(a_t)] @ (a_t + s_t))")],
    ),
    # Exercise 3.5, output_distribution
    Variant(
        "output_distribution",
        "the logits returned, no softmax",
        replace=[("return softmax(W_o @ s_tilde)", "return W_o @ s_tilde")],
    ),
    Variant(
        "output_distribution",
        "s_tilde @ W_o",
        replace=[("return softmax(W_o @ s_tilde)", "return softmax(s_tilde @ W_o)")],
    ),
    Variant(
        "output_distribution",
        "a softmax written out without the maximum",
        replace=[("return softmax(W_o @ s_tilde)", "z = W_o @ s_tilde\n    return np.exp(z) / np.exp(z).sum()")],
    ),
    Variant(
        "output_distribution",
        "a second tanh before the output layer",
        replace=[("return softmax(W_o @ s_tilde)", "return softmax(W_o @ np.tanh(s_tilde))")],
    ),
    # Exercise 3.6, attention_step
    Variant("attention_step", "returns (alpha_t, p_t)", replace=[("return p_t, alpha_t", "return alpha_t, p_t")]),
    Variant(
        "attention_step",
        "the scores averaged instead of the weights",
        replace=[("a_t = attention_vector(alpha_t, H)", "a_t = attention_vector(e_t, H)")],
    ),
    Variant(
        "attention_step", "the scores returned as the weights", replace=[("return p_t, alpha_t", "return p_t, e_t")]
    ),
    Variant(
        "attention_step",
        "a_t and s_t swapped in step 5",
        replace=[("attentional_state(a_t, s_t, W_c)", "attentional_state(s_t, a_t, W_c)")],
    ),
    Variant(
        "attention_step",
        "the logits returned instead of p_t",
        replace=[("p_t = output_distribution(s_tilde, W_o)", "p_t = W_o @ s_tilde")],
    ),
    # Exercise 3.7, attention_all_steps
    Variant(
        "attention_all_steps",
        "softmax over the decoder steps (axis 0)",
        replace=[("A = softmax(E, axis=-1)", "A = softmax(E, axis=0)")],
    ),
    Variant(
        "attention_all_steps",
        "[S C] instead of [C S]",
        replace=[("np.concatenate([C, S], axis=-1)", "np.concatenate([S, C], axis=-1)")],
    ),
    Variant("attention_all_steps", "scores transposed (H S^T)", replace=[("E = S @ H.T", "E = H @ S.T")]),
    Variant("attention_all_steps", "the map transposed in step 4 (A^T H)", replace=[("C = A @ H", "C = A.T @ H")]),
    Variant(
        "attention_all_steps",
        "no tanh in step 5",
        replace=[
            (
                "S_tilde = np.tanh(np.concatenate([C, S], axis=-1) @ W_c.T)",
                "S_tilde = np.concatenate([C, S], axis=-1) @ W_c.T",
            )
        ],
    ),
    # Exercise 3.8, batched_dot_attention
    Variant(
        "batched_dot_attention",
        "the mask applied after the softmax",
        replace=[
            (MASK, ""),
            (
                "weights = torch.softmax(scores, dim=-1)",
                "weights = torch.softmax(scores, dim=-1) * src_mask[:, None, :]",
            ),
        ],
    ),
    Variant(
        "batched_dot_attention",
        "masked after the softmax, then renormalised",
        replace=[
            (MASK, ""),
            (
                "weights = torch.softmax(scores, dim=-1)",
                "weights = torch.softmax(scores, dim=-1) * src_mask[:, None, :]\n"
                "    weights = weights / weights.sum(dim=-1, keepdim=True)",
            ),
        ],
    ),
    Variant(
        "batched_dot_attention",
        "the mask not inverted (real tokens masked)",
        replace=[("~src_mask[:, None, :]", "src_mask[:, None, :]")],
    ),
    Variant(
        "batched_dot_attention",
        "softmax over the decoder steps (dim=1)",
        replace=[("torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=1)")],
    ),
    Variant(
        "batched_dot_attention",
        "the result converted to float32",
        replace=[("return context, weights", "return context.float(), weights.float()")],
    ),
    Variant(
        "batched_dot_attention",
        "scaled by sqrt(d) (chapter 04's score)",
        replace=[("scores = S @ H.transpose(-2, -1)", "scores = S @ H.transpose(-2, -1) / S.size(-1) ** 0.5")],
    ),
    Variant(
        "batched_dot_attention",
        "the mask broadcast over the wrong axis",
        replace=[("~src_mask[:, None, :]", "~src_mask[:, :, None]")],
    ),
    Variant(
        "batched_dot_attention",
        "keeps the first src_mask.sum() positions of each row (assumes the padding is at the end)",
        replace=[
            (
                MASK,
                "lengths = src_mask.sum(dim=-1, keepdim=True)                       # (B, 1)\n"
                "    trailing = torch.arange(H.shape[1], device=H.device)[None, :] < lengths\n"
                '    scores = scores.masked_fill(~trailing[:, None, :], float("-inf"))',
            )
        ],
    ),
]

VALID = [
    Variant(
        "attention_scores",
        "a loop over the rows of H",
        replace=[("return H @ s_t", "return np.array([sum(s * h for s, h in zip(s_t, row)) for row in H])")],
    ),
    Variant("attention_scores", "einsum", replace=[("return H @ s_t", "return np.einsum('id,d->i', H, s_t)")]),
    cells.softmax_log_sum_exp,
    cells.softmax_float32_arithmetic_result_returned_float64,
    Variant("attention_vector", "H.T @ alpha", replace=[("return alpha @ H", "return H.T @ alpha")]),
    Variant(
        "attention_vector",
        "a loop over the encoder states",
        replace=[("return alpha @ H", "return sum(w * h for w, h in zip(alpha, H))")],
    ),
    Variant(
        "attentional_state",
        "the split form W_c[:, :d] a_t + W_c[:, d:] s_t",
        replace=[(STATE, "d = len(a_t)\n    return np.tanh(W_c[:, :d] @ a_t + W_c[:, d:] @ s_t)")],
    ),
    Variant(
        "output_distribution",
        "the softmax written out, with the maximum",
        replace=[
            ("return softmax(W_o @ s_tilde)", "z = W_o @ s_tilde\n    z = np.exp(z - z.max())\n    return z / z.sum()")
        ],
    ),
    Variant(
        "output_distribution",
        "the logits computed in float32",
        replace=[
            ("return softmax(W_o @ s_tilde)", "return softmax(W_o.astype(np.float32) @ s_tilde.astype(np.float32))")
        ],
    ),
    cells.attention_step_four_steps_written_out_inline,
    cells.attention_all_steps_einsum_split_w_c,
    cells.batched_dot_attention_einsum_where,
    Variant("batched_dot_attention", "masked_fill with -1e9", replace=[('float("-inf")', "-1e9")]),
]
