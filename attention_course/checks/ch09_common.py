"""What chapter 09's visible-test helpers share: how a tensor is shown in a message, and the parameters the
contract lists for each module (names and shapes, checked with ``state_dict``). Nothing here implements an exercise.
"""

from __future__ import annotations

import torch
from torch import nn


def _shape(t) -> str:
    return str(tuple(t.shape)) if isinstance(t, torch.Tensor) else type(t).__name__


def _rows(t, limit=4) -> str:
    return "\n".join(
        "  " + ", ".join(f"{v:g}" for v in row) for row in t.detach().double().reshape(-1, t.shape[-1])[:limit].tolist()
    )


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
