# STAND-IN: copied from /work/wt/ch09_reference.py (written by the coordinator from ../shared/EXERCISES_09.md); the coordinator replaces it by the generated reference at merge.
"""Chapter 09's five graded answers, as the coordinator wrote them from ../shared/EXERCISES_09.md.

The chapter-09 notebook helper puts these (improved if needed) into the solution cells of
solutions/09_attention_beyond_sequences/09_attention_beyond_sequences.ipynb; the generator then
writes autograder/reference/ch09_attention_beyond_sequences.py from them.
"""
import torch
from torch import nn


def patchify(images, patch_size):
    """Cut images into non-overlapping square patches, in reading order.

    images : (B, C, H, W); patch_size p divides H and W.
    Returns (B, N, C * p * p) with N = (H / p) * (W / p): patch n = r * (W / p) + c is the
    p x p square whose top-left pixel is (r * p, c * p), flattened channel, row, column.
    """
    if images.dim() != 4:
        raise ValueError(f"images must be 4-D (B, C, H, W), got shape {tuple(images.shape)}")
    p = patch_size
    if p < 1:
        raise ValueError(f"patch_size must be at least 1, got {p}")
    B, C, H, W = images.shape
    if H % p or W % p:
        raise ValueError(f"patch_size {p} must divide the image's height {H} and width {W}")
    x = images.reshape(B, C, H // p, p, W // p, p)        # (B, C, rows, p, cols, p)
    x = x.permute(0, 2, 4, 1, 3, 5)                        # (B, rows, cols, C, p, p)
    return x.reshape(B, (H // p) * (W // p), C * p * p)    # (B, N, C p p)


class PatchEmbedding(nn.Module):
    """An image as a sequence of N + 1 tokens: a class token, then one token per patch.

    images (B, C, image_size, image_size) -> (B, N + 1, embed_dim), N = (image_size // p) ** 2.
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
        if images.dim() != 4:
            raise ValueError(f"images must be 4-D (B, C, H, W), got shape {tuple(images.shape)}")
        B, C, H, W = images.shape
        if C != self.in_channels:
            raise ValueError(f"expected {self.in_channels} channels, got {C}")
        if (H, W) != (self.image_size, self.image_size):
            raise ValueError(f"expected {self.image_size} x {self.image_size} images, got {H} x {W}")
        tokens = self.proj(patchify(images, self.patch_size))          # (B, N, d)
        cls = self.cls_token.expand(B, -1, -1)                         # (B, 1, d)
        return torch.cat([cls, tokens], dim=1) + self.pos_embedding    # (B, N + 1, d)


class PerceiverCrossAttention(nn.Module):
    """N latents read M inputs by cross-attention, then a feed-forward block (pre-norm, residual).

    latents (B, N, latent_dim), inputs (B, M, input_dim), input_mask None or bool (B, M),
    True = a real input. Returns (out (B, N, latent_dim), weights (B, N, M)), the weights
    averaged over the heads. Cost linear in M: nothing with M * M elements is created.
    """

    def __init__(self, latent_dim, input_dim, num_heads):
        super().__init__()
        self.latent_norm = nn.LayerNorm(latent_dim)
        self.input_norm = nn.LayerNorm(input_dim)
        self.attn = nn.MultiheadAttention(latent_dim, num_heads, kdim=input_dim, vdim=input_dim, batch_first=True)
        self.mlp_norm = nn.LayerNorm(latent_dim)
        self.mlp = nn.Sequential(nn.Linear(latent_dim, 4 * latent_dim), nn.GELU(), nn.Linear(4 * latent_dim, latent_dim))

    def forward(self, latents, inputs, input_mask=None):
        if latents.dim() != 3 or inputs.dim() != 3 or latents.shape[0] != inputs.shape[0]:
            raise ValueError(f"latents (B, N, latent_dim) and inputs (B, M, input_dim) do not fit: "
                             f"{tuple(latents.shape)}, {tuple(inputs.shape)}")
        ignore = None
        if input_mask is not None:
            if input_mask.shape != inputs.shape[:2]:
                raise ValueError(f"input_mask must be (B, M) = {tuple(inputs.shape[:2])}, got {tuple(input_mask.shape)}")
            if not input_mask.any(dim=1).all():
                raise ValueError("every input of a batch entry is masked: its latents would have nothing to attend")
            ignore = ~input_mask.bool()                                # (B, M) True = padding, torch's sense
        a = self.latent_norm(latents)                                  # (B, N, latent_dim)
        x = self.input_norm(inputs)                                    # (B, M, input_dim)
        attended, weights = self.attn(a, x, x, key_padding_mask=ignore,
                                      need_weights=True, average_attn_weights=True)  # (B, N, latent_dim), (B, N, M)
        h = latents + attended
        out = h + self.mlp(self.mlp_norm(h))                           # (B, N, latent_dim)
        return out, weights


def attention_rollout(attentions, residual=True):
    """How much of each top-layer token comes from each input token (Abnar and Zuidema, 2020).

    attentions : list of L tensors (B, T, T), layer 1 first, rows summing to 1.
    Returns (B, T, T) = Â_L @ ... @ Â_1, Â = 0.5 A + 0.5 I when residual else A.
    """
    if len(attentions) == 0:
        raise ValueError("attentions is empty: give one (B, T, T) matrix per layer")
    shape = attentions[0].shape
    if len(shape) != 3 or shape[-1] != shape[-2]:
        raise ValueError(f"each attention must be a square (B, T, T) tensor, got {tuple(shape)}")
    if any(A.shape != shape for A in attentions):
        raise ValueError(f"every attention must have one shape, got {[tuple(A.shape) for A in attentions]}")
    eye = torch.eye(shape[-1], dtype=attentions[0].dtype, device=attentions[0].device)
    rollout = eye.expand(shape)                                        # (B, T, T)
    for A in attentions:                                               # layer 1 first
        A_hat = 0.5 * A + 0.5 * eye if residual else A
        rollout = A_hat @ rollout                                      # the later layer on the left
    return rollout


class VisionTransformer(nn.Module):
    """Patch embedding, pre-norm encoder layers, a final norm and a linear head on the class token.

    images (B, C, image_size, image_size) -> logits (B, num_classes).
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
        x = self.patch_embed(images)                                   # (B, N + 1, d)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x[:, 0]))                           # (B, num_classes)

    def attention_maps(self, images):
        """The logits and each layer's self-attention weights (B, N + 1, N + 1), heads averaged."""
        x = self.patch_embed(images)                                   # (B, N + 1, d)
        maps = []
        for layer in self.layers:                                      # norm_first: x + sa(norm1(x)), then x + ff(norm2(x))
            y = layer.norm1(x)
            attended, weights = layer.self_attn(y, y, y, need_weights=True, average_attn_weights=True)
            maps.append(weights)                                       # (B, N + 1, N + 1)
            x = x + layer.dropout1(attended)
            x = x + layer._ff_block(layer.norm2(x))
        return self.head(self.norm(x[:, 0])), maps
