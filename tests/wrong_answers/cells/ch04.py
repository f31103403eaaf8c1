# ruff: noqa: E501
"""Chapter 04's answers written as whole cells, wrong and valid (tests/wrong_answers/__init__.py runs them).

Each function's body is an answer cell as a student writes it (the function is never called): its decorator
says which exercise it answers, what the student did and whether the answer is wrong or valid, and turns it
into the :class:`~wrong_answers.Variant` that ``ch04_qkv_variants.py`` lists in its place. The imports
are the names such a cell finds in the student's namespace (the export cell and the answers above it), here
for the linter.
"""

import math

import torch
from torch import nn

from autograder.reference.ch04_qkv_variants import scaled_dot_product_attention
from wrong_answers import valid


@valid("additive_score", "a loop over the keys, unsqueeze instead of indexing")
def additive_score_loop_over_keys():
    def additive_score(q, k, W_q, W_k, v):
        """Additive scores, one key at a time."""
        projected_q = q @ W_q.T  # (B, T_q, d_a)
        columns = []
        for j in range(k.shape[1]):
            projected_k = (k[:, j] @ W_k.T).unsqueeze(1)  # (B, 1, d_a)
            columns.append((torch.tanh(projected_q + projected_k) * v).sum(-1))  # (B, T_q)
        return torch.stack(columns, dim=-1)


@valid("scaled_dot_product_attention", "a large negative number instead of -inf, torch.where, einsum")
def scaled_dot_product_large_negative_number_instead_inf():
    def scaled_dot_product_attention(q, k, v, mask=None):
        """Scaled dot-product attention with torch.where and einsum."""
        scores = torch.einsum("...id,...jd->...ij", q, k) / k.shape[-1] ** 0.5
        if mask is not None:
            scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
        weights = scores.softmax(-1)
        return torch.einsum("...ij,...jd->...id", weights, v), weights


@valid("scaled_dot_product_attention", "the exponentials by hand, the mask multiplied in")
def scaled_dot_product_exponentials_hand_mask_multiplied():
    def scaled_dot_product_attention(q, k, v, mask=None):
        """Softmax written out: exp(s - max), masked, normalised."""
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        exps = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)
        if mask is not None:
            exps = exps * mask
        weights = exps / exps.sum(dim=-1, keepdim=True)
        return weights @ v, weights


@valid("causal_mask", "a loop filling a tensor")
def causal_mask_loop_filling_tensor():
    def causal_mask(T):
        """True where j <= i, filled in a loop."""
        mask = torch.zeros(T, T, dtype=torch.bool)
        for i in range(T):
            mask[i, : i + 1] = True
        return mask


@valid("padding_mask", "a loop over the batch")
def padding_mask_loop_over_batch():
    def padding_mask(lengths, T):
        """One row per sequence."""
        mask = torch.zeros(len(lengths), T, dtype=torch.bool, device=lengths.device)
        for b, n in enumerate(lengths.tolist()):
            mask[b, :n] = True
        return mask


@valid("self_attention", "einsum and softmax written with exp")
def self_attention_einsum_softmax_written_exp():
    def self_attention(X):
        """Unscaled dot-product self-attention with einsum."""
        scores = torch.einsum("btd,bsd->bts", X, X)
        exps = torch.exp(scores - scores.amax(-1, keepdim=True))
        weights = exps / exps.sum(-1, keepdim=True)
        return torch.einsum("bts,bsd->btd", weights, X), weights


@valid("SelfAttentionQKV", "the projections created in a loop with setattr")
def self_attention_qkv_setattr():
    class SelfAttentionQKV(nn.Module):
        """Projections created in a loop."""

        def __init__(self, d_model, d_k, d_v):
            super().__init__()
            for name, size in (("q_proj", d_k), ("k_proj", d_k), ("v_proj", d_v)):
                setattr(self, name, nn.Linear(d_model, size, bias=False))

        def forward(self, x, mask=None):
            q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
            return scaled_dot_product_attention(q, k, v, mask)


@valid("MultiHeadAttention", "a loop over the heads on feature slices, torch.cat to merge")
def multi_head_attention_loop_over_heads():
    class MultiHeadAttention(nn.Module):
        """One attention per head on its slice of the features."""

        def __init__(self, embed_dim, num_heads, bias=True):
            super().__init__()
            self.num_heads = num_heads
            self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
            self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
            self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
            self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

        def forward(self, query, key, value, key_padding_mask=None, attn_mask=None):
            d_k = query.shape[-1] // self.num_heads
            q, k, v = self.q_proj(query), self.k_proj(key), self.v_proj(value)
            mask = None
            if key_padding_mask is not None:
                mask = key_padding_mask[:, None, :]
            if attn_mask is not None:
                mask = attn_mask[None] if mask is None else mask & attn_mask
            outs, weights = [], []
            for h in range(self.num_heads):
                part = slice(h * d_k, (h + 1) * d_k)
                out, w = scaled_dot_product_attention(q[..., part], k[..., part], v[..., part], mask)
                outs.append(out)
                weights.append(w)
            return self.out_proj(torch.cat(outs, dim=-1)), sum(weights) / self.num_heads


@valid("MultiHeadAttention", "view and permute, B and the heads folded into one batch axis")
def multi_head_attention_view_permute():
    class MultiHeadAttention(nn.Module):
        """Heads folded into the batch axis."""

        def __init__(self, embed_dim, num_heads, bias=True):
            super().__init__()
            self.h = num_heads
            self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
            self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
            self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
            self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

        def forward(self, query, key, value, key_padding_mask=None, attn_mask=None):
            B, T_q, E = query.shape
            T_k, h = key.shape[1], self.h

            def fold(x):  # (B, T, E) -> (B * h, T, E // h)
                return x.view(B, x.shape[1], h, E // h).permute(0, 2, 1, 3).reshape(B * h, x.shape[1], E // h)

            q, k, v = fold(self.q_proj(query)), fold(self.k_proj(key)), fold(self.v_proj(value))
            scores = q @ k.transpose(1, 2) / math.sqrt(E // h)  # (B * h, T_q, T_k)
            allowed = torch.ones(B, 1, T_q, T_k, dtype=torch.bool)
            if key_padding_mask is not None:
                allowed = allowed & key_padding_mask[:, None, None, :]
            if attn_mask is not None:
                allowed = allowed & attn_mask
            allowed = allowed.expand(B, h, T_q, T_k).reshape(B * h, T_q, T_k)
            weights = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
            heads = (weights @ v).view(B, h, T_q, E // h).permute(0, 2, 1, 3).reshape(B, T_q, E)
            return self.out_proj(heads), weights.view(B, h, T_q, T_k).mean(1)


@valid("channel_attention", "nn.functional.linear, relu and sigmoid from nn.functional, a view for the broadcast")
def channel_attention_functional():
    def channel_attention(x, W1, W2):
        """Squeeze and excitation with nn.functional."""
        B, C = x.shape[:2]
        squeezed = x.flatten(2).mean(-1)
        z = nn.functional.linear(nn.functional.relu(nn.functional.linear(squeezed, W1)), W2).sigmoid()
        return x * z.view(B, C, 1, 1), z
