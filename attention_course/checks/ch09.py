"""Chapter 09's visible-test helpers (attention beyond sequences): what the test cells of Exercises 9.1 to 9.5 call.

Each ``check_*`` function calls the answer it is given (the student's function or module), compares
what comes back with an independent oracle (hand-worked tables, products written out one by one, the
attention formula written out head by head, PyTorch's own ``nn.TransformerEncoderLayer``), and raises
``AssertionError`` with a message that says what differs and, where the difference tells, the likely
fix. The cost check of Exercise 9.5 records the call with :func:`attention_course.profiling.record_ops`,
as chapter 08's tests do. The checks of 9.4 and 9.5 live in :mod:`.ch09_latents`, what they share in
:mod:`.ch09_common`; all are importable from here. Nothing here implements an exercise.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .ch08 import raises_value_error
from .ch09_common import _rows, _shape, check_state_dict, expected_state_dict
from .ch09_latents import (
    check_cross_attention,
    check_cross_attention_cost,
    check_rollout_table,
    cross_attention_formula,
    rollout_by_products,
)

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
