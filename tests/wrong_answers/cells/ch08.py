# ruff: noqa: E501, E741
"""Chapter 08's answers written as whole cells, wrong and valid (tests/wrong_answers/__init__.py runs them).

Each function's body is an answer cell as a student writes it (the function is never called): its decorator
says which exercise it answers, what the student did and whether the answer is wrong or valid, and turns it
into the :class:`~wrong_answers.Variant` that ``ch08_attention_at_scale.py`` lists in its place. The imports
are the names such a cell finds in the student's namespace (the export cell and the answers above it), here
for the linter.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from wrong_answers import Variant, valid, wrong


@wrong(
    "tiled_attention",
    "builds the full score matrix, then slices it block by block (right values; the memory check sees it)",
)
def tiled_full_then_slice():
    def tiled_attention(Q, K, V, block_size, causal=False):
        """Scaled dot-product attention, keys and values read block_size rows at a time: (O (..., T_q, d_v), L (..., T_q))."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        scores_all = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])  # (..., T_q, T_k): the whole matrix
        T_q, T_k = scores_all.shape[-2:]
        if causal:
            scores_all = scores_all.masked_fill(~torch.ones(T_q, T_k, dtype=torch.bool).tril(), -math.inf)
        m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)
        ell = torch.zeros(Q.shape[:-1], dtype=Q.dtype)
        O = torch.zeros((*Q.shape[:-1], V.shape[-1]), dtype=Q.dtype)
        for start in range(0, T_k, block_size):
            scores = scores_all[..., start : start + block_size]  # a slice of the full matrix
            m_new = torch.maximum(m, scores.amax(-1))
            weights = torch.exp(scores - m_new[..., None])
            correction = torch.exp(m - m_new)
            ell = ell * correction + weights.sum(-1)
            O = O * correction[..., None] + weights @ V[..., start : start + block_size, :]
            m = m_new
        return O / ell[..., None], m + torch.log(ell)


@wrong(
    "tiled_attention",
    "builds the full (T_q, T_k) causal mask once, slices it per block (right values; the memory check sees it)",
)
def tiled_full_causal_mask():
    def tiled_attention(Q, K, V, block_size, causal=False):
        """Scaled dot-product attention, keys and values read block_size rows at a time: (O (..., T_q, d_v), L (..., T_q))."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        T_q, T_k = Q.shape[-2], K.shape[-2]
        allowed = torch.ones(T_q, T_k, dtype=torch.bool).tril()  # (T_q, T_k), built once, sliced per block
        m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)
        ell = torch.zeros(Q.shape[:-1], dtype=Q.dtype)
        O = torch.zeros((*Q.shape[:-1], V.shape[-1]), dtype=Q.dtype)
        for start in range(0, T_k, block_size):
            scores = Q @ K[..., start : start + block_size, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
            if causal:
                scores = scores.masked_fill(~allowed[:, start : start + block_size], -math.inf)
            m_new = torch.maximum(m, scores.amax(-1))
            weights = torch.exp(scores - m_new[..., None])
            correction = torch.exp(m - m_new)
            ell = ell * correction + weights.sum(-1)
            O = O * correction[..., None] + weights @ V[..., start : start + block_size, :]
            m = m_new
        return O / ell[..., None], m + torch.log(ell)


@wrong("tiled_attention", "computes in float64 and never casts back (float32 in, float64 out)")
def tiled_float64_no_cast():
    def tiled_attention(Q, K, V, block_size, causal=False):
        """Scaled dot-product attention, keys and values read block_size rows at a time: (O (..., T_q, d_v), L (..., T_q))."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        Q, K, V = Q.double(), K.double(), V.double()  # more precision... and never cast back
        T_q, T_k = Q.shape[-2], K.shape[-2]
        m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)
        ell = torch.zeros(Q.shape[:-1], dtype=Q.dtype)
        O = torch.zeros((*Q.shape[:-1], V.shape[-1]), dtype=Q.dtype)
        rows = torch.arange(T_q)[:, None]
        for start in range(0, T_k, block_size):
            scores = Q @ K[..., start : start + block_size, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
            if causal:
                scores = scores.masked_fill(torch.arange(start, start + scores.shape[-1])[None, :] > rows, -math.inf)
            m_new = torch.maximum(m, scores.amax(-1))
            weights = torch.exp(scores - m_new[..., None])
            correction = torch.exp(m - m_new)
            ell = ell * correction + weights.sum(-1)
            O = O * correction[..., None] + weights @ V[..., start : start + block_size, :]
            m = m_new
        return O / ell[..., None], m + torch.log(ell)


@wrong(
    "tiled_attention_backward",
    "autograd through the whole formula (right gradients; the memory check sees the T_q x T_k weights)",
)
def backward_autograd():
    def tiled_attention_backward(Q, K, V, O, L, dO, block_size, causal=False):
        """Gradients of sum(O * dO) with respect to Q, K and V, block by block: (dQ, dK, dV)."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        if O.shape != dO.shape or O.shape != (*Q.shape[:-1], V.shape[-1]) or L.shape != Q.shape[:-1]:
            raise ValueError("O, L or dO do not fit Q and V")
        with torch.enable_grad():  # let autograd do it: it stores the T_q x T_k weights
            Q_, K_, V_ = (t.detach().requires_grad_() for t in (Q, K, V))
            scores = Q_ @ K_.transpose(-2, -1) / math.sqrt(Q.shape[-1])
            if causal:
                T = Q.shape[-2]
                scores = scores.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), -math.inf)
            (torch.softmax(scores, dim=-1) @ V_ * dO).sum().backward()
        return Q_.grad, K_.grad, V_.grad


@wrong(
    "tiled_attention_backward",
    "the gradient formulas on the full score matrix (right gradients; the memory check sees it)",
)
def backward_full_matrix():
    def tiled_attention_backward(Q, K, V, O, L, dO, block_size, causal=False):
        """Gradients of sum(O * dO) with respect to Q, K and V, block by block: (dQ, dK, dV)."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        if O.shape != dO.shape or O.shape != (*Q.shape[:-1], V.shape[-1]) or L.shape != Q.shape[:-1]:
            raise ValueError("O, L or dO do not fit Q and V")
        scale = 1 / math.sqrt(Q.shape[-1])
        scores = Q @ K.transpose(-2, -1) * scale  # (..., T_q, T_k) all at once
        if causal:
            T = Q.shape[-2]
            scores = scores.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), -math.inf)
        A = torch.exp(scores - L[..., None])
        dA = dO @ V.transpose(-2, -1)
        dE = A * (dA - (dO * O).sum(-1, keepdim=True))
        return dE @ K * scale, dE.transpose(-2, -1) @ Q * scale, A.transpose(-2, -1) @ dO


# wrong: the causal mask only when there is no cache (one token at a time is right, chunks are not)
@wrong("KVCacheSelfAttention", "masks only when there is no cache (one token at a time is right, chunks are not)")
def kv_mask_only_without_cache():
    class KVCacheSelfAttention(nn.Module):
        """Causal multi-head self-attention for decoding, with a key-value cache (see the statement)."""

        def __init__(self, embed_dim, num_heads):
            super().__init__()
            self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
            self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
            self.out_proj = nn.Linear(embed_dim, embed_dim)
            nn.init.xavier_uniform_(self.in_proj_weight)

        def _check(self, x, cache):
            B = x.shape[0]
            if cache is not None:
                for t in cache:
                    if t.dim() != 4 or t.shape[0] != B or t.shape[1] != self.num_heads or t.shape[3] != self.head_dim:
                        raise ValueError(f"the cache's shape {tuple(t.shape)} does not match x {tuple(x.shape)}")

        def forward(self, x, cache=None):
            self._check(x, cache)
            B, T_new, E = x.shape
            H, d_k = self.num_heads, self.head_dim
            q, k, v = F.linear(x, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1)
            split = lambda t: t.reshape(B, T_new, H, d_k).transpose(1, 2)  # noqa: E731
            q, K, V = split(q), split(k), split(v)
            if cache is not None:
                K, V = torch.cat([cache[0], K], dim=2), torch.cat([cache[1], V], dim=2)
            scores = q @ K.transpose(-2, -1) / math.sqrt(d_k)
            if cache is None:
                scores = scores.masked_fill(~torch.ones(T_new, T_new, dtype=torch.bool).tril(), -math.inf)
            out = torch.softmax(scores, -1) @ V
            return self.out_proj(out.transpose(1, 2).reshape(B, T_new, E)), (K, V)


# wrong: keeps the cache in the module and ignores the one it is given
@wrong("KVCacheSelfAttention", "keeps the cache in the module between calls and ignores the one it is given")
def kv_stateful():
    class KVCacheSelfAttention(nn.Module):
        """Causal multi-head self-attention for decoding, with a key-value cache (see the statement)."""

        def __init__(self, embed_dim, num_heads):
            super().__init__()
            self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
            self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
            self.out_proj = nn.Linear(embed_dim, embed_dim)
            nn.init.xavier_uniform_(self.in_proj_weight)

        def _check(self, x, cache):
            B = x.shape[0]
            if cache is not None:
                for t in cache:
                    if t.dim() != 4 or t.shape[0] != B or t.shape[1] != self.num_heads or t.shape[3] != self.head_dim:
                        raise ValueError(f"the cache's shape {tuple(t.shape)} does not match x {tuple(x.shape)}")

        def forward(self, x, cache=None):
            self._check(x, cache)
            B, T_new, E = x.shape
            H, d_k = self.num_heads, self.head_dim
            q, k, v = F.linear(x, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1)
            split = lambda t: t.reshape(B, T_new, H, d_k).transpose(1, 2)  # noqa: E731
            q, k, v = split(q), split(k), split(v)
            if cache is None:
                self._K, self._V = k, v  # a fresh sequence
            else:
                self._K, self._V = torch.cat([self._K, k], dim=2), torch.cat([self._V, v], dim=2)
            T = self._K.shape[2]
            scores = q @ self._K.transpose(-2, -1) / math.sqrt(d_k)
            allowed = torch.arange(T)[None, :] <= torch.arange(T - T_new, T)[:, None]
            out = torch.softmax(scores.masked_fill(~allowed, -math.inf), -1) @ self._V
            return self.out_proj(out.transpose(1, 2).reshape(B, T_new, E)), (self._K, self._V)


# wrong: stores the inputs it has seen and re-projects them all at every step (right values in one
# decoding run; the cost check sees products with T_past + 1 rows, and decoding two sequences in turns breaks it)
@wrong("KVCacheSelfAttention", "stores the inputs and re-projects the whole prefix at every step")
def kv_reprojects_prefix():
    class KVCacheSelfAttention(nn.Module):
        """Causal multi-head self-attention for decoding, with a key-value cache (see the statement)."""

        def __init__(self, embed_dim, num_heads):
            super().__init__()
            self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
            self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
            self.out_proj = nn.Linear(embed_dim, embed_dim)
            nn.init.xavier_uniform_(self.in_proj_weight)

        def _check(self, x, cache):
            B = x.shape[0]
            if cache is not None:
                for t in cache:
                    if t.dim() != 4 or t.shape[0] != B or t.shape[1] != self.num_heads or t.shape[3] != self.head_dim:
                        raise ValueError(f"the cache's shape {tuple(t.shape)} does not match x {tuple(x.shape)}")

        def forward(self, x, cache=None):
            self._check(x, cache)
            B, T_new, E = x.shape
            H, d_k = self.num_heads, self.head_dim
            if cache is None:
                self._seen = x
            else:
                self._seen = torch.cat([self._seen, x], dim=1)  # every token so far
            T = self._seen.shape[1]
            q, k, v = F.linear(self._seen, self.in_proj_weight, self.in_proj_bias).chunk(
                3, dim=-1
            )  # all T tokens, every step
            split = lambda t: t.reshape(B, T, H, d_k).transpose(1, 2)  # noqa: E731
            q, K, V = split(q)[:, :, T - T_new :], split(k), split(v)
            scores = q @ K.transpose(-2, -1) / math.sqrt(d_k)
            allowed = torch.arange(T)[None, :] <= torch.arange(T - T_new, T)[:, None]
            out = torch.softmax(scores.masked_fill(~allowed, -math.inf), -1) @ V
            return self.out_proj(out.transpose(1, 2).reshape(B, T_new, E)), (K, V)


# wrong: pads x with zeros to the full length to reuse the whole-sequence code path (stateless, right
# values, but every step projects T_past + T_new rows: only the cost check sees it)
@wrong(
    "KVCacheSelfAttention",
    "pads x with zeros to the full length to reuse the whole-sequence path (right values; the cost check sees it)",
)
def kv_pads_to_full_length():
    class KVCacheSelfAttention(nn.Module):
        """Causal multi-head self-attention for decoding, with a key-value cache (see the statement)."""

        def __init__(self, embed_dim, num_heads):
            super().__init__()
            self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
            self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
            self.out_proj = nn.Linear(embed_dim, embed_dim)
            nn.init.xavier_uniform_(self.in_proj_weight)

        def _check(self, x, cache):
            B = x.shape[0]
            if cache is not None:
                for t in cache:
                    if t.dim() != 4 or t.shape[0] != B or t.shape[1] != self.num_heads or t.shape[3] != self.head_dim:
                        raise ValueError(f"the cache's shape {tuple(t.shape)} does not match x {tuple(x.shape)}")

        def forward(self, x, cache=None):
            self._check(x, cache)
            B, T_new, E = x.shape
            H, d_k = self.num_heads, self.head_dim
            T_past = 0 if cache is None else cache[0].shape[2]
            T = T_past + T_new
            x_full = torch.cat([x.new_zeros(B, T_past, E), x], dim=1)  # (B, T, E): the same code as without a cache
            q, k, v = F.linear(x_full, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1)
            split = lambda t: t.reshape(B, T, H, d_k).transpose(1, 2)  # noqa: E731
            q, k, v = split(q)[:, :, T_past:], split(k)[:, :, T_past:], split(v)[:, :, T_past:]
            K = k if cache is None else torch.cat([cache[0], k], dim=2)
            V = v if cache is None else torch.cat([cache[1], v], dim=2)
            scores = q @ K.transpose(-2, -1) / math.sqrt(d_k)
            allowed = torch.arange(T)[None, :] <= torch.arange(T_past, T)[:, None]
            out = torch.softmax(scores.masked_fill(~allowed, -math.inf), -1) @ V
            return self.out_proj(out.transpose(1, 2).reshape(B, T_new, E)), (K, V)


@wrong("rotary_embedding", "pairs the two halves (x_i, x_{i+d/2}) instead of interleaved pairs")
def rotary_halves():
    def rotary_embedding(x, positions, base=10000.0):
        """Rotary position embedding (Su et al., 2021), interleaved pairs: a tensor like x (..., T, d)."""
        if x.shape[-1] % 2:
            raise ValueError(f"d must be even, got {x.shape[-1]}")
        if positions.shape != (x.shape[-2],):
            raise ValueError(f"positions {tuple(positions.shape)} do not match x {tuple(x.shape)}")
        d = x.shape[-1]
        inv_freq = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
        angles = positions.double()[:, None] * inv_freq
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]  # the two halves, as many libraries pair them
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


# valid: queries tiled too, two Python loops, blocks of block_size queries and keys
@valid("tiled_attention", "queries tiled too (two loops), future blocks skipped, torch.where for the mask")
def tiled_query_tiles():
    def tiled_attention(Q, K, V, block_size, causal=False):
        """Scaled dot-product attention, keys and values read block_size rows at a time: (O (..., T_q, d_v), L (..., T_q))."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        T_q, T_k, d_k = Q.shape[-2], K.shape[-2], Q.shape[-1]
        outputs, logsumexps = [], []
        for q_start in range(0, T_q, block_size):
            Q_i = Q[..., q_start : q_start + block_size, :]  # (..., b_q, d_k)
            rows = torch.arange(q_start, q_start + Q_i.shape[-2])[:, None]
            m = torch.full(Q_i.shape[:-1], -math.inf, dtype=Q.dtype)
            ell = torch.zeros(Q_i.shape[:-1], dtype=Q.dtype)
            O_i = torch.zeros((*Q_i.shape[:-1], V.shape[-1]), dtype=Q.dtype)
            for k_start in range(0, T_k, block_size):
                if causal and k_start > q_start + Q_i.shape[-2] - 1:
                    break  # every key of this block is in the future
                K_j, V_j = K[..., k_start : k_start + block_size, :], V[..., k_start : k_start + block_size, :]
                scores = Q_i @ K_j.transpose(-2, -1) / math.sqrt(d_k)
                if causal:
                    cols = torch.arange(k_start, k_start + K_j.shape[-2])[None, :]
                    scores = torch.where(cols <= rows, scores, torch.tensor(-math.inf, dtype=scores.dtype))
                m_new = torch.maximum(m, scores.amax(-1))
                weights = torch.exp(scores - m_new[..., None])
                correction = torch.exp(m - m_new)
                ell = ell * correction + weights.sum(-1)
                O_i = O_i * correction[..., None] + weights @ V_j
                m = m_new
            outputs.append(O_i / ell[..., None])
            logsumexps.append(m + torch.log(ell))
        return torch.cat(outputs, dim=-2), torch.cat(logsumexps, dim=-1)


# wrong: the same, but the causal mask compares key positions with the row's index inside the query tile
tiled_query_tiles_local_rows = Variant(
    "tiled_attention",
    "queries tiled too, the causal mask compares key positions with the row index inside the query tile",
    source=tiled_query_tiles.source,
    replace=[
        (
            "rows = torch.arange(q_start, q_start + Q_i.shape[-2])[:, None]",
            "rows = torch.arange(Q_i.shape[-2])[:, None]",
        )
    ],
    kind="wrong",
)


# valid: float64 inside, cast back at the end; running maximum started from the first block
@valid("tiled_attention", "float64 inside and cast back, einsum, running maximum started from the first block")
def tiled_float64_inside():
    def tiled_attention(Q, K, V, block_size, causal=False):
        """Scaled dot-product attention, keys and values read block_size rows at a time: (O (..., T_q, d_v), L (..., T_q))."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        dtype = Q.dtype
        Q, K, V = Q.double(), K.double(), V.double()
        T_q, T_k = Q.shape[-2], K.shape[-2]
        rows = torch.arange(T_q)[:, None]
        m = ell = O = None
        for start in range(0, T_k, block_size):
            scores = torch.einsum("...qd,...kd->...qk", Q, K[..., start : start + block_size, :]) / math.sqrt(
                Q.shape[-1]
            )
            if causal:
                scores = scores.masked_fill(
                    torch.arange(start, start + scores.shape[-1])[None, :] > rows, float("-inf")
                )
            block_max = scores.amax(-1)
            if m is None:
                m, ell, O = (
                    block_max,
                    torch.zeros_like(block_max),
                    torch.zeros((*Q.shape[:-1], V.shape[-1]), dtype=Q.dtype),
                )
            m_new = torch.maximum(m, block_max)
            weights = (scores - m_new.unsqueeze(-1)).exp()
            ell = ell * (m - m_new).exp() + weights.sum(-1)
            O = O * (m - m_new).exp().unsqueeze(-1) + torch.einsum(
                "...qk,...kv->...qv", weights, V[..., start : start + block_size, :]
            )
            m = m_new
        return (O / ell.unsqueeze(-1)).to(dtype), (m + ell.log()).to(dtype)


# valid: blocks from torch.split, the running state as a list per block
@valid("tiled_attention", "blocks from torch.split, torch.where with a full-like -inf block")
def tiled_split():
    def tiled_attention(Q, K, V, block_size, causal=False):
        """Scaled dot-product attention, keys and values read block_size rows at a time: (O (..., T_q, d_v), L (..., T_q))."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        T_q = Q.shape[-2]
        m = Q.new_full(Q.shape[:-1], float("-inf"))
        ell = Q.new_zeros(Q.shape[:-1])
        O = Q.new_zeros((*Q.shape[:-1], V.shape[-1]))
        start = 0
        for K_j, V_j in zip(torch.split(K, block_size, dim=-2), torch.split(V, block_size, dim=-2)):
            scores = Q.matmul(K_j.transpose(-1, -2)).div(math.sqrt(Q.shape[-1]))
            if causal:
                keys = torch.arange(start, start + K_j.shape[-2])
                allowed = keys[None, :] <= torch.arange(T_q)[:, None]
                scores = torch.where(allowed, scores, torch.full_like(scores, float("-inf")))
            m_new = torch.maximum(m, scores.max(dim=-1).values)
            weights = torch.exp(scores - m_new.unsqueeze(-1))
            alpha = torch.exp(m - m_new)
            ell = alpha * ell + weights.sum(dim=-1)
            O = alpha.unsqueeze(-1) * O + weights.matmul(V_j)
            m = m_new
            start += K_j.shape[-2]
        return O / ell.unsqueeze(-1), m + torch.log(ell)


# valid: preallocated gradients written block by block, einsum, D from O
@valid("tiled_attention_backward", "gradients preallocated and written block by block, einsum")
def backward_preallocated():
    def tiled_attention_backward(Q, K, V, O, L, dO, block_size, causal=False):
        """Gradients of sum(O * dO) with respect to Q, K and V, block by block: (dQ, dK, dV)."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        if O.shape != dO.shape or O.shape != (*Q.shape[:-1], V.shape[-1]) or L.shape != Q.shape[:-1]:
            raise ValueError("O, L or dO do not fit Q and V")
        scale = Q.shape[-1] ** -0.5
        dQ, dK, dV = torch.zeros_like(Q), torch.zeros_like(K), torch.zeros_like(V)
        D = torch.einsum("...qv,...qv->...q", dO, O)
        T_q, T_k = Q.shape[-2], K.shape[-2]
        for start in range(0, T_k, block_size):
            stop = min(start + block_size, T_k)
            K_j, V_j = K[..., start:stop, :], V[..., start:stop, :]
            scores = torch.einsum("...qd,...kd->...qk", Q, K_j) * scale
            if causal:
                future = torch.arange(start, stop)[None, :] > torch.arange(T_q)[:, None]
                scores = scores.masked_fill(future, float("-inf"))
            A_j = torch.exp(scores - L.unsqueeze(-1))
            dV[..., start:stop, :] = torch.einsum("...qk,...qv->...kv", A_j, dO)
            dE = A_j * (torch.einsum("...qv,...kv->...qk", dO, V_j) - D.unsqueeze(-1))
            dQ += torch.einsum("...qk,...kd->...qd", dE, K_j) * scale
            dK[..., start:stop, :] = torch.einsum("...qk,...qd->...kd", dE, Q) * scale
        return dQ, dK, dV


# valid: float64 inside, cast back
@valid("tiled_attention_backward", "float64 inside and cast back, torch.where for the mask")
def backward_float64_inside():
    def tiled_attention_backward(Q, K, V, O, L, dO, block_size, causal=False):
        """Gradients of sum(O * dO) with respect to Q, K and V, block by block: (dQ, dK, dV)."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        if O.shape != dO.shape or O.shape != (*Q.shape[:-1], V.shape[-1]) or L.shape != Q.shape[:-1]:
            raise ValueError("O, L or dO do not fit Q and V")
        dtype = Q.dtype
        Q, K, V, O, L, dO = (t.double() for t in (Q, K, V, O, L, dO))
        scale = 1 / math.sqrt(Q.shape[-1])
        D = (dO * O).sum(-1, keepdim=True)
        dQ = torch.zeros_like(Q)
        dK, dV = [], []
        rows = torch.arange(Q.shape[-2])[:, None]
        for start in range(0, K.shape[-2], block_size):
            K_j, V_j = K[..., start : start + block_size, :], V[..., start : start + block_size, :]
            scores = Q @ K_j.transpose(-2, -1) * scale
            if causal:
                scores = torch.where(
                    torch.arange(start, start + K_j.shape[-2])[None, :] <= rows,
                    scores,
                    torch.tensor(float("-inf"), dtype=scores.dtype),
                )
            A_j = (scores - L[..., None]).exp()
            dV.append(A_j.transpose(-2, -1) @ dO)
            dE = A_j * (dO @ V_j.transpose(-2, -1) - D)
            dQ = dQ + dE @ K_j * scale
            dK.append(dE.transpose(-2, -1) @ Q * scale)
        return dQ.to(dtype), torch.cat(dK, -2).to(dtype), torch.cat(dV, -2).to(dtype)


# valid: F.scaled_dot_product_attention with a boolean bottom-right mask (True = may attend), three F.linear
@valid("KVCacheSelfAttention", "F.scaled_dot_product_attention with a boolean bottom-right mask, three F.linear")
def kv_sdpa():
    class KVCacheSelfAttention(nn.Module):
        """Causal multi-head self-attention for decoding, with a key-value cache (see the statement)."""

        def __init__(self, embed_dim, num_heads):
            super().__init__()
            self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
            self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
            self.out_proj = nn.Linear(embed_dim, embed_dim)
            nn.init.xavier_uniform_(self.in_proj_weight)

        def _check(self, x, cache):
            B = x.shape[0]
            if cache is not None:
                for t in cache:
                    if t.dim() != 4 or t.shape[0] != B or t.shape[1] != self.num_heads or t.shape[3] != self.head_dim:
                        raise ValueError(f"the cache's shape {tuple(t.shape)} does not match x {tuple(x.shape)}")

        def forward(self, x, cache=None):
            self._check(x, cache)
            B, T_new, E = x.shape
            H, d_k = self.num_heads, self.head_dim
            W_Q, W_K, W_V = self.in_proj_weight.chunk(3)
            b_Q, b_K, b_V = self.in_proj_bias.chunk(3)
            split = lambda t: t.view(B, T_new, H, d_k).transpose(1, 2)  # noqa: E731
            q, k, v = split(F.linear(x, W_Q, b_Q)), split(F.linear(x, W_K, b_K)), split(F.linear(x, W_V, b_V))
            if cache is not None:
                k, v = torch.cat((cache[0], k), 2), torch.cat((cache[1], v), 2)
            T = k.shape[2]
            mask = torch.ones(T_new, T, dtype=torch.bool).tril(diagonal=T - T_new)  # bottom-right
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            return self.out_proj(out.transpose(1, 2).reshape(B, T_new, E)), (k, v)


# valid: einsum, an additive float mask
@valid("KVCacheSelfAttention", "einsum and an additive float mask")
def kv_einsum():
    class KVCacheSelfAttention(nn.Module):
        """Causal multi-head self-attention for decoding, with a key-value cache (see the statement)."""

        def __init__(self, embed_dim, num_heads):
            super().__init__()
            self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
            self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
            self.out_proj = nn.Linear(embed_dim, embed_dim)
            nn.init.xavier_uniform_(self.in_proj_weight)

        def _check(self, x, cache):
            B = x.shape[0]
            if cache is not None:
                for t in cache:
                    if t.dim() != 4 or t.shape[0] != B or t.shape[1] != self.num_heads or t.shape[3] != self.head_dim:
                        raise ValueError(f"the cache's shape {tuple(t.shape)} does not match x {tuple(x.shape)}")

        def forward(self, x, cache=None):
            self._check(x, cache)
            B, T_new, E = x.shape
            H, d_k = self.num_heads, self.head_dim
            qkv = torch.einsum("bte,fe->btf", x, self.in_proj_weight) + self.in_proj_bias
            q, k, v = (t.reshape(B, T_new, H, d_k).permute(0, 2, 1, 3) for t in qkv.split(E, dim=-1))
            T_past = 0 if cache is None else cache[0].shape[2]
            K = k if cache is None else torch.cat([cache[0], k], dim=2)
            V = v if cache is None else torch.cat([cache[1], v], dim=2)
            bias = torch.zeros(T_new, T_past + T_new, dtype=x.dtype)
            bias = bias.masked_fill(
                torch.arange(T_past + T_new)[None, :] > torch.arange(T_past, T_past + T_new)[:, None], float("-inf")
            )
            weights = torch.softmax(torch.einsum("bhqd,bhkd->bhqk", q, K) / d_k**0.5 + bias, dim=-1)
            out = torch.einsum("bhqk,bhkd->bhqd", weights, V).permute(0, 2, 1, 3).reshape(B, T_new, E)
            return self.out_proj(out), (K, V)


# valid: complex numbers, a float32 table of angles (as most libraries compute it)
@valid("rotary_embedding", "complex numbers with a float32 table of angles")
def rotary_complex():
    def rotary_embedding(x, positions, base=10000.0):
        """Rotary position embedding (Su et al., 2021), interleaved pairs: a tensor like x (..., T, d)."""
        if x.shape[-1] % 2:
            raise ValueError(f"d must be even, got {x.shape[-1]}")
        if positions.shape != (x.shape[-2],):
            raise ValueError(f"positions {tuple(positions.shape)} do not match x {tuple(x.shape)}")
        d = x.shape[-1]
        inv_freq = 1.0 / (base ** (torch.arange(0, d, 2).float() / d))  # float32 table
        angles = torch.outer(positions.float(), inv_freq)  # (T, d/2)
        rotation = torch.polar(torch.ones_like(angles), angles)  # e^(i angle)
        pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], d // 2, 2).contiguous())
        return torch.view_as_real(pairs * rotation).flatten(-2).to(x.dtype)


# valid: explicit loops over positions and pairs, math.cos
@valid("rotary_embedding", "loops over positions and pairs with math.cos")
def rotary_loops():
    def rotary_embedding(x, positions, base=10000.0):
        """Rotary position embedding (Su et al., 2021), interleaved pairs: a tensor like x (..., T, d)."""
        if x.shape[-1] % 2:
            raise ValueError(f"d must be even, got {x.shape[-1]}")
        if positions.shape != (x.shape[-2],):
            raise ValueError(f"positions {tuple(positions.shape)} do not match x {tuple(x.shape)}")
        d = x.shape[-1]
        y = x.clone()
        for t, p in enumerate(positions.tolist()):
            for i in range(d // 2):
                angle = p * base ** (-2 * i / d)
                c, s = math.cos(angle), math.sin(angle)
                a, b = x[..., t, 2 * i], x[..., t, 2 * i + 1]
                y[..., t, 2 * i] = a * c - b * s
                y[..., t, 2 * i + 1] = a * s + b * c
        return y


# valid: stack and flatten, float32 angles
@valid("rotary_embedding", "stack and flatten, float32 angles")
def rotary_stack():
    def rotary_embedding(x, positions, base=10000.0):
        """Rotary position embedding (Su et al., 2021), interleaved pairs: a tensor like x (..., T, d)."""
        if x.shape[-1] % 2:
            raise ValueError(f"d must be even, got {x.shape[-1]}")
        if positions.shape != (x.shape[-2],):
            raise ValueError(f"positions {tuple(positions.shape)} do not match x {tuple(x.shape)}")
        d = x.shape[-1]
        theta = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
        angles = positions.to(torch.float32).unsqueeze(-1) * theta
        cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
        even, odd = x[..., ::2], x[..., 1::2]
        return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).flatten(-2)


# wrong: O from PyTorch's fused kernel on all the keys (inputs made 4-D, so that it runs the tiled
# flash kernel and creates no T_q x T_k tensor), L computed block by block
@wrong(
    "tiled_attention",
    "O from F.scaled_dot_product_attention on all the keys at once (4-D inputs: PyTorch's flash kernel), L block by block",
)
def tiled_sdpa_whole():
    def tiled_attention(Q, K, V, block_size, causal=False):
        """Scaled dot-product attention, keys and values read block_size rows at a time: (O (..., T_q, d_v), L (..., T_q))."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        lead, T_q, d_k = Q.shape[:-2], Q.shape[-2], Q.shape[-1]
        q, k, v = (t.reshape(-1, 1, *t.shape[-2:]) for t in (Q, K, V))  # (N, 1, T, d): 4-D
        O = F.scaled_dot_product_attention(q, k, v, is_causal=causal).reshape(*lead, T_q, V.shape[-1])
        L = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)
        rows = torch.arange(T_q)[:, None]
        for start in range(0, K.shape[-2], block_size):
            scores = Q @ K[..., start : start + block_size, :].transpose(-2, -1) / math.sqrt(d_k)
            if causal:
                scores = scores.masked_fill(torch.arange(start, start + scores.shape[-1])[None, :] > rows, -math.inf)
            L = torch.logaddexp(L, torch.logsumexp(scores, dim=-1))
        return O, L


# wrong: every block's scores kept in a list and concatenated for one softmax
@wrong(
    "tiled_attention",
    "keeps every block of scores in a list and concatenates them for one softmax (the memory check sees it)",
)
def tiled_blocks_concatenated():
    def tiled_attention(Q, K, V, block_size, causal=False):
        """Scaled dot-product attention, keys and values read block_size rows at a time: (O (..., T_q, d_v), L (..., T_q))."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        T_q = Q.shape[-2]
        rows = torch.arange(T_q)[:, None]
        blocks = []
        for start in range(0, K.shape[-2], block_size):
            scores = Q @ K[..., start : start + block_size, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
            if causal:
                scores = scores.masked_fill(torch.arange(start, start + scores.shape[-1])[None, :] > rows, -math.inf)
            blocks.append(scores)
        scores = torch.cat(blocks, dim=-1)  # (..., T_q, T_k) after all
        return torch.softmax(scores, dim=-1) @ V, torch.logsumexp(scores, dim=-1)


# wrong (hostile): the formula with the recording switched off around it
@wrong("tiled_attention", "hostile: the formula with the recording switched off (torch._C._DisableTorchDispatch)")
def tiled_recording_off():
    def tiled_attention(Q, K, V, block_size, causal=False):
        """Scaled dot-product attention, keys and values read block_size rows at a time: (O (..., T_q, d_v), L (..., T_q))."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        with torch._C._DisableTorchDispatch():  # out of the recorder's sight
            scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
            if causal:
                T = Q.shape[-2]
                scores = scores.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), -math.inf)
            return torch.softmax(scores, dim=-1) @ V, torch.logsumexp(scores, dim=-1)


# wrong (hostile): the formula computed in NumPy, turned back into tensors
@wrong("tiled_attention", "hostile: the formula computed in NumPy and turned back into tensors")
def tiled_numpy():
    def tiled_attention(Q, K, V, block_size, causal=False):
        """Scaled dot-product attention, keys and values read block_size rows at a time: (O (..., T_q, d_v), L (..., T_q))."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        import numpy as np

        scores = Q.numpy() @ np.swapaxes(K.numpy(), -1, -2) / math.sqrt(Q.shape[-1])
        if causal:
            T = Q.shape[-2]
            scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)
        m = scores.max(-1, keepdims=True)
        weights = np.exp(scores - m)
        total = weights.sum(-1, keepdims=True)
        return torch.from_numpy(weights / total @ V.numpy()).to(Q.dtype), torch.from_numpy(
            (m + np.log(total))[..., 0]
        ).to(Q.dtype)


# wrong: autograd through PyTorch's fused kernel (inputs made 4-D: the flash kernel and its backward,
# no T_q x T_k tensor in sight), not the block-by-block backward pass
@wrong(
    "tiled_attention_backward",
    "autograd through F.scaled_dot_product_attention on all the keys (4-D inputs: PyTorch's flash kernel and its backward)",
)
def backward_sdpa_autograd():
    def tiled_attention_backward(Q, K, V, O, L, dO, block_size, causal=False):
        """Gradients of sum(O * dO) with respect to Q, K and V, block by block: (dQ, dK, dV)."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        if O.shape != dO.shape or O.shape != (*Q.shape[:-1], V.shape[-1]) or L.shape != Q.shape[:-1]:
            raise ValueError("O, L or dO do not fit Q and V")
        with torch.enable_grad():
            Q_, K_, V_ = (t.detach().reshape(-1, 1, *t.shape[-2:]).requires_grad_() for t in (Q, K, V))
            out = F.scaled_dot_product_attention(Q_, K_, V_, is_causal=causal)
            dQ, dK, dV = torch.autograd.grad(out, (Q_, K_, V_), dO.reshape(out.shape))
        return dQ.reshape(Q.shape), dK.reshape(K.shape), dV.reshape(V.shape)


# wrong: returns the cache it was given (never appends the new keys and values)
@wrong("KVCacheSelfAttention", "returns the cache it was given (never appends the new keys and values)")
def kv_never_appends():
    class KVCacheSelfAttention(nn.Module):
        """Causal multi-head self-attention for decoding, with a key-value cache (see the statement)."""

        def __init__(self, embed_dim, num_heads):
            super().__init__()
            self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
            self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
            self.out_proj = nn.Linear(embed_dim, embed_dim)
            nn.init.xavier_uniform_(self.in_proj_weight)

        def _check(self, x, cache):
            B = x.shape[0]
            if cache is not None:
                for t in cache:
                    if t.dim() != 4 or t.shape[0] != B or t.shape[1] != self.num_heads or t.shape[3] != self.head_dim:
                        raise ValueError(f"the cache's shape {tuple(t.shape)} does not match x {tuple(x.shape)}")

        def forward(self, x, cache=None):
            self._check(x, cache)
            B, T_new, E = x.shape
            H, d_k = self.num_heads, self.head_dim
            T_past = 0 if cache is None else cache[0].shape[2]
            T = T_past + T_new
            q, k, v = F.linear(x, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1)
            split = lambda t: t.reshape(B, T_new, H, d_k).transpose(1, 2)  # noqa: E731
            q, k, v = split(q), split(k), split(v)
            K = k if cache is None else torch.cat([cache[0], k], dim=2)
            V = v if cache is None else torch.cat([cache[1], v], dim=2)
            allowed = torch.ones(T_new, T, dtype=torch.bool).tril(diagonal=T_past)
            out = torch.softmax((q @ K.transpose(-2, -1) / math.sqrt(d_k)).masked_fill(~allowed, -math.inf), -1) @ V
            return self.out_proj(out.transpose(1, 2).reshape(B, T_new, E)), (cache if cache is not None else (k, v))


# wrong: keeps a persistent causal-mask buffer (an extra state_dict entry nn.MultiheadAttention's does not have)
@wrong("KVCacheSelfAttention", "keeps a persistent causal-mask buffer (an extra state_dict entry)")
def kv_mask_buffer():
    class KVCacheSelfAttention(nn.Module):
        """Causal multi-head self-attention for decoding, with a key-value cache (see the statement)."""

        def __init__(self, embed_dim, num_heads):
            super().__init__()
            self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
            self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
            self.out_proj = nn.Linear(embed_dim, embed_dim)
            nn.init.xavier_uniform_(self.in_proj_weight)
            self.register_buffer("causal_mask", torch.ones(256, 256, dtype=torch.bool).tril())  # persistent

        def _check(self, x, cache):
            B = x.shape[0]
            if cache is not None:
                for t in cache:
                    if t.dim() != 4 or t.shape[0] != B or t.shape[1] != self.num_heads or t.shape[3] != self.head_dim:
                        raise ValueError(f"the cache's shape {tuple(t.shape)} does not match x {tuple(x.shape)}")

        def forward(self, x, cache=None):
            self._check(x, cache)
            B, T_new, E = x.shape
            H, d_k = self.num_heads, self.head_dim
            T_past = 0 if cache is None else cache[0].shape[2]
            T = T_past + T_new
            q, k, v = F.linear(x, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1)
            split = lambda t: t.reshape(B, T_new, H, d_k).transpose(1, 2)  # noqa: E731
            q, K, V = split(q), split(k), split(v)
            if cache is not None:
                K, V = torch.cat([cache[0], K], dim=2), torch.cat([cache[1], V], dim=2)
            allowed = self.causal_mask[T_past:T, :T]
            out = torch.softmax((q @ K.transpose(-2, -1) / math.sqrt(d_k)).masked_fill(~allowed, -math.inf), -1) @ V
            return self.out_proj(out.transpose(1, 2).reshape(B, T_new, E)), (K, V)


# valid: the running state kept as a logsumexp L and an output normalised at every step, merged with
# torch.logsumexp / torch.logaddexp per block
@valid(
    "tiled_attention",
    "running state kept as a logsumexp with a normalised output, merged per block with torch.logsumexp and logaddexp",
)
def tiled_logsumexp_merge():
    def tiled_attention(Q, K, V, block_size, causal=False):
        """Scaled dot-product attention, keys and values read block_size rows at a time: (O (..., T_q, d_v), L (..., T_q))."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        T_q, T_k, d_k = Q.shape[-2], K.shape[-2], Q.shape[-1]
        L = torch.full(Q.shape[:-1], float("-inf"), dtype=Q.dtype)  # running logsumexp
        O = torch.zeros((*Q.shape[:-1], V.shape[-1]), dtype=Q.dtype)  # running output, normalised
        rows = torch.arange(T_q)[:, None]
        for start in range(0, T_k, block_size):
            K_j, V_j = K[..., start : start + block_size, :], V[..., start : start + block_size, :]
            scores = Q @ K_j.transpose(-2, -1) / math.sqrt(d_k)
            if causal:
                scores = scores.masked_fill(torch.arange(start, start + K_j.shape[-2])[None, :] > rows, float("-inf"))
            L_new = torch.logaddexp(L, torch.logsumexp(scores, dim=-1))  # -inf rows of a block change nothing
            O = O * torch.exp(L - L_new)[..., None] + torch.exp(scores - L_new[..., None]) @ V_j
            L = L_new
        return O, L


# valid: blocks from torch.chunk, the causal mask of a block from torch.triu
@valid("tiled_attention", "blocks from torch.chunk, the block's causal mask from torch.triu")
def tiled_chunk_triu():
    def tiled_attention(Q, K, V, block_size, causal=False):
        """Scaled dot-product attention, keys and values read block_size rows at a time: (O (..., T_q, d_v), L (..., T_q))."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        T_q, T_k = Q.shape[-2], K.shape[-2]
        n_blocks = -(-T_k // block_size)  # ceil(T_k / block_size)
        m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)
        ell = torch.zeros_like(m)
        O = Q.new_zeros(*Q.shape[:-1], V.shape[-1])
        start = 0
        for K_j, V_j in zip(K.chunk(n_blocks, dim=-2), V.chunk(n_blocks, dim=-2)):
            scores = torch.matmul(Q, K_j.mT) * Q.shape[-1] ** -0.5
            if causal:
                future = torch.triu(
                    torch.ones(T_q, K_j.shape[-2], dtype=torch.bool), diagonal=1 - start
                )  # key start + j > query i
                scores = scores.masked_fill(future, -math.inf)
            m_new = torch.maximum(m, scores.amax(dim=-1))
            weights = torch.exp(scores - m_new.unsqueeze(-1))
            scale_old = torch.exp(m - m_new)
            ell = ell * scale_old + weights.sum(dim=-1)
            O = O * scale_old.unsqueeze(-1) + weights @ V_j
            m = m_new
            start += K_j.shape[-2]
        return O / ell.unsqueeze(-1), m + ell.log()


# valid: leading dimensions flattened, an explicit loop over batch entries and heads, 2-D tensors inside
@valid("tiled_attention", "leading dimensions flattened, an explicit loop over batch entries and heads")
def tiled_loop_over_heads():
    def tiled_attention(Q, K, V, block_size, causal=False):
        """Scaled dot-product attention, keys and values read block_size rows at a time: (O (..., T_q, d_v), L (..., T_q))."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        lead, T_q, T_k, d_k, d_v = Q.shape[:-2], Q.shape[-2], K.shape[-2], Q.shape[-1], V.shape[-1]
        Qs, Ks, Vs = Q.reshape(-1, T_q, d_k), K.reshape(-1, T_k, d_k), V.reshape(-1, T_k, d_v)
        outputs, logsumexps = [], []
        for n in range(Qs.shape[0]):  # one batch entry and head at a time
            q = Qs[n]
            m = torch.full((T_q,), -math.inf, dtype=Q.dtype)
            ell = torch.zeros(T_q, dtype=Q.dtype)
            o = torch.zeros(T_q, d_v, dtype=Q.dtype)
            for start in range(0, T_k, block_size):
                k, v = Ks[n, start : start + block_size], Vs[n, start : start + block_size]
                scores = (q @ k.T) / math.sqrt(d_k)  # (T_q, b)
                if causal:
                    scores[torch.arange(start, start + k.shape[0])[None, :] > torch.arange(T_q)[:, None]] = -math.inf
                m_new = torch.max(m, scores.max(dim=1).values)
                p = torch.exp(scores - m_new[:, None])
                ell = torch.exp(m - m_new) * ell + p.sum(dim=1)
                o = torch.exp(m - m_new)[:, None] * o + p @ v
                m = m_new
            outputs.append(o / ell[:, None])
            logsumexps.append(m + torch.log(ell))
        return torch.stack(outputs).reshape(*lead, T_q, d_v), torch.stack(logsumexps).reshape(*lead, T_q)


# valid: F.scaled_dot_product_attention on one block at a time (its own block logsumexp computed
# beside it), blocks merged with their logsumexps
@valid("tiled_attention", "F.scaled_dot_product_attention on one block at a time, merged with the block's logsumexp")
def tiled_sdpa_per_block():
    def tiled_attention(Q, K, V, block_size, causal=False):
        """Scaled dot-product attention, keys and values read block_size rows at a time: (O (..., T_q, d_v), L (..., T_q))."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        T_q, T_k, d_k = Q.shape[-2], K.shape[-2], Q.shape[-1]
        L = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)
        O = torch.zeros((*Q.shape[:-1], V.shape[-1]), dtype=Q.dtype)
        rows = torch.arange(T_q)[:, None]
        for start in range(0, T_k, block_size):
            K_j, V_j = K[..., start : start + block_size, :], V[..., start : start + block_size, :]
            allowed = None
            scores = Q @ K_j.transpose(-2, -1) / math.sqrt(d_k)  # for this block's logsumexp
            if causal:
                allowed = torch.arange(start, start + K_j.shape[-2])[None, :] <= rows  # (T_q, b), True = may attend
                scores = scores.masked_fill(~allowed, -math.inf)
            L_j = torch.logsumexp(scores, dim=-1)
            O_j = torch.nan_to_num(
                F.scaled_dot_product_attention(Q, K_j, V_j, attn_mask=allowed)
            )  # rows that see no key: 0
            L_new = torch.logaddexp(L, L_j)
            O = O * torch.exp(L - L_new)[..., None] + O_j * torch.exp(L_j - L_new)[..., None]
            L = L_new
        return O, L


# valid: K and V padded with zero rows to whole blocks and cut with unfold, the padding masked out
@valid("tiled_attention", "K and V padded to whole blocks and cut with unfold, the padding masked")
def tiled_unfold_padded():
    def tiled_attention(Q, K, V, block_size, causal=False):
        """Scaled dot-product attention, keys and values read block_size rows at a time: (O (..., T_q, d_v), L (..., T_q))."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        T_q, T_k, d_k = Q.shape[-2], K.shape[-2], Q.shape[-1]
        n_blocks = -(-T_k // block_size)
        pad = n_blocks * block_size - T_k
        K_blocks = F.pad(K, (0, 0, 0, pad)).unfold(-2, block_size, block_size)  # (..., n_blocks, d_k, b)
        V_blocks = F.pad(V, (0, 0, 0, pad)).unfold(-2, block_size, block_size)  # (..., n_blocks, d_v, b)
        rows = torch.arange(T_q)[:, None]
        m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)
        ell = torch.zeros(Q.shape[:-1], dtype=Q.dtype)
        O = torch.zeros((*Q.shape[:-1], V.shape[-1]), dtype=Q.dtype)
        for n in range(n_blocks):
            cols = torch.arange(n * block_size, (n + 1) * block_size)[None, :]
            scores = Q @ K_blocks[..., n, :, :] / math.sqrt(d_k)  # (..., T_q, b)
            hidden = cols >= T_k  # the padding
            if causal:
                hidden = hidden | (cols > rows)
            scores = scores.masked_fill(hidden, -math.inf)
            m_new = torch.maximum(m, scores.amax(-1))
            weights = torch.exp(scores - m_new[..., None])
            correction = torch.exp(m - m_new)
            ell = ell * correction + weights.sum(-1)
            O = O * correction[..., None] + weights @ V_blocks[..., n, :, :].transpose(-2, -1)
            m = m_new
        return O / ell[..., None], m + torch.log(ell)


# valid: queries tiled too (dQ per block of queries, dK and dV accumulated in place)
@valid("tiled_attention_backward", "queries tiled too, dK and dV accumulated in place")
def backward_query_tiles():
    def tiled_attention_backward(Q, K, V, O, L, dO, block_size, causal=False):
        """Gradients of sum(O * dO) with respect to Q, K and V, block by block: (dQ, dK, dV)."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        if O.shape != dO.shape or O.shape != (*Q.shape[:-1], V.shape[-1]) or L.shape != Q.shape[:-1]:
            raise ValueError("O, L or dO do not fit Q and V")
        scale = 1 / math.sqrt(Q.shape[-1])
        T_q, T_k = Q.shape[-2], K.shape[-2]
        D = (dO * O).sum(-1)  # (..., T_q)
        dK, dV = torch.zeros_like(K), torch.zeros_like(V)
        dQ_rows = []
        for q0 in range(0, T_q, block_size):
            Q_i, dO_i = Q[..., q0 : q0 + block_size, :], dO[..., q0 : q0 + block_size, :]
            L_i, D_i = L[..., q0 : q0 + block_size], D[..., q0 : q0 + block_size]
            rows = torch.arange(q0, q0 + Q_i.shape[-2])[:, None]
            dQ_i = torch.zeros_like(Q_i)
            for k0 in range(0, T_k, block_size):
                k1 = min(k0 + block_size, T_k)
                K_j, V_j = K[..., k0:k1, :], V[..., k0:k1, :]
                S = Q_i @ K_j.transpose(-2, -1) * scale
                if causal:
                    S = S.masked_fill(torch.arange(k0, k1)[None, :] > rows, -math.inf)
                P = torch.exp(S - L_i[..., None])
                dV[..., k0:k1, :] += P.transpose(-2, -1) @ dO_i
                dS = P * (dO_i @ V_j.transpose(-2, -1) - D_i[..., None])
                dQ_i = dQ_i + dS @ K_j * scale
                dK[..., k0:k1, :] += dS.transpose(-2, -1) @ Q_i * scale
            dQ_rows.append(dQ_i)
        return torch.cat(dQ_rows, dim=-2), dK, dV


# valid: ignores the given O and L and recomputes both with a forward pass over the blocks first
@valid("tiled_attention_backward", "ignores the given O and L and recomputes them with a forward pass over the blocks")
def backward_recomputes_forward():
    def tiled_attention_backward(Q, K, V, O, L, dO, block_size, causal=False):
        """Gradients of sum(O * dO) with respect to Q, K and V, block by block: (dQ, dK, dV)."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        if O.shape != dO.shape or O.shape != (*Q.shape[:-1], V.shape[-1]) or L.shape != Q.shape[:-1]:
            raise ValueError("O, L or dO do not fit Q and V")
        scale = 1 / math.sqrt(Q.shape[-1])
        T_q, T_k = Q.shape[-2], K.shape[-2]
        rows = torch.arange(T_q)[:, None]

        def block_scores(start):
            scores = Q @ K[..., start : start + block_size, :].transpose(-2, -1) * scale
            if causal:
                scores = scores.masked_fill(torch.arange(start, start + scores.shape[-1])[None, :] > rows, -math.inf)
            return scores

        m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)  # first pass: O and L again
        ell = torch.zeros_like(m)
        out = torch.zeros_like(dO)
        for start in range(0, T_k, block_size):
            scores = block_scores(start)
            m_new = torch.maximum(m, scores.amax(-1))
            weights = torch.exp(scores - m_new[..., None])
            ell = ell * torch.exp(m - m_new) + weights.sum(-1)
            out = out * torch.exp(m - m_new)[..., None] + weights @ V[..., start : start + block_size, :]
            m = m_new
        out, lse = out / ell[..., None], m + torch.log(ell)
        D = (dO * out).sum(-1, keepdim=True)
        dQ, dK, dV = torch.zeros_like(Q), [], []
        for start in range(0, T_k, block_size):  # second pass: the gradients
            A = torch.exp(block_scores(start) - lse[..., None])
            dV.append(A.transpose(-2, -1) @ dO)
            dE = A * (dO @ V[..., start : start + block_size, :].transpose(-2, -1) - D)
            dQ = dQ + dE @ K[..., start : start + block_size, :] * scale
            dK.append(dE.transpose(-2, -1) @ Q * scale)
        return dQ, torch.cat(dK, dim=-2), torch.cat(dV, dim=-2)


# valid: the new cache preallocated (new_empty) and filled by slices, q, k, v with one view and permute,
# the mask from tril(diagonal=T_past) and torch.where
@valid(
    "KVCacheSelfAttention",
    "the new cache preallocated with new_empty and filled by slices, one view and permute for q, k, v",
)
def kv_preallocated():
    class KVCacheSelfAttention(nn.Module):
        """Causal multi-head self-attention for decoding, with a key-value cache (see the statement)."""

        def __init__(self, embed_dim, num_heads):
            super().__init__()
            self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
            self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
            self.out_proj = nn.Linear(embed_dim, embed_dim)
            nn.init.xavier_uniform_(self.in_proj_weight)

        def _check(self, x, cache):
            B = x.shape[0]
            if cache is not None:
                for t in cache:
                    if t.dim() != 4 or t.shape[0] != B or t.shape[1] != self.num_heads or t.shape[3] != self.head_dim:
                        raise ValueError(f"the cache's shape {tuple(t.shape)} does not match x {tuple(x.shape)}")

        def forward(self, x, cache=None):
            self._check(x, cache)
            B, T_new, E = x.shape
            H, d_k = self.num_heads, self.head_dim
            T_past = 0 if cache is None else cache[0].shape[2]
            T = T_past + T_new
            K, V = x.new_empty(B, H, T, d_k), x.new_empty(B, H, T, d_k)
            if T_past:
                K[:, :, :T_past], V[:, :, :T_past] = cache
            qkv = F.linear(x, self.in_proj_weight, self.in_proj_bias)  # (B, T_new, 3 E), new tokens only
            q, k, v = qkv.view(B, T_new, 3, H, d_k).permute(2, 0, 3, 1, 4)  # each (B, H, T_new, d_k)
            K[:, :, T_past:], V[:, :, T_past:] = k, v
            scores = torch.matmul(q, K.transpose(2, 3)) * d_k**-0.5
            allowed = torch.ones(T_new, T, dtype=torch.bool).tril(diagonal=T_past)  # bottom-right
            scores = torch.where(allowed, scores, torch.tensor(float("-inf"), dtype=scores.dtype))
            out = scores.softmax(dim=-1) @ V
            return self.out_proj(out.permute(0, 2, 1, 3).reshape(B, T_new, E)), (K, V)


# valid: an explicit loop over heads, each with its slices of in_proj_weight, the mask written row by row
@valid("KVCacheSelfAttention", "an explicit loop over heads with slices of in_proj_weight, the mask written row by row")
def kv_loop_over_heads():
    class KVCacheSelfAttention(nn.Module):
        """Causal multi-head self-attention for decoding, with a key-value cache (see the statement)."""

        def __init__(self, embed_dim, num_heads):
            super().__init__()
            self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
            self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
            self.out_proj = nn.Linear(embed_dim, embed_dim)
            nn.init.xavier_uniform_(self.in_proj_weight)

        def _check(self, x, cache):
            B = x.shape[0]
            if cache is not None:
                for t in cache:
                    if t.dim() != 4 or t.shape[0] != B or t.shape[1] != self.num_heads or t.shape[3] != self.head_dim:
                        raise ValueError(f"the cache's shape {tuple(t.shape)} does not match x {tuple(x.shape)}")

        def forward(self, x, cache=None):
            self._check(x, cache)
            B, T_new, E = x.shape
            H, d_k = self.num_heads, self.head_dim
            T_past = 0 if cache is None else cache[0].shape[2]
            W, b = self.in_proj_weight, self.in_proj_bias
            heads, keys, values = [], [], []
            for h in range(H):
                rows = slice(h * d_k, (h + 1) * d_k)
                q = F.linear(x, W[:E][rows], b[:E][rows])  # (B, T_new, d_k)
                k = F.linear(x, W[E : 2 * E][rows], b[E : 2 * E][rows])
                v = F.linear(x, W[2 * E :][rows], b[2 * E :][rows])
                if cache is not None:
                    k = torch.cat([cache[0][:, h], k], dim=1)  # (B, T, d_k)
                    v = torch.cat([cache[1][:, h], v], dim=1)
                scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(d_k)  # (B, T_new, T)
                for t in range(T_new):
                    scores[:, t, T_past + t + 1 :] = float("-inf")  # new token t sees keys 0 .. T_past + t
                heads.append(torch.bmm(torch.softmax(scores, dim=-1), v))
                keys.append(k)
                values.append(v)
            y = self.out_proj(torch.cat(heads, dim=-1))
            return y, (torch.stack(keys, dim=1), torch.stack(values, dim=1))


# valid: x @ W^T with torch.split, heads via unflatten and movedim, the softmax written out
# (max subtracted), computed in float64 and cast back to x's dtype
@valid("KVCacheSelfAttention", "computed in float64 and cast back, unflatten and movedim, the softmax written out")
def kv_float64_inside():
    class KVCacheSelfAttention(nn.Module):
        """Causal multi-head self-attention for decoding, with a key-value cache (see the statement)."""

        def __init__(self, embed_dim, num_heads):
            super().__init__()
            self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
            self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
            self.out_proj = nn.Linear(embed_dim, embed_dim)
            nn.init.xavier_uniform_(self.in_proj_weight)

        def _check(self, x, cache):
            B = x.shape[0]
            if cache is not None:
                for t in cache:
                    if t.dim() != 4 or t.shape[0] != B or t.shape[1] != self.num_heads or t.shape[3] != self.head_dim:
                        raise ValueError(f"the cache's shape {tuple(t.shape)} does not match x {tuple(x.shape)}")

        def forward(self, x, cache=None):
            self._check(x, cache)
            B, T_new, E = x.shape
            H, d_k = self.num_heads, self.head_dim
            T_past = 0 if cache is None else cache[0].shape[2]
            T = T_past + T_new
            dtype = x.dtype
            W, b = self.in_proj_weight.double(), self.in_proj_bias.double()
            q, k, v = (x.double() @ W.T + b).split(E, dim=-1)
            q, k, v = (t.unflatten(-1, (H, d_k)).movedim(2, 1) for t in (q, k, v))  # (B, H, T_new, d_k)
            if cache is not None:
                k = torch.cat([cache[0].double(), k], dim=2)
                v = torch.cat([cache[1].double(), v], dim=2)
            scores = q @ k.transpose(-1, -2) / math.sqrt(d_k)
            future = torch.arange(T)[None, :] > torch.arange(T_past, T)[:, None]
            scores = scores.masked_fill(future, -math.inf)
            weights = torch.exp(scores - scores.amax(-1, keepdim=True))
            weights = weights / weights.sum(-1, keepdim=True)
            out = (weights @ v).movedim(1, 2).flatten(2)
            y = F.linear(out, self.out_proj.weight.double(), self.out_proj.bias.double())
            return y.to(dtype), (k.to(dtype), v.to(dtype))


# valid: cos and sin repeated per pair with repeat_interleave, the pair partner from a rotate-every-two helper
@valid("rotary_embedding", "cos and sin with repeat_interleave and a rotate-every-two partner")
def rotary_repeat_interleave():
    def rotary_embedding(x, positions, base=10000.0):
        """Rotary position embedding (Su et al., 2021), interleaved pairs: a tensor like x (..., T, d)."""
        if x.shape[-1] % 2:
            raise ValueError(f"d must be even, got {x.shape[-1]}")
        if positions.shape != (x.shape[-2],):
            raise ValueError(f"positions {tuple(positions.shape)} do not match x {tuple(x.shape)}")
        d = x.shape[-1]
        inv_freq = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
        angles = positions.double()[:, None] * inv_freq  # (T, d/2)
        cos = angles.cos().repeat_interleave(2, dim=-1).to(x.dtype)  # (T, d): c0 c0 c1 c1 ...
        sin = angles.sin().repeat_interleave(2, dim=-1).to(x.dtype)
        partner = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)  # (-x1, x0, -x3, x2, ...)
        return x * cos + partner * sin


# wrong: the same with repeat (c0 c1 ... c0 c1 ...) instead of repeat_interleave (c0 c0 c1 c1 ...)
rotary_repeat_not_interleave = Variant(
    "rotary_embedding",
    "cos and sin tables with repeat (c0 c1 .. c0 c1) instead of repeat_interleave (c0 c0 c1 c1 ..)",
    source=rotary_repeat_interleave.source,
    replace=[
        ("cos = angles.cos().repeat_interleave(2, dim=-1)", "cos = angles.cos().repeat(1, 2)"),
        ("sin = angles.sin().repeat_interleave(2, dim=-1)", "sin = angles.sin().repeat(1, 2)"),
    ],
    kind="wrong",
)


# valid: one 2 x 2 rotation matrix per position and pair, applied with einsum; base through torch.pow
@valid("rotary_embedding", "2 x 2 rotation matrices applied with einsum, base through torch.pow")
def rotary_matrices():
    def rotary_embedding(x, positions, base=10000.0):
        """Rotary position embedding (Su et al., 2021), interleaved pairs: a tensor like x (..., T, d)."""
        if x.shape[-1] % 2:
            raise ValueError(f"d must be even, got {x.shape[-1]}")
        if positions.shape != (x.shape[-2],):
            raise ValueError(f"positions {tuple(positions.shape)} do not match x {tuple(x.shape)}")
        d = x.shape[-1]
        i = torch.arange(d // 2, dtype=torch.float64)
        angles = positions.to(torch.float64)[:, None] * torch.pow(
            torch.tensor(float(base), dtype=torch.float64), -2 * i / d
        )
        c, s = angles.cos(), angles.sin()
        R = torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2).to(x.dtype)  # (T, d/2, 2, 2)
        pairs = x.unflatten(-1, (d // 2, 2))  # (..., T, d/2, 2)
        return torch.einsum("tpij,...tpj->...tpi", R, pairs).flatten(-2)


# valid: chapter 07's frequencies exp(-2i log(base) / d) in float32, positions as a float tensor, a clone written by slices
@valid(
    "rotary_embedding",
    "chapter 07's exp(-2i log(base) / d) frequencies in float32, float positions, a clone written by slices",
)
def rotary_exp_log_float32():
    def rotary_embedding(x, positions, base=10000.0):
        """Rotary position embedding (Su et al., 2021), interleaved pairs: a tensor like x (..., T, d)."""
        if x.shape[-1] % 2:
            raise ValueError(f"d must be even, got {x.shape[-1]}")
        if positions.shape != (x.shape[-2],):
            raise ValueError(f"positions {tuple(positions.shape)} do not match x {tuple(x.shape)}")
        d = x.shape[-1]
        frequencies = torch.exp(torch.arange(0, d, 2).float() * (-math.log(base) / d))
        angles = positions.float().unsqueeze(1) * frequencies  # (T, d/2), float32
        cos, sin = angles.cos(), angles.sin()
        y = x.clone()
        y[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
        y[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
        return y


# valid: complex128 from torch.polar, x viewed as complex pairs in float64, cast back
@valid("rotary_embedding", "complex128 from torch.polar, cast back")
def rotary_polar_float64():
    def rotary_embedding(x, positions, base=10000.0):
        """Rotary position embedding (Su et al., 2021), interleaved pairs: a tensor like x (..., T, d)."""
        if x.shape[-1] % 2:
            raise ValueError(f"d must be even, got {x.shape[-1]}")
        if positions.shape != (x.shape[-2],):
            raise ValueError(f"positions {tuple(positions.shape)} do not match x {tuple(x.shape)}")
        d = x.shape[-1]
        angles = torch.outer(positions.to(torch.float64), base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d))
        turn = torch.polar(torch.ones_like(angles), angles)  # (T, d/2) complex128
        z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())
        return torch.view_as_real(z * turn).reshape(x.shape).to(x.dtype)


# valid: a subclass of nn.MultiheadAttention (its parameters, names and initialisation for free), the
# attention written with F.scaled_dot_product_attention and a bottom-right boolean mask
@valid(
    "KVCacheSelfAttention",
    "a subclass of nn.MultiheadAttention, F.scaled_dot_product_attention with a bottom-right mask",
)
def kv_subclass_mha():
    class KVCacheSelfAttention(nn.MultiheadAttention):
        """Causal multi-head self-attention for decoding, with a key-value cache: nn.MultiheadAttention's parameters."""

        def __init__(self, embed_dim, num_heads):
            super().__init__(embed_dim, num_heads, batch_first=True)

        def forward(self, x, cache=None):
            B, T_new, E = x.shape
            H, d_k = self.num_heads, self.head_dim
            if cache is not None and any(
                t.dim() != 4 or tuple(t.shape[:2]) != (B, H) or t.shape[3] != d_k for t in cache
            ):
                raise ValueError(
                    f"the cache's shape {tuple(cache[0].shape)} does not match x {tuple(x.shape)} with {H} heads"
                )
            q, k, v = (
                t.view(B, T_new, H, d_k).transpose(1, 2)
                for t in F.linear(x, self.in_proj_weight, self.in_proj_bias).chunk(3, -1)
            )
            if cache is not None:
                k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
            T = k.shape[2]
            allowed = torch.ones(T_new, T, dtype=torch.bool).tril(diagonal=T - T_new)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
            return self.out_proj(out.transpose(1, 2).reshape(B, T_new, E)), (k, v)


# valid: keeps the last cache it made as a plain attribute (for inspection), but computes only from the one it is given
@valid("KVCacheSelfAttention", "remembers the last cache as an attribute, computes only from the one it is given")
def kv_remembers_last_cache():
    class KVCacheSelfAttention(nn.Module):
        """Causal multi-head self-attention for decoding, with a key-value cache (see the statement)."""

        def __init__(self, embed_dim, num_heads):
            super().__init__()
            self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
            self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
            self.out_proj = nn.Linear(embed_dim, embed_dim)
            nn.init.xavier_uniform_(self.in_proj_weight)

        def _check(self, x, cache):
            B = x.shape[0]
            if cache is not None:
                for t in cache:
                    if t.dim() != 4 or t.shape[0] != B or t.shape[1] != self.num_heads or t.shape[3] != self.head_dim:
                        raise ValueError(f"the cache's shape {tuple(t.shape)} does not match x {tuple(x.shape)}")

        def forward(self, x, cache=None):
            self._check(x, cache)
            B, T_new, E = x.shape
            H, d_k = self.num_heads, self.head_dim
            T_past = 0 if cache is None else cache[0].shape[2]
            T = T_past + T_new
            q, k, v = F.linear(x, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1)
            split = lambda t: t.reshape(B, T_new, H, d_k).transpose(1, 2)  # noqa: E731
            q, K, V = split(q), split(k), split(v)
            if cache is not None:
                K, V = torch.cat([cache[0], K], dim=2), torch.cat([cache[1], V], dim=2)
            self.last_cache = (K, V)  # an attribute, never read
            allowed = torch.arange(T)[None, :] <= torch.arange(T_past, T)[:, None]
            out = torch.softmax((q @ K.transpose(-2, -1) / math.sqrt(d_k)).masked_fill(~allowed, -math.inf), -1) @ V
            return self.out_proj(out.transpose(1, 2).reshape(B, T_new, E)), self.last_cache


# wrong (hostile): the full formula, its results memorised by the inputs' shapes and sums and handed out as
# clones on a repeated call (so that a recorded call of the same inputs would look cheap)
@wrong(
    "tiled_attention",
    "hostile: the formula, its results memorised by the inputs' sums and returned as clones on a repeated call",
)
def tiled_memoised():
    _MEMO = {}

    def tiled_attention(Q, K, V, block_size, causal=False):
        """Scaled dot-product attention, keys and values read block_size rows at a time: (O (..., T_q, d_v), L (..., T_q))."""
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size}")
        if (
            Q.shape[:-2] != K.shape[:-2]
            or Q.shape[:-2] != V.shape[:-2]
            or K.shape[-1] != Q.shape[-1]
            or V.shape[-2] != K.shape[-2]
        ):
            raise ValueError(f"shapes do not fit: {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        if causal and Q.shape[-2] != K.shape[-2]:
            raise ValueError("causal attention needs T_q == T_k")
        key = (tuple(Q.shape), tuple(K.shape), Q.dtype, round(float(Q.sum()), 4), round(float(K.sum()), 4), causal)
        if key not in _MEMO:
            scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
            if causal:
                T = Q.shape[-2]
                scores = scores.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), -math.inf)
            _MEMO[key] = (torch.softmax(scores, dim=-1) @ V, torch.logsumexp(scores, dim=-1))
        return tuple(t.clone() for t in _MEMO[key])


# valid: cos and sin tables for positions 0 .. 4095 built once per (d, base) and kept in a dict, indexed by positions
@valid(
    "rotary_embedding",
    "cos and sin tables for positions 0 .. 4095 built once per (d, base), kept in a dict and indexed",
)
def rotary_cached_tables():
    _ROTARY_TABLES = {}

    def rotary_embedding(x, positions, base=10000.0):
        """Rotary position embedding (Su et al., 2021), interleaved pairs: a tensor like x (..., T, d)."""
        if x.shape[-1] % 2:
            raise ValueError(f"d must be even, got {x.shape[-1]}")
        if positions.shape != (x.shape[-2],):
            raise ValueError(f"positions {tuple(positions.shape)} do not match x {tuple(x.shape)}")
        d = x.shape[-1]
        key = (d, float(base))
        if key not in _ROTARY_TABLES:
            angles = torch.outer(
                torch.arange(4096, dtype=torch.float64), base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
            )
            _ROTARY_TABLES[key] = (angles.cos(), angles.sin())  # (4096, d/2) each
        cos, sin = (table[positions.long()].to(x.dtype) for table in _ROTARY_TABLES[key])
        even, odd = x[..., 0::2], x[..., 1::2]
        y = torch.empty_like(x)
        y[..., 0::2], y[..., 1::2] = even * cos - odd * sin, even * sin + odd * cos
        return y


# valid: a loop over the hypotheses and their tokens, Python floats, the candidates sorted as a list
@valid("beam_search", "loops over the hypotheses and tokens in Python floats, the candidates sorted as a list")
def beam_python_loops():
    def beam_search(step, reorder, state, bos_id, eos_id, beam_size, max_len, alpha=0.0):
        """Beam search for one sentence; the live hypotheses are the rows of a batch: (tokens, score)."""
        if beam_size < 1:
            raise ValueError(f"beam_size must be at least 1, got {beam_size}")
        if max_len < 1:
            raise ValueError(f"max_len must be at least 1, got {max_len}")
        if alpha < 0:
            raise ValueError(f"alpha must be >= 0, got {alpha}")
        live = [([], 0.0)]  # (tokens, score) of each live hypothesis, row by row
        last_tokens = torch.tensor([bos_id])
        finished = []
        for t in range(1, max_len + 1):
            log_probs, state = step(last_tokens, state)
            candidates = []
            for row, (_tokens, score) in enumerate(live):
                for word, lp in enumerate(log_probs[row].tolist()):
                    candidates.append((score + lp, row, word))
            candidates.sort(reverse=True)
            rows, survivors = [], []
            for score, row, word in candidates[:beam_size]:
                tokens = live[row][0] + [word]
                if word == eos_id or t == max_len:
                    finished.append((tokens, score))
                else:
                    rows.append(row)
                    survivors.append((tokens, score))
            if not survivors:
                break
            live = survivors
            state = reorder(state, torch.tensor(rows, device=log_probs.device))
            last_tokens = torch.tensor([tokens[-1] for tokens, _ in live], device=log_probs.device)
        best = max(finished, key=lambda f: f[1] / len(f[0]) ** alpha)
        return best[0], best[1]


# valid: heapq.nlargest over (score, row, word) triples, and the result by sorting the finished hypotheses
@valid("beam_search", "heapq.nlargest over (score, row, word) in float64; the result by sorting the finished")
def beam_heap():
    import heapq

    def beam_search(step, reorder, state, bos_id, eos_id, beam_size, max_len, alpha=0.0):
        """Beam search for one sentence; the live hypotheses are the rows of a batch: (tokens, score)."""
        if beam_size < 1:
            raise ValueError(f"beam_size must be at least 1, got {beam_size}")
        if max_len < 1:
            raise ValueError(f"max_len must be at least 1, got {max_len}")
        if alpha < 0:
            raise ValueError(f"alpha must be >= 0, got {alpha}")
        live_tokens, live_scores = [[]], [0.0]
        last_tokens = torch.tensor([bos_id])
        finished = []
        for t in range(1, max_len + 1):
            log_probs, state = step(last_tokens, state)
            table = log_probs.double().tolist()
            triples = ((live_scores[r] + lp, r, w) for r in range(len(live_tokens)) for w, lp in enumerate(table[r]))
            kept = heapq.nlargest(beam_size, triples)
            done = [(live_tokens[r] + [w], s) for s, r, w in kept if w == eos_id or t == max_len]
            going = [(s, r, w) for s, r, w in kept if not (w == eos_id or t == max_len)]
            finished += done
            if not going:
                break
            state = reorder(state, torch.tensor([r for _, r, _ in going], dtype=torch.long))
            live_tokens = [live_tokens[r] + [w] for _, r, w in going]
            live_scores = [s for s, _, _ in going]
            last_tokens = torch.tensor([w for _, _, w in going], dtype=torch.long)
        finished.sort(key=lambda f: f[1] / len(f[0]) ** alpha, reverse=True)
        return finished[0][0], float(finished[0][1])
