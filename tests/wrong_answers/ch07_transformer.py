"""Chapter 07's likeliest wrong answers, and valid alternatives, for each exercise (format: FORMATS.md section 1).

Every WRONG variant must fail the exercise's hidden test cell, and its visible one unless ``visible=False``;
every VALID variant must pass both.
"""

from wrong_answers import Variant
from wrong_answers.cells import ch07 as cells

_SINES = """\
    P[:, 0::2] = torch.sin(angles)
    P[:, 1::2] = torch.cos(angles)"""

_FREQUENCIES = "frequencies = 10000.0 ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)"

_ENCODER_PRE_NORM = """\
        if self.norm_first:
            x = x + attention(self.norm1(x))
            x = x + feed_forward(self.norm2(x))
        else:"""

_DECODER_PRE_NORM = """\
        if self.norm_first:
            x = x + self_attention(self.norm1(x))
            x = x + cross_attention(self.norm2(x))
            x = x + feed_forward(self.norm3(x))
        else:"""

_EMBED = "return self.dropout(embedding(tokens) * math.sqrt(self.embed_dim) + P)"

WRONG = [
    # 7.1 sinusoidal_positions
    Variant(
        "sinusoidal_positions",
        "sine and cosine swapped (cosines in the even columns)",
        replace=[(_SINES, "    P[:, 0::2] = torch.cos(angles)\n    P[:, 1::2] = torch.sin(angles)")],
    ),
    Variant(
        "sinusoidal_positions",
        "frequencies 10000^(-i/dim) with i the pair index (the 2 forgotten)",
        replace=[(_FREQUENCIES, "frequencies = 10000.0 ** (-torch.arange(dim // 2, dtype=torch.float64) / dim)")],
    ),
    Variant(
        "sinusoidal_positions",
        "each column j its own frequency 10000^(-j/dim) (pairs do not share one)",
        replace=[
            (_FREQUENCIES, "frequencies = 10000.0 ** (-torch.arange(dim, dtype=torch.float64) / dim)"),
            (_SINES, "    P[:, 0::2] = torch.sin(angles[:, 0::2])\n    P[:, 1::2] = torch.cos(angles[:, 1::2])"),
        ],
    ),
    Variant(
        "sinusoidal_positions",
        "all sines first, then all cosines (concatenated, not interleaved)",
        replace=[(_SINES, "    P = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)")],
    ),
    Variant(
        "sinusoidal_positions",
        "positions counted from 1",
        replace=[("torch.arange(length, dtype=torch.float64)", "torch.arange(1, length + 1, dtype=torch.float64)")],
    ),
    Variant("sinusoidal_positions", "left in float64", replace=[("return P.float()", "return P")]),
    # 7.2 TransformerEncoderLayer
    Variant(
        "TransformerEncoderLayer",
        "padding mask passed as it is (course convention given to PyTorch)",
        replace=[("ignore = None if key_padding_mask is None else ~key_padding_mask", "ignore = key_padding_mask")],
    ),
    Variant(
        "TransformerEncoderLayer",
        "always post-norm (norm_first ignored)",
        replace=[(_ENCODER_PRE_NORM, "        if False:\n            pass\n        else:")],
    ),
    Variant(
        "TransformerEncoderLayer",
        "pre-norm without the residual around attention",
        replace=[("x = x + attention(self.norm1(x))", "x = attention(self.norm1(x))")],
    ),
    Variant(
        "TransformerEncoderLayer",
        "norm1 used for both sublayers",
        replace=[("x = x + feed_forward(self.norm2(x))", "x = x + feed_forward(self.norm1(x))")],
    ),
    Variant(
        "TransformerEncoderLayer",
        "pre-norm that also normalises the sublayer's output",
        replace=[("x = x + attention(self.norm1(x))", "x = x + self.norm1(attention(self.norm1(x)))")],
    ),
    Variant(
        "TransformerEncoderLayer",
        "GELU instead of ReLU in the feed-forward network",
        replace=[("torch.relu(self.linear1(y))", "torch.nn.functional.gelu(self.linear1(y))")],
    ),
    Variant(
        "TransformerEncoderLayer",
        "padding mask ignored",
        replace=[("key_padding_mask=ignore, need_weights=False", "need_weights=False")],
    ),
    Variant(
        "TransformerEncoderLayer",
        "functional dropout left on in evaluation mode (F.dropout without training=self.training)",
        replace=[
            ("self.dropout1 = nn.Dropout(dropout)   # on the attention sublayer's output", "self.p = dropout"),
            ("return self.dropout1(out)", "return torch.nn.functional.dropout(out, self.p)"),
        ],
    ),
    # 7.3 TransformerDecoderLayer
    Variant(
        "TransformerDecoderLayer",
        "causal mask passed as it is (True where attention is allowed)",
        replace=[("attn_mask=~may_attend", "attn_mask=may_attend")],
    ),
    Variant(
        "TransformerDecoderLayer",
        "no causal mask",
        replace=[
            (
                "out, _ = self.self_attn(y, y, y, attn_mask=~may_attend, need_weights=False)",
                "out, _ = self.self_attn(y, y, y, need_weights=False)",
            )
        ],
    ),
    Variant(
        "TransformerDecoderLayer",
        "causal mask that hides the diagonal too (triu(diagonal=0))",
        replace=[("attn_mask=~may_attend", "attn_mask=torch.ones_like(may_attend).triu()")],
    ),
    Variant(
        "TransformerDecoderLayer",
        "memory padding mask passed as it is",
        replace=[
            (
                "ignore = None if memory_key_padding_mask is None else ~memory_key_padding_mask",
                "ignore = memory_key_padding_mask",
            )
        ],
    ),
    Variant(
        "TransformerDecoderLayer",
        "memory normalised with norm2 as well",
        replace=[
            ("self.multihead_attn(y, memory, memory,", "self.multihead_attn(y, self.norm2(memory), self.norm2(memory),")
        ],
    ),
    Variant(
        "TransformerDecoderLayer",
        "cross-attention before self-attention",
        replace=[
            (
                _DECODER_PRE_NORM,
                """\
        if self.norm_first:
            x = x + cross_attention(self.norm2(x))
            x = x + self_attention(self.norm1(x))
            x = x + feed_forward(self.norm3(x))
        else:""",
            )
        ],
    ),
    Variant(
        "TransformerDecoderLayer",
        "always post-norm (norm_first ignored)",
        replace=[(_DECODER_PRE_NORM, "        if False:\n            pass\n        else:")],
    ),
    Variant(
        "TransformerDecoderLayer",
        "queries and keys/values swapped in cross-attention (the memory asks the decoder)",
        replace=[
            (
                "out, _ = self.multihead_attn(y, memory, memory, key_padding_mask=ignore, need_weights=False)\n"
                "            return self.dropout2(out)",
                "out, _ = self.multihead_attn(y, y, memory, key_padding_mask=ignore, need_weights=False)\n"
                "            return self.dropout2(out)",
            )
        ],
    ),
    Variant(
        "TransformerDecoderLayer",
        "functional dropout left on in evaluation mode (F.dropout without training=self.training)",
        replace=[
            ("self.dropout1 = nn.Dropout(dropout)   # on each sublayer's output", "self.p = dropout"),
            ("return self.dropout1(out)", "return torch.nn.functional.dropout(out, self.p)"),
        ],
    ),
    # 7.4 TransformerTranslator
    Variant(
        "TransformerTranslator",
        "embeddings not multiplied by sqrt(d_model)",
        replace=[(_EMBED, "return self.dropout(embedding(tokens) + P)")],
    ),
    Variant(
        "TransformerTranslator",
        "no positional encodings",
        replace=[(_EMBED, "return self.dropout(embedding(tokens) * math.sqrt(self.embed_dim))")],
    ),
    Variant(
        "TransformerTranslator",
        "positions scaled with the embeddings, (embedding + P) * sqrt(d_model)",
        replace=[(_EMBED, "return self.dropout((embedding(tokens) + P) * math.sqrt(self.embed_dim))")],
    ),
    Variant(
        "TransformerTranslator",
        "no final layer norms",
        replace=[
            ("return self.encoder_norm(x), src_mask", "return x, src_mask"),
            ("return self.out(self.decoder_norm(y))", "return self.out(y)"),
        ],
    ),
    Variant(
        "TransformerTranslator",
        "encoder_norm applied in decode instead of encode (memory returned unnormalised)",
        replace=[
            ("return self.encoder_norm(x), src_mask", "return x, src_mask"),
            ("y = layer(y, memory, src_mask)", "y = layer(y, self.encoder_norm(memory), src_mask)"),
        ],
    ),
    Variant(
        "TransformerTranslator",
        "positions kept in a persistent buffer (register_buffer without persistent=False)",
        replace=[
            (
                "self.dropout = nn.Dropout(dropout)\n",
                "self.dropout = nn.Dropout(dropout)\n"
                '        self.register_buffer("positions", sinusoidal_positions(512, embed_dim))\n',
            ),
            (
                "P = sinusoidal_positions(tokens.shape[1], self.embed_dim).to(weight.device, weight.dtype)",
                "P = self.positions[: tokens.shape[1]].to(weight.device, weight.dtype)",
            ),
        ],
    ),
    Variant(
        "TransformerTranslator",
        "source mask True at the padding",
        replace=[
            (
                "src_mask = positions[None, :] < lengths.to(src.device)[:, None]",
                "src_mask = positions[None, :] >= lengths.to(src.device)[:, None]",
            )
        ],
    ),
    Variant(
        "TransformerTranslator",
        "source mask from the tokens, src != PAD_ID (padded positions may hold other tokens)",
        replace=[
            (
                "src_mask = positions[None, :] < lengths.to(src.device)[:, None]",
                "src_mask = src != 0",
            )
        ],
    ),
    Variant(
        "TransformerTranslator",
        "the target's positions counted from 1",
        replace=[
            (_EMBED, "return self.dropout(embedding(tokens) * math.sqrt(self.embed_dim) + P[offset:])"),
            ("def embed(self, tokens, embedding):", "def embed(self, tokens, embedding, offset=0):"),
            (
                "P = sinusoidal_positions(tokens.shape[1], self.embed_dim)",
                "P = sinusoidal_positions(tokens.shape[1] + offset, self.embed_dim)",
            ),
            ("y = self.embed(tgt_in, self.tgt_embedding)", "y = self.embed(tgt_in, self.tgt_embedding, offset=1)"),
        ],
    ),
    Variant(
        "TransformerTranslator",
        "PyTorch's default embedding initialisation, N(0, 1)",
        replace=[("nn.init.normal_(embedding.weight, std=embed_dim ** -0.5)", "pass")],
    ),
]

VALID = [
    cells.sinusoidal_positions_two_python_loops_math_sin,
    cells.sinusoidal_positions_float32_throughout_exp_log_frequencies,
    cells.sinusoidal_positions_numpy_then_torch_numpy_float,
    Variant(
        "TransformerEncoderLayer",
        "a float padding mask (0 and -inf) in the inputs' dtype, and F.relu",
        replace=[
            (
                "ignore = None if key_padding_mask is None else ~key_padding_mask",
                "ignore = None if key_padding_mask is None else torch.zeros(key_padding_mask.shape, dtype=x.dtype)"
                '.masked_fill(~key_padding_mask, float("-inf"))',
            ),
            ("torch.relu(self.linear1(y))", "torch.nn.functional.relu(self.linear1(y))"),
        ],
    ),
    Variant(
        "TransformerEncoderLayer",
        "the mask converted with logical_not and the weights asked for (need_weights left at True)",
        replace=[
            ("~key_padding_mask   #", "key_padding_mask.logical_not()   #"),
            ("key_padding_mask=ignore, need_weights=False", "key_padding_mask=ignore"),
        ],
    ),
    Variant(
        "TransformerEncoderLayer",
        "functional dropout with training=self.training instead of nn.Dropout modules",
        replace=[
            ("self.dropout1 = nn.Dropout(dropout)   # on the attention sublayer's output", "self.p = dropout"),
            ("return self.dropout1(out)", "return torch.nn.functional.dropout(out, self.p, training=self.training)"),
        ],
    ),
    Variant(
        "TransformerDecoderLayer",
        "PyTorch's float causal mask in the inputs' dtype, and is_causal=True",
        replace=[
            (
                "attn_mask=~may_attend, need_weights=False",
                "attn_mask=nn.Transformer.generate_square_subsequent_mask(T_dec, device=x.device, dtype=x.dtype), "
                "is_causal=True, need_weights=False",
            )
        ],
    ),
    Variant(
        "TransformerDecoderLayer",
        "the causal mask built directly in PyTorch's convention, triu(diagonal=1)",
        replace=[("attn_mask=~may_attend", "attn_mask=torch.ones_like(may_attend).triu(diagonal=1)")],
    ),
    Variant(
        "TransformerTranslator",
        "a precomputed table of positions in a non-persistent buffer",
        replace=[
            (
                "self.dropout = nn.Dropout(dropout)\n",
                "self.dropout = nn.Dropout(dropout)\n"
                '        self.register_buffer("positions", sinusoidal_positions(512, embed_dim), persistent=False)\n',
            ),
            (
                "P = sinusoidal_positions(tokens.shape[1], self.embed_dim).to(weight.device, weight.dtype)",
                "P = self.positions[: tokens.shape[1]].to(weight.device, weight.dtype)",
            ),
        ],
    ),
    Variant(
        "TransformerTranslator",
        "embeddings with padding_idx=PAD, scaled by embed_dim ** 0.5, and the mask from a comparison with arange",
        replace=[
            (
                "self.src_embedding = nn.Embedding(src_vocab_size, embed_dim)",
                "self.src_embedding = nn.Embedding(src_vocab_size, embed_dim, padding_idx=0)",
            ),
            ("embedding(tokens) * math.sqrt(self.embed_dim) + P", "embedding(tokens) * self.embed_dim ** 0.5 + P"),
            (
                "src_mask = positions[None, :] < lengths.to(src.device)[:, None]",
                "src_mask = torch.stack([positions < n for n in lengths.tolist()])",
            ),
        ],
    ),
]
