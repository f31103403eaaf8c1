# ruff: noqa: E501 (the answers are notebook cells, as wide as the notebook's own)
"""Chapter 08's wrong and valid answers (tests/wrong_answers/__init__.py runs them against the test cells).

Every WRONG variant is a mistake a student is likely to make; the memory and cost promises are
what catch several of them (values right, computation wrong). Every VALID variant is another
correct way to write the answer and must pass both test cells.
"""

from wrong_answers import Variant
from wrong_answers.cells import ch08 as cells

# The answers rewritten whole are in cells/ch08.py (cells.name), the others are substitutions in the reference.

WRONG = [
    # Exercise 8.1
    cells.tiled_full_then_slice,
    cells.tiled_full_causal_mask,
    Variant(
        "tiled_attention",
        "exponentiates the raw scores, no running maximum (overflows at scores of 1e4)",
        replace=[
            ("weights = scores.sub_(m_new[..., None]).exp_()", "weights = scores.exp_()"),
            ("correction = torch.exp(m - m_new)", "correction = torch.ones_like(m_new)"),
            ("return O / ell[..., None], m + torch.log(ell)", "return O / ell[..., None], torch.log(ell)"),
        ],
    ),
    Variant(
        "tiled_attention",
        "forgets to rescale the running output when the maximum grows",
        replace=[("O = O * correction[..., None] + weights @ V_j", "O = O + weights @ V_j")],
    ),
    Variant(
        "tiled_attention",
        "forgets to rescale the running normaliser when the maximum grows",
        replace=[("ell = ell * correction + weights.sum(dim=-1)", "ell = ell + weights.sum(dim=-1)")],
    ),
    Variant(
        "tiled_attention",
        "causal mask with positions inside the block (0..b-1) instead of global key positions",
        replace=[
            (
                "cols = torch.arange(start, start + K_j.shape[-2], device=Q.device)[None, :]",
                "cols = torch.arange(K_j.shape[-2], device=Q.device)[None, :]",
            )
        ],
    ),
    Variant(
        "tiled_attention",
        "causal mask off by one (key j allowed iff j < i: query 0 sees nothing)",
        replace=[
            (
                "scores.masked_fill_(cols > rows, -math.inf)",
                "scores.masked_fill_(cols >= rows, -math.inf)",
            )
        ],
    ),
    Variant(
        "tiled_attention",
        "returns the running maximum as L instead of the logsumexp",
        replace=[("return O / ell[..., None], m + torch.log(ell)", "return O / ell[..., None], m")],
    ),
    Variant(
        "tiled_attention",
        "scales the scores by 1/d_k instead of 1/sqrt(d_k)",
        replace=[("scale = 1.0 / math.sqrt(d_k)", "scale = 1.0 / d_k")],
    ),
    cells.tiled_float64_no_cast,
    Variant(
        "tiled_attention",
        "no check of block_size (block_size 0 raises range()'s ValueError, which does not name the block size)",
        replace=[
            (
                '    if block_size < 1:\n        raise ValueError(f"block_size must be at least 1, got {block_size}")\n',
                "",
            )
        ],
    ),
    Variant(
        "tiled_attention",
        "no check that causal calls have T_q == T_k",
        replace=[
            (
                '    if causal and Q.shape[-2] != K.shape[-2]:\n        raise ValueError(f"causal attention needs T_q == T_k, got T_q = {Q.shape[-2]}, T_k = {K.shape[-2]}")\n',
                "",
            )
        ],
    ),
    # Exercise 8.2
    Variant(
        "tiled_attention_backward",
        "leaves out D = rowsum(dO * O) (dE = A * dA)",
        replace=[("d_scores = weights * (d_weights - D[..., None])", "d_scores = weights * d_weights")],
    ),
    Variant(
        "tiled_attention_backward",
        "normalises each block's weights on their own (softmax within the block) instead of exp(E - L)",
        replace=[("weights = torch.exp(scores - L[..., None])", "weights = torch.softmax(scores, dim=-1)")],
    ),
    Variant(
        "tiled_attention_backward",
        "forgets the factor 1/sqrt(d_k) in dQ and dK",
        replace=[
            ("dQ = dQ + (d_scores @ K_j) * scale", "dQ = dQ + d_scores @ K_j"),
            (
                "dK_blocks.append((d_scores.transpose(-2, -1) @ Q) * scale)",
                "dK_blocks.append(d_scores.transpose(-2, -1) @ Q)",
            ),
        ],
    ),
    Variant(
        "tiled_attention_backward",
        "forgets the causal mask in the backward pass",
        replace=[("            scores = scores.masked_fill(cols > rows, -math.inf)\n", "")],
    ),
    cells.backward_autograd,
    cells.backward_full_matrix,
    # Exercise 8.3
    Variant(
        "KVCacheSelfAttention",
        "causal mask aligned top-left with a cache (new token t sees keys 0..t)",
        replace=[
            (
                "new_positions = torch.arange(T_past, T_past + T_new, device=x.device)[:, None]",
                "new_positions = torch.arange(T_new, device=x.device)[:, None]",
            )
        ],
    ),
    cells.kv_mask_only_without_cache,
    cells.kv_stateful,
    cells.kv_reprojects_prefix,
    cells.kv_pads_to_full_length,
    Variant(
        "KVCacheSelfAttention",
        "projects without the bias",
        replace=[("F.linear(x, self.in_proj_weight, self.in_proj_bias)", "F.linear(x, self.in_proj_weight)")],
    ),
    Variant(
        "KVCacheSelfAttention",
        "scales the scores by sqrt(d_model) instead of sqrt(d_k)",
        replace=[
            (
                "scores = heads(q) @ K.transpose(-2, -1) / math.sqrt(d_k)",
                "scores = heads(q) @ K.transpose(-2, -1) / math.sqrt(self.embed_dim)",
            )
        ],
    ),
    Variant(
        "KVCacheSelfAttention",
        "splits heads with a reshape to (B, n_heads, T, d_k) instead of reshape then transpose",
        replace=[("return t.reshape(B, T_new, H, d_k).transpose(1, 2)", "return t.reshape(B, H, T_new, d_k)")],
    ),
    Variant(
        "KVCacheSelfAttention",
        "no check that the cache matches x (torch.cat's RuntimeError instead of a ValueError)",
        replace=[
            (
                '                    raise ValueError(f"cached {name} must have shape (B, n_heads, T_past, d_k) = ({B}, {H}, T_past, {d_k}) "\n'
                '                                     f"to match x {tuple(x.shape)}, got {tuple(t.shape)}")\n',
                "                    pass\n",
            )
        ],
    ),
    # Exercise 8.4
    cells.rotary_halves,
    Variant(
        "rotary_embedding",
        "the sine's sign swapped (rotates by -angle)",
        replace=[
            ("y[..., 0::2] = x_even * cos - x_odd * sin", "y[..., 0::2] = x_even * cos + x_odd * sin"),
            ("y[..., 1::2] = x_even * sin + x_odd * cos", "y[..., 1::2] = -x_even * sin + x_odd * cos"),
        ],
    ),
    Variant(
        "rotary_embedding",
        "angle p * base^(-i/d) with i the pair's index (frequencies fall half as fast)",
        replace=[
            (
                "frequencies = base ** (-torch.arange(0, d, 2, dtype=table, device=x.device) / d)",
                "frequencies = base ** (-torch.arange(0, d // 2, dtype=table, device=x.device) / d)",
            )
        ],
    ),
    Variant(
        "rotary_embedding",
        "cos and sin swapped",
        replace=[
            (
                "cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)",
                "cos, sin = torch.sin(angles).to(x.dtype), torch.cos(angles).to(x.dtype)",
            )
        ],
    ),
    Variant(
        "rotary_embedding",
        "ignores `positions` and uses 0 .. T-1",
        replace=[
            (
                "angles = positions.to(x.device, table)[:, None] * frequencies",
                "angles = torch.arange(x.shape[-2], device=x.device, dtype=table)[:, None] * frequencies",
            )
        ],
    ),
    Variant(
        "rotary_embedding",
        "turns position p by (p + 1) * frequency (positions counted from 1)",
        replace=[
            (
                "angles = positions.to(x.device, table)[:, None] * frequencies",
                "angles = (positions.to(x.device, table)[:, None] + 1) * frequencies",
            )
        ],
    ),
    Variant(
        "rotary_embedding",
        "writes the result into x itself (the odd entries then use the rotated even ones)",
        replace=[("y = torch.empty_like(x)", "y = x")],
    ),
]

VALID = [
    cells.tiled_query_tiles,
    cells.tiled_float64_inside,
    cells.tiled_split,
    Variant(
        "tiled_attention",
        "no in-place operations (new tensors for the scaled, masked and exponentiated block)",
        replace=[
            ("scores = (Q @ K_j.transpose(-2, -1)).mul_(scale)", "scores = (Q @ K_j.transpose(-2, -1)) * scale"),
            ("scores.masked_fill_(cols > rows, -math.inf)", "scores = scores.masked_fill(cols > rows, -math.inf)"),
            ("weights = scores.sub_(m_new[..., None]).exp_()", "weights = torch.exp(scores - m_new[..., None])"),
        ],
    ),
    Variant(
        "tiled_attention",
        "einsum for both products",
        replace=[
            (
                "scores = (Q @ K_j.transpose(-2, -1)).mul_(scale)",
                'scores = torch.einsum("...qd,...kd->...qk", Q, K_j).mul_(scale)',
            ),
            (
                "O = O * correction[..., None] + weights @ V_j",
                'O = O * correction[..., None] + torch.einsum("...qk,...kv->...qv", weights, V_j)',
            ),
        ],
    ),
    cells.backward_preallocated,
    cells.backward_float64_inside,
    cells.kv_sdpa,
    cells.kv_einsum,
    cells.rotary_complex,
    cells.rotary_loops,
    cells.rotary_stack,
]

# ----------------------------------------------------------------------------------------------
# More answers, written as an examiner would: other students' correct ways (loops over heads,
# logsumexp merging, chunk / unfold blocks, preallocated caches, rotation matrices...), their
# mistakes (off-by-one masks, log2, dropped last block...), and shortcuts that get the values
# right by calling PyTorch's own fused attention kernel or by hiding the computation.
# ----------------------------------------------------------------------------------------------


WRONG += [
    # Exercise 8.1
    cells.tiled_sdpa_whole,
    cells.tiled_blocks_concatenated,
    Variant(
        "tiled_attention",
        "causal mask off by one the other way (key j allowed iff j <= i + 1)",
        replace=[("scores.masked_fill_(cols > rows, -math.inf)", "scores.masked_fill_(cols > rows + 1, -math.inf)")],
    ),
    cells.tiled_query_tiles_local_rows,
    Variant(
        "tiled_attention",
        "L in base 2 (m / ln 2 + log2 of the normaliser) instead of the natural logsumexp",
        replace=[
            (
                "return O / ell[..., None], m + torch.log(ell)",
                "return O / ell[..., None], m / math.log(2) + torch.log2(ell)",
            )
        ],
    ),
    Variant(
        "tiled_attention",
        "running maximum started at 0 instead of -inf (rows whose scores are all far below 0 underflow)",
        replace=[
            (
                "m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype, device=Q.device)",
                "m = torch.zeros(Q.shape[:-1], dtype=Q.dtype, device=Q.device)",
            )
        ],
    ),
    Variant(
        "tiled_attention",
        "rescales by exp(m_new - m_old) instead of exp(m_old - m_new)",
        replace=[("correction = torch.exp(m - m_new)", "correction = torch.exp(m_new - m)")],
    ),
    Variant(
        "tiled_attention",
        "drops the last, shorter block (range(0, T_k - block_size + 1, block_size))",
        replace=[
            ("for start in range(0, T_k, block_size):", "for start in range(0, T_k - block_size + 1, block_size):")
        ],
    ),
    Variant(
        "tiled_attention",
        "masks the future with 0 instead of -inf",
        replace=[("scores.masked_fill_(cols > rows, -math.inf)", "scores.masked_fill_(cols > rows, 0.0)")],
    ),
    Variant(
        "tiled_attention",
        "scales Q in place (Q.mul_(scale)): the caller's Q changes",
        replace=[
            (
                "scores = (Q @ K_j.transpose(-2, -1)).mul_(scale)",
                "scores = Q @ K_j.transpose(-2, -1)",
            ),
            (
                "    for start in range(0, T_k, block_size):\n",
                "    Q.mul_(scale)\n    for start in range(0, T_k, block_size):\n",
            ),
        ],
    ),
    Variant(
        "tiled_attention",
        "no check that the shapes fit (d_k of Q and K differ: torch's RuntimeError instead of a ValueError)",
        replace=[
            (
                '    if K.shape[-1] != Q.shape[-1] or V.shape[-2] != K.shape[-2]:\n        raise ValueError(f"Q (..., T_q, d_k), K (..., T_k, d_k) and V (..., T_k, d_v) do not fit: "\n                         f"{tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")\n',
                "",
            )
        ],
    ),
    Variant(
        "tiled_attention",
        "no check that K and V hold the same number of keys (d_k checked; torch's RuntimeError, or V's extra rows ignored)",
        replace=[
            (
                "if K.shape[-1] != Q.shape[-1] or V.shape[-2] != K.shape[-2]:",
                "if K.shape[-1] != Q.shape[-1]:",
            )
        ],
    ),
    Variant(
        "tiled_attention",
        "no check of the leading dimensions (K and V of batch 1 broadcast against Q's batch 2 without a word)",
        replace=[
            (
                "if Q.dim() < 2 or Q.shape[:-2] != K.shape[:-2] or Q.shape[:-2] != V.shape[:-2]:",
                "if Q.dim() < 2:",
            )
        ],
    ),
    cells.tiled_recording_off,
    cells.tiled_numpy,
    # Exercise 8.2
    cells.backward_sdpa_autograd,
    Variant(
        "tiled_attention_backward",
        "dK and dV swapped",
        replace=[
            (
                "return dQ, torch.cat(dK_blocks, dim=-2), torch.cat(dV_blocks, dim=-2)",
                "return dQ, torch.cat(dV_blocks, dim=-2), torch.cat(dK_blocks, dim=-2)",
            )
        ],
    ),
    Variant(
        "tiled_attention_backward",
        "D from the block only (rowsum(A_j * dA_j)) instead of rowsum(dO * O)",
        replace=[
            (
                "d_scores = weights * (d_weights - D[..., None])",
                "d_scores = weights * (d_weights - (weights * d_weights).sum(dim=-1, keepdim=True))",
            )
        ],
    ),
    Variant(
        "tiled_attention_backward",
        "dQ overwritten by each block instead of accumulated",
        replace=[("dQ = dQ + (d_scores @ K_j) * scale", "dQ = (d_scores @ K_j) * scale")],
    ),
    Variant(
        "tiled_attention_backward",
        "causal mask off by one in the backward pass (key j allowed iff j < i)",
        replace=[
            (
                "            scores = scores.masked_fill(cols > rows, -math.inf)\n",
                "            scores = scores.masked_fill(cols >= rows, -math.inf)\n",
            )
        ],
    ),
    Variant(
        "tiled_attention_backward",
        "no check of O, L and dO's shapes (a dO that does not fit gives torch's RuntimeError)",
        replace=[
            (
                '    if tuple(O.shape) != out_shape or tuple(dO.shape) != out_shape:\n        raise ValueError(f"O and dO must have shape {out_shape} (..., T_q, d_v), got {tuple(O.shape)} and {tuple(dO.shape)}")\n',
                "",
            )
        ],
    ),
    Variant(
        "tiled_attention_backward",
        "checks dO's shape but not O's (an O of one row broadcasts in rowsum(dO * O))",
        replace=[
            (
                "if tuple(O.shape) != out_shape or tuple(dO.shape) != out_shape:",
                "if tuple(dO.shape) != out_shape:",
            )
        ],
    ),
    Variant(
        "tiled_attention_backward",
        "no check of L's shape (an L without the leading dimensions broadcasts in exp(E_j - L))",
        replace=[
            (
                '    if tuple(L.shape) != tuple(Q.shape[:-1]):\n        raise ValueError(f"L must have shape {tuple(Q.shape[:-1])} (..., T_q), got {tuple(L.shape)}")\n',
                "",
            )
        ],
    ),
    Variant(
        "tiled_attention_backward",
        "no check that K and V hold the same number of keys (torch's RuntimeError instead of a ValueError)",
        replace=[
            (
                "if K.shape[-1] != Q.shape[-1] or V.shape[-2] != K.shape[-2]:",
                "if K.shape[-1] != Q.shape[-1]:",
            )
        ],
    ),
    Variant(
        "tiled_attention_backward",
        "no check of the leading dimensions (K and V of batch 1 broadcast against Q's batch 2: dK and dV of the wrong shape)",
        replace=[
            (
                "if Q.dim() < 2 or Q.shape[:-2] != K.shape[:-2] or Q.shape[:-2] != V.shape[:-2]:",
                "if Q.dim() < 2:",
            )
        ],
    ),
    # Exercise 8.3
    cells.kv_never_appends,
    Variant(
        "KVCacheSelfAttention",
        "returns only the new tokens' keys and values as the new cache",
        replace=[("return y, (K, V)", "return y, (heads(k), heads(v))")],
    ),
    Variant(
        "KVCacheSelfAttention",
        "appends the new keys to the cache but not the new values (PyTorch's shape error inside the attention)",
        replace=[("V = torch.cat([V_past, heads(v)], dim=2)", "V = V_past")],
    ),
    Variant(
        "KVCacheSelfAttention",
        "checks the cache's batch and number of heads, not its head size (torch.cat's RuntimeError for d_k 6 instead of 4)",
        replace=[
            (
                "if t.dim() != 4 or tuple(t.shape[:2]) != (B, H) or t.shape[3] != d_k:",
                "if t.dim() != 4 or tuple(t.shape[:2]) != (B, H):",
            )
        ],
    ),
    Variant(
        "KVCacheSelfAttention",
        "bottom-right mask off by one (new token t also sees key T_past + t + 1)",
        replace=[
            (
                "scores = scores.masked_fill(key_positions > new_positions, -math.inf)",
                "scores = scores.masked_fill(key_positions > new_positions + 1, -math.inf)",
            )
        ],
    ),
    Variant(
        "KVCacheSelfAttention",
        "softmax over the queries (dim=-2) instead of the keys",
        replace=[("out = torch.softmax(scores, dim=-1) @ V", "out = torch.softmax(scores, dim=-2) @ V")],
    ),
    Variant(
        "KVCacheSelfAttention",
        "reads in_proj_weight's rows as K, Q, V instead of Q, K, V",
        replace=[
            (
                "q, k, v = F.linear(x, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1)",
                "k, q, v = F.linear(x, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1)",
            )
        ],
    ),
    Variant(
        "KVCacheSelfAttention",
        "out_proj without its bias (F.linear with out_proj.weight only)",
        replace=[
            (
                "y = self.out_proj(out.transpose(1, 2).reshape(B, T_new, self.embed_dim))",
                "y = F.linear(out.transpose(1, 2).reshape(B, T_new, self.embed_dim), self.out_proj.weight)",
            )
        ],
    ),
    cells.kv_mask_buffer,
    # Exercise 8.4
    Variant(
        "rotary_embedding",
        "angle p * base^(-2(i+1)/d): the pair index off by one",
        replace=[
            (
                "frequencies = base ** (-torch.arange(0, d, 2, dtype=table, device=x.device) / d)",
                "frequencies = base ** (-torch.arange(2, d + 2, 2, dtype=table, device=x.device) / d)",
            )
        ],
    ),
    Variant(
        "rotary_embedding",
        "angle p * base^(+2i/d) (the exponent's sign)",
        replace=[
            (
                "frequencies = base ** (-torch.arange(0, d, 2, dtype=table, device=x.device) / d)",
                "frequencies = base ** (torch.arange(0, d, 2, dtype=table, device=x.device) / d)",
            )
        ],
    ),
    Variant(
        "rotary_embedding",
        "ignores the base argument (always 10000)",
        replace=[
            (
                "frequencies = base ** (-torch.arange(0, d, 2, dtype=table, device=x.device) / d)",
                "frequencies = 10000.0 ** (-torch.arange(0, d, 2, dtype=table, device=x.device) / d)",
            )
        ],
    ),
    cells.rotary_repeat_not_interleave,
    Variant(
        "rotary_embedding",
        "no check of positions' shape (torch's RuntimeError, or silent broadcasting, instead of a ValueError)",
        replace=[
            (
                '    if positions.dim() != 1 or positions.shape[0] != x.shape[-2]:\n        raise ValueError(f"positions must have shape (T,) = ({x.shape[-2]},) to match x {tuple(x.shape)}, "\n                         f"got {tuple(positions.shape)}")\n',
                "",
            )
        ],
    ),
]

VALID += [
    cells.tiled_logsumexp_merge,
    Variant(
        "tiled_attention",
        "divides at every step (the running output kept normalised)",
        replace=[
            (
                "        ell = ell * correction + weights.sum(dim=-1)\n        O = O * correction[..., None] + weights @ V_j\n",
                "        ell_new = ell * correction + weights.sum(dim=-1)\n"
                "        O = (O * (ell * correction)[..., None] + weights @ V_j) / ell_new[..., None]\n"
                "        ell = ell_new\n",
            ),
            ("return O / ell[..., None], m + torch.log(ell)", "return O, m + torch.log(ell)"),
        ],
    ),
    cells.tiled_chunk_triu,
    cells.tiled_loop_over_heads,
    Variant(
        "tiled_attention",
        "masks with torch.finfo(dtype).min instead of -inf",
        replace=[
            (
                "scores.masked_fill_(cols > rows, -math.inf)",
                "scores.masked_fill_(cols > rows, torch.finfo(scores.dtype).min)",
            )
        ],
    ),
    cells.tiled_sdpa_per_block,
    cells.tiled_unfold_padded,
    cells.backward_query_tiles,
    cells.backward_recomputes_forward,
    Variant(
        "tiled_attention_backward",
        "masks with a large finite negative number (-1e30) through torch.where",
        replace=[
            (
                "            scores = scores.masked_fill(cols > rows, -math.inf)\n",
                "            scores = torch.where(cols > rows, torch.tensor(-1e30, dtype=scores.dtype), scores)\n",
            )
        ],
    ),
    cells.kv_preallocated,
    cells.kv_loop_over_heads,
    cells.kv_float64_inside,
    cells.rotary_repeat_interleave,
    cells.rotary_matrices,
    cells.rotary_exp_log_float32,
    cells.rotary_polar_float64,
]


WRONG += [
    Variant(
        "KVCacheSelfAttention",
        "checks only the cache's batch size (a cache with other heads gives torch.cat's RuntimeError)",
        replace=[
            (
                "if t.dim() != 4 or tuple(t.shape[:2]) != (B, H) or t.shape[3] != d_k:",
                "if t.shape[0] != B:",
            )
        ],
    ),
]

VALID += [
    cells.kv_subclass_mha,
    cells.kv_remembers_last_cache,
]


WRONG += [
    cells.tiled_memoised,
]

VALID += [
    cells.rotary_cached_tables,
]

WRONG += [
    Variant(
        "KVCacheSelfAttention",
        "F.scaled_dot_product_attention with is_causal=True over the cached and new keys (top-left, as the statement warns)",
        replace=[
            (
                "        scores = heads(q) @ K.transpose(-2, -1) / math.sqrt(d_k)                # (B, H, T_new, T_past + T_new)\n",
                "        out = F.scaled_dot_product_attention(heads(q), K, V, is_causal=True)\n"
                "        return self.out_proj(out.transpose(1, 2).reshape(B, T_new, self.embed_dim)), (K, V)\n"
                "        scores = heads(q) @ K.transpose(-2, -1) / math.sqrt(d_k)                # (B, H, T_new, T_past + T_new)\n",
            )
        ],
    ),
    Variant(
        "rotary_embedding",
        "exponent -2 * (2i) / d: the even index 2i taken for i (arange(0, d, 2) doubled)",
        replace=[
            (
                "frequencies = base ** (-torch.arange(0, d, 2, dtype=table, device=x.device) / d)",
                "frequencies = base ** (-2 * torch.arange(0, d, 2, dtype=table, device=x.device) / d)",
            )
        ],
    ),
]

# ----------------------------------------------------------------------------------------------
# Exercise 8.5, beam_search (issue 31, section 1)
# ----------------------------------------------------------------------------------------------


WRONG += [
    Variant(
        "beam_search",
        "starts with beam_size copies of the empty hypothesis (the first step keeps the same extension several times)",
        replace=[
            (
                "    last_tokens = torch.tensor([bos_id])\n",
                "    last_tokens = torch.full((beam_size,), bos_id)\n"
                "    hypotheses = [[] for _ in range(beam_size)]\n"
                "    state = reorder(state, torch.zeros(beam_size, dtype=torch.long))\n",
            ),
            ("            scores = log_probs.new_zeros(1)\n", "            scores = log_probs.new_zeros(beam_size)\n"),
        ],
    ),
    Variant(
        "beam_search",
        "top-k of each row, then the first beam_size of them in row order (not the best over the whole beam)",
        replace=[
            (
                "        best, flat = candidates.topk(min(beam_size, candidates.numel()))     # the beam_size best of them all\n",
                "        per_row, words_per_row = (scores[:, None] + log_probs).topk(min(beam_size, n_vocab), dim=-1)\n"
                "        best = per_row.reshape(-1)[:beam_size]\n"
                "        flat = (torch.arange(len(scores))[:, None] * n_vocab + words_per_row).reshape(-1)[:beam_size]\n",
            )
        ],
    ),
    Variant(
        "beam_search",
        "the state is never reordered (row k of the state no longer belongs to hypothesis k)",
        replace=[
            (
                "        state = reorder(state, rows[keep])                  # row k of the state follows hypothesis k\n",
                "",
            )
        ],
    ),
    Variant(
        "beam_search",
        "the state reordered with the positions of the kept extensions in the top-k, not with the rows they extend",
        replace=[("state = reorder(state, rows[keep])", "state = reorder(state, keep)")],
    ),
    Variant(
        "beam_search",
        "the state reordered with the rows of every kept extension, the finished ones included",
        replace=[("state = reorder(state, rows[keep])", "state = reorder(state, rows)")],
    ),
    Variant(
        "beam_search",
        "a hypothesis that takes eos_id stays live and is extended (finished only at max_len)",
        replace=[("            if word == eos_id or t == max_len:\n", "            if t == max_len:\n")],
    ),
    Variant(
        "beam_search",
        "finished hypotheses keep their places: each step keeps beam_size minus the number finished (a shrinking beam)",
        replace=[
            (
                "candidates.topk(min(beam_size, candidates.numel()))",
                "candidates.topk(max(0, min(beam_size - len(finished), candidates.numel())))",
            )
        ],
    ),
    Variant(
        "beam_search",
        "normalises while pruning: the running score is divided by t ** alpha at every step",
        replace=[
            (
                "        candidates = (scores[:, None] + log_probs).reshape(-1)                # (K * n_vocab,): every extension\n",
                "        candidates = ((scores[:, None] + log_probs) / t**alpha).reshape(-1)\n",
            )
        ],
    ),
    Variant(
        "beam_search",
        "returns the normalised score instead of the raw sum of log-probabilities",
        replace=[("    return tokens, score", "    return tokens, score / len(tokens) ** alpha")],
    ),
    Variant(
        "beam_search",
        "alpha ignored: the result is always the highest raw score",
        replace=[("key=lambda f: f[1] / len(f[0]) ** alpha", "key=lambda f: f[1]")],
    ),
    Variant(
        "beam_search",
        "the length n for the normalisation does not count eos_id",
        replace=[
            (
                "key=lambda f: f[1] / len(f[0]) ** alpha",
                "key=lambda f: f[1] / max(1, len(f[0]) - (f[0][-1] == eos_id)) ** alpha",
            )
        ],
    ),
    Variant(
        "beam_search",
        "max_len off by one: the kept extensions finish at t == max_len - 1",
        replace=[
            ("            if word == eos_id or t == max_len:\n", "            if word == eos_id or t == max_len - 1:\n")
        ],
    ),
    Variant(
        "beam_search",
        "max_len off by one: the steps run t = 0 .. max_len (one step too many)",
        replace=[("    for t in range(1, max_len + 1):\n", "    for t in range(0, max_len + 1):\n")],
    ),
    Variant(
        "beam_search",
        "extensions ranked by the new token's log-probability only (the hypothesis's score not added; greedy still right)",
        replace=[
            (
                "        candidates = (scores[:, None] + log_probs).reshape(-1)                # (K * n_vocab,): every extension\n",
                "        candidates = log_probs.reshape(-1)\n",
            )
        ],
    ),
    Variant(
        "beam_search",
        "bos_id kept at the start of the returned tokens",
        replace=[("    hypotheses = [[]]   ", "    hypotheses = [[bos_id]]")],
    ),
    Variant(
        "beam_search",
        "no ValueError for a negative alpha (the input check left out)",
        replace=[
            (
                '    if alpha < 0:\n        raise ValueError(f"alpha (the length-normalisation exponent) must be >= 0, got {alpha}")\n',
                "",
            )
        ],
    ),
]

VALID += [
    cells.beam_python_loops,
    cells.beam_heap,
    Variant(
        "beam_search",
        "scores accumulated in float64",
        replace=[
            (
                "            scores = log_probs.new_zeros(1)\n",
                "            scores = torch.zeros(1, dtype=torch.float64, device=log_probs.device)\n",
            ),
            (
                "candidates = (scores[:, None] + log_probs).reshape(-1)",
                "candidates = (scores[:, None] + log_probs.double()).reshape(-1)",
            ),
        ],
    ),
    Variant(
        "beam_search",
        "a full descending sort instead of topk",
        replace=[
            (
                "        best, flat = candidates.topk(min(beam_size, candidates.numel()))     # the beam_size best of them all\n",
                "        best, flat = candidates.sort(descending=True)\n        best, flat = best[:beam_size], flat[:beam_size]\n",
            )
        ],
    ),
    Variant(
        "beam_search",
        "reorder called with an empty index before stopping (the contract allows it)",
        replace=[
            (
                "        if not keep:\n            break\n        keep = torch.tensor(keep, device=log_probs.device)\n",
                "        keep = torch.tensor(keep, dtype=torch.long, device=log_probs.device)\n",
            ),
            (
                "        state = reorder(state, rows[keep])                  # row k of the state follows hypothesis k\n",
                "        state = reorder(state, rows[keep])                  # row k of the state follows hypothesis k\n"
                "        if len(keep) == 0:\n            break\n",
            ),
        ],
    ),
]
