"""experiments.marks_maps: chapter 09's ViT on the matching marks, the one-mark control and the pointing game.

The program's pieces against independent oracles: ``unpatchify`` undoes the reference ``patchify`` and puts a
patch where its reading-order index says; occlusion equals blanking the pixels by slicing, one patch at a time;
the pointing figures of hand-made maps; the exact random baselines against counting every subset; erasing the
first mark removes its pixels and nothing else. The shipped files: the shipped model (``marks_vit.pt``) gives the
shipped test accuracy and the shipped attention maps' pointing figures (recomputed); the one-mark control is at
chance (the check the task must pass: within 3 binomial standard deviations of 0.5); the configuration is the
program's ``full`` one. A tiny run (``slow``) writes the layout; the whole pointing game is recomputed in a
``slow`` test.
"""

from __future__ import annotations

import itertools
import json
import math

import pytest
import torch

from attention_course import assets
from attention_course.images import MatchingMarks, mark_pixels, matching_marks, patch_cover
from autograder.reference import ch09_attention_beyond_sequences as ch09
from experiments import marks_maps


def test_unpatchify_undoes_patchify():
    images = torch.rand(3, 1, 8, 8)
    patches = ch09.patchify(images, 4)
    assert torch.equal(marks_maps.unpatchify(patches, 8, 4), images)
    one = torch.zeros(1, 4, 16)
    one[0, 2] = 1.0  # patch 2 of a 2 x 2 grid: row 1, column 0
    image = marks_maps.unpatchify(one, 8, 4)[0, 0]
    assert image[4:, :4].eq(1).all() and image.sum() == 16


def test_occlusion_blanks_one_patch_at_a_time():
    torch.manual_seed(0)
    config = marks_maps.CONFIGS["tiny"]
    model = marks_maps.vit(marks_maps.vit_config(config)).eval()
    image = matching_marks(1, seed=3).images[0]
    got = marks_maps.occlusion_importance(model, image, 1, 4)
    with torch.no_grad():
        base = torch.log_softmax(model(image[None]), -1)[0, 1]
        for n in (0, 9, 63):
            r, c = divmod(n, 8)
            blanked = image.clone()
            blanked[:, 4 * r : 4 * r + 4, 4 * c : 4 * c + 4] = 0
            expected = base - torch.log_softmax(model(blanked[None]), -1)[0, 1]
            assert got[n].item() == pytest.approx(expected.item(), abs=1e-5)


def test_pointing_figures_of_hand_made_maps():
    marks = torch.zeros(2, 2, 6, dtype=torch.bool)
    marks[:, 0, 1] = marks[:, 1, 4] = True  # the two marks are patches 1 and 4
    importance = torch.tensor(
        [
            [0.0, 0.9, 0.1, 0.2, 0.8, 0.0],  # top two are the marks
            [0.7, 0.5, 0.6, 0.9, 0.0, 0.8],  # top five miss patch 4: one mark only
        ]
    )
    found = marks_maps.pointing(importance, marks)
    assert found["top1"] == 0.5 and found["both_in_top2"] == 0.5 and found["both_in_top5"] == 0.5
    assert found["mass_on_marks"] == pytest.approx(((0.9 + 0.8) / 2.0 + 0.5 / 3.5) / 2)


def test_random_baselines_are_exact():
    """The formulas against counting every set of top-k patches of every ranking (N = 7, 5 candidates)."""
    N = 7
    marks = torch.zeros(1, 2, N, dtype=torch.bool)
    marks[0, 0, 2] = marks[0, 1, 5] = True
    candidates = torch.zeros(1, N, dtype=torch.bool)
    candidates[0, [0, 2, 3, 5, 6]] = True
    exact = marks_maps.random_pointing(marks, candidates)
    pool = [0, 2, 3, 5, 6]
    for name, needed, k in marks_maps.TOPS:
        k = min(k, len(pool))
        subsets = list(itertools.combinations(pool, k))
        wins = sum(len({2, 5} & set(s)) >= needed for s in subsets)
        assert exact[name] == pytest.approx(wins / len(subsets)), name
    assert exact["mass_on_marks"] == pytest.approx(2 / 5)


def test_erasing_the_first_mark_leaves_the_rest():
    batch = matching_marks(20, seed=7)
    erased = marks_maps.erase_first_mark(batch)
    first, second = mark_pixels(batch).unbind(1)
    assert (erased.images[:, 0][first] == 0).all()
    assert torch.equal(erased.images[:, 0][~first], batch.images[:, 0][~first])
    assert torch.equal(erased.evidence, second) and torch.equal(erased.labels, batch.labels)


def check_layout(results: dict, config_name: str):
    config = marks_maps.CONFIGS[config_name]
    assert results["made_by"] == marks_maps.command(config_name)
    assert results["config"] == json.loads(json.dumps(marks_maps.dataclasses.asdict(config)))
    assert results["vit"]["curve"]["steps"][-1] == config.steps
    assert results["one_mark_control"]["test_images"] == config.test_images
    pointing = results["pointing"]
    assert pointing["images"] == config.maps_images and list(pointing["methods"]) == list(marks_maps.METHODS)
    by_label = pointing["methods_by_label"]
    assert by_label["same"]["images"] + by_label["different"]["images"] == config.maps_images
    for method in marks_maps.METHODS:  # the two labels' figures put together are the whole's
        for key, value in pointing["methods"][method].items():
            parts = sum(by_label[name][method][key] * by_label[name]["images"] for name in by_label)
            assert parts == pytest.approx(value * config.maps_images, abs=1e-4), (method, key)
    for figures in [*pointing["methods"].values(), pointing["random_over_all_patches"]]:
        assert sorted(figures) == sorted([name for name, _, _ in marks_maps.TOPS] + ["mass_on_marks"])
        assert all(0 <= v <= 1 + 1e-6 for v in figures.values())
    # two marks among 64 patches: the random top-1 hits one with probability 2/64, both in the top 2 1/C(64, 2)
    assert pointing["random_over_all_patches"]["top1"] == pytest.approx(2 / 64)
    assert pointing["random_over_all_patches"]["both_in_top2"] == pytest.approx(1 / math.comb(64, 2))


@pytest.mark.slow
def test_a_tiny_run_writes_the_layout(tmp_path):
    results = marks_maps.run_marks_maps("tiny", out=tmp_path, log=lambda *a: None)
    assert json.loads((tmp_path / marks_maps.RESULTS_FILE).read_text()) == json.loads(json.dumps(results))
    check_layout(results, "tiny")
    model = marks_maps.load_model(tmp_path / marks_maps.MODEL_FILE, "tiny")
    test = marks_maps.data(marks_maps.CONFIGS["tiny"], "test")
    assert marks_maps.accuracy(model, test.images, test.labels) == results["vit"]["test_accuracy"]


@pytest.fixture(scope="module")
def shipped():
    results = json.loads(assets.path(marks_maps.RESULTS_FILE).read_text())
    model = marks_maps.load_model(assets.path(marks_maps.MODEL_FILE), results["config"]["name"])
    return results, model


def test_the_shipped_model_gives_the_shipped_figures(shipped):
    results, model = shipped
    check_layout(results, "full")
    config = marks_maps.CONFIGS["full"]
    test = marks_maps.data(config, "test")
    assert marks_maps.accuracy(model, test.images, test.labels) == results["vit"]["test_accuracy"]
    batch = MatchingMarks(*(field[: config.maps_images] for field in test))
    maps = marks_maps.attention_importance(model, batch.images)
    marks = patch_cover(mark_pixels(batch), config.patch_size)
    for method, importance in maps.items():
        recomputed = marks_maps.pointing(importance, marks)
        for key, value in recomputed.items():
            assert value == pytest.approx(results["pointing"]["methods"][method][key], abs=1e-6), (method, key)


def test_a_model_that_sees_one_mark_is_at_chance(shipped):
    control = shipped[0]["one_mark_control"]
    sd = math.sqrt(0.25 / control["test_images"])
    assert control["binomial_sd_at_chance"] == pytest.approx(sd)
    assert abs(control["test_accuracy"] - 0.5) <= 3 * sd, control["test_accuracy"]


@pytest.mark.slow
def test_the_whole_pointing_game_is_what_the_shipped_model_gives(shipped):
    results, model = shipped
    config = marks_maps.CONFIGS["full"]
    test = marks_maps.data(config, "test")
    batch = MatchingMarks(*(field[: config.maps_images] for field in test))
    recomputed = json.loads(json.dumps(marks_maps.pointing_figures(model, batch, config.patch_size)))
    assert recomputed["accuracy"] == results["pointing"]["accuracy"]
    for method in marks_maps.METHODS:
        for key, value in recomputed["methods"][method].items():
            assert value == pytest.approx(results["pointing"]["methods"][method][key], abs=1e-5), (method, key)
