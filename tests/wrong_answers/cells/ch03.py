# ruff: noqa: E501
"""Chapter 03's answers written as whole cells, wrong and valid (tests/wrong_answers/__init__.py runs them).

Each function's body is an answer cell as a student writes it (the function is never called): its decorator
says which exercise it answers, what the student did and whether the answer is wrong or valid, and turns it
into the :class:`~wrong_answers.Variant` that ``ch03_attention_steps.py`` lists in its place. The imports
are the names such a cell finds in the student's namespace (the export cell and the answers above it), here
for the linter.
"""

import numpy as np
import torch

from autograder.reference.ch03_attention_steps import softmax
from wrong_answers import valid


@valid("softmax", "log-sum-exp")
def softmax_log_sum_exp():
    def softmax(e, axis=-1):
        """exp(e - logsumexp(e)) along axis."""
        e = np.asarray(e, dtype=float)
        m = e.max(axis=axis, keepdims=True)
        log_z = m + np.log(np.exp(e - m).sum(axis=axis, keepdims=True))
        return np.exp(e - log_z)


@valid("softmax", "float32 arithmetic, the result returned in float64")
def softmax_float32_arithmetic_result_returned_float64():
    def softmax(e, axis=-1):
        """Stable softmax computed in float32."""
        e = np.asarray(e, dtype=np.float32)
        exp = np.exp(e - e.max(axis=axis, keepdims=True))
        return (exp / exp.sum(axis=axis, keepdims=True)).astype(np.float64)


@valid("attention_step", "the four steps written out inline")
def attention_step_four_steps_written_out_inline():
    def attention_step(s_t, H, W_c, W_o):
        """Steps 2-5, inline."""
        e = H @ s_t
        alpha = np.exp(e - e.max())
        alpha /= alpha.sum()
        z = W_o @ np.tanh(W_c @ np.concatenate([alpha @ H, s_t]))
        p = np.exp(z - z.max())
        return p / p.sum(), alpha


@valid("attention_all_steps", "einsum and a split W_c")
def attention_all_steps_einsum_split_w_c():
    def attention_all_steps(S, H, W_c, W_o):
        """Steps 2-5 for all decoder states, with einsum."""
        d = S.shape[1]
        A = softmax(np.einsum("td,id->ti", S, H), axis=1)
        C = np.einsum("ti,id->td", A, H)
        S_tilde = np.tanh(C @ W_c[:, :d].T + S @ W_c[:, d:].T)
        return softmax(np.einsum("vc,tc->tv", W_o, S_tilde), axis=1), A


@valid("batched_dot_attention", "einsum, torch.where and the dtype's smallest number")
def batched_dot_attention_einsum_where():
    def batched_dot_attention(S, H, src_mask):
        """Masked dot-product attention with einsum."""
        scores = torch.einsum("btd,bsd->bts", S, H)
        scores = torch.where(src_mask[:, None, :], scores, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        return torch.einsum("bts,bsd->btd", weights, H), weights
