"""Reference implementations for 07_transformer.

GENERATED from solutions/07_transformer/07_transformer.ipynb by `python -m autograder generate`: the cells tagged
"export" and every autograded-answer cell, in order, without the solution markers.
Do not edit: edit the notebook and regenerate.
"""
import math

import torch
from torch import nn


def sinusoidal_positions(length, dim):
    """Sinusoidal positional encodings (Vaswani et al., 2017).

    length : the number of positions p = 0 .. length - 1.
    dim    : the size of each encoding (d_model), even.
    Returns P, a float32 tensor (length, dim) with P[p, 2i] = sin(p / 10000^(2i / dim)) and
    P[p, 2i + 1] = cos(p / 10000^(2i / dim)).
    """
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    positions = torch.arange(length, dtype=torch.float64)[:, None]                    # (length, 1)
    frequencies = 10000.0 ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)   # (dim / 2,)
    angles = positions * frequencies                                                 # (length, dim / 2)
    P = torch.zeros(length, dim, dtype=torch.float64)
    P[:, 0::2] = torch.sin(angles)
    P[:, 1::2] = torch.cos(angles)
    return P.float()


# Your chapter 04 code (optional, not graded): paste it between the two lines of quotes, in place of what is there.
YOUR_CHAPTER_04_CODE = r'''
def dot_score(q, k):
    """Dot-product scores (Luong "dot").

    q: (B, T_q, d_k), k: (B, T_k, d_k). Returns (B, T_q, T_k) with entry [b, i, j] = q[b, i] . k[b, j].
    """
    return q @ k.transpose(-2, -1)  # (B, T_q, d_k) @ (B, d_k, T_k)


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
'''


class TransformerEncoderLayer(nn.Module):
    """One Transformer encoder layer: self-attention and a feed-forward network, each with a
    residual connection and layer normalisation (pre-norm when norm_first, else post-norm).

    Attributes (named as in nn.TransformerEncoderLayer, so that its state_dict loads):
    self_attn : nn.MultiheadAttention(embed_dim, num_heads, dropout=dropout, batch_first=True)
    linear1   : nn.Linear(embed_dim, ff_dim);  linear2 : nn.Linear(ff_dim, embed_dim)
    norm1, norm2 : nn.LayerNorm(embed_dim)
    forward(x (B, T, d_model), key_padding_mask None or bool (B, T), True = real token) -> (B, T, d_model)
    """

    def __init__(self, embed_dim, num_heads, ff_dim, dropout=0.0, norm_first=True):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = nn.MultiheadAttention(embed_dim, num_heads, dropout=dropout, batch_first=True)
        self.linear1 = nn.Linear(embed_dim, ff_dim)
        self.linear2 = nn.Linear(ff_dim, embed_dim)
        self.norm1 = nn.LayerNorm(embed_dim)
        self.norm2 = nn.LayerNorm(embed_dim)
        self.dropout = nn.Dropout(dropout)    # inside the feed-forward network
        self.dropout1 = nn.Dropout(dropout)   # on the attention sublayer's output
        self.dropout2 = nn.Dropout(dropout)   # on the feed-forward sublayer's output

    def forward(self, x, key_padding_mask=None):
        """x: (B, T, d_model); key_padding_mask: None or bool (B, T), True at real tokens. Returns (B, T, d_model)."""
        ignore = None if key_padding_mask is None else ~key_padding_mask   # PyTorch: True = do not attend

        def attention(y):                                                   # (B, T, d_model)
            out, _ = self.self_attn(y, y, y, key_padding_mask=ignore, need_weights=False)
            return self.dropout1(out)

        def feed_forward(y):                                                # (B, T, d_model)
            return self.dropout2(self.linear2(self.dropout(torch.relu(self.linear1(y)))))

        if self.norm_first:
            x = x + attention(self.norm1(x))
            x = x + feed_forward(self.norm2(x))
        else:
            x = self.norm1(x + attention(x))
            x = self.norm2(x + feed_forward(x))
        return x


class TransformerDecoderLayer(nn.Module):
    """One Transformer decoder layer: causal self-attention, cross-attention over the encoder's
    memory, and a feed-forward network, each with a residual connection and layer normalisation.

    Attributes (named as in nn.TransformerDecoderLayer, so that its state_dict loads):
    self_attn, multihead_attn : nn.MultiheadAttention(embed_dim, num_heads, dropout=dropout, batch_first=True)
    linear1 : nn.Linear(embed_dim, ff_dim);  linear2 : nn.Linear(ff_dim, embed_dim)
    norm1, norm2, norm3 : nn.LayerNorm(embed_dim)
    forward(x (B, T_dec, d_model), memory (B, T_enc, d_model),
            memory_key_padding_mask None or bool (B, T_enc), True = real token) -> (B, T_dec, d_model)
    """

    def __init__(self, embed_dim, num_heads, ff_dim, dropout=0.0, norm_first=True):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = nn.MultiheadAttention(embed_dim, num_heads, dropout=dropout, batch_first=True)
        self.multihead_attn = nn.MultiheadAttention(embed_dim, num_heads, dropout=dropout, batch_first=True)
        self.linear1 = nn.Linear(embed_dim, ff_dim)
        self.linear2 = nn.Linear(ff_dim, embed_dim)
        self.norm1 = nn.LayerNorm(embed_dim)
        self.norm2 = nn.LayerNorm(embed_dim)
        self.norm3 = nn.LayerNorm(embed_dim)
        self.dropout = nn.Dropout(dropout)    # inside the feed-forward network
        self.dropout1 = nn.Dropout(dropout)   # on each sublayer's output
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def forward(self, x, memory, memory_key_padding_mask=None):
        """x: (B, T_dec, d_model); memory: (B, T_enc, d_model); memory_key_padding_mask: None or bool
        (B, T_enc), True at real source tokens. Returns (B, T_dec, d_model)."""
        T_dec = x.shape[1]
        may_attend = torch.ones(T_dec, T_dec, dtype=torch.bool, device=x.device).tril()   # course: True = may attend
        ignore = None if memory_key_padding_mask is None else ~memory_key_padding_mask

        def self_attention(y):                                            # (B, T_dec, d_model)
            out, _ = self.self_attn(y, y, y, attn_mask=~may_attend, need_weights=False)
            return self.dropout1(out)

        def cross_attention(y):                                           # (B, T_dec, d_model)
            out, _ = self.multihead_attn(y, memory, memory, key_padding_mask=ignore, need_weights=False)
            return self.dropout2(out)

        def feed_forward(y):                                              # (B, T_dec, d_model)
            return self.dropout3(self.linear2(self.dropout(torch.relu(self.linear1(y)))))

        if self.norm_first:
            x = x + self_attention(self.norm1(x))
            x = x + cross_attention(self.norm2(x))
            x = x + feed_forward(self.norm3(x))
        else:
            x = self.norm1(x + self_attention(x))
            x = self.norm2(x + cross_attention(x))
            x = self.norm3(x + feed_forward(x))
        return x


class TransformerTranslator(nn.Module):
    """An encoder-decoder Transformer (pre-norm) built from TransformerEncoderLayer and TransformerDecoderLayer.

    Attributes: src_embedding (nn.Embedding(src_vocab_size, embed_dim)), tgt_embedding (nn.Embedding(tgt_vocab_size,
    embed_dim)), encoder_layers / decoder_layers (nn.ModuleList of num_layers layers, norm_first=True),
    encoder_norm / decoder_norm (nn.LayerNorm(embed_dim)), out (nn.Linear(embed_dim, tgt_vocab_size)).
    Tokens enter as embedding(tokens) * sqrt(embed_dim) + sinusoidal_positions(T, embed_dim).
    encode(src (B, T_enc) long, lengths (B,)) -> (memory (B, T_enc, d_model), src_mask (B, T_enc) bool, True = real)
    decode(tgt_in (B, T_dec) long, memory, src_mask) -> logits (B, T_dec, n_vocab)
    forward(src, lengths, tgt_in) -> logits (B, T_dec, n_vocab)
    """

    def __init__(self, src_vocab_size, tgt_vocab_size, embed_dim, num_heads, ff_dim, num_layers, dropout=0.0):
        super().__init__()
        self.embed_dim = embed_dim
        self.src_embedding = nn.Embedding(src_vocab_size, embed_dim)
        self.tgt_embedding = nn.Embedding(tgt_vocab_size, embed_dim)
        for embedding in (self.src_embedding, self.tgt_embedding):   # entries of size 1 / sqrt(d_model): after
            nn.init.normal_(embedding.weight, std=embed_dim ** -0.5)  # the scaling by sqrt(d_model), of size 1
        self.encoder_layers = nn.ModuleList(
            [TransformerEncoderLayer(embed_dim, num_heads, ff_dim, dropout, norm_first=True) for _ in range(num_layers)])
        self.decoder_layers = nn.ModuleList(
            [TransformerDecoderLayer(embed_dim, num_heads, ff_dim, dropout, norm_first=True) for _ in range(num_layers)])
        self.encoder_norm = nn.LayerNorm(embed_dim)
        self.decoder_norm = nn.LayerNorm(embed_dim)
        self.out = nn.Linear(embed_dim, tgt_vocab_size)
        self.dropout = nn.Dropout(dropout)

    def embed(self, tokens, embedding):
        """tokens (B, T) long -> (B, T, d_model): scaled embeddings plus positional encodings."""
        weight = embedding.weight
        P = sinusoidal_positions(tokens.shape[1], self.embed_dim).to(weight.device, weight.dtype)  # (T, d_model)
        return self.dropout(embedding(tokens) * math.sqrt(self.embed_dim) + P)

    def encode(self, src, lengths):
        """src (B, T_enc) long, lengths (B,) -> (memory (B, T_enc, d_model), src_mask (B, T_enc) bool, True = real)."""
        positions = torch.arange(src.shape[1], device=src.device)
        src_mask = positions[None, :] < lengths.to(src.device)[:, None]   # (B, T_enc)
        x = self.embed(src, self.src_embedding)                            # (B, T_enc, d_model)
        for layer in self.encoder_layers:
            x = layer(x, src_mask)
        return self.encoder_norm(x), src_mask

    def decode(self, tgt_in, memory, src_mask):
        """tgt_in (B, T_dec) long, memory (B, T_enc, d_model), src_mask (B, T_enc) bool -> logits (B, T_dec, n_vocab)."""
        y = self.embed(tgt_in, self.tgt_embedding)                         # (B, T_dec, d_model)
        for layer in self.decoder_layers:
            y = layer(y, memory, src_mask)
        return self.out(self.decoder_norm(y))

    def forward(self, src, lengths, tgt_in):
        """src (B, T_enc), lengths (B,), tgt_in (B, T_dec) -> logits (B, T_dec, n_vocab)."""
        memory, src_mask = self.encode(src, lengths)
        return self.decode(tgt_in, memory, src_mask)
