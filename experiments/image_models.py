"""Chapter 09's models for images: the reference Vision Transformer, and the models it is compared with.

- :func:`vit`: chapter 09's reference ``VisionTransformer`` (Exercise 9.3), from a :class:`ViTConfig`;
- :class:`SmallCNN`: two 3 x 3 convolutions (ReLU, "same" padding), a 2 x 2 max-pool after each, a linear head;
- :class:`MLP`: the flattened pixels through two hidden layers (ReLU);
- :class:`PerceiverClassifier`: learned latents read the pixels (each with its grey level and its position's
  Fourier features, :func:`pixel_inputs`) through the reference ``PerceiverCrossAttention`` (Exercise 9.5), then
  a few self-attention layers over the latents only, then a linear head on their mean.

Every model maps images ``(B, C, H, W)`` to logits ``(B, num_classes)``.
"""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import nn

from autograder.reference import ch09_attention_beyond_sequences as ch09


@dataclasses.dataclass(frozen=True)
class ViTConfig:
    image_size: int
    patch_size: int
    in_channels: int = 1
    embed_dim: int = 32
    num_heads: int = 4
    ff_dim: int = 64
    num_layers: int = 2
    num_classes: int = 10


def vit(config: ViTConfig) -> ch09.VisionTransformer:
    """The reference Vision Transformer with ``config``'s sizes (dropout 0)."""
    return ch09.VisionTransformer(**dataclasses.asdict(config))


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


class SmallCNN(nn.Module):
    """conv(3 x 3) -> ReLU -> max-pool(2) -> conv(3 x 3) -> ReLU -> max-pool(2) -> flatten -> linear.

    images (B, in_channels, S, S), S divisible by 4 -> logits (B, num_classes)."""

    def __init__(self, image_size: int, in_channels: int = 1, channels=(16, 32), num_classes: int = 10):
        super().__init__()
        c1, c2 = channels
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, c1, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),  # (B, c1, S/2, S/2)
            nn.Conv2d(c1, c2, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),  # (B, c2, S/4, S/4)
        )
        self.head = nn.Linear(c2 * (image_size // 4) ** 2, num_classes)

    def forward(self, images):
        return self.head(self.features(images).flatten(1))


class MLP(nn.Module):
    """The image's pixels, flattened, through two hidden layers: (B, C, H, W) -> (B, num_classes)."""

    def __init__(self, in_features: int, hidden: int, num_classes: int = 10):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, images):
        return self.net(images.flatten(1))


def fourier_positions(height: int, width: int, num_frequencies: int) -> torch.Tensor:
    """Position features of every pixel, in reading order: ``(H * W, 2 + 4 * F)``, ``F = num_frequencies``.

    For pixel (r, c) with y = -1 + 2 r / (H - 1) and x likewise: ``y, x`` and ``sin(pi f y), cos(pi f y),
    sin(pi f x), cos(pi f x)`` for the frequencies f = 1 .. F (the Perceiver's Fourier features, Jaegle et al., 2021).
    """
    y = torch.linspace(-1, 1, height)[:, None].expand(height, width).reshape(-1)  # (H W,)
    x = torch.linspace(-1, 1, width)[None, :].expand(height, width).reshape(-1)  # (H W,)
    f = torch.arange(1, num_frequencies + 1, dtype=torch.float32) * math.pi  # (F,)
    parts = [y[:, None], x[:, None]]
    for coordinate in (y, x):
        angles = coordinate[:, None] * f  # (H W, F)
        parts += [torch.sin(angles), torch.cos(angles)]
    return torch.cat(parts, dim=1)


def pixel_inputs(images: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """An image as a set of M = H * W inputs: ``(B, C, H, W)`` and positions ``(M, P)`` -> ``(B, M, C + P)``,
    each pixel's channels then its position features (reading order)."""
    B, C, H, W = images.shape
    values = images.reshape(B, C, H * W).transpose(1, 2)  # (B, M, C)
    return torch.cat([values, positions.to(images)[None].expand(B, -1, -1)], dim=2)


class PerceiverClassifier(nn.Module):
    """Latents ``(N, latent_dim)`` read the M pixels once by cross-attention, then ``num_layers`` self-attention
    layers over the N latents, a final norm, and a linear head on the latents' mean.

    images (B, in_channels, S, S) -> logits (B, num_classes). Cost per image: the cross-attention's N x M weights,
    then N x N per latent layer, never M x M.
    """

    def __init__(
        self,
        image_size: int,
        in_channels: int = 1,
        num_latents: int = 32,
        latent_dim: int = 64,
        num_heads: int = 4,
        num_layers: int = 3,
        num_frequencies: int = 8,
        num_classes: int = 2,
    ):
        super().__init__()
        self.register_buffer("positions", fourier_positions(image_size, image_size, num_frequencies), persistent=False)
        input_dim = in_channels + self.positions.shape[1]
        self.latents = nn.Parameter(torch.randn(1, num_latents, latent_dim) * 0.02)
        self.cross = ch09.PerceiverCrossAttention(latent_dim, input_dim, num_heads)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(
                latent_dim, num_heads, 2 * latent_dim, 0.0, activation="gelu", batch_first=True, norm_first=True
            )
            for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(latent_dim)
        self.head = nn.Linear(latent_dim, num_classes)

    def forward(self, images, return_weights: bool = False):
        inputs = pixel_inputs(images, self.positions)  # (B, M, C + P)
        z, weights = self.cross(self.latents.expand(images.shape[0], -1, -1), inputs)  # (B, N, d), (B, N, M)
        for layer in self.layers:
            z = layer(z)
        logits = self.head(self.norm(z).mean(dim=1))  # (B, num_classes)
        return (logits, weights) if return_weights else logits
