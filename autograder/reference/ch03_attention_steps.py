"""Reference implementations for 03_attention_steps.

GENERATED from solutions/03_attention_steps/03_attention_steps.ipynb by `python -m autograder generate`: the cells tagged
"export" and every autograded-answer cell, in order, without the solution markers.
Do not edit: edit the notebook and regenerate.
"""
import numpy as np
import torch


def attention_scores(s_t, H):
    """Dot-product scores of one decoder state against every encoder state.

    s_t : array of shape (d,), the decoder state (the query).
    H   : array of shape (T_enc, d), the encoder states h_1, ..., h_T_enc as rows.
    Returns e_t, an array of shape (T_enc,) with e_t[i] = s_t . H[i].
    """
    return H @ s_t


def softmax(e, axis=-1):
    """Numerically stable softmax of e along the given axis.

    e    : array of any shape, e.g. (T_enc,) for one score vector or (T_dec, T_enc) for a matrix of scores.
    axis : the axis along which the result sums to one (default: the last axis).
    Returns an array of the same shape as e, non-negative, summing to one along axis.
    """
    e = np.asarray(e, dtype=float)
    shifted = e - np.max(e, axis=axis, keepdims=True)  # the largest entry becomes 0: no overflow
    exp = np.exp(shifted)
    return exp / np.sum(exp, axis=axis, keepdims=True)


def attention_vector(alpha, H):
    """The attention vector a_t: the alpha-weighted sum of the encoder states.

    alpha : array of shape (T_enc,), one weight per encoder state.
    H     : array of shape (T_enc, d), the encoder states as rows.
    Returns a_t, an array of shape (d,) equal to sum_i alpha[i] * H[i].
    """
    return alpha @ H


def attentional_state(a_t, s_t, W_c):
    """The attentional state s~_t = tanh(W_c [a_t; s_t]).

    a_t : array of shape (d,), the attention vector.
    s_t : array of shape (d,), the decoder state.
    W_c : array of shape (d_c, 2d); its first d columns act on a_t, its last d columns on s_t.
    Returns s~_t, an array of shape (d_c,) with entries in [-1, 1].
    """
    return np.tanh(W_c @ np.concatenate([a_t, s_t]))


def output_distribution(s_tilde, W_o):
    """The predicted distribution over the vocabulary, p_t = softmax(W_o s~_t).

    s_tilde : array of shape (d_c,), the attentional state.
    W_o     : array of shape (n_vocab, d_c), one row of output weights per vocabulary word.
    Returns p_t, an array of shape (n_vocab,), non-negative and summing to one.
    """
    return softmax(W_o @ s_tilde)


def attention_step(s_t, H, W_c, W_o):
    """Steps 2-5 of attention for one decoder state.

    s_t : array of shape (d,), the decoder state.
    H   : array of shape (T_enc, d), the encoder states as rows.
    W_c : array of shape (d_c, 2d), weights of the attentional state.
    W_o : array of shape (n_vocab, d_c), output weights.
    Returns (p_t, alpha_t): p_t of shape (n_vocab,), the distribution over the vocabulary,
    and alpha_t of shape (T_enc,), the attention weights.
    """
    e_t = attention_scores(s_t, H)                 # step 2
    alpha_t = softmax(e_t)                         # step 3
    a_t = attention_vector(alpha_t, H)             # step 4
    s_tilde = attentional_state(a_t, s_t, W_c)     # step 5
    p_t = output_distribution(s_tilde, W_o)
    return p_t, alpha_t


def attention_all_steps(S, H, W_c, W_o):
    """Steps 2-5 for every decoder state at once, with matrix products.

    S   : array of shape (T_dec, d), the decoder states as rows.
    H   : array of shape (T_enc, d), the encoder states as rows.
    W_c : array of shape (d_c, 2d), weights of the attentional state.
    W_o : array of shape (n_vocab, d_c), output weights.
    Returns (P, A): P of shape (T_dec, n_vocab), row t is p_t; A of shape (T_dec, T_enc), row t is alpha_t.
    """
    E = S @ H.T                                                     # (T_dec, T_enc) scores
    A = softmax(E, axis=-1)                                         # each row sums to one
    C = A @ H                                                       # (T_dec, d) attention vectors
    S_tilde = np.tanh(np.concatenate([C, S], axis=-1) @ W_c.T)      # (T_dec, d_c)
    P = softmax(S_tilde @ W_o.T, axis=-1)                           # (T_dec, n_vocab)
    return P, A


def batched_dot_attention(S, H, src_mask):
    """Batched dot-product attention (steps 2-4) with a padding mask, in PyTorch.

    S        : tensor of shape (B, T_dec, d), the decoder states (queries).
    H        : tensor of shape (B, T_enc, d), the encoder states (keys and values).
    src_mask : bool tensor of shape (B, T_enc), True for real tokens, False for padding.
    Returns (context, weights): context of shape (B, T_dec, d) and weights of shape (B, T_dec, T_enc),
    in the dtype of the inputs; padded positions get weight exactly 0.
    """
    scores = S @ H.transpose(-2, -1)                                   # (B, T_dec, T_enc)
    scores = scores.masked_fill(~src_mask[:, None, :], float("-inf"))  # padding -> -inf
    weights = torch.softmax(scores, dim=-1)                            # exp(-inf) = 0 exactly
    context = weights @ H                                              # (B, T_dec, d)
    return context, weights
