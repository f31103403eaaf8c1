"""experiments.perceiver_marks and experiments.perceiver_cost: chapter 09's Perceiver, its accuracy and its cost.

The cost benchmark's pieces against hand-worked cases: the tensor-memory measure counts a created tensor's bytes
and not the inputs'; the crossover of made-up curves; the attention weights alone put a floor under each way's
memory (N x M floats for cross-attention, M x M for self-attention). The shipped cost file: the sizes are the
program's, the memory (which depends only on the code and the shapes) is re-measured for M up to 1,024 and is
what the file says, the ratio and the crossover are recomputed from its own figures, and the target (at most
1/50 at M = 16,384) is met. The Perceiver's results use marks_maps's data and budget (its shipped configuration)
and the model the program builds; the uniform baselines of where its cross-attention reads are the marks' share
of the pixels. Tiny runs (``slow``) write both layouts.
"""

from __future__ import annotations

import json

import pytest
import torch

from attention_course import assets
from experiments import marks_maps, perceiver_cost, perceiver_marks, vit_digits
from experiments.image_models import fourier_positions, parameter_count, pixel_inputs


def test_tensor_memory_counts_what_is_created():
    a = torch.ones(100, 10)
    assert perceiver_cost.tensor_memory(lambda x: x @ torch.ones(10, 20), a) == 100 * 20 * 4 + 10 * 20 * 4
    assert perceiver_cost.tensor_memory(lambda x: x.t(), a) == 0, "a view of an input is not new memory"


def test_the_crossover_of_made_up_curves():
    sizes = [1, 2, 4, 8]
    assert perceiver_cost.crossover(sizes, [5, 5, 1, 1], [1, 4, 4, 4]) == 4
    assert perceiver_cost.crossover(sizes, [0, 5, 1, 1], [1, 4, 4, 4]) == 4, "cheaper from there on, not before"
    assert perceiver_cost.crossover(sizes, [5, 5, 5, 5], [1, 1, 1, 1]) is None


@pytest.mark.parametrize("M", [64, 256])
def test_the_weights_put_a_floor_under_the_memory(M):
    block = perceiver_cost.make_block()
    with torch.no_grad():
        for way, floor in (("cross", perceiver_cost.LATENTS * M * 4), ("self", M * M * 4)):
            queries, inputs = perceiver_cost.inputs_for(way, M, perceiver_cost.LATENTS)
            memory = perceiver_cost.tensor_memory(block, queries, inputs, existing=list(block.parameters()))
            assert memory >= floor, (way, memory, floor)


@pytest.mark.slow
def test_a_quick_cost_run_writes_the_layout(tmp_path):
    results = perceiver_cost.run_perceiver_cost(
        perceiver_cost.QUICK_SIZES, out=tmp_path, repeats=1, log=lambda *a: None
    )
    assert json.loads((tmp_path / perceiver_cost.RESULTS_FILE).read_text()) == json.loads(json.dumps(results))
    assert (tmp_path / perceiver_cost.PLOT_FILE).read_text().lstrip().startswith("<?xml")
    assert "target" not in results and results["made_by"].endswith("--quick")


def test_the_shipped_cost_figures_are_what_the_benchmark_measures():
    shipped = json.loads(assets.path(perceiver_cost.RESULTS_FILE).read_text())
    assert shipped["made_by"] == "python -m experiments.perceiver_cost"
    assert shipped["sizes"] == list(perceiver_cost.SIZES) and shipped["latents"] == perceiver_cost.LATENTS
    small = [M for M in shipped["sizes"] if M <= 1024]
    block = perceiver_cost.make_block()
    with torch.no_grad():
        for i, M in enumerate(small):
            for way in perceiver_cost.WAYS:
                queries, inputs = perceiver_cost.inputs_for(way, M, shipped["latents"])
                memory = perceiver_cost.tensor_memory(block, queries, inputs, existing=list(block.parameters()))
                assert memory == shipped[way]["tensor_bytes"][i], (way, M)
    i = shipped["sizes"].index(perceiver_cost.TARGET_M)
    ratio = shipped["cross"]["tensor_bytes"][i] / shipped["self"]["tensor_bytes"][i]
    assert shipped["target"]["memory_ratio"] == pytest.approx(ratio)
    assert shipped["target"]["met"] and ratio <= 1 / 50
    for key in ("tensor_bytes", "seconds"):
        expected = perceiver_cost.crossover(shipped["sizes"], shipped["cross"][key], shipped["self"][key])
        assert shipped["crossover"][key] == expected
    assert shipped["plot"]["file"] == perceiver_cost.PLOT_FILE and assets.path(perceiver_cost.PLOT_FILE).is_file()
    assert f"1/{1 / ratio:.0f}" in shipped["plot"]["alt_text"]


def test_pixel_inputs_put_each_pixel_with_its_position():
    images = torch.arange(12.0).reshape(1, 1, 3, 4)
    positions = fourier_positions(3, 4, 2)
    assert positions.shape == (12, 2 + 4 * 2)
    inputs = pixel_inputs(images, positions)
    assert inputs.shape == (1, 12, 1 + 10)
    assert torch.equal(inputs[0, :, 0], torch.arange(12.0)), "reading order"
    assert inputs[0, 5, 1:3].tolist() == pytest.approx([0.0, -1 + 2 / 3]), "pixel (1, 1): y = 0, x = -1/3"


@pytest.mark.slow
def test_a_tiny_perceiver_run_writes_the_layout(tmp_path):
    results = perceiver_marks.run_perceiver_marks("tiny", out=tmp_path, log=lambda *a: None)
    assert json.loads((tmp_path / perceiver_marks.RESULTS_FILE).read_text()) == json.loads(json.dumps(results))
    assert results["curve"]["steps"][-1] == marks_maps.CONFIGS["tiny"].steps
    assert results["digits_check"]["steps"] == vit_digits.CONFIGS["tiny"].steps


def test_the_shipped_perceiver_results_use_the_vits_data_and_budget():
    shipped = json.loads(assets.path(perceiver_marks.RESULTS_FILE).read_text())
    vit = json.loads(assets.path(marks_maps.RESULTS_FILE).read_text())
    assert shipped["made_by"] == perceiver_marks.command("full")
    assert shipped["config"] == vit["config"], "the same data, budget, learning rate and seed as the ViT"
    assert shipped["perceiver"] == perceiver_marks.dataclasses.asdict(perceiver_marks.PerceiverConfig())
    config = marks_maps.CONFIGS["full"]
    assert shipped["parameters"] == parameter_count(perceiver_marks.build(config, perceiver_marks.PerceiverConfig()))
    assert shipped["curve"]["steps"][-1] == config.steps and 0 <= shipped["test_accuracy"] <= 1
    check = shipped["digits_check"]  # the same model can learn: the digits with vit_digits's budget
    assert check["steps"] == vit_digits.CONFIGS["full"].steps and check["test_images"] == 300
    assert check["test_accuracy"] * 300 == pytest.approx(round(check["test_accuracy"] * 300))
    test = marks_maps.data(config, "test")
    reads = shipped["cross_attention"]
    assert reads["uniform_weight_on_marks"] == pytest.approx(float(test.evidence.float().mean()))
    assert reads["uniform_weight_on_marked_pixels"] == pytest.approx(float((test.images > 0).float().mean()))


def test_the_shipped_longer_perceiver_run_is_five_times_the_budget():
    shipped = json.loads(assets.path(perceiver_marks.results_file(5)).read_text())
    vit = json.loads(assets.path(marks_maps.RESULTS_FILE).read_text())["config"]
    assert shipped["made_by"] == perceiver_marks.command("full", 5) and shipped["steps_factor"] == 5
    assert shipped["config"] == {**vit, "steps": 5 * vit["steps"], "eval_every": 5 * vit["eval_every"]}
    assert shipped["curve"]["steps"][-1] == 5 * vit["steps"]
