"""Chapter 09's images: real handwritten digits, and a generated task whose evidence has a known place.

Images are float32 tensors ``(B, C, H, W)`` with values in ``[0, 1]`` (``C = 1``: grey levels), labels int64
``(B,)``, as chapter 09's ``patchify`` and ``VisionTransformer`` take them. Nothing is downloaded.

**The digits** (:func:`load_digits`, :func:`digits_split`): the 1,797 handwritten digits of the UCI "Optical
Recognition of Handwritten Digits" set (E. Alpaydin and C. Kaynak, 1998, https://doi.org/10.24432/C50P49, licensed
CC BY 4.0, https://creativecommons.org/licenses/by/4.0/), 8 x 8 pixels, 10 classes, in the copy scikit-learn
bundles as ``sklearn.datasets.load_digits``. The course ships that copy (``attention_course/assets/digits.npz``,
made once by ``python -m experiments.export_digits``, the values unchanged) rather than depending on
scikit-learn: the students' environment stays small and works offline, and the data cannot change with a
library's version.

**Matching marks** (:func:`matching_marks`): ``size x size`` images (32 by default) with two bright 4 x 4 marks far
apart and a few dim distractor marks, each on the 4-pixel grid (so that with 4 x 4 patches each mark is one token).
The label says whether the two bright marks have the same shape (1) or not (0); the shapes are a ring and a cross
(:data:`SHAPES`, ``K = 2`` of them). The pixels that decide the label are known: the bright marks' pixels
(``evidence``). Nothing else gives the answer away: the first mark's shape is uniform over :data:`SHAPE_NAMES`; the
label is drawn independently; the second mark repeats the first shape (label 1) or takes one of the others,
uniformly (label 0). So each mark's shape alone is uniform whatever the label (for the second: ``P(shape s | same)
= 1/K`` and ``P(shape s | different) = (K - 1) / K * 1 / (K - 1) = 1/K``), and positions and distractors are drawn
independently of the label: a model that sees only one of the two marks can do no better than chance (``python -m
experiments.marks_maps`` measures it).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

DIGITS_FILE = "digits.npz"
DIGITS_CLASSES = 10
DIGITS_SPLIT = {"train": 1197, "valid": 300, "test": 300}  # 1,797 in all
DIGITS_SPLIT_SEED = 0


def _digits_archive():
    from attention_course import assets

    return np.load(assets.path(DIGITS_FILE), allow_pickle=False)


def load_digits() -> tuple[torch.Tensor, torch.Tensor]:
    """The 1,797 handwritten digits: ``(images, labels)``.

    images : float32 ``(1797, 1, 8, 8)`` in ``[0, 1]`` (the stored counts 0..16 divided by 16);
    labels : int64 ``(1797,)``, the digit 0..9.
    """
    archive = _digits_archive()
    images = torch.from_numpy(archive["images"].astype(np.float32) / 16.0).unsqueeze(1)  # (1797, 1, 8, 8)
    labels = torch.from_numpy(archive["target"].astype(np.int64))  # (1797,)
    return images, labels


def digits_attribution() -> tuple[str, str]:
    """``(licence, citation)`` of the digits, as stored in the shipped file."""
    archive = _digits_archive()
    return str(archive["licence"]), str(archive["citation"])


def digits_split_indices(seed: int = DIGITS_SPLIT_SEED) -> dict[str, np.ndarray]:
    """The course's one split of the digits: ``{"train", "valid", "test"}`` -> sorted int64 indices into
    :func:`load_digits`, of sizes :data:`DIGITS_SPLIT` (1,197, 300, 300), disjoint, from one seeded permutation
    (NumPy's PCG64: the same on every machine)."""
    order = np.random.default_rng(seed).permutation(sum(DIGITS_SPLIT.values()))
    split, start = {}, 0
    for name, count in DIGITS_SPLIT.items():
        split[name] = np.sort(order[start : start + count]).astype(np.int64)
        start += count
    return split


def digits_split(seed: int = DIGITS_SPLIT_SEED) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """``{"train", "valid", "test"}`` -> ``(images (n, 1, 8, 8) float32, labels (n,) int64)``, the split of
    :func:`digits_split_indices`."""
    images, labels = load_digits()
    return {
        name: (images[torch.from_numpy(index)], labels[torch.from_numpy(index)])
        for name, index in digits_split_indices(seed).items()
    }


# ---- matching marks ---------------------------------------------------------------------------------------------

MARK_SIZE = 4  # marks are 4 x 4 and sit on the 4-pixel grid: with 4 x 4 patches, one mark is one patch
SHAPE_NAMES = ("ring", "cross")
SHAPES = {  # 4 x 4 bool patterns
    "ring": np.array([[1, 1, 1, 1], [1, 0, 0, 1], [1, 0, 0, 1], [1, 1, 1, 1]], bool),
    "cross": np.array([[1, 0, 0, 1], [0, 1, 1, 0], [0, 1, 1, 0], [1, 0, 0, 1]], bool),
}
MARK_VALUE = 1.0  # the two deciding marks
DISTRACTOR_VALUE = 0.5  # the distractors: the same shapes, dimmer


class MatchingMarks(NamedTuple):
    """A batch of the matching-marks task (``n`` images of side ``size``).

    images    : float32 ``(n, 1, size, size)``, background 0, bright marks 1.0, distractors 0.5;
    labels    : int64 ``(n,)``, 1 when the two bright marks have the same shape, else 0;
    evidence  : bool ``(n, size, size)``, the pixels of the two bright marks (what decides the label);
    corners   : int64 ``(n, 2, 2)``, the (row, column) of each bright mark's top-left pixel;
    shapes    : int64 ``(n, 2)``, each bright mark's shape, an index into :data:`SHAPE_NAMES`.
    """

    images: torch.Tensor
    labels: torch.Tensor
    evidence: torch.Tensor
    corners: torch.Tensor
    shapes: torch.Tensor


def matching_marks(n: int, seed: int, size: int = 32, distractors: int = 3) -> MatchingMarks:
    """``n`` images of the matching-marks task, the same for a given ``seed`` on every machine (NumPy's PCG64).

    The image is a grid of 4 x 4 cells (``size`` a multiple of 4); each mark fills one cell. Each image: two
    bright marks whose centres are at least ``size / 2`` pixels apart, and ``distractors`` dim marks of random
    shapes in other cells. Labels are balanced: exactly ``n // 2`` are 1 (``n`` even). Returns a
    :class:`MatchingMarks`.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if size < 16 or size % MARK_SIZE:
        raise ValueError(f"size must be a multiple of {MARK_SIZE}, at least 16 (two marks far apart), got {size}")
    rng = np.random.default_rng(seed)
    K = len(SHAPE_NAMES)
    labels = rng.permutation(n) % 2  # balanced; independent of everything below
    first = rng.integers(0, K, size=n)
    other = (first + rng.integers(1, K, size=n)) % K  # uniform over the K - 1 other shapes
    second = np.where(labels == 1, first, other)
    images = np.zeros((n, size, size), np.float32)
    evidence = np.zeros((n, size, size), bool)
    corners = np.zeros((n, 2, 2), np.int64)
    cells = size // MARK_SIZE  # cells per row and per column
    for i in range(n):
        while True:  # two corners whose marks' centres are at least size / 2 apart
            a, b = MARK_SIZE * rng.integers(0, cells, size=2), MARK_SIZE * rng.integers(0, cells, size=2)
            if np.hypot(*(a - b)) >= size / 2:
                break
        placed = [tuple(a), tuple(b)]
        corners[i] = placed
        for (r, c), shape in zip(placed, (first[i], second[i])):
            pattern = SHAPES[SHAPE_NAMES[shape]]
            images[i, r : r + MARK_SIZE, c : c + MARK_SIZE][pattern] = MARK_VALUE
            evidence[i, r : r + MARK_SIZE, c : c + MARK_SIZE] |= pattern
        for _ in range(distractors):
            while True:
                corner = tuple(MARK_SIZE * rng.integers(0, cells, size=2))
                if corner not in placed:
                    break
            placed.append(corner)
            r, c = corner
            pattern = SHAPES[SHAPE_NAMES[rng.integers(0, K)]]
            images[i, r : r + MARK_SIZE, c : c + MARK_SIZE][pattern] = DISTRACTOR_VALUE
    return MatchingMarks(
        images=torch.from_numpy(images).unsqueeze(1),
        labels=torch.from_numpy(labels.astype(np.int64)),
        evidence=torch.from_numpy(evidence),
        corners=torch.from_numpy(corners),
        shapes=torch.from_numpy(np.stack([first, second], axis=1).astype(np.int64)),
    )


def mark_pixels(batch: MatchingMarks) -> torch.Tensor:
    """bool ``(n, 2, size, size)``: the pixels of each bright mark apart (their union is ``batch.evidence``)."""
    n, _, size, _ = batch.images.shape
    masks = torch.zeros(n, 2, size, size, dtype=torch.bool)
    for i in range(n):
        for j in range(2):
            r, c = batch.corners[i, j].tolist()
            pattern = torch.from_numpy(SHAPES[SHAPE_NAMES[int(batch.shapes[i, j])]])
            masks[i, j, r : r + MARK_SIZE, c : c + MARK_SIZE] = pattern
    return masks


def patch_cover(masks: torch.Tensor, patch_size: int) -> torch.Tensor:
    """Which patches a pixel mask touches: bool ``(..., H, W)`` -> bool ``(..., N)``, ``N = (H / p) * (W / p)``,
    patch ``n = r * (W / p) + c`` (chapter 09's reading order) True when any of its pixels is True."""
    *lead, H, W = masks.shape
    p = patch_size
    if p < 1 or H % p or W % p:
        raise ValueError(f"patch_size {p} must be at least 1 and divide the mask's height {H} and width {W}")
    blocks = masks.reshape(*lead, H // p, p, W // p, p)
    return blocks.any(dim=-1).any(dim=-2).reshape(*lead, (H // p) * (W // p))
