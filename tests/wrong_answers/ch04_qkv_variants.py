"""Chapter 04: the likeliest wrong answers to Exercises 4.1-4.12, and other correct ways to write them."""

from wrong_answers import Variant
from wrong_answers.cells import ch04 as cells

DOT = "return q @ k.transpose(-2, -1)  # (B, T_q, d_k) @ (B, d_k, T_k)"
GENERAL = "return (q @ W) @ k.transpose(-2, -1)"
ADDITIVE = "return torch.tanh(projected_q + projected_k) @ v"
SCALE = "scores = dot_score(q, k) / math.sqrt(k.shape[-1])"
MASK_FILL = 'scores = scores.masked_fill(~mask, float("-inf"))'
SOFTMAX = "weights = torch.softmax(scores, dim=-1)"
CAUSAL = "return torch.ones(T, T, dtype=torch.bool).tril()"
PADDING = "return positions[None, :] < lengths[:, None]"
SELF_WEIGHTS = "weights = torch.softmax(dot_score(X, X), dim=-1)"
SELF_OUT = "return weights @ X, weights  # (B, T, d), (B, T, T)"
QKV_FORWARD = "return scaled_dot_product_attention(self.q_proj(x), self.k_proj(x), self.v_proj(x), mask)"
SPLIT = "return x.reshape(B, x.shape[1], n_heads, d_model // n_heads).transpose(1, 2)"
MERGE = "concatenated = heads.transpose(1, 2).reshape(B, T_q, d_model)"
MHA_RETURN = "return self.out_proj(concatenated), weights.mean(dim=1)"
MHA_COMBINE = "mask = attn_mask if mask is None else mask & attn_mask  # broadcasts to (B, 1, T_q, T_k)"
LOGITS = "logits = torch.cat([embedded, hidden], dim=-1) @ W_attn.T + b_attn  # (B, L)"
CONTEXT = "context = (weights[:, None, :] @ encoder_outputs)[:, 0, :]  # (B, 1, L) @ (B, L, d) -> (B, d)"
SQUEEZE = "squeezed = x.mean(dim=(2, 3))  # (B, C)"
EXCITE = "z = torch.sigmoid(torch.relu(squeezed @ W1.T) @ W2.T)  # (B, C)"
POOLED = (
    "pooled = torch.cat([x.mean(dim=1, keepdim=True), x.amax(dim=1, keepdim=True)], dim=1)  # (B, 2, height, width)"
)
GATE = "m = torch.sigmoid(conv(pooled))  # (B, 1, height, width)"

WRONG = [
    # Exercise 4.1, dot_score
    Variant(
        "dot_score", "k q^T: the scores transposed, (B, T_k, T_q)", replace=[(DOT, "return k @ q.transpose(-2, -1)")]
    ),
    Variant(
        "dot_score",
        "divided by sqrt(d_k) (the scaled score of Exercise 4.4)",
        replace=[(DOT, "return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])")],
    ),
    Variant(
        "dot_score",
        "elementwise q * k summed: pairs (i, i) only",
        replace=[(DOT, "return (q * k).sum(-1, keepdim=True)")],
    ),
    Variant(
        "dot_score",
        "computed in float32 whatever the inputs' dtype",
        replace=[(DOT, "return q.float() @ k.float().transpose(-2, -1)")],
    ),
    Variant("dot_score", "k.T on a 3-D tensor (reverses every axis)", replace=[(DOT, "return q @ k.T")]),
    # Exercise 4.2, general_score
    Variant("general_score", "W transposed: q W^T k", replace=[(GENERAL, "return (q @ W.T) @ k.transpose(-2, -1)")]),
    Variant("general_score", "W left out (the dot score)", replace=[(GENERAL, "return q @ k.transpose(-2, -1)")]),
    Variant(
        "general_score",
        "W applied to the keys from the wrong side: q (k W)^T",
        replace=[(GENERAL, "return q @ (k @ W).transpose(-2, -1)")],
    ),
    Variant(
        "general_score",
        "divided by sqrt(d_k)",
        replace=[(GENERAL, "return (q @ W) @ k.transpose(-2, -1) / math.sqrt(k.shape[-1])")],
    ),
    # Exercise 4.3, additive_score
    Variant(
        "additive_score",
        "tanh of each projection separately, then added (the tanh must act on the sum)",
        replace=[(ADDITIVE, "return (torch.tanh(projected_q) + torch.tanh(projected_k)) @ v")],
    ),
    Variant(
        "additive_score",
        "v applied before the tanh",
        replace=[(ADDITIVE, "return torch.tanh((projected_q + projected_k) @ v)")],
    ),
    Variant(
        "additive_score",
        "the d_a features summed instead of weighted by v",
        replace=[(ADDITIVE, "return torch.tanh(projected_q + projected_k).sum(-1)")],
    ),
    Variant(
        "additive_score",
        "projections without the transpose (q @ W_q)",
        replace=[("(q @ W_q.T)", "(q @ W_q)"), ("(k @ W_k.T)", "(k @ W_k)")],
    ),
    Variant(
        "additive_score",
        "query and key axes swapped: (B, T_k, T_q)",
        replace=[(ADDITIVE, "return (torch.tanh(projected_q + projected_k) @ v).transpose(1, 2)")],
    ),
    # Exercise 4.4, scaled_dot_product_attention
    Variant(
        "scaled_dot_product_attention",
        "divided by d_k, not sqrt(d_k)",
        replace=[(SCALE, "scores = dot_score(q, k) / k.shape[-1]")],
    ),
    Variant(
        "scaled_dot_product_attention",
        "scaled by sqrt(d_v), the size of the values",
        replace=[(SCALE, "scores = dot_score(q, k) / math.sqrt(v.shape[-1])")],
    ),
    Variant(
        "scaled_dot_product_attention",
        "mask not inverted: -inf where the mask is True",
        replace=[(MASK_FILL, 'scores = scores.masked_fill(mask, float("-inf"))')],
    ),
    Variant(
        "scaled_dot_product_attention",
        "masked weights zeroed after the softmax (rows no longer sum to 1)",
        replace=[
            (MASK_FILL, "pass"),
            (
                SOFTMAX,
                "weights = torch.softmax(scores, dim=-1)\n    if mask is not None:\n        weights = weights * mask",
            ),
        ],
    ),
    Variant(
        "scaled_dot_product_attention",
        "softmax over the queries (dim=-2)",
        replace=[(SOFTMAX, "weights = torch.softmax(scores, dim=-2)")],
    ),
    Variant(
        "scaled_dot_product_attention",
        "masked scores set to 0 instead of -inf",
        replace=[(MASK_FILL, "scores = scores.masked_fill(~mask, 0.0)")],
    ),
    # Exercise 4.5, causal_mask
    Variant(
        "causal_mask",
        "triu: True above the diagonal (the future)",
        replace=[(CAUSAL, "return torch.ones(T, T, dtype=torch.bool).triu()")],
    ),
    Variant(
        "causal_mask",
        "strictly below the diagonal (a token may not attend to itself)",
        replace=[(CAUSAL, "return torch.ones(T, T, dtype=torch.bool).tril(-1)")],
    ),
    Variant("causal_mask", "a float mask of ones and zeros", replace=[(CAUSAL, "return torch.ones(T, T).tril()")]),
    Variant(
        "causal_mask",
        "PyTorch's convention: True where attention is NOT allowed",
        replace=[(CAUSAL, "return ~torch.ones(T, T, dtype=torch.bool).tril()")],
    ),
    # Exercise 4.6, padding_mask
    Variant(
        "padding_mask",
        "<= instead of <: one padding position too many",
        replace=[(PADDING, "return positions[None, :] <= lengths[:, None]")],
    ),
    Variant(
        "padding_mask",
        "inverted: True at the padding",
        replace=[(PADDING, "return positions[None, :] >= lengths[:, None]")],
    ),
    Variant(
        "padding_mask",
        "an integer mask (0/1)",
        replace=[(PADDING, "return (positions[None, :] < lengths[:, None]).long()")],
    ),
    Variant("padding_mask", "transposed: (T, B)", replace=[(PADDING, "return positions[:, None] < lengths[None, :]")]),
    Variant(
        "padding_mask",
        "the longest length instead of T",
        replace=[
            ("positions = torch.arange(T, device=lengths.device)", "positions = torch.arange(int(lengths.max()))")
        ],
    ),
    # Exercise 4.7, self_attention
    Variant(
        "self_attention",
        "scaled by sqrt(d) (the table's variant 3 is unscaled)",
        replace=[(SELF_WEIGHTS, "weights = torch.softmax(dot_score(X, X) / math.sqrt(X.shape[-1]), dim=-1)")],
    ),
    Variant(
        "self_attention",
        "softmax over the queries (dim=1): columns sum to 1",
        replace=[(SELF_WEIGHTS, "weights = torch.softmax(dot_score(X, X), dim=1)")],
    ),
    Variant("self_attention", "out = weights^T X", replace=[(SELF_OUT, "return weights.transpose(1, 2) @ X, weights")]),
    Variant(
        "self_attention",
        "X^T X (features against features) instead of X X^T",
        replace=[
            (SELF_WEIGHTS, "weights = torch.softmax(X.transpose(1, 2) @ X, dim=-1)"),
            (SELF_OUT, "return X @ weights, weights"),
        ],
    ),
    Variant(
        "self_attention",
        "returns the scores, not the softmax weights",
        replace=[(SELF_WEIGHTS, "weights = dot_score(X, X)")],
    ),
    # Exercise 4.8, SelfAttentionQKV
    Variant(
        "SelfAttentionQKV",
        "unscaled scores (self_attention's softmax of q k^T)",
        replace=[
            (
                QKV_FORWARD,
                "q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)\n"
                "        scores = q @ k.transpose(-2, -1)\n"
                "        if mask is not None:\n"
                "            scores = scores.masked_fill(~mask, float('-inf'))\n"
                "        weights = torch.softmax(scores, dim=-1)\n"
                "        return weights @ v, weights",
            )
        ],
    ),
    Variant(
        "SelfAttentionQKV",
        "scaled by sqrt(d_model) instead of sqrt(d_k)",
        replace=[
            (
                QKV_FORWARD,
                "q = self.q_proj(x) * math.sqrt(self.k_proj.out_features / x.shape[-1])\n"
                "        return scaled_dot_product_attention(q, self.k_proj(x), self.v_proj(x), mask)",
            )
        ],
    ),
    Variant(
        "SelfAttentionQKV",
        "projections with a bias (nn.Linear's default)",
        replace=[
            ("self.q_proj = nn.Linear(d_model, d_k, bias=False)", "self.q_proj = nn.Linear(d_model, d_k)"),
            ("self.k_proj = nn.Linear(d_model, d_k, bias=False)", "self.k_proj = nn.Linear(d_model, d_k)"),
            ("self.v_proj = nn.Linear(d_model, d_v, bias=False)", "self.v_proj = nn.Linear(d_model, d_v)"),
        ],
    ),
    Variant(
        "SelfAttentionQKV",
        "the mask not passed on",
        replace=[(QKV_FORWARD, "return scaled_dot_product_attention(self.q_proj(x), self.k_proj(x), self.v_proj(x))")],
    ),
    Variant(
        "SelfAttentionQKV",
        "keys projected with q_proj",
        replace=[
            (QKV_FORWARD, "return scaled_dot_product_attention(self.q_proj(x), self.q_proj(x), self.v_proj(x), mask)")
        ],
    ),
    # Exercise 4.9, MultiHeadAttention
    Variant(
        "MultiHeadAttention",
        "heads split by reshaping (B, T, d_model) straight to (B, n_heads, T, d_k)",
        replace=[(SPLIT, "return x.reshape(B, n_heads, x.shape[1], d_model // n_heads)")],
    ),
    Variant(
        "MultiHeadAttention",
        "heads merged by reshaping (B, n_heads, T_q, d_k) straight to (B, T_q, d_model)",
        replace=[(MERGE, "concatenated = heads.reshape(B, T_q, d_model)")],
    ),
    Variant(
        "MultiHeadAttention",
        "each head scaled by sqrt(d_model) instead of sqrt(d_k)",
        replace=[("q = split_heads(self.q_proj(query))", "q = split_heads(self.q_proj(query)) / math.sqrt(n_heads)")],
    ),
    Variant(
        "MultiHeadAttention",
        "per-head weights returned, not averaged",
        replace=[(MHA_RETURN, "return self.out_proj(concatenated), weights")],
    ),
    Variant(
        "MultiHeadAttention",
        "head weights summed instead of averaged",
        replace=[(MHA_RETURN, "return self.out_proj(concatenated), weights.sum(dim=1)")],
    ),
    Variant(
        "MultiHeadAttention",
        "no output projection",
        replace=[(MHA_RETURN, "return concatenated, weights.mean(dim=1)")],
    ),
    Variant(
        "MultiHeadAttention",
        "key padding mask in PyTorch's convention (True = ignore)",
        replace=[
            (
                "mask = key_padding_mask[:, None, None, :]  # (B, 1, 1, T_k)",
                "mask = ~key_padding_mask[:, None, None, :]",
            )
        ],
    ),
    Variant(
        "MultiHeadAttention",
        "attn_mask ignored",
        replace=[("mask = attn_mask if mask is None else mask & attn_mask", "pass")],
    ),
    Variant(
        "MultiHeadAttention",
        "keys and values split with the queries' length (x.reshape(B, T_q, ...)): self-attention only",
        replace=[(SPLIT, "return x.reshape(B, T_q, n_heads, d_model // n_heads).transpose(1, 2)")],
    ),
    Variant(
        "MultiHeadAttention",
        "masks combined with | instead of &",
        replace=[(MHA_COMBINE, "mask = attn_mask if mask is None else mask | attn_mask")],
    ),
    Variant(
        "MultiHeadAttention",
        "attn_mask replaces the key padding mask",
        replace=[(MHA_COMBINE, "mask = attn_mask")],
    ),
    Variant(
        "MultiHeadAttention",
        "each head scaled by sqrt(T) (a scaled_dot_product_attention that took d_k from q.shape[2])",
        replace=[
            (
                "heads, weights = scaled_dot_product_attention(q, k, v, mask)",
                "heads, weights = scaled_dot_product_attention("
                "q * math.sqrt(d_model // n_heads / q.shape[2]), k, v, mask)",
            )
        ],
    ),
    # Exercise 4.10, tutorial_attention
    Variant(
        "tutorial_attention",
        "[hidden; embedded]: the order swapped",
        replace=[(LOGITS, "logits = torch.cat([hidden, embedded], dim=-1) @ W_attn.T + b_attn")],
    ),
    Variant(
        "tutorial_attention",
        "W_attn without the transpose",
        replace=[(LOGITS, "logits = torch.cat([embedded, hidden], dim=-1) @ W_attn + b_attn")],
    ),
    Variant(
        "tutorial_attention",
        "the bias left out",
        replace=[(LOGITS, "logits = torch.cat([embedded, hidden], dim=-1) @ W_attn.T")],
    ),
    Variant(
        "tutorial_attention",
        "softmax over the batch (dim=0)",
        replace=[("weights = torch.softmax(logits, dim=-1)", "weights = torch.softmax(logits, dim=0)")],
    ),
    Variant(
        "tutorial_attention",
        "context as weights @ encoder_outputs without the batch axis",
        replace=[(CONTEXT, "context = weights @ encoder_outputs")],
    ),
    # Exercise 4.11, channel_attention
    Variant(
        "channel_attention",
        "squeezed with the max instead of the mean",
        replace=[(SQUEEZE, "squeezed = x.amax(dim=(2, 3))")],
    ),
    Variant("channel_attention", "no ReLU", replace=[(EXCITE, "z = torch.sigmoid((squeezed @ W1.T) @ W2.T)")]),
    Variant(
        "channel_attention",
        "softmax over the channels instead of a sigmoid",
        replace=[(EXCITE, "z = torch.softmax(torch.relu(squeezed @ W1.T) @ W2.T, dim=-1)")],
    ),
    Variant(
        "channel_attention",
        "W1 and W2 without the transposes",
        replace=[(EXCITE, "z = torch.sigmoid(torch.relu(squeezed @ W1) @ W2)")],
    ),
    Variant(
        "channel_attention",
        "squeezed with the sum instead of the mean",
        replace=[(SQUEEZE, "squeezed = x.sum(dim=(2, 3))")],
    ),
    # Exercise 4.12, spatial_attention
    Variant(
        "spatial_attention",
        "max map first, mean map second",
        replace=[(POOLED, "pooled = torch.cat([x.amax(dim=1, keepdim=True), x.mean(dim=1, keepdim=True)], dim=1)")],
    ),
    Variant(
        "spatial_attention",
        "channel sum instead of the channel mean",
        replace=[(POOLED, "pooled = torch.cat([x.sum(dim=1, keepdim=True), x.amax(dim=1, keepdim=True)], dim=1)")],
    ),
    Variant("spatial_attention", "no sigmoid", replace=[(GATE, "m = conv(pooled)")]),
    Variant(
        "spatial_attention",
        "x.max(dim=1) used as a tensor (it returns values and indices)",
        replace=[("x.amax(dim=1, keepdim=True)", "x.max(dim=1, keepdim=True)")],
    ),
    Variant(
        "spatial_attention",
        "keepdim forgotten: the two (B, height, width) maps concatenated along height",
        replace=[(POOLED, "pooled = torch.cat([x.mean(dim=1), x.amax(dim=1)], dim=1)")],
    ),
]

VALID = [
    Variant("dot_score", "einsum", replace=[(DOT, "return torch.einsum('bid,bjd->bij', q, k)")]),
    Variant("dot_score", "torch.bmm with k.mT", replace=[(DOT, "return torch.bmm(q, k.mT)")]),
    Variant(
        "dot_score",
        "a loop over the keys",
        replace=[(DOT, "return torch.stack([(q * k[:, j : j + 1]).sum(-1) for j in range(k.shape[1])], dim=-1)")],
    ),
    Variant("general_score", "einsum", replace=[(GENERAL, "return torch.einsum('bia,ac,bjc->bij', q, W, k)")]),
    Variant(
        "general_score",
        "W applied to the keys: q (k W^T)^T",
        replace=[(GENERAL, "return q @ (k @ W.T).transpose(1, 2)")],
    ),
    cells.additive_score_loop_over_keys,
    Variant(
        "additive_score",
        "nn.functional.linear and einsum",
        replace=[
            ("(q @ W_q.T)", "nn.functional.linear(q, W_q)"),
            ("(k @ W_k.T)", "nn.functional.linear(k, W_k)"),
            (ADDITIVE, "return torch.einsum('bijd,d->bij', torch.tanh(projected_q + projected_k), v)"),
        ],
    ),
    cells.scaled_dot_product_large_negative_number_instead_inf,
    cells.scaled_dot_product_exponentials_hand_mask_multiplied,
    Variant(
        "causal_mask",
        "a comparison of aranges",
        replace=[(CAUSAL, "return torch.arange(T)[None, :] <= torch.arange(T)[:, None]")],
    ),
    cells.causal_mask_loop_filling_tensor,
    cells.padding_mask_loop_over_batch,
    Variant(
        "padding_mask",
        "expand and compare",
        replace=[(PADDING, "return positions.expand(len(lengths), T) < lengths.unsqueeze(1)")],
    ),
    cells.self_attention_einsum_softmax_written_exp,
    Variant(
        "self_attention",
        "through scaled_dot_product_attention, undoing the scale",
        replace=[
            (SELF_WEIGHTS + "\n    " + SELF_OUT, "return scaled_dot_product_attention(X * X.shape[-1] ** 0.5, X, X)")
        ],
    ),
    Variant(
        "SelfAttentionQKV",
        "torch's own scaled_dot_product_attention for out, the weights computed beside it",
        replace=[
            (
                QKV_FORWARD,
                "q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)\n"
                "        _, weights = scaled_dot_product_attention(q, k, v, mask)\n"
                "        return nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask), weights",
            )
        ],
    ),
    cells.self_attention_qkv_setattr,
    cells.multi_head_attention_loop_over_heads,
    cells.multi_head_attention_view_permute,
    Variant(
        "tutorial_attention",
        "nn.functional.linear and einsum",
        replace=[
            (LOGITS, "logits = nn.functional.linear(torch.cat([embedded, hidden], dim=1), W_attn, b_attn)"),
            (CONTEXT, "context = torch.einsum('bl,bld->bd', weights, encoder_outputs)"),
        ],
    ),
    Variant(
        "tutorial_attention",
        "W_attn split into its embedding and state columns, context as a weighted sum",
        replace=[
            (
                LOGITS,
                "d_e = embedded.shape[-1]\n"
                "    logits = embedded @ W_attn[:, :d_e].T + hidden @ W_attn[:, d_e:].T + b_attn",
            ),
            (CONTEXT, "context = (weights[:, :, None] * encoder_outputs).sum(dim=1)"),
        ],
    ),
    cells.channel_attention_functional,
    Variant(
        "channel_attention",
        "einsum, and the gate as 1 / (1 + exp(-a))",
        replace=[
            (
                EXCITE,
                "hidden = torch.relu(torch.einsum('uc,bc->bu', W1, squeezed))\n"
                "    z = 1 / (1 + torch.exp(-torch.einsum('cu,bu->bc', W2, hidden)))",
            ),
        ],
    ),
    Variant(
        "spatial_attention",
        "torch.stack of the two maps, max(...).values",
        replace=[
            (POOLED, "pooled = torch.stack([x.mean(dim=1), x.max(dim=1).values], dim=1)"),
            ("return x * m, m", "return m * x, m"),
        ],
    ),
]
