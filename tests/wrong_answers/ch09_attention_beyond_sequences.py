# ruff: noqa: E501 (the answers are notebook cells, as wide as the notebook's own)
"""Chapter 09's wrong and valid answers (tests/wrong_answers/__init__.py runs them against the test cells).

Every WRONG variant is a mistake a student is likely to make: the order of the patches or of a
patch's values, where the class token goes and what gets a position, the sense of a padding mask,
weights not averaged over the heads, the order of the rollout's product and its residual, pooling,
and the cost promise of the cross-attention (values right, computation quadratic). Every VALID
variant is another correct way to write the answer and must pass both test cells.
"""

from wrong_answers import Variant

# ----------------------------------------------------------------------------------------------
# Exercise 9.1, patchify
# ----------------------------------------------------------------------------------------------

PERMUTE = "x = x.permute(0, 2, 4, 1, 3, 5)                                    # (B, rows, cols, C, p, p)"
SPLIT = "x = images.reshape(B, C, height // p, p, width // p, p)           # (B, C, rows, p, cols, p)"
JOIN = "return x.reshape(B, (height // p) * (width // p), C * p * p)       # (B, N, C p p)"

WRONG = [
    Variant(
        "patchify",
        "patches column by column (rows and columns of patches swapped)",
        replace=[(PERMUTE, "x = x.permute(0, 4, 2, 1, 3, 5)")],
    ),
    Variant(
        "patchify",
        "channel last inside each patch (row, column, channel)",
        replace=[(PERMUTE, "x = x.permute(0, 2, 4, 3, 5, 1)")],
    ),
    Variant(
        "patchify",
        "a reshape straight to (B, N, C p p), no permute",
        replace=[
            (
                SPLIT + "\n    " + PERMUTE + "\n    " + JOIN,
                "return images.reshape(B, (height // p) * (width // p), C * p * p)",
            )
        ],
    ),
    Variant(
        "patchify",
        "the pixels of a patch read column by column",
        replace=[(PERMUTE, "x = x.permute(0, 2, 4, 1, 5, 3)")],
    ),
    Variant(
        "patchify",
        "height and width mixed up in the split (wrong on images that are not square)",
        replace=[(SPLIT, "x = images.reshape(B, C, width // p, p, height // p, p)")],
    ),
    Variant(
        "patchify",
        "no check that the patch size divides the image",
        replace=[
            (
                '    if height % p or width % p:\n        raise ValueError(f"patch_size {p} must divide the image\'s height {height} and width {width}")\n',
                "",
            )
        ],
    ),
]

VALID = [
    Variant(
        "patchify",
        "F.unfold, transposed",
        source='''def patchify(images, patch_size):
    """Patches in reading order: (B, N, C p p)."""
    if images.dim() != 4:
        raise ValueError(f"images must be 4-D, got shape {tuple(images.shape)}")
    if patch_size < 1 or images.shape[-2] % patch_size or images.shape[-1] % patch_size:
        raise ValueError(f"patch_size {patch_size} must be at least 1 and divide the height and width")
    return F.unfold(images, patch_size, stride=patch_size).transpose(1, 2)
''',
    ),
    Variant(
        "patchify",
        "a loop over the patches, slicing each square",
        source='''def patchify(images, patch_size):
    """Patches in reading order: (B, N, C p p)."""
    if images.dim() != 4:
        raise ValueError(f"images must be 4-D, got shape {tuple(images.shape)}")
    p = patch_size
    if p < 1:
        raise ValueError(f"patch_size must be at least 1, got {p}")
    B, C, height, width = images.shape
    if height % p or width % p:
        raise ValueError(f"patch_size {p} must divide the height and width")
    patches = []
    for r in range(height // p):
        for c in range(width // p):
            patches.append(images[:, :, r * p:(r + 1) * p, c * p:(c + 1) * p].reshape(B, -1))
    return torch.stack(patches, dim=1)
''',
    ),
    Variant(
        "patchify",
        "Tensor.unfold twice, then einops-style permute",
        source='''def patchify(images, patch_size):
    """Patches in reading order: (B, N, C p p)."""
    if images.dim() != 4:
        raise ValueError(f"images must be 4-D, got shape {tuple(images.shape)}")
    p = patch_size
    if p < 1 or images.shape[2] % p or images.shape[3] % p:
        raise ValueError(f"patch_size {p} must be at least 1 and divide the height and width")
    B, C = images.shape[:2]
    x = images.unfold(2, p, p).unfold(3, p, p)          # (B, C, rows, cols, p, p)
    return x.permute(0, 2, 3, 1, 4, 5).reshape(B, -1, C * p * p)
''',
    ),
]

# ----------------------------------------------------------------------------------------------
# Exercise 9.2, PatchEmbedding
# ----------------------------------------------------------------------------------------------

CAT = "return torch.cat([cls, tokens], dim=1) + self.pos_embedding     # (B, N + 1, embed_dim)"

WRONG += [
    Variant(
        "PatchEmbedding",
        "class token appended at the end instead of row 0",
        replace=[(CAT, "return torch.cat([tokens, cls], dim=1) + self.pos_embedding")],
    ),
    Variant(
        "PatchEmbedding",
        "positions added to the patches only, the class token without one",
        replace=[(CAT, "return torch.cat([cls, tokens + self.pos_embedding[:, 1:]], dim=1)")],
    ),
    Variant(
        "PatchEmbedding",
        "positions added to the patches before the class token is prepended (shifted by one)",
        replace=[(CAT, "return torch.cat([cls, tokens + self.pos_embedding[:, :-1]], dim=1)")],
    ),
    Variant(
        "PatchEmbedding", "no class token at all (N rows)", replace=[(CAT, "return tokens + self.pos_embedding[:, 1:]")]
    ),
    Variant(
        "PatchEmbedding",
        "the class token a plain tensor, not a parameter",
        replace=[
            (
                "self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))",
                "self.cls_token = torch.zeros(1, 1, embed_dim)",
            )
        ],
    ),
    Variant(
        "PatchEmbedding",
        "positions a persistent buffer, not a parameter",
        replace=[
            (
                "self.pos_embedding = nn.Parameter(torch.randn(1, num_patches + 1, embed_dim) * 0.02)",
                "self.register_buffer('pos_embedding', torch.randn(1, num_patches + 1, embed_dim) * 0.02)",
            )
        ],
    ),
    Variant(
        "PatchEmbedding",
        "no check of the image size (12 x 12 images fail inside with a RuntimeError)",
        replace=[
            (
                '        if (height, width) != (self.image_size, self.image_size):\n            raise ValueError(f"expected {self.image_size} x {self.image_size} images, got {height} x {width}")\n',
                "",
            )
        ],
    ),
    Variant(
        "PatchEmbedding",
        "patches flattened channel last",
        replace=[
            (
                "tokens = self.proj(patchify(images, self.patch_size))",
                "tokens = self.proj(patchify(images, self.patch_size).reshape(B, -1, C, self.patch_size ** 2).transpose(2, 3).reshape(B, -1, C * self.patch_size ** 2))",
            )
        ],
    ),
]

VALID += [
    Variant(
        "PatchEmbedding",
        "a Conv2d with kernel and stride p, its weight kept as proj's",
        replace=[
            (
                "tokens = self.proj(patchify(images, self.patch_size))",
                "p = self.patch_size\n        weight = self.proj.weight.reshape(-1, C, p, p)\n        tokens = F.conv2d(images, weight, self.proj.bias, stride=p).flatten(2).transpose(1, 2)",
            )
        ],
    ),
    Variant(
        "PatchEmbedding",
        "positions added in two parts, class token and patches separately",
        replace=[
            (CAT, "return torch.cat([cls + self.pos_embedding[:, :1], tokens + self.pos_embedding[:, 1:]], dim=1)")
        ],
    ),
    Variant(
        "PatchEmbedding",
        "a zero-initialised position table and a random class token",
        replace=[
            (
                "self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))",
                "self.cls_token = nn.Parameter(torch.randn(1, 1, embed_dim))",
            ),
            (
                "self.pos_embedding = nn.Parameter(torch.randn(1, num_patches + 1, embed_dim) * 0.02)",
                "self.pos_embedding = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim))",
            ),
        ],
    ),
]

# ----------------------------------------------------------------------------------------------
# Exercise 9.3, VisionTransformer
# ----------------------------------------------------------------------------------------------

HEAD = "return self.head(self.norm(x[:, 0]))                            # (B, num_classes)"
MAPS_HEAD = "return self.head(self.norm(x[:, 0])), maps"

WRONG += [
    Variant(
        "VisionTransformer",
        "pooling by the mean of all rows instead of the class token",
        replace=[
            (HEAD, "return self.head(self.norm(x.mean(dim=1)))"),
            (MAPS_HEAD, "return self.head(self.norm(x.mean(dim=1))), maps"),
        ],
    ),
    Variant(
        "VisionTransformer",
        "the last row read instead of the class token's",
        replace=[
            (HEAD, "return self.head(self.norm(x[:, -1]))"),
            (MAPS_HEAD, "return self.head(self.norm(x[:, -1])), maps"),
        ],
    ),
    Variant(
        "VisionTransformer",
        "no final layer norm",
        replace=[(HEAD, "return self.head(x[:, 0])"), (MAPS_HEAD, "return self.head(x[:, 0]), maps")],
    ),
    Variant(
        "VisionTransformer",
        "post-norm layers (norm_first left False)",
        replace=[
            (
                "batch_first=True, norm_first=True)\n            for _ in range(num_layers))",
                "batch_first=True, norm_first=False)\n            for _ in range(num_layers))",
            )
        ],
    ),
    Variant(
        "VisionTransformer",
        "maps not averaged over the heads (B, n_heads, T, T)",
        replace=[
            (
                "attended, weights = layer.self_attn(y, y, y, need_weights=True, average_attn_weights=True)",
                "attended, weights = layer.self_attn(y, y, y, need_weights=True, average_attn_weights=False)",
            )
        ],
    ),
    Variant(
        "VisionTransformer",
        "maps computed on the layer's input before norm1",
        replace=[
            (
                "attended, weights = layer.self_attn(y, y, y, need_weights=True, average_attn_weights=True)",
                "attended, weights = layer.self_attn(y, y, y, need_weights=True, average_attn_weights=True)\n            weights = layer.self_attn(x, x, x, need_weights=True)[1]",
            )
        ],
    ),
    Variant(
        "VisionTransformer",
        "maps: only the class token's row kept (B, N + 1)",
        replace=[
            (
                "maps.append(weights)                                        # (B, N + 1, N + 1)",
                "maps.append(weights[:, 0])",
            )
        ],
    ),
    Variant(
        "VisionTransformer",
        "maps in the wrong order (last layer first)",
        replace=[(MAPS_HEAD, "return self.head(self.norm(x[:, 0])), maps[::-1]")],
    ),
    Variant(
        "VisionTransformer",
        "attention_maps switches to train mode to read the weights, and leaves it there",
        replace=[
            (
                "x = self.patch_embed(images)                                    # (B, N + 1, embed_dim)\n        maps = []",
                "self.train()\n        x = self.patch_embed(images)\n        maps = []",
            )
        ],
    ),
    Variant(
        "VisionTransformer",
        "attention_maps: the feed-forward block left out (maps of layer 2 on, and the logits, wrong)",
        replace=[
            (
                "            x = x + layer.dropout2(layer.linear2(layer.dropout(layer.activation(layer.linear1(y)))))\n",
                "",
            )
        ],
    ),
]

VALID += [
    Variant(
        "VisionTransformer",
        "attention_maps: the layer's own forward for the output, its attention called again for the weights",
        replace=[
            (
                "            x = x + layer.dropout1(attended)\n            y = layer.norm2(x)\n            x = x + layer.dropout2(layer.linear2(layer.dropout(layer.activation(layer.linear1(y)))))\n",
                "            x = layer(x)\n",
            )
        ],
    ),
    Variant(
        "VisionTransformer",
        "forward with functools.reduce over the layers, the head on every row and row 0 kept",
        replace=[
            (
                HEAD,
                "import functools\n        x = functools.reduce(lambda h, layer: layer(h), self.layers, self.patch_embed(images))\n        return self.head(self.norm(x))[:, 0]",
            ),
            (
                "        x = self.patch_embed(images)                                    # (B, N + 1, embed_dim)\n        for layer in self.layers:\n            x = layer(x)\n",
                "",
            ),
        ],
    ),
]

# ----------------------------------------------------------------------------------------------
# Exercise 9.4, attention_rollout
# ----------------------------------------------------------------------------------------------

STEP = "rollout = A_hat @ rollout                                       # the later layer on the left"
HAT = "A_hat = 0.5 * A + 0.5 * eye if residual else A"

WRONG += [
    Variant(
        "attention_rollout",
        "the product in the wrong order (first layer on the left)",
        replace=[(STEP, "rollout = rollout @ A_hat")],
    ),
    Variant(
        "attention_rollout",
        "the residual as A + I, not halved (rows sum to 2)",
        replace=[(HAT, "A_hat = A + eye if residual else A")],
    ),
    Variant("attention_rollout", "the residual ignored", replace=[(HAT, "A_hat = A")]),
    Variant(
        "attention_rollout",
        "the residual applied both ways (residual=False too)",
        replace=[(HAT, "A_hat = 0.5 * A + 0.5 * eye")],
    ),
    Variant(
        "attention_rollout",
        "columns normalised after the residual instead of rows",
        replace=[(HAT, "A_hat = (A + eye) / (A + eye).sum(dim=-2, keepdim=True) if residual else A")],
    ),
    Variant(
        "attention_rollout",
        "the matrices summed instead of multiplied",
        replace=[(STEP, "rollout = A_hat + rollout - eye")],
    ),
    Variant("attention_rollout", "only the last layer's map", replace=[(STEP, "rollout = A_hat")]),
    Variant(
        "attention_rollout",
        "the first matrix modified in place (the residual added into the input)",
        replace=[(HAT, "A_hat = A.mul_(0.5).add_(0.5 * eye) if residual else A")],
    ),
    Variant(
        "attention_rollout",
        "no check of the shapes",
        replace=[
            (
                '    if any(A.shape != shape for A in attentions):\n        raise ValueError(f"every attention must have one shape, got {[tuple(A.shape) for A in attentions]}")\n',
                "",
            )
        ],
    ),
]

VALID += [
    Variant(
        "attention_rollout",
        "rows renormalised after adding I (Abnar and Zuidema's code)",
        replace=[(HAT, "A_hat = (A + eye) / (A + eye).sum(dim=-1, keepdim=True) if residual else A")],
    ),
    Variant(
        "attention_rollout",
        "a loop from the last layer down, multiplying on the right",
        replace=[
            (
                "rollout = eye.expand(shape)                                         # (B, T, T)\n    for A in attentions:                                                # layer 1 first\n        A_hat = 0.5 * A + 0.5 * eye if residual else A\n        rollout = A_hat @ rollout                                       # the later layer on the left",
                "rollout = eye.expand(shape)\n    for A in reversed(attentions):\n        A_hat = 0.5 * A + 0.5 * eye if residual else A\n        rollout = rollout @ A_hat",
            )
        ],
    ),
    Variant(
        "attention_rollout",
        "einsum in float64, cast back",
        replace=[(STEP, "rollout = torch.einsum('bij,bjk->bik', A_hat.double(), rollout.double()).to(A.dtype)")],
    ),
    Variant(
        "attention_rollout",
        "torch.linalg.multi_dot per batch entry",
        replace=[
            (
                "rollout = eye.expand(shape)                                         # (B, T, T)\n    for A in attentions:                                                # layer 1 first\n        A_hat = 0.5 * A + 0.5 * eye if residual else A\n        rollout = A_hat @ rollout                                       # the later layer on the left",
                "hats = [0.5 * A + 0.5 * eye if residual else A for A in attentions][::-1]\n    if len(hats) == 1:\n        return hats[0].clone()\n    rollout = torch.stack([torch.linalg.multi_dot([h[b] for h in hats]) for b in range(shape[0])])",
            )
        ],
    ),
]

# ----------------------------------------------------------------------------------------------
# Exercise 9.5, PerceiverCrossAttention
# ----------------------------------------------------------------------------------------------

IGNORE = "ignore = ~input_mask.bool()                     # (B, M), True = padding: nn.MultiheadAttention's sense"
CALL = """attended, weights = self.attn(a, x, x, key_padding_mask=ignore,
                                      need_weights=True, average_attn_weights=True)   # (B, N, latent_dim), (B, N, M)"""
RESIDUAL = "h = latents + attended"
MLP = "out = h + self.mlp(self.mlp_norm(h))                            # (B, N, latent_dim)"

WRONG += [
    Variant(
        "PerceiverCrossAttention",
        "the mask's sense inverted (True passed as 'ignore')",
        replace=[(IGNORE, "ignore = input_mask.bool()")],
    ),
    Variant("PerceiverCrossAttention", "the mask ignored", replace=[(IGNORE, "ignore = None")]),
    Variant(
        "PerceiverCrossAttention",
        "weights not averaged over the heads (B, n_heads, N, M)",
        replace=[
            (
                CALL,
                "attended, weights = self.attn(a, x, x, key_padding_mask=ignore, need_weights=True, average_attn_weights=False)",
            )
        ],
    ),
    Variant(
        "PerceiverCrossAttention", "the residual adds the normalised latents", replace=[(RESIDUAL, "h = a + attended")]
    ),
    Variant(
        "PerceiverCrossAttention", "no residual around the MLP", replace=[(MLP, "out = self.mlp(self.mlp_norm(h))")]
    ),
    Variant(
        "PerceiverCrossAttention",
        "the inputs not normalised",
        replace=[("x = self.input_norm(inputs)                                     # (B, M, input_dim)", "x = inputs")],
    ),
    Variant(
        "PerceiverCrossAttention",
        "the mask spread into an (M, M) matrix, then its diagonal rows used (quadratic)",
        replace=[
            (
                IGNORE,
                "pairs = input_mask[:, :, None] & input_mask[:, None, :]           # (B, M, M)\n            ignore = ~pairs.any(dim=1)",
            )
        ],
    ),
    Variant(
        "PerceiverCrossAttention",
        "the inputs first attend to each other (self-attention over M: quadratic)",
        replace=[
            (
                "x = self.input_norm(inputs)                                     # (B, M, input_dim)",
                "x = self.input_norm(inputs)\n        x = x + torch.softmax(x @ x.transpose(1, 2), dim=-1) @ x * 0",
            )
        ],
    ),
    Variant(
        "PerceiverCrossAttention",
        "no check for an entry whose inputs are all masked",
        replace=[
            (
                '            if not input_mask.any(dim=1).all():\n                raise ValueError("every input of a batch entry is masked: its latents would have nothing to attend")\n',
                "",
            )
        ],
    ),
]

VALID += [
    Variant(
        "PerceiverCrossAttention",
        "the softmax written out head by head with the module's weights",
        replace=[
            (
                CALL,
                """E, H = self.attn.embed_dim, self.attn.num_heads
        b_q, b_k, b_v = self.attn.in_proj_bias.chunk(3)
        if self.attn._qkv_same_embed_dim:
            W_q, W_k, W_v = self.attn.in_proj_weight.chunk(3)
        else:
            W_q, W_k, W_v = self.attn.q_proj_weight, self.attn.k_proj_weight, self.attn.v_proj_weight
        B, N, M = latents.shape[0], latents.shape[1], inputs.shape[1]
        q = (a @ W_q.T + b_q).reshape(B, N, H, E // H).transpose(1, 2)
        k = (x @ W_k.T + b_k).reshape(B, M, H, E // H).transpose(1, 2)
        v = (x @ W_v.T + b_v).reshape(B, M, H, E // H).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / (E // H) ** 0.5                 # (B, H, N, M)
        if ignore is not None:
            scores = scores.masked_fill(ignore[:, None, None, :], float("-inf"))
        w = torch.softmax(scores, dim=-1)
        attended = self.attn.out_proj((w @ v).transpose(1, 2).reshape(B, N, E))
        weights = w.mean(dim=1)""",
            )
        ],
    ),
    Variant(
        "PerceiverCrossAttention",
        "a float mask of -inf passed as key_padding_mask",
        replace=[
            (
                IGNORE,
                "ignore = torch.zeros(input_mask.shape, dtype=inputs.dtype).masked_fill(~input_mask.bool(), float('-inf'))",
            )
        ],
    ),
    Variant(
        "PerceiverCrossAttention",
        "einsum for the head average of per-head weights",
        replace=[
            (
                CALL,
                """attended, per_head = self.attn(a, x, x, key_padding_mask=ignore, need_weights=True, average_attn_weights=False)
        weights = torch.einsum('bhnm->bnm', per_head) / self.attn.num_heads""",
            )
        ],
    ),
]
