"""Reference implementations for 09_attention_beyond_sequences.

GENERATED from solutions/09_attention_beyond_sequences/09_attention_beyond_sequences.ipynb by `python -m autograder generate`: the cells tagged
"export" and every autograded-answer cell, in order, without the solution markers.
Do not edit: edit the notebook and regenerate.
"""
import torch
import torch.nn.functional as F
from torch import nn


def patchify(images, patch_size):
    """Cut images into non-overlapping square patches, in reading order.

    images : (B, C, height, width); patch_size p divides height and width.
    Returns (B, N, C * p * p) with N = (height / p) * (width / p): patch n = r * (width / p) + c is the
    p x p square whose top-left pixel is (r * p, c * p), flattened channel, then row, then column.
    Keeps the dtype and the device.
    """
    if images.dim() != 4:
        raise ValueError(f"images must be 4-D (B, C, height, width), got shape {tuple(images.shape)}")
    p = patch_size                                                     # the side of a square patch
    if p < 1:
        raise ValueError(f"patch_size must be at least 1, got {p}")
    B, C, height, width = images.shape
    if height % p or width % p:
        raise ValueError(f"patch_size {p} must divide the image's height {height} and width {width}")
    x = images.reshape(B, C, height // p, p, width // p, p)           # (B, C, rows, p, cols, p)
    x = x.permute(0, 2, 4, 1, 3, 5)                                    # (B, rows, cols, C, p, p)
    return x.reshape(B, (height // p) * (width // p), C * p * p)       # (B, N, C p p)


class PatchEmbedding(nn.Module):
    """An image as a sequence of N + 1 tokens: a class token, then one token per patch.

    Attributes proj (nn.Linear(in_channels * patch_size ** 2, embed_dim)), cls_token (1, 1, embed_dim),
    pos_embedding (1, N + 1, embed_dim), N = (image_size // patch_size) ** 2.
    forward(images (B, in_channels, image_size, image_size)) -> (B, N + 1, embed_dim): row 0 is
    cls_token + pos_embedding[:, 0], row n + 1 is proj(patch n) + pos_embedding[:, n + 1].
    """

    def __init__(self, image_size, patch_size, in_channels, embed_dim):
        super().__init__()
        if patch_size < 1 or image_size % patch_size:
            raise ValueError(f"patch_size {patch_size} must be at least 1 and divide image_size {image_size}")
        self.image_size, self.patch_size, self.in_channels = image_size, patch_size, in_channels
        num_patches = (image_size // patch_size) ** 2
        self.proj = nn.Linear(in_channels * patch_size ** 2, embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embedding = nn.Parameter(torch.randn(1, num_patches + 1, embed_dim) * 0.02)

    def forward(self, images):
        """images (B, in_channels, image_size, image_size) -> tokens (B, N + 1, embed_dim)."""
        if images.dim() != 4:
            raise ValueError(f"images must be 4-D (B, C, height, width), got shape {tuple(images.shape)}")
        B, C, height, width = images.shape
        if C != self.in_channels:
            raise ValueError(f"expected {self.in_channels} channels, got {C}")
        if (height, width) != (self.image_size, self.image_size):
            raise ValueError(f"expected {self.image_size} x {self.image_size} images, got {height} x {width}")
        tokens = self.proj(patchify(images, self.patch_size))           # (B, N, embed_dim)
        cls = self.cls_token.expand(B, -1, -1)                          # (B, 1, embed_dim)
        return torch.cat([cls, tokens], dim=1) + self.pos_embedding     # (B, N + 1, embed_dim)


class VisionTransformer(nn.Module):
    """Patch embedding, pre-norm encoder layers, a final norm and a linear head on the class token.

    Attributes patch_embed (PatchEmbedding), layers (nn.ModuleList of num_layers
    nn.TransformerEncoderLayer(embed_dim, num_heads, ff_dim, dropout, activation="gelu",
    batch_first=True, norm_first=True)), norm (nn.LayerNorm(embed_dim)), head (nn.Linear(embed_dim, num_classes)).
    forward(images (B, in_channels, image_size, image_size)) -> logits (B, num_classes).
    attention_maps(images) -> (logits, maps): maps a list of num_layers tensors (B, N + 1, N + 1),
    each layer's self-attention weights averaged over the heads, from the same pass.
    """

    def __init__(self, image_size, patch_size, in_channels, embed_dim, num_heads, ff_dim, num_layers,
                 num_classes, dropout=0.0):
        super().__init__()
        self.patch_embed = PatchEmbedding(image_size, patch_size, in_channels, embed_dim)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(embed_dim, num_heads, ff_dim, dropout, activation="gelu",
                                       batch_first=True, norm_first=True)
            for _ in range(num_layers))
        self.norm = nn.LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes)

    def forward(self, images):
        """images (B, in_channels, image_size, image_size) -> logits (B, num_classes)."""
        x = self.patch_embed(images)                                    # (B, N + 1, embed_dim)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x[:, 0]))                            # (B, num_classes)

    def attention_maps(self, images):
        """images -> (logits (B, num_classes), maps: num_layers tensors (B, N + 1, N + 1), heads averaged)."""
        x = self.patch_embed(images)                                    # (B, N + 1, embed_dim)
        maps = []
        for layer in self.layers:                # norm_first: x + sa(norm1(x)), then x + ff(norm2(x))
            y = layer.norm1(x)
            attended, weights = layer.self_attn(y, y, y, need_weights=True, average_attn_weights=True)
            maps.append(weights)                                        # (B, N + 1, N + 1)
            x = x + layer.dropout1(attended)
            y = layer.norm2(x)
            x = x + layer.dropout2(layer.linear2(layer.dropout(layer.activation(layer.linear1(y)))))
        return self.head(self.norm(x[:, 0])), maps


def attention_rollout(attentions, residual=True):
    """How much of each top-layer token comes from each input token (Abnar and Zuidema, 2020).

    attentions : a list of L tensors (B, T, T), layer 1 first, each row a distribution (heads averaged).
    Returns (B, T, T) = Â_L @ ... @ Â_2 @ Â_1 with Â = 0.5 * A + 0.5 * I when residual, else A;
    its rows sum to 1. The inputs are not modified.
    """
    if len(attentions) == 0:
        raise ValueError("attentions is empty: give one (B, T, T) matrix per layer")
    shape = attentions[0].shape
    if len(shape) != 3 or shape[-1] != shape[-2]:
        raise ValueError(f"each attention must be a square (B, T, T) tensor, got {tuple(shape)}")
    if any(A.shape != shape for A in attentions):
        raise ValueError(f"every attention must have one shape, got {[tuple(A.shape) for A in attentions]}")
    eye = torch.eye(shape[-1], dtype=attentions[0].dtype, device=attentions[0].device)
    rollout = eye.expand(shape)                                         # (B, T, T)
    for A in attentions:                                                # layer 1 first
        A_hat = 0.5 * A + 0.5 * eye if residual else A
        rollout = A_hat @ rollout                                       # the later layer on the left
    return rollout


class PerceiverCrossAttention(nn.Module):
    """N latents read M inputs by cross-attention, then a feed-forward block (pre-norm, residuals).

    Attributes latent_norm, input_norm, attn (nn.MultiheadAttention(latent_dim, num_heads, kdim=input_dim,
    vdim=input_dim, batch_first=True)), mlp_norm, mlp (Linear(latent_dim, 4 latent_dim), GELU, Linear back).
    forward(latents (B, N, latent_dim), inputs (B, M, input_dim), input_mask None or bool (B, M), True = real)
    -> (out (B, N, latent_dim), weights (B, N, M) averaged over the heads, exactly 0 at masked inputs).
    Cost linear in M: nothing with M * M elements per batch entry is created.
    """

    def __init__(self, latent_dim, input_dim, num_heads):
        super().__init__()
        self.latent_norm = nn.LayerNorm(latent_dim)
        self.input_norm = nn.LayerNorm(input_dim)
        self.attn = nn.MultiheadAttention(latent_dim, num_heads, kdim=input_dim, vdim=input_dim, batch_first=True)
        self.mlp_norm = nn.LayerNorm(latent_dim)
        self.mlp = nn.Sequential(nn.Linear(latent_dim, 4 * latent_dim), nn.GELU(), nn.Linear(4 * latent_dim, latent_dim))

    def forward(self, latents, inputs, input_mask=None):
        """latents (B, N, latent_dim), inputs (B, M, input_dim), input_mask None or (B, M) -> (out, weights)."""
        if latents.dim() != 3 or inputs.dim() != 3 or latents.shape[0] != inputs.shape[0]:
            raise ValueError(f"latents (B, N, latent_dim) and inputs (B, M, input_dim) do not fit: "
                             f"{tuple(latents.shape)}, {tuple(inputs.shape)}")
        ignore = None
        if input_mask is not None:
            if input_mask.shape != inputs.shape[:2]:
                raise ValueError(f"input_mask must be (B, M) = {tuple(inputs.shape[:2])}, got {tuple(input_mask.shape)}")
            if not input_mask.any(dim=1).all():
                raise ValueError("every input of a batch entry is masked: its latents would have nothing to attend")
            ignore = ~input_mask.bool()                     # (B, M), True = padding: nn.MultiheadAttention's sense
        a = self.latent_norm(latents)                                   # (B, N, latent_dim)
        x = self.input_norm(inputs)                                     # (B, M, input_dim)
        attended, weights = self.attn(a, x, x, key_padding_mask=ignore,
                                      need_weights=True, average_attn_weights=True)   # (B, N, latent_dim), (B, N, M)
        h = latents + attended
        out = h + self.mlp(self.mlp_norm(h))                            # (B, N, latent_dim)
        return out, weights
