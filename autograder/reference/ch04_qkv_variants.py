"""Reference implementations for 04_qkv_variants.

GENERATED from solutions/04_qkv_variants/04_qkv_variants.ipynb by `python -m autograder generate`: the cells tagged
"export" and every autograded-answer cell, in order, without the solution markers.
Do not edit: edit the notebook and regenerate.
"""
import math

import torch
from torch import nn


def dot_score(q, k):
    """Dot-product scores (Luong "dot").

    q: (B, T_q, d_k), k: (B, T_k, d_k). Returns (B, T_q, T_k) with entry [b, i, j] = q[b, i] . k[b, j].
    """
    return q @ k.transpose(-2, -1)  # (B, T_q, d_k) @ (B, d_k, T_k)


def general_score(q, k, W):
    """Bilinear scores (Luong "general").

    q: (B, T_q, d_q), k: (B, T_k, d_k), W: (d_q, d_k).
    Returns (B, T_q, T_k) with entry [b, i, j] = q[b, i]^T W k[b, j].
    """
    return (q @ W) @ k.transpose(-2, -1)


def additive_score(q, k, W_q, W_k, v):
    """Additive scores (Bahdanau; Luong's "concat").

    q: (B, T_q, d_q), k: (B, T_k, d_k), W_q: (d_a, d_q), W_k: (d_a, d_k), v: (d_a,).
    Returns (B, T_q, T_k) with entry [b, i, j] = v . tanh(W_q q[b, i] + W_k k[b, j]).
    """
    projected_q = (q @ W_q.T)[:, :, None, :]  # (B, T_q, 1, d_a)
    projected_k = (k @ W_k.T)[:, None, :, :]  # (B, 1, T_k, d_a)
    return torch.tanh(projected_q + projected_k) @ v


def scaled_dot_product_attention(q, k, v, mask=None):
    """Scaled dot-product attention (Vaswani et al., 2017).

    q: (B, T_q, d_k), k: (B, T_k, d_k), v: (B, T_k, d_v).
    mask: None, or bool broadcastable to (B, T_q, T_k); True where query i may attend to key j.
    Returns (out, weights): weights (B, T_q, T_k) = softmax over the keys of q k^T / sqrt(d_k),
    exactly 0 where mask is False; out (B, T_q, d_v) = weights @ v. Same dtype as the inputs.
    """
    scores = dot_score(q, k) / math.sqrt(k.shape[-1])
    if mask is not None:  # forbidden pairs get -inf, hence weight exactly 0
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights  # (B, T_q, d_v), (B, T_q, T_k)


def causal_mask(T):
    """Causal (look-ahead) mask: bool (T, T), entry [i, j] True when j <= i (on and below the diagonal)."""
    return torch.ones(T, T, dtype=torch.bool).tril()


def padding_mask(lengths, T):
    """Padding mask: bool (B, T), True at the real tokens.

    lengths: (B,) integer tensor with 1 <= lengths[b] <= T. Row b is True at positions
    0 .. lengths[b] - 1 and False after them (the padding at the end).
    """
    positions = torch.arange(T, device=lengths.device)
    return positions[None, :] < lengths[:, None]


def self_attention(X):
    """Parameter-free dot-product self-attention (encoder-only, variant 3).

    X: (B, T, d); each token is query, key and value at once.
    Returns (out (B, T, d), weights (B, T, T)) with weights = softmax(X X^T) over the last axis
    (no scaling) and out = weights @ X.
    """
    weights = torch.softmax(dot_score(X, X), dim=-1)
    return weights @ X, weights  # (B, T, d), (B, T, T)


class SelfAttentionQKV(nn.Module):
    """Single-head self-attention with learnt projections (encoder-only, variant 4).

    Attributes: q_proj, k_proj = nn.Linear(d_model, d_k, bias=False), v_proj = nn.Linear(d_model, d_v, bias=False).
    forward(x, mask=None): x (B, T, d_model); mask None or bool broadcastable to (B, T, T), True = may attend.
    Returns (out (B, T, d_v), weights (B, T, T)): scaled dot-product attention of q_proj(x), k_proj(x), v_proj(x).
    """

    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.q_proj = nn.Linear(d_model, d_k, bias=False)
        self.k_proj = nn.Linear(d_model, d_k, bias=False)
        self.v_proj = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, mask=None):
        """x: (B, T, d_model) -> (out (B, T, d_v), weights (B, T, T))."""
        return scaled_dot_product_attention(self.q_proj(x), self.k_proj(x), self.v_proj(x), mask)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with the numbers of nn.MultiheadAttention(embed_dim, num_heads, batch_first=True).

    Attributes: q_proj, k_proj, v_proj, out_proj, each nn.Linear(embed_dim, embed_dim, bias=bias).
    Head h uses features h * d_k .. (h + 1) * d_k - 1 of the projections, d_k = embed_dim // num_heads.
    forward(query (B, T_q, d_model), key (B, T_k, d_model), value (B, T_k, d_model),
            key_padding_mask=None (bool (B, T_k), True at real keys),
            attn_mask=None (bool (T_q, T_k), True = may attend))
    -> (out (B, T_q, d_model), weights (B, T_q, T_k) averaged over the heads).
    """

    def __init__(self, embed_dim, num_heads, bias=True):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim={embed_dim} is not divisible by num_heads={num_heads}")
        self.num_heads = num_heads  # each head gets embed_dim // num_heads features
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(self, query, key, value, key_padding_mask=None, attn_mask=None):
        """(B, T_q, d_model), (B, T_k, d_model), (B, T_k, d_model) -> (out (B, T_q, d_model), head-averaged weights (B, T_q, T_k))."""
        B, T_q, d_model = query.shape  # d_model = embed_dim
        n_heads = self.num_heads  # d_k = d_model // n_heads

        def split_heads(x):  # (B, T, d_model) -> (B, n_heads, T, d_k)
            return x.reshape(B, x.shape[1], n_heads, d_model // n_heads).transpose(1, 2)

        q = split_heads(self.q_proj(query))
        k = split_heads(self.k_proj(key))
        v = split_heads(self.v_proj(value))
        mask = None
        if key_padding_mask is not None:  # True at real keys
            mask = key_padding_mask[:, None, None, :]  # (B, 1, 1, T_k)
        if attn_mask is not None:  # (T_q, T_k), True = may attend
            mask = attn_mask if mask is None else mask & attn_mask  # broadcasts to (B, 1, T_q, T_k)
        heads, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, n_heads, T_q, d_k), (B, n_heads, T_q, T_k)
        concatenated = heads.transpose(1, 2).reshape(B, T_q, d_model)
        return self.out_proj(concatenated), weights.mean(dim=1)


def tutorial_attention(embedded, hidden, W_attn, b_attn, encoder_outputs):
    """The attention of the original PyTorch seq2seq tutorial (variant 5).

    embedded: (B, d_e), the previous output word's embedding; hidden: (B, d), the previous decoder state s_(t-1);
    W_attn: (L, d_e + d); b_attn: (L,); encoder_outputs: (B, L, d), encoder states padded to L positions.
    weights = softmax(W_attn [embedded; hidden] + b_attn) over the L positions (embedded first);
    context[b] = sum_j weights[b, j] * encoder_outputs[b, j]. Returns (context (B, d), weights (B, L)).
    """
    logits = torch.cat([embedded, hidden], dim=-1) @ W_attn.T + b_attn  # (B, L)
    weights = torch.softmax(logits, dim=-1)  # over the L positions
    context = (weights[:, None, :] @ encoder_outputs)[:, 0, :]  # (B, 1, L) @ (B, L, d) -> (B, d)
    return context, weights  # (B, d), (B, L)


def channel_attention(x, W1, W2):
    """Channel attention: a squeeze-and-excitation block (Hu et al., 2018).

    x: (B, C, height, width); W1: (C // r, C); W2: (C, C // r).
    x_bar = mean of x over height and width, (B, C); z = sigmoid(W2 relu(W1 x_bar)), (B, C), one gate per channel.
    Returns (x * z broadcast over height and width (B, C, height, width), z (B, C)).
    """
    squeezed = x.mean(dim=(2, 3))  # (B, C)
    z = torch.sigmoid(torch.relu(squeezed @ W1.T) @ W2.T)  # (B, C)
    return x * z[:, :, None, None], z


def spatial_attention(x, conv):
    """Spatial attention as in CBAM (Woo et al., 2018).

    x: (B, C, height, width); conv: nn.Conv2d(2, 1, k, padding=k // 2).
    m = sigmoid(conv([mean over channels; max over channels])), (B, 1, height, width): the mean map is
    input channel 0 of conv, the max map input channel 1. Returns (x * m (B, C, height, width), m).
    """
    pooled = torch.cat([x.mean(dim=1, keepdim=True), x.amax(dim=1, keepdim=True)], dim=1)  # (B, 2, height, width)
    m = torch.sigmoid(conv(pooled))  # (B, 1, height, width)
    return x * m, m  # m broadcasts over the channels
