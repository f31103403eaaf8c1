"""Chapter 08's benchmark (``python -m experiments.benchmark_attention_at_scale``, with its three parts
:mod:`experiments.attention_memory`, :mod:`experiments.layer_costs`, :mod:`experiments.cached_decoding`) and
the results it ships.

- The program runs at tiny sizes (``--quick``, seconds, in this process) and writes a file of the layout
  the chapter reads.
- The shipped ``attention_course/assets/attention_at_scale_results.json``: its targets are recomputed
  from its own raw figures and agree with what it claims (and are met, as the chapter says); its
  machine-independent figures (tensor memory, multiply-adds, per-layer costs at the smallest size) are
  what the benchmark measures now; tokens are identical with and without the cache.
No timing is asserted: times are whatever the machine gave, and the file records its load average.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from attention_course.profiling import matmul_flops, record_ops
from autograder import course
from experiments import attention_memory, cached_decoding, layer_costs

SHIPPED = course.ROOT / "attention_course" / "assets" / "attention_at_scale_results.json"


@pytest.fixture(scope="module")
def benchmark():
    """The program's module; PyTorch on one thread meanwhile (small tensors: two threads only wait for each other)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        from experiments import benchmark_attention_at_scale

        yield benchmark_attention_at_scale
    finally:
        torch.set_num_threads(threads)


def _check_layout(results: dict) -> None:
    for key in ("command", "torch", "threads", "dtype", "load_average_before", "load_average_after", "attention",
                "layer_costs", "decoding", "targets"):  # fmt: skip
        assert key in results, f"the results lack {key!r}"
    attention = results["attention"]
    lengths = attention["lengths"]
    assert set(attention["methods"]) == {"naive", "tiled", "sdpa"}
    for name, row in attention["methods"].items():
        for key in ("tensor_bytes", "rss_bytes", "largest_tensor_elements", "seconds", "all_seconds"):
            assert len(row[key]) == len(lengths), (name, key)
        assert all(b > 0 for b in row["tensor_bytes"]) and all(s >= 0 for s in row["seconds"]), name
    naive = attention["methods"]["naive"]
    assert naive["largest_tensor_elements"] == [n * n for n in lengths], "the formula builds the (T, T) score matrix"
    bigger = max(attention["block_size"], attention["d"])  # below that, one block (or the output) is (T, T)
    tiled = attention["methods"]["tiled"]["largest_tensor_elements"]
    assert all(e < n * n for e, n in zip(tiled, lengths) if n > bigger), "tiled_attention never builds a (T, T) tensor"
    costs = results["layer_costs"]
    assert set(costs["rows"]) == {"self_attention", "recurrent", "convolutional"}
    for row in costs["rows"].values():
        for key in ("multiply_adds", "sequential_operations", "path_length"):
            assert len(row[key]) == len(costs["n"]) and all(v > 0 for v in row[key]), (row["label"], key)
    decoding = results["decoding"]
    assert len(decoding["identical_tokens"]) == len(decoding["generated"])
    assert all(decoding["identical_tokens"]), "the cache must not change the generated tokens"
    for way in ("recompute", "cache"):
        assert len(decoding[way]["seconds"]) == len(decoding[way]["multiply_adds"]) == len(decoding["generated"])
    assert all(a > b for a, b in zip(decoding["recompute"]["multiply_adds"], decoding["cache"]["multiply_adds"]))


def test_the_benchmark_runs_at_tiny_sizes_and_writes_its_file(benchmark, tmp_path):
    out = tmp_path / "quick.json"
    assert benchmark.main(["--quick", "--out", str(out)]) == 0
    results = json.loads(out.read_text())
    _check_layout(results)
    assert results["command"].endswith("--quick") and results["targets"] == {}, "a quick run measures no target"
    assert results["attention"]["lengths"] == [64, 128]


def test_tensor_memory_counts_new_storages_only(benchmark):
    """Views of the arguments (a transpose, a slice, an unsqueeze) are not new memory; a new tensor is. So
    F.scaled_dot_product_attention, which creates its output and a logsumexp, is charged far less than
    its three inputs (the benchmark once counted the inputs' views and charged it 4 times its output)."""
    x = torch.randn(64, 8)
    assert attention_memory.tensor_memory(lambda t: t.transpose(0, 1)[None, 2:], x) == 0
    assert attention_memory.tensor_memory(lambda t: t * 2.0, x) == x.numel() * x.element_size()
    Q, K, V = (torch.randn(128, 16) for _ in range(3))
    output_bytes = 128 * 16 * 4
    sdpa = attention_memory.tensor_memory(attention_memory.attention_call("sdpa", 32), Q, K, V)
    assert output_bytes <= sdpa < 2 * output_bytes, sdpa


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="peak RSS needs Linux's /proc/self/clear_refs")
def test_peak_rss_is_measured_in_a_fresh_process():
    """The child process (``--quick`` skips it) imports the module and measures: the formula at T = 1,024 holds
    its 4 MiB score matrix resident, tiled attention with blocks of 64 keys a sixteenth of it (and its output)."""
    naive = attention_memory.peak_rss("naive", 1024, 16, 64, 1)
    tiled = attention_memory.peak_rss("tiled", 1024, 16, 64, 1)
    assert naive >= 1024 * 1024 * 4, naive
    assert tiled < naive / 2, (tiled, naive)


def test_the_shipped_results_have_the_layout_and_range_the_chapter_reads():
    results = json.loads(SHIPPED.read_text())
    _check_layout(results)
    assert results["command"] == "python -m experiments.benchmark_attention_at_scale"
    assert results["attention"]["lengths"][0] == 256 and results["attention"]["lengths"][-1] >= 16384
    assert results["attention"]["d"] == 64 and results["dtype"] == "float32"
    assert max(results["decoding"]["generated"]) == 512
    assert all(r is not None for row in results["attention"]["methods"].values() for r in row["rss_bytes"]), (
        "the shipped run measures peak RSS too"
    )


def test_the_shipped_targets_follow_from_the_shipped_figures_and_are_met(benchmark):
    results = json.loads(SHIPPED.read_text())
    recomputed = benchmark.targets(results["attention"], results["decoding"])
    assert recomputed == results["targets"], "the targets in the file are not what its own figures give"
    memory, speed = results["targets"]["tiled_memory"], results["targets"]["cache_speedup"]
    assert (
        memory["length"] == 8192 and memory["limit"] == 0.1 and set(memory["ratios"]) == {"tensor_memory", "peak_rss"}
    )
    assert memory["met"] and all(r <= 0.1 for r in memory["ratios"].values()), memory
    assert speed["tokens"] == 512 and speed["limit"] == 5.0 and speed["identical_tokens"] and speed["met"], speed


def test_the_shipped_machine_independent_figures_are_what_the_benchmark_measures_now(benchmark):
    """Tensor memory, largest tensors and multiply-adds depend only on the code and the shapes: at the smallest
    length (and the per-layer costs at the smallest n) a fresh measurement gives the shipped numbers."""
    results = json.loads(SHIPPED.read_text())
    attention = results["attention"]
    length = attention["lengths"][0]
    Q, K, V = (torch.randn(length, attention["d"]) for _ in range(3))
    for name, row in attention["methods"].items():
        fn = attention_memory.attention_call(name, attention["block_size"])
        assert attention_memory.tensor_memory(fn, Q, K, V) == row["tensor_bytes"][0], name
    decoding = results["decoding"]
    torch.manual_seed(0)
    model = cached_decoding.Decoder(max_len=max(decoding["generated"]) + 8, **decoding["model"]).eval()
    prompt = torch.randint(0, decoding["model"]["n_vocab"], (1, decoding["prompt_tokens"]))
    for way, use_cache in (("recompute", False), ("cache", True)):
        _, ops = record_ops(cached_decoding.generate, model, prompt, decoding["generated"][0], use_cache)
        assert matmul_flops(ops) == decoding[way]["multiply_adds"][0], way
    costs = layer_costs.measure_layer_costs(
        sizes=(costs_n := results["layer_costs"]["n"][0],), d=results["layer_costs"]["d"]
    )
    for key, row in costs["rows"].items():
        shipped = results["layer_costs"]["rows"][key]
        for field in ("multiply_adds", "sequential_operations", "path_length"):
            assert row[field][0] == shipped[field][0], (key, field, costs_n)


def test_the_shipped_memory_grows_as_the_chapter_says():
    """The formula's memory grows with T^2 (x4 per doubling), tiled attention's and the flash kernel's with T (x2)."""
    attention = json.loads(SHIPPED.read_text())["attention"]
    lengths = attention["lengths"]
    i, j = lengths.index(8192), lengths.index(16384)
    growth = {name: row["tensor_bytes"][j] / row["tensor_bytes"][i] for name, row in attention["methods"].items()}
    assert math.isclose(growth["naive"], 4, rel_tol=0.05), growth
    assert math.isclose(growth["tiled"], 2, rel_tol=0.1) and math.isclose(growth["sdpa"], 2, rel_tol=0.1), growth
