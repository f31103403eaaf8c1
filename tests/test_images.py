"""attention_course.images: chapter 09's digits and the matching-marks task.

The digits are checked against what the UCI set's own description says (1,797 images of 8 x 8 counts from 0 to 16,
its class counts); the split's sizes, disjointness and seed; the generated task against its definition: the
evidence is exactly the bright pixels, the marks are far apart, the labels are balanced and say whether the two
shapes are the same, and each mark's shape alone is independent of the label (a frequency test on many images).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch

from attention_course import assets, images

# The class counts of the UCI set's test part (the file scikit-learn bundles), as its description lists them.
UCI_CLASS_COUNTS = [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]


def test_the_digits_are_the_uci_set():
    x, y = images.load_digits()
    assert x.shape == (1797, 1, 8, 8) and x.dtype == torch.float32
    assert y.shape == (1797,) and y.dtype == torch.int64
    assert torch.bincount(y).tolist() == UCI_CLASS_COUNTS
    assert x.min() == 0 and x.max() == 1
    counts = x * 16
    assert torch.equal(counts, counts.round()), "the stored values are counts 0..16, divided by 16"
    licence, citation = images.digits_attribution()
    assert "CC BY 4.0" in licence and "10.24432/C50P49" in citation


def test_the_split_is_fixed_disjoint_and_complete():
    split = images.digits_split_indices()
    assert images.DIGITS_SPLIT == {"train": 1197, "valid": 300, "test": 300}
    assert {name: len(index) for name, index in split.items()} == images.DIGITS_SPLIT
    every = np.concatenate(list(split.values()))
    assert sorted(every.tolist()) == list(range(1797)), "disjoint, and together every image"
    again = images.digits_split_indices()
    assert all(np.array_equal(split[name], again[name]) for name in split)
    other = images.digits_split_indices(seed=1)
    assert not np.array_equal(split["test"], other["test"])
    data = images.digits_split()
    x, y = images.load_digits()
    for name, (xs, ys) in data.items():
        assert torch.equal(xs, x[split[name]]) and torch.equal(ys, y[split[name]])
        assert set(ys.tolist()) == set(range(10)), f"every class in {name}"


def test_matching_marks_shapes_and_types():
    batch = images.matching_marks(6, seed=3, size=32)
    assert batch.images.shape == (6, 1, 32, 32) and batch.images.dtype == torch.float32
    assert batch.labels.shape == (6,) and batch.labels.dtype == torch.int64
    assert batch.evidence.shape == (6, 32, 32) and batch.evidence.dtype == torch.bool
    assert batch.corners.shape == (6, 2, 2) and batch.shapes.shape == (6, 2)
    assert set(torch.unique(batch.images).tolist()) <= {0.0, images.DISTRACTOR_VALUE, images.MARK_VALUE}
    assert images.matching_marks(4, seed=0, size=48).images.shape == (4, 1, 48, 48)
    for size in (8, 30):
        with pytest.raises(ValueError, match="size"):
            images.matching_marks(4, seed=0, size=size)


def test_matching_marks_is_deterministic():
    a, b = images.matching_marks(20, seed=5), images.matching_marks(20, seed=5)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    c = images.matching_marks(20, seed=6)
    assert not torch.equal(a.images, c.images)


def test_matching_marks_are_the_same_on_every_machine():
    """The shipped results of chapter 09 were computed on these images: NumPy's PCG64 gives the same stream
    everywhere, so a digest of seed 0's first images is a constant (it changes only if the generator's code
    changes, and then the shipped results must be regenerated)."""
    batch = images.matching_marks(8, seed=0)
    digest = hashlib.sha256(batch.images.numpy().tobytes() + batch.labels.numpy().tobytes()).hexdigest()
    assert digest[:16] == MARKS_DIGEST, "matching_marks changed: regenerate chapter 09's shipped results"


MARKS_DIGEST = "e4320954ee1d5c70"


def test_the_evidence_is_the_bright_marks_and_they_are_far_apart():
    batch = images.matching_marks(200, seed=1)
    assert torch.equal(batch.evidence, batch.images[:, 0] == images.MARK_VALUE)
    per_mark = images.mark_pixels(batch)
    assert torch.equal(per_mark.any(dim=1), batch.evidence)
    assert not (per_mark[:, 0] & per_mark[:, 1]).any(), "the two marks do not overlap"
    assert (batch.corners % images.MARK_SIZE == 0).all(), "marks sit on the 4-pixel grid"
    centres = batch.corners.float() + (images.MARK_SIZE - 1) / 2
    assert ((centres[:, 0] - centres[:, 1]).norm(dim=-1) >= 16).all()
    for i in range(5):  # each mark's pixels are its shape's pattern at its corner
        for j in range(2):
            r, c = batch.corners[i, j].tolist()
            pattern = images.SHAPES[images.SHAPE_NAMES[int(batch.shapes[i, j])]]
            window = batch.images[i, 0, r : r + images.MARK_SIZE, c : c + images.MARK_SIZE].numpy() == images.MARK_VALUE
            assert np.array_equal(window, pattern)
    dim = (batch.images[:, 0] == images.DISTRACTOR_VALUE).sum(dim=(1, 2))
    sizes = sorted(int(p.sum()) for p in images.SHAPES.values())
    assert (dim >= 3 * sizes[0]).all() and (dim <= 3 * sizes[-1]).all(), "three whole distractors each"


def test_the_label_says_whether_the_shapes_match_and_is_balanced():
    batch = images.matching_marks(400, seed=2)
    assert torch.equal(batch.labels, (batch.shapes[:, 0] == batch.shapes[:, 1]).long())
    assert int(batch.labels.sum()) == 200


def test_one_mark_alone_says_nothing_about_the_label():
    """Each mark's shape has the same distribution under both labels (uniform): the counts of a large sample are
    within 5 standard deviations of n / (2 K) in every cell, and the positions do not differ either."""
    n, K = 6000, len(images.SHAPE_NAMES)
    batch = images.matching_marks(n, seed=4, size=16, distractors=0)
    expected = n / 2 / K
    sd = (expected * (1 - 1 / K)) ** 0.5
    for j in range(2):
        for label in (0, 1):
            counts = torch.bincount(batch.shapes[batch.labels == label, j], minlength=K).float()
            assert ((counts - expected).abs() < 5 * sd).all(), (j, label, counts.tolist())
    mean_corner = [batch.corners[batch.labels == label].float().mean(0) for label in (0, 1)]
    assert (mean_corner[0] - mean_corner[1]).abs().max() < 0.5


def test_patch_cover_reads_patches_in_reading_order():
    masks = torch.zeros(2, 8, 8, dtype=torch.bool)
    masks[0, 0, 5] = True  # patch (row 0, column 1) of 4 x 4 patches -> index 1
    masks[1, 7, 0] = True  # patch (row 1, column 0) -> index 2
    cover = images.patch_cover(masks, 4)
    assert cover.tolist() == [[False, True, False, False], [False, False, True, False]]
    batch = images.matching_marks(10, seed=0)
    by_pixels = torch.nn.functional.max_pool2d(batch.evidence[:, None].float(), 4).flatten(1).bool()
    assert torch.equal(images.patch_cover(batch.evidence, 4), by_pixels)
    with pytest.raises(ValueError, match="divide"):
        images.patch_cover(masks, 3)


def test_the_shipped_digits_are_scikit_learns_copy(tmp_path):
    """Where scikit-learn is installed (the instructor's export only), the export writes the shipped file's arrays."""
    pytest.importorskip("sklearn")
    from experiments import export_digits

    made = np.load(export_digits.export(tmp_path), allow_pickle=False)
    shipped = np.load(assets.path(images.DIGITS_FILE), allow_pickle=False)
    for key in ("images", "target", "licence", "citation"):
        assert np.array_equal(made[key], shipped[key]), key
