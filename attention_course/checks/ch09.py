"""Chapter 09's visible-test helpers (attention beyond sequences): what the test cells of Exercises 9.1 to 9.5 call.

Each ``check_*`` function calls the answer it is given (the student's function or module), compares
what comes back with an independent oracle (hand-worked tables, products written out one by one, the
attention formula written out head by head, PyTorch's own ``nn.TransformerEncoderLayer``), and raises
``AssertionError`` with a message that says what differs and, where the difference tells, the likely
fix. The cost check of Exercise 9.5 records the call with :func:`attention_course.profiling.record_ops`,
as chapter 08's tests do. Nothing here implements an exercise.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from attention_course.profiling import largest_created, record_ops

from .ch08 import raises_value_error

__all__ = [
    "check_cross_attention",
    "check_cross_attention_cost",
    "check_embedding_table",
    "check_maps",
    "check_patch_table",
    "check_rollout_table",
    "check_state_dict",
    "check_vit_forward",
    "cross_attention_formula",
    "expected_state_dict",
    "raises_value_error",
    "rollout_by_products",
]


def _shape(t) -> str:
    return str(tuple(t.shape)) if isinstance(t, torch.Tensor) else type(t).__name__


def _rows(t, limit=4) -> str:
    return "\n".join(
        "  " + ", ".join(f"{v:g}" for v in row) for row in t.detach().double().reshape(-1, t.shape[-1])[:limit].tolist()
    )


# ---- Exercise 9.1: patchify -------------------------------------------------------------------------------


# A 1 x 1 x 4 x 4 image holding 0..15 in reading order, cut into 2 x 2 patches: each row below is one
# patch, in reading order (top-left, top-right, bottom-left, bottom-right), read row by row.
PATCHES_4x4 = [[0, 1, 4, 5], [2, 3, 6, 7], [8, 9, 12, 13], [10, 11, 14, 15]]
# The same with a second channel holding 16..31: channel 0's four pixels first, then channel 1's.
PATCHES_2x4x4 = [
    [0, 1, 4, 5, 16, 17, 20, 21],
    [2, 3, 6, 7, 18, 19, 22, 23],
    [8, 9, 12, 13, 24, 25, 28, 29],
    [10, 11, 14, 15, 26, 27, 30, 31],
]
# A 1 x 1 x 2 x 6 image holding 0..11, patches of 2: three patches side by side (the width is not the height).
PATCHES_2x6 = [[0, 1, 6, 7], [2, 3, 8, 9], [4, 5, 10, 11]]


def _patch_hint(got: torch.Tensor, expected: torch.Tensor) -> str:
    """What a wrong table of patches looks like when it is one of the likely mistakes."""
    B, N, D = expected.shape
    side = math.isqrt(N)
    if got.shape == expected.shape:
        if side * side == N and torch.equal(got, expected.reshape(B, side, side, D).transpose(1, 2).reshape(B, N, D)):
            return (
                "the patches come column by column: patch n = r * (W / p) + c must take row r of patches first, "
                "then column c (reading order), so the patch-row dimension goes before the patch-column one"
            )
        if sorted(got.flatten().tolist()) == sorted(expected.flatten().tolist()):
            if all(sorted(g.tolist()) == sorted(e.tolist()) for g, e in zip(got[0], expected[0])):
                return (
                    "each patch holds the right pixels in another order: flatten channel first, then row, then column, "
                    "as images[b, :, r*p:(r+1)*p, c*p:(c+1)*p].reshape(-1) does (not channel last)"
                )
            return (
                "the right pixels in the wrong places: a reshape of (B, C, H, W) straight to (B, N, C p p) mixes "
                "pixels "
                "of different patches; split H into (H / p, p) and W into (W / p, p), then permute"
            )
    return "compare your rows with the expected ones, patch by patch"


def check_patch_table(patchify) -> None:
    """The hand-worked tables above, the dtype and the device kept, and the inputs left unchanged."""
    for C, H, W, p, table in [(1, 4, 4, 2, PATCHES_4x4), (2, 4, 4, 2, PATCHES_2x4x4), (1, 2, 6, 2, PATCHES_2x6)]:
        images = torch.arange(C * H * W, dtype=torch.float32).reshape(1, C, H, W)
        before = images.clone()
        got = patchify(images, p)
        expected = torch.tensor([table], dtype=torch.float32)
        what = f"patchify(images, {p}) on a (1, {C}, {H}, {W}) image holding 0..{C * H * W - 1} in reading order"
        assert isinstance(got, torch.Tensor) and got.shape == expected.shape, (
            f"{what}: expected shape (B, N, C * p * p) = {tuple(expected.shape)}, got {_shape(got)}"
        )
        assert torch.equal(got, expected), (
            f"{what}: expected the patches (one per "
            f"row)\n{_rows(expected)}\ngot\n{_rows(got)}\n({_patch_hint(got, expected)})"
        )
        assert torch.equal(images, before), f"{what}: the images were changed in place"
    for dtype in (torch.float64, torch.float16):
        images = torch.randn(2, 3, 6, 4).to(dtype)
        got = patchify(images, 2)
        assert got.dtype == dtype and got.shape == (2, 6, 12), (
            f"patchify on (2, 3, 6, 4) images of {dtype}, patch 2: expected (2, 6, 12) of {dtype}, got {_shape(got)} "
            f"of {got.dtype}"
        )
    one = torch.randn(2, 3, 4, 4)
    got = patchify(one, 1)
    assert got.shape == (2, 16, 3) and torch.equal(got[:, 5], one[:, :, 1, 1]), (
        "patchify(images, 1) on (2, 3, 4, 4): every pixel is a patch of its 3 channel values, patch 5 = pixel (1, 1); "
        f"got shape {_shape(got)}"
    )


# ---- Exercise 9.2: PatchEmbedding --------------------------------------------------------------------------


def expected_state_dict(kind: str, **sizes) -> dict[str, tuple]:
    """Names and shapes of the parameters the contract lists for ``kind`` ('PatchEmbedding',
    'PerceiverCrossAttention' or 'VisionTransformer'), read off PyTorch's own modules where there are some."""
    if kind == "PatchEmbedding":
        s, p, C, d = sizes["image_size"], sizes["patch_size"], sizes["in_channels"], sizes["embed_dim"]
        N = (s // p) ** 2
        return {
            "proj.weight": (d, C * p * p),
            "proj.bias": (d,),
            "cls_token": (1, 1, d),
            "pos_embedding": (1, N + 1, d),
        }
    if kind == "PerceiverCrossAttention":
        d, k, h = sizes["latent_dim"], sizes["input_dim"], sizes["num_heads"]
        parts = {
            "latent_norm": nn.LayerNorm(d),
            "input_norm": nn.LayerNorm(k),
            "attn": nn.MultiheadAttention(d, h, kdim=k, vdim=k, batch_first=True),
            "mlp_norm": nn.LayerNorm(d),
            "mlp": nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)),
        }
    else:
        d, layers = sizes["embed_dim"], sizes["num_layers"]
        found = {
            f"patch_embed.{k}": v
            for k, v in expected_state_dict(
                "PatchEmbedding",
                image_size=sizes["image_size"],
                patch_size=sizes["patch_size"],
                in_channels=sizes["in_channels"],
                embed_dim=d,
            ).items()
        }
        layer = nn.TransformerEncoderLayer(
            d, sizes["num_heads"], sizes["ff_dim"], 0.0, batch_first=True, norm_first=True
        )
        for i in range(layers):
            found.update({f"layers.{i}.{k}": tuple(v.shape) for k, v in layer.state_dict().items()})
        parts = {"norm": nn.LayerNorm(d), "head": nn.Linear(d, sizes["num_classes"])}
        for name, module in parts.items():
            found.update({f"{name}.{k}": tuple(v.shape) for k, v in module.state_dict().items()})
        return found
    return {f"{name}.{k}": tuple(v.shape) for name, module in parts.items() for k, v in module.state_dict().items()}


def check_state_dict(module, kind: str, **sizes) -> None:
    """module's state_dict has exactly the names and shapes of the contract (the tests load weights strictly)."""
    expected = expected_state_dict(kind, **sizes)
    got = {name: tuple(t.shape) for name, t in module.state_dict().items()}
    missing = {k: v for k, v in expected.items() if k not in got}
    extra = {k: v for k, v in got.items() if k not in expected}
    wrong = {k: (expected[k], got[k]) for k in expected if k in got and got[k] != expected[k]}
    args = ", ".join(f"{k}={v}" for k, v in sizes.items())
    assert not (missing or extra or wrong), (
        f"{kind}({args}).state_dict(): the tests load weights into it with load_state_dict(strict=True), so it "
        "must hold "
        f"exactly the contract's parameters.\nmissing: {missing}\nnot in the contract: {extra}\n"
        f"wrong shapes (expected, got): {wrong}\n(attribute names as the exercise lists them; a tensor that is no "
        "parameter belongs in register_buffer(..., persistent=False), or nowhere)"
    )


def check_embedding_table(PatchEmbedding) -> None:
    """A hand-worked embedding: a 4 x 4 image of 0..15, patches of 2, embed_dim 2, proj picking each patch's first
    and last pixel (+ bias), a class token (10, 20) and positions 0.0, 0.1, ..., 0.9."""
    embed = PatchEmbedding(4, 2, 1, 2)
    check_state_dict(embed, "PatchEmbedding", image_size=4, patch_size=2, in_channels=1, embed_dim=2)
    state = {
        "proj.weight": torch.tensor([[1.0, 0, 0, 0], [0, 0, 0, 1.0]]),
        "proj.bias": torch.tensor([0.5, -0.5]),
        "cls_token": torch.tensor([[[10.0, 20.0]]]),
        "pos_embedding": torch.arange(10.0).reshape(1, 5, 2) / 10,
    }
    embed.load_state_dict(state)
    got = embed(torch.arange(16.0).reshape(1, 1, 4, 4))
    expected = torch.tensor([[[10.0, 20.1], [0.7, 4.8], [2.9, 7.0], [9.1, 13.2], [11.3, 15.4]]])
    what = (
        "PatchEmbedding(4, 2, 1, 2) on a 4 x 4 image of 0..15 (proj picks a patch's first and last pixel, +0.5, -0.5)"
    )
    assert isinstance(got, torch.Tensor) and got.shape == expected.shape, (
        f"{what}: expected shape (B, N + 1, embed_dim) = {tuple(expected.shape)}, got {_shape(got)}"
    )
    hint = "compare the rows"
    if torch.allclose(got[:, -1], expected[:, 0] - torch.tensor([0.0, 0.1]) + torch.tensor([0.8, 0.9])):
        hint = "the class token is the last row: it must be row 0, before the patches (torch.cat([cls, tokens], dim=1))"
    elif torch.allclose(got[:, 0], torch.tensor([[10.0, 20.0]])):
        hint = (
            "row 0 lacks its position: add pos_embedding to every row, the class token's included (pos_embedding[:, 0])"
        )
    elif torch.allclose(got[:, 1:], expected[:, 1:], atol=1e-5):
        hint = "the patch rows are right and row 0 is not: row 0 is cls_token + pos_embedding[:, 0]"
    assert torch.allclose(got, expected, atol=1e-5), (
        f"{what}: expected rows\n{_rows(expected, 5)}\ngot\n{_rows(got, 5)}\n({hint})"
    )


# ---- Exercise 9.3: VisionTransformer -----------------------------------------------------------------------


def _tiny_vit(VisionTransformer, dropout=0.0):
    torch.manual_seed(3)
    model = VisionTransformer(8, 4, 2, 12, 3, 24, 2, 5, dropout)
    check_state_dict(
        model,
        "VisionTransformer",
        image_size=8,
        patch_size=4,
        in_channels=2,
        embed_dim=12,
        num_heads=3,
        ff_dim=24,
        num_layers=2,
        num_classes=5,
    )
    with torch.no_grad():
        for parameter in model.parameters():  # moved away from torch's start (norms 1, biases 0, the class token 0)
            parameter.add_(0.3 * torch.randn_like(parameter))
    return model.eval()


def check_vit_forward(VisionTransformer) -> None:
    """The logits against the model's own parts run one after the other (its PatchEmbedding, PyTorch's
    nn.TransformerEncoderLayer.forward, the final norm, the head on row 0), in eval mode."""
    model = _tiny_vit(VisionTransformer)
    images = torch.randn(3, 2, 8, 8)
    with torch.no_grad():
        got = model(images)
        x = model.patch_embed(images)
        for layer in model.layers:
            x = nn.TransformerEncoderLayer.forward(layer, x)
        expected = model.head(model.norm(x[:, 0]))
        pooled = model.head(model.norm(x.mean(dim=1)))
    what = "VisionTransformer(8, 4, 2, 12, 3, 24, 2, 5) on (3, 2, 8, 8) images"
    assert isinstance(got, torch.Tensor) and got.shape == (3, 5), (
        f"{what}: expected logits (B, num_classes) = (3, 5), got {_shape(got)}"
    )
    hint = "run patch_embed, every layer in order, then head(norm(x[:, 0]))"
    if torch.allclose(got, pooled, atol=1e-5):
        hint = "the logits come from the mean of every row: the classifier reads the class token, row 0 (x[:, 0])"
    assert torch.allclose(got, expected, atol=1e-5), (
        f"{what}: expected logits\n{_rows(expected)}\ngot\n{_rows(got)}\n({hint})"
    )


def _formula_weights(layer, x):
    """The head-averaged self-attention weights of a pre-norm layer on its input x, written out head by head."""
    attn = layer.self_attn
    y = nn.functional.layer_norm(x, layer.norm1.normalized_shape, layer.norm1.weight, layer.norm1.bias, layer.norm1.eps)
    E, H = attn.embed_dim, attn.num_heads
    W_q, W_k, _ = attn.in_proj_weight.split(E)
    b_q, b_k, _ = attn.in_proj_bias.split(E)
    heads = []
    for h in range(H):
        rows = slice(h * E // H, (h + 1) * E // H)
        q, k = y @ W_q[rows].T + b_q[rows], y @ W_k[rows].T + b_k[rows]
        heads.append(torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(E // H), dim=-1))
    return sum(heads) / H


def check_maps(VisionTransformer) -> None:
    """attention_maps: the logits equal forward's (eval mode), one map per layer of shape (B, N + 1, N + 1), each the
    head-averaged weights of that layer on its own input (the formula written out), rows summing to 1."""
    model = _tiny_vit(VisionTransformer)
    images = torch.randn(2, 2, 8, 8)
    with torch.no_grad():
        result = model.attention_maps(images)
        assert isinstance(result, tuple) and len(result) == 2, (
            f"attention_maps should return (logits, maps), got {type(result).__name__}"
        )
        logits, maps = result
        assert torch.allclose(logits, model(images), atol=1e-5), (
            f"attention_maps(images)[0] should equal model(images) in eval mode:\nforward\n{_rows(model(images))}\n"
            f"attention_maps\n{_rows(logits)}\n(run the same layers in the same order and read row 0 at the end)"
        )
        assert len(maps) == 2, f"a VisionTransformer with 2 layers should give 2 maps, got {len(maps)}"
        x = model.patch_embed(images)
        for i, (layer, got) in enumerate(zip(model.layers, maps)):
            expected = _formula_weights(layer, x)
            assert isinstance(got, torch.Tensor) and got.shape == (2, 5, 5), (
                f"map {i}: expected (B, N + 1, N + 1) = (2, 5, 5), heads averaged, got {_shape(got)} "
                "(average_attn_weights=True)"
            )
            assert torch.allclose(got, expected, atol=1e-5), (
                f"map {i}: expected layer {i}'s self-attention weights on its own input (after norm1), averaged "
                "over the "
                f"heads, rows:\n{_rows(expected[0], 2)}\ngot\n{_rows(got[0], 2)}\n(the map of layer l is computed "
                "on the "
                "input of layer l: the output of the layers before it)"
            )
            x = nn.TransformerEncoderLayer.forward(layer, x)
    assert not model.training, "attention_maps left the model in training mode: it must not change the mode"


# ---- Exercise 9.4: attention_rollout ----------------------------------------------------------------------

# Two layers over two tokens, worked by hand. A_1 = [[1, 0], [0.5, 0.5]], A_2 = [[0, 1], [1, 0]] (the second swaps).
ROLLOUT_A1 = [[1.0, 0.0], [0.5, 0.5]]
ROLLOUT_A2 = [[0.0, 1.0], [1.0, 0.0]]
ROLLOUT_PLAIN = [[0.5, 0.5], [1.0, 0.0]]  # A_2 @ A_1
ROLLOUT_RESIDUAL = [[0.625, 0.375], [0.625, 0.375]]  # (A_2 / 2 + I / 2) @ (A_1 / 2 + I / 2)


def rollout_by_products(attentions, residual=True):
    """The rollout written out entry by entry in float64, one layer at a time (a slow oracle for small sizes)."""
    B, T, _ = attentions[0].shape
    result = [[[float(i == j) for j in range(T)] for i in range(T)] for _ in range(B)]
    for A in attentions:
        A = A.double().tolist()
        for entry in range(B):
            step = [
                [(0.5 * A[entry][i][j] + 0.5 * (i == j)) if residual else A[entry][i][j] for j in range(T)]
                for i in range(T)
            ]
            result[entry] = [
                [sum(step[i][k] * result[entry][k][j] for k in range(T)) for j in range(T)] for i in range(T)
            ]
    return torch.tensor(result, dtype=torch.float64)


def _rollout_hint(got, A1, A2, residual):
    eye = torch.eye(A1.shape[-1], dtype=A1.dtype)
    hat = (lambda A: 0.5 * A + 0.5 * eye) if residual else (lambda A: A)
    if torch.allclose(got, hat(A1) @ hat(A2), atol=1e-6):
        return "the product is in the wrong order: the last layer goes on the left, A_L @ ... @ A_1"
    if residual and torch.allclose(got, (A2 + eye) @ (A1 + eye), atol=1e-6):
        return "A + I has rows summing to 2: the residual is 0.5 * A + 0.5 * I"
    if residual and torch.allclose(got, A2 @ A1, atol=1e-6):
        return "this is the plain product: with residual=True first replace each A by 0.5 * A + 0.5 * I"
    if not residual and torch.allclose(got, (0.5 * A2 + 0.5 * eye) @ (0.5 * A1 + 0.5 * eye), atol=1e-6):
        return "residual=False is the plain product A_2 @ A_1, without the identity"
    return "compare with the product written out by hand"


def check_rollout_table(attention_rollout) -> None:
    """The hand-worked two-layer case, with and without the residual, for a batch of two, inputs unchanged."""
    A1, A2 = torch.tensor([ROLLOUT_A1] * 2), torch.tensor([ROLLOUT_A2] * 2)
    copies = [A1.clone(), A2.clone()]
    for residual, table in [(False, ROLLOUT_PLAIN), (True, ROLLOUT_RESIDUAL)]:
        got = attention_rollout([A1, A2], residual=residual)
        expected = torch.tensor([table] * 2)
        what = f"attention_rollout([A_1, A_2], residual={residual}) with A_1 = {ROLLOUT_A1}, A_2 = {ROLLOUT_A2}"
        assert isinstance(got, torch.Tensor) and got.shape == expected.shape, (
            f"{what}: expected shape (2, 2, 2), got {_shape(got)}"
        )
        assert torch.allclose(got, expected, atol=1e-6), (
            f"{what}: "
            f"expected\n{_rows(expected[0])}\ngot\n{_rows(got[0])}\n({_rollout_hint(got[0], A1[0], A2[0], residual)})"
        )
    assert all(torch.equal(a, b) for a, b in zip(copies, (A1, A2))), (
        "attention_rollout changed the matrices it was given"
    )


# ---- Exercise 9.5: PerceiverCrossAttention -----------------------------------------------------------------


def cross_attention_formula(module, latents, inputs, input_mask=None):
    """The block written out with the module's own weights: layer norms, each head's softmax (masked inputs -inf),
    the heads joined and projected, the residuals and the MLP. Returns (out, weights averaged over the heads)."""
    ln = nn.functional.layer_norm
    a = ln(
        latents,
        module.latent_norm.normalized_shape,
        module.latent_norm.weight,
        module.latent_norm.bias,
        module.latent_norm.eps,
    )
    x = ln(
        inputs,
        module.input_norm.normalized_shape,
        module.input_norm.weight,
        module.input_norm.bias,
        module.input_norm.eps,
    )
    attn = module.attn
    E, H = attn.embed_dim, attn.num_heads
    b_q, b_k, b_v = attn.in_proj_bias.split(E)
    if attn._qkv_same_embed_dim:  # input_dim == latent_dim: nn.MultiheadAttention keeps one in_proj_weight
        W_q, W_k, W_v = attn.in_proj_weight.split(E)
    else:
        W_q, W_k, W_v = attn.q_proj_weight, attn.k_proj_weight, attn.v_proj_weight
    q, k, v = a @ W_q.T + b_q, x @ W_k.T + b_k, x @ W_v.T + b_v
    heads, weights = [], []
    for h in range(H):
        cols = slice(h * E // H, (h + 1) * E // H)
        scores = q[..., cols] @ k[..., cols].transpose(-2, -1) / math.sqrt(E // H)  # (B, N, M)
        if isinstance(input_mask, torch.Tensor):
            scores = scores.masked_fill(~input_mask[:, None, :], -math.inf)
        w = torch.softmax(scores, dim=-1)
        weights.append(w)
        heads.append(w @ v[..., cols])
    h = latents + attn.out_proj(torch.cat(heads, dim=-1))
    return h + module.mlp(module.mlp_norm(h)), sum(weights) / H


def _perceiver(PerceiverCrossAttention, latent_dim, input_dim, num_heads):
    module = PerceiverCrossAttention(latent_dim, input_dim, num_heads)
    check_state_dict(module, "PerceiverCrossAttention", latent_dim=latent_dim, input_dim=input_dim, num_heads=num_heads)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    return module.eval()


def check_cross_attention(PerceiverCrossAttention) -> None:
    """(out, weights) against the formula written out, with and without a padding mask; masked weights exactly 0."""
    torch.manual_seed(5)
    module = _perceiver(PerceiverCrossAttention, 8, 3, 2)
    latents, inputs = torch.randn(2, 4, 8), torch.randn(2, 10, 3)
    mask = torch.ones(2, 10, dtype=torch.bool)
    mask[1, 6:] = False  # the second entry has 6 real inputs, then padding
    for input_mask in (None, mask):
        padding = "None" if input_mask is None else "with padding"
        what = f"PerceiverCrossAttention(8, 3, 2) on latents (2, 4, 8), inputs (2, 10, 3), input_mask {padding}"
        with torch.no_grad():
            result = module(latents, inputs, input_mask)
            expected_out, expected_w = cross_attention_formula(module, latents, inputs, input_mask)
        assert isinstance(result, tuple) and len(result) == 2, (
            f"{what}: expected (out, weights), got {type(result).__name__}"
        )
        out, weights = result
        assert out.shape == (2, 4, 8) and weights.shape == (2, 4, 10), (
            f"{what}: expected out (B, N, latent_dim) = (2, 4, 8) and weights (B, N, M) = (2, 4, 10) averaged "
            "over the heads, "
            f"got {_shape(out)} and {_shape(weights)}"
        )
        if isinstance(input_mask, torch.Tensor):
            assert torch.all(weights[1, :, 6:] == 0), (
                f"{what}: the weights at the masked inputs must be exactly 0, got {weights[1, 0, 6:].tolist()} "
                "(True marks a "
                "real input; nn.MultiheadAttention's key_padding_mask marks with True what to ignore: pass ~input_mask)"
            )
        assert torch.allclose(weights, expected_w, atol=1e-5), (
            f"{what}: weights, expected\n{_rows(expected_w[0])}\ngot\n{_rows(weights[0])}"
        )
        assert torch.allclose(out, expected_out, atol=1e-5), (
            f"{what}: out, expected\n{_rows(expected_out[0])}\ngot\n{_rows(out[0])}\n(h = latents + "
            "attention(latent_norm(latents), "
            "input_norm(inputs)), out = h + mlp(mlp_norm(h)): the residuals add the un-normalised latents and h)"
        )


def check_cross_attention_cost(PerceiverCrossAttention, M=128, N=4) -> None:
    """The cost promise, recorded with record_ops: with one batch entry no operation creates a tensor of M * M elements
    or more (the latents read the inputs; nothing compares an input with every other)."""
    module = _perceiver(PerceiverCrossAttention, 8, 3, 2)
    latents, inputs = torch.randn(1, N, 8), torch.randn(1, M, 3)
    mask = torch.ones(1, M, dtype=torch.bool)
    mask[0, M // 2 :] = False
    with torch.no_grad():
        for input_mask in (None, mask):
            _, ops = record_ops(module, latents, inputs, input_mask)
            largest, op = largest_created(ops)
            assert largest < M * M, (
                f"PerceiverCrossAttention on {M} inputs (mask {'None' if input_mask is None else 'given'}) "
                "created a tensor of "
                f"{largest:,} elements ({op.name}, shape {op.outputs[0] if op.outputs else '?'}), while M * M = "
                f"{M * M:,}: "
                "the block's cost must stay linear in M. Only the N latents query the inputs: the scores are (B, "
                "N, M), "
                "and the mask is (B, M), given to nn.MultiheadAttention as key_padding_mask, not spread into an "
                "(M, M) matrix"
            )
