"""experiments.vit_digits: chapter 09's ViT, CNN and MLP on the digits, and the ViT's patch-size sweep.

The program's pieces against what they must be: the three models have about the same number of parameters; the
batches are epochs of a seeded shuffle (every training image once per epoch); a tiny run (``slow``: it trains,
seconds) writes the file's layout. The shipped file is what its command writes: its configuration is the program's
``full`` one, its split the course's, its summaries the figures of its own runs (mean, spread, chosen learning
rate), its sweep's token counts the patch arithmetic.
"""

from __future__ import annotations

import json
import statistics

import numpy as np
import pytest
import torch

from attention_course import assets
from attention_course.images import DIGITS_SPLIT
from experiments import vit_digits
from experiments.image_models import parameter_count


def test_the_three_models_are_of_similar_size():
    config = vit_digits.CONFIGS["full"]
    counts = {kind: parameter_count(vit_digits.build(kind, config)) for kind in vit_digits.MODELS}
    assert max(counts.values()) <= 1.1 * min(counts.values()), counts
    x = torch.rand(3, 1, 8, 8)
    for kind in vit_digits.MODELS:
        assert vit_digits.build(kind, config)(x).shape == (3, 10)


def test_batches_are_seeded_epochs():
    images, labels = torch.arange(10.0)[:, None], torch.arange(10)
    batch = vit_digits.batches(images, labels, batch_size=5, steps=4, seed=3)
    first_epoch = torch.cat([batch(0)[1], batch(1)[1]])
    assert sorted(first_epoch.tolist()) == list(range(10)), "every image once per epoch"
    assert torch.equal(batch(2)[1], vit_digits.batches(images, labels, 5, 4, seed=3)(2)[1])
    assert not torch.equal(first_epoch, torch.cat([batch(2)[1], batch(3)[1]])), "reshuffled each epoch"


def check_layout(results: dict, config_name: str):
    config = vit_digits.CONFIGS[config_name]
    assert results["made_by"] == vit_digits.command(config_name)
    assert results["config"] == json.loads(json.dumps(vit_digits.dataclasses.asdict(config)))
    assert results["split"]["sizes"] == DIGITS_SPLIT
    assert results["machine"]["cpu_threads"] == 1
    assert list(results["models"]) == list(vit_digits.MODELS)
    for entry in results["models"].values():
        runs = entry["runs"]
        assert [r["seed"] for r in runs] == list(config.seeds)
        assert all(r["lr"] == entry["chosen_lr"] for r in runs)
        assert entry["chosen_lr"] == max(config.lrs, key=lambda lr: (entry["valid_accuracy_by_lr"][str(lr)], -lr))
        tests = [r["test_accuracy"] for r in runs]
        assert entry["test_accuracy"]["mean"] == pytest.approx(np.mean(tests))
        assert entry["test_accuracy"]["std"] == pytest.approx(np.std(tests, ddof=1) if len(tests) > 1 else 0.0)
        for r in runs:  # accuracies are whole images out of the split's 300
            assert r["test_accuracy"] * 300 == pytest.approx(round(r["test_accuracy"] * 300))
            assert r["curve"]["steps"][-1] == config.steps and r["curve"]["valid_accuracy"][-1] == r["valid_accuracy"]
    for p, entry in results["patch_sweep"].items():
        assert entry["tokens"] == (8 // int(p)) ** 2
        assert entry["test_accuracy"]["mean"] == pytest.approx(statistics.fmean(entry["test_accuracy_per_seed"]))
        assert entry["seconds_per_update"] > 0
    assert results["patch_sweep_timing"]["rounds"] == config.timing_rounds
    assert sorted(map(int, results["patch_sweep"])) == sorted(config.patch_sizes)


@pytest.mark.slow
def test_a_tiny_run_writes_the_layout(tmp_path):
    results = vit_digits.run_vit_digits("tiny", out=tmp_path, log=lambda *a: None)
    assert json.loads((tmp_path / vit_digits.RESULTS_FILE).read_text()) == json.loads(json.dumps(results))
    check_layout(json.loads(json.dumps(results)), "tiny")


def test_the_shipped_results_are_what_the_full_command_writes():
    shipped = json.loads(assets.path(vit_digits.RESULTS_FILE).read_text())
    check_layout(shipped, "full")
    sweep = shipped["patch_sweep"][str(vit_digits.CONFIGS["full"].vit_patch_size)]
    assert sweep["test_accuracy_per_seed"] == [r["test_accuracy"] for r in shipped["models"]["vit"]["runs"]]
