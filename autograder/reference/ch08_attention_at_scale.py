"""Reference implementations for 08_attention_at_scale.

GENERATED from solutions/08_attention_at_scale/08_attention_at_scale.ipynb by `python -m autograder generate`: the cells tagged
"export" and every autograded-answer cell, in order, without the solution markers.
Do not edit: edit the notebook and regenerate.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn


def tiled_attention(Q, K, V, block_size, causal=False):
    """Scaled dot-product attention, keys and values read block_size rows at a time.

    Q : (..., T_q, d_k), K : (..., T_k, d_k), V : (..., T_k, d_v); the same leading dimensions.
    block_size : rows of K and V per block (>= 1; the last block may be shorter).
    causal : query i attends key j iff j <= i (needs T_q == T_k).
    Returns (O, L): O (..., T_q, d_v) = softmax(Q K^T / sqrt(d_k) [+ mask]) V, and
    L (..., T_q), the logsumexp of each row of scaled (masked) scores, in Q's dtype.
    Never creates a tensor with T_q * T_k elements per batch entry.
    """
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, got {block_size}")
    if Q.dim() < 2 or Q.shape[:-2] != K.shape[:-2] or Q.shape[:-2] != V.shape[:-2]:
        raise ValueError(f"Q, K and V need the same leading dimensions, got {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
    if K.shape[-1] != Q.shape[-1] or V.shape[-2] != K.shape[-2]:
        raise ValueError(f"Q (..., T_q, d_k), K (..., T_k, d_k) and V (..., T_k, d_v) do not fit: "
                         f"{tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
    if causal and Q.shape[-2] != K.shape[-2]:
        raise ValueError(f"causal attention needs T_q == T_k, got T_q = {Q.shape[-2]}, T_k = {K.shape[-2]}")
    T_q, T_k, d_k = Q.shape[-2], K.shape[-2], Q.shape[-1]
    scale = 1.0 / math.sqrt(d_k)
    m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype, device=Q.device)   # (..., T_q) running row maximum
    ell = torch.zeros(Q.shape[:-1], dtype=Q.dtype, device=Q.device)          # (..., T_q) running normaliser
    O = torch.zeros((*Q.shape[:-1], V.shape[-1]), dtype=Q.dtype, device=Q.device)  # (..., T_q, d_v)
    rows = torch.arange(T_q, device=Q.device)[:, None]                        # (T_q, 1) query positions
    for start in range(0, T_k, block_size):
        K_j = K[..., start:start + block_size, :]                             # (..., b, d_k)
        V_j = V[..., start:start + block_size, :]                             # (..., b, d_v)
        scores = (Q @ K_j.transpose(-2, -1)).mul_(scale)                      # (..., T_q, b), the step's one block
        if causal:
            cols = torch.arange(start, start + K_j.shape[-2], device=Q.device)[None, :]  # (1, b) key positions
            scores.masked_fill_(cols > rows, -math.inf)
        m_new = torch.maximum(m, scores.amax(dim=-1))                         # (..., T_q)
        weights = scores.sub_(m_new[..., None]).exp_()                        # in place: entries in [0, 1]
        correction = torch.exp(m - m_new)                                     # (..., T_q); 0 on the first block
        ell = ell * correction + weights.sum(dim=-1)
        O = O * correction[..., None] + weights @ V_j
        m = m_new
    return O / ell[..., None], m + torch.log(ell)


def tiled_attention_backward(Q, K, V, O, L, dO, block_size, causal=False):
    """Gradients of sum(O * dO) with respect to Q, K and V, block by block.

    Q (..., T_q, d_k), K (..., T_k, d_k), V (..., T_k, d_v); O (..., T_q, d_v) and L (..., T_q) as
    returned by tiled_attention; dO (..., T_q, d_v). Returns (dQ, dK, dV) shaped like Q, K, V.
    """
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, got {block_size}")
    if Q.dim() < 2 or Q.shape[:-2] != K.shape[:-2] or Q.shape[:-2] != V.shape[:-2]:
        raise ValueError(f"Q, K and V need the same leading dimensions, got {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
    if K.shape[-1] != Q.shape[-1] or V.shape[-2] != K.shape[-2]:
        raise ValueError(f"Q (..., T_q, d_k), K (..., T_k, d_k) and V (..., T_k, d_v) do not fit: "
                         f"{tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
    if causal and Q.shape[-2] != K.shape[-2]:
        raise ValueError(f"causal attention needs T_q == T_k, got T_q = {Q.shape[-2]}, T_k = {K.shape[-2]}")
    T_q, T_k, d_k = Q.shape[-2], K.shape[-2], Q.shape[-1]
    out_shape = (*Q.shape[:-1], V.shape[-1])
    if tuple(O.shape) != out_shape or tuple(dO.shape) != out_shape:
        raise ValueError(f"O and dO must have shape {out_shape} (..., T_q, d_v), got {tuple(O.shape)} and {tuple(dO.shape)}")
    if tuple(L.shape) != tuple(Q.shape[:-1]):
        raise ValueError(f"L must have shape {tuple(Q.shape[:-1])} (..., T_q), got {tuple(L.shape)}")
    scale = 1.0 / math.sqrt(d_k)
    D = (dO * O).sum(dim=-1)                                                  # (..., T_q): rowsum(dO * O)
    dQ = torch.zeros_like(Q)
    dK_blocks, dV_blocks = [], []
    rows = torch.arange(T_q, device=Q.device)[:, None]                        # (T_q, 1)
    for start in range(0, T_k, block_size):
        K_j = K[..., start:start + block_size, :]                             # (..., b, d_k)
        V_j = V[..., start:start + block_size, :]                             # (..., b, d_v)
        scores = (Q @ K_j.transpose(-2, -1)) * scale                          # (..., T_q, b), recomputed
        if causal:
            cols = torch.arange(start, start + K_j.shape[-2], device=Q.device)[None, :]
            scores = scores.masked_fill(cols > rows, -math.inf)
        weights = torch.exp(scores - L[..., None])                            # (..., T_q, b): this block's A
        dV_blocks.append(weights.transpose(-2, -1) @ dO)                      # (..., b, d_v)
        d_weights = dO @ V_j.transpose(-2, -1)                                # (..., T_q, b)
        d_scores = weights * (d_weights - D[..., None])                       # (..., T_q, b)
        dQ = dQ + (d_scores @ K_j) * scale                                    # (..., T_q, d_k)
        dK_blocks.append((d_scores.transpose(-2, -1) @ Q) * scale)            # (..., b, d_k)
    return dQ, torch.cat(dK_blocks, dim=-2), torch.cat(dV_blocks, dim=-2)


class KVCacheSelfAttention(nn.Module):
    """Causal multi-head self-attention for decoding, with a key-value cache.

    Parameters named and shaped as in nn.MultiheadAttention(embed_dim, num_heads, batch_first=True):
    in_proj_weight (3 d_model, d_model), in_proj_bias (3 d_model,), out_proj nn.Linear(d_model, d_model).
    forward(x (B, T_new, d_model), cache None or (K, V) each (B, n_heads, T_past, d_k))
    -> (y (B, T_new, d_model), (K, V) each (B, n_heads, T_past + T_new, d_k)), d_k = d_model / n_heads.
    """

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        nn.init.xavier_uniform_(self.in_proj_weight)   # nn.MultiheadAttention's initialisation
        nn.init.zeros_(self.out_proj.bias)

    def forward(self, x, cache=None):
        """x (B, T_new, d_model), cache None or (K, V) each (B, n_heads, T_past, d_k) -> (y, (K, V))."""
        if x.dim() != 3 or x.shape[-1] != self.embed_dim:
            raise ValueError(f"x must have shape (B, T_new, {self.embed_dim}), got {tuple(x.shape)}")
        B, T_new, _ = x.shape
        H, d_k = self.num_heads, self.head_dim
        if cache is None:
            K_past = V_past = x.new_zeros(B, H, 0, d_k)
        else:
            K_past, V_past = cache
            for name, t in (("K", K_past), ("V", V_past)):
                if t.dim() != 4 or tuple(t.shape[:2]) != (B, H) or t.shape[3] != d_k:
                    raise ValueError(f"cached {name} must have shape (B, n_heads, T_past, d_k) = ({B}, {H}, T_past, {d_k}) "
                                     f"to match x {tuple(x.shape)}, got {tuple(t.shape)}")
            if K_past.shape[2] != V_past.shape[2]:
                raise ValueError(f"cached K and V hold different numbers of tokens: {K_past.shape[2]} and {V_past.shape[2]}")
        T_past = K_past.shape[2]

        def heads(t):                                                          # (B, T_new, d_model) -> (B, H, T_new, d_k)
            return t.reshape(B, T_new, H, d_k).transpose(1, 2)

        q, k, v = F.linear(x, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1)  # the new tokens only
        K = torch.cat([K_past, heads(k)], dim=2)                                # (B, H, T_past + T_new, d_k)
        V = torch.cat([V_past, heads(v)], dim=2)
        scores = heads(q) @ K.transpose(-2, -1) / math.sqrt(d_k)                # (B, H, T_new, T_past + T_new)
        new_positions = torch.arange(T_past, T_past + T_new, device=x.device)[:, None]   # (T_new, 1)
        key_positions = torch.arange(T_past + T_new, device=x.device)[None, :]           # (1, T_past + T_new)
        scores = scores.masked_fill(key_positions > new_positions, -math.inf)   # bottom-right causal mask
        out = torch.softmax(scores, dim=-1) @ V                                 # (B, H, T_new, d_k)
        y = self.out_proj(out.transpose(1, 2).reshape(B, T_new, self.embed_dim))
        return y, (K, V)


def rotary_embedding(x, positions, base=10000.0):
    """Rotary position embedding (Su et al., 2021), interleaved pairs.

    x : (..., T, d), d even; positions : int tensor (T,).
    Each pair (x[..., 2i], x[..., 2i+1]) at position p is rotated by the angle p * base^(-2i/d).
    Returns a tensor like x (same shape and dtype).
    """
    d = x.shape[-1]
    if d % 2:
        raise ValueError(f"the last dimension of x must be even (pairs are rotated), got {d}")
    if positions.dim() != 1 or positions.shape[0] != x.shape[-2]:
        raise ValueError(f"positions must have shape (T,) = ({x.shape[-2]},) to match x {tuple(x.shape)}, "
                         f"got {tuple(positions.shape)}")
    table = torch.float32 if x.device.type == "mps" else torch.float64                      # (MPS has no float64)
    frequencies = base ** (-torch.arange(0, d, 2, dtype=table, device=x.device) / d)        # (d/2,)
    angles = positions.to(x.device, table)[:, None] * frequencies                           # (T, d/2)
    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]                                               # (..., T, d/2)
    y = torch.empty_like(x)
    y[..., 0::2] = x_even * cos - x_odd * sin
    y[..., 1::2] = x_even * sin + x_odd * cos
    return y


def beam_search(step, reorder, state, bos_id, eos_id, beam_size, max_len, alpha=0.0):
    """Beam search for one sentence; the live hypotheses are the rows of a batch.

    step(last_tokens (K,) long, state) -> (log_probs (K, n_vocab), new_state), row k for hypothesis k;
    reorder(state, index (K',) long) -> the state of the rows index names, in that order.
    Returns (tokens, score): the finished hypothesis with the highest score / n ** alpha (n its number of
    tokens, eos_id included), as a list of ints without bos_id, and its raw sum of log-probabilities (a float).
    """
    if beam_size < 1:
        raise ValueError(f"beam_size must be at least 1, got {beam_size}")
    if max_len < 1:
        raise ValueError(f"max_len must be at least 1, got {max_len}")
    if alpha < 0:
        raise ValueError(f"alpha (the length-normalisation exponent) must be >= 0, got {alpha}")
    hypotheses = [[]]                                       # the live hypotheses' tokens, row k = hypothesis k
    scores = None                                           # (K,) their summed log-probabilities
    last_tokens = torch.tensor([bos_id])
    finished = []                                           # (tokens, raw score)
    for t in range(1, max_len + 1):
        log_probs, state = step(last_tokens, state)         # (K, n_vocab)
        n_vocab = log_probs.shape[-1]
        if scores is None:
            scores = log_probs.new_zeros(1)
        candidates = (scores[:, None] + log_probs).reshape(-1)                # (K * n_vocab,): every extension
        best, flat = candidates.topk(min(beam_size, candidates.numel()))     # the beam_size best of them all
        rows, words = flat // n_vocab, flat % n_vocab
        keep = []                                           # positions in `best` of the extensions still live
        for i, (row, word) in enumerate(zip(rows.tolist(), words.tolist())):
            tokens = hypotheses[row] + [word]
            if word == eos_id or t == max_len:
                finished.append((tokens, float(best[i])))
            else:
                keep.append(i)
        if not keep:
            break
        keep = torch.tensor(keep, device=log_probs.device)
        hypotheses = [hypotheses[r] + [w] for r, w in zip(rows[keep].tolist(), words[keep].tolist())]
        scores, last_tokens = best[keep], words[keep]
        state = reorder(state, rows[keep])                  # row k of the state follows hypothesis k
    tokens, score = max(finished, key=lambda f: f[1] / len(f[0]) ** alpha)
    return tokens, score
