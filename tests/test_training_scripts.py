"""The instructor's programs around the trainers: ``scripts/gpu_check.py`` and the training benchmark,
``python -m experiments.benchmark_training`` (with the lines it measures, :mod:`experiments.training_throughput`).

Plumbing checks (a minute or two on a 2-core CPU), no timing assertions: the GPU check runs tiny bounded
versions of every model (the six attention variants, the Transformer and the RNN beside it) on the CPU
and writes sane figures and JSON, refuses without CUDA unless told otherwise, and the benchmark runs
for a second per measurement and prints its lines. The
benchmark's per-sentence loop must compute the same loss as the batched model on one sentence.
"""

from __future__ import annotations

import json
import math
import os
import struct
import subprocess
import sys

import pytest
import torch

from autograder import course

SCRIPTS = course.ROOT / "scripts"
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}


def run_script(name: str, *arguments: str, timeout: float = 120) -> subprocess.CompletedProcess:
    command = [sys.executable, str(SCRIPTS / name), *arguments]
    return subprocess.run(command, cwd=course.ROOT, env=ENV, capture_output=True, text=True, timeout=timeout)


def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG file"
    return struct.unpack(">II", data[16:24])


def test_gpu_check_tiny_cpu_run_writes_figures_and_summary(tmp_path):
    out = tmp_path / "gpu_check"
    result = run_script(
        "gpu_check.py", "--allow-cpu", "--config", "tiny", "--max-seconds", "1", "--quiet", "--out", str(out)
    )
    assert result.returncode == 0, f"gpu_check.py failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    summary = json.loads((out / "summary.json").read_text())
    for name in ("accuracy_by_length", "throughput", "attention_at_scale"):
        width, height = png_size(out / summary["figures"][name])
        assert width >= 400 and height >= 200, f"{name}: a {width}x{height} figure"
    # chapter 08: the three ways of computing attention, timed at every length (memory is measured on CUDA only)
    attention = summary["attention_at_scale"]
    assert set(attention["methods"]) == {"naive", "tiled", "sdpa_flash"} and attention["lengths"] == [64, 128]
    for name, row in attention["methods"].items():
        assert len(row["seconds"]) == 2 and all(t is not None and t > 0 for t in row["seconds"]), (name, row)
        assert row["peak_mb"] == [None, None] or torch.cuda.is_available(), (name, row)
    assert summary["config"] == "tiny" and summary["cuda_available"] == torch.cuda.is_available()
    assert 0 < summary["total_seconds"] < 120
    # every model of the course: the six attention variants, the Transformer and the RNN beside it
    from experiments.models import VARIANTS
    from experiments.transformer import MODELS

    assert set(summary["variants"]["variants"]) == set(VARIANTS)
    assert set(summary["transformer"]["models"]) == set(MODELS)
    models = [*summary["variants"]["variants"].values(), *summary["transformer"]["models"].values()]
    assert len(summary["table"]) == len(models) == len(VARIANTS) + len(MODELS)
    num_test = {id(m): summary["variants"]["config"]["num_test"] for m in summary["variants"]["variants"].values()}
    num_test.update(
        {id(m): summary["transformer"]["data"]["test_pairs"] for m in summary["transformer"]["models"].values()}
    )
    for model in models:
        label = model["label"]
        assert 0.0 <= model["exact_match"] <= 1.0 and 0.0 <= model["bleu"] <= 100.0, label
        assert sum(row["count"] for row in model["by_length"].values()) == num_test[id(model)], label
        for row in model["by_length"].values():
            assert 0.0 <= row["exact_match"] <= 1.0 and 0.0 <= row["bleu"] <= 100.0, label
        assert model["parameters"] > 0 and model["target_tokens_per_second"] > 0, label
        assert 0 < model["train_seconds"] < 1 + 5, label  # --max-seconds 1 bounds each model (one step may pass it)
    for model in summary["transformer"]["models"].values():
        history = model["history"]
        assert len(history["step"]) == len(history["valid_loss"]) >= 1, model["label"]
        assert all(math.isfinite(x) and x > 0 for x in history["train_loss"] + history["valid_loss"]), model["label"]
    check_shipped_gpu_record(summary)


def check_shipped_gpu_record(fresh: dict) -> None:
    """The GPU check's record that chapters 05, 07 and 08 read is what this script writes (the same keys, two
    levels down, as the run above), made on CUDA in the full configuration, with every model evaluated on its
    whole test split."""
    from attention_course import assets

    shipped = json.loads(assets.path("gpu_check_results.json").read_text())

    def keys(value, depth=2):
        return {k: keys(v, depth - 1) for k, v in value.items()} if isinstance(value, dict) and depth else None

    assert keys(shipped) == keys(fresh), "gpu_check_results.json is not shaped as scripts/gpu_check.py writes it now"
    assert shipped["cuda_available"] and shipped["device"] == "cuda" and shipped["config"] == "full", shipped["device"]
    assert set(shipped["variants"]["variants"]) == set(fresh["variants"]["variants"])
    assert set(shipped["transformer"]["models"]) == set(fresh["transformer"]["models"])
    tests = {
        "variants": shipped["variants"]["config"]["num_test"],
        "transformer": shipped["transformer"]["data"]["test_pairs"],
    }
    for program, key in (("variants", "variants"), ("transformer", "models")):
        for model in shipped[program][key].values():
            assert sum(row["count"] for row in model["by_length"].values()) == tests[program], model["label"]
    for name, row in shipped["attention_at_scale"]["methods"].items():
        assert all(mb is not None and mb > 0 for mb in row["peak_mb"]), f"{name}: no GPU memory measured"


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here: the script would not refuse")
def test_gpu_check_refuses_without_cuda(tmp_path):
    out = tmp_path / "not_written"
    result = run_script("gpu_check.py", "--out", str(out), timeout=60)
    assert result.returncode == 2, f"expected exit status 2, got {result.returncode}:\n{result.stdout}\n{result.stderr}"
    assert "CUDA is not available" in result.stderr and "--allow-cpu" in result.stderr, result.stderr
    assert not out.exists(), "a refused run must write nothing"


def test_benchmark_prints_its_lines(tmp_path):
    out = tmp_path / "benchmark.json"
    arguments = ["--seconds", "1", "--threads", "1", "--config", "tiny", "--pool", "300", "--batch-sizes", "32", "256",
                 "--demo-steps", "5", "--out", str(out)]  # fmt: skip
    command = [sys.executable, "-m", "experiments.benchmark_training", *arguments]
    # eight Python processes on a busy machine
    result = subprocess.run(command, cwd=course.ROOT, env=ENV, capture_output=True, text=True, timeout=400)
    assert result.returncode == 0, (
        f"experiments.benchmark_training failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    lines = result.stdout.splitlines()
    expected = ["batched, CPU, batches of 32:", "batched, CPU, batches of 256:", "Transformer, CPU, batches of 32:",
                "Transformer, CPU, batches of 256:", "per-sentence loop, CPU:"]  # fmt: skip
    if torch.cuda.is_available():
        expected += ["batched, GPU, batches of 32:", "Transformer, GPU, batches of 32:"]
    for start in expected:
        found = [line for line in lines if line.startswith(start)]
        assert len(found) == 1 and "target tokens/s" in found[0] and "per CPU second" in found[0], (
            start,
            result.stdout,
        )
        assert "peak RSS" in found[0], (start, result.stdout)
    if torch.cuda.is_available():
        assert "GPU peak allocated" in next(line for line in lines if line.startswith("batched, GPU"))
    else:
        assert any(line.startswith("batched, GPU: skipped") for line in lines), result.stdout
    assert any(
        line.startswith("ratio batched / per-sentence on the CPU:") and "target >= 50x" in line for line in lines
    ), result.stdout
    assert any(line.startswith("the same ratio per CPU second") for line in lines), result.stdout
    assert any(line.startswith("Transformer / RNN with attention, batched on the CPU:") for line in lines), (
        result.stdout
    )
    demo = [line for line in lines if line.startswith("chapter 05's notebook demo, CPU:")]
    assert len(demo) == 1 and "s for 5 steps" in demo[0] and "1 thread" in demo[0], result.stdout
    # --out appends the run, with the machine and the load, to a JSON file (the shipped one is made this way)
    run = json.loads(out.read_text())["runs"][-1]
    assert set(run["ratio"]) == set(run["batched_tokens_per_second"]) == {"32", "256"}, run
    for size, ratio in run["ratio"].items():
        assert ratio == pytest.approx(run["batched_tokens_per_second"][size] / run["per_sentence_tokens_per_second"])
        per_cpu = run["batched_tokens_per_cpu_second"][size] / run["per_sentence_tokens_per_cpu_second"]
        assert run["ratio_per_cpu_second"][size] == pytest.approx(per_cpu)
    assert run["threads"] == 1 and run["cores"] >= 1 and run["torch"] == torch.__version__ and run["cpu"], run
    assert len(run["load_average_at_start"]) == 3 and len(run["load_average_at_end"]) == 3, run
    assert run["notebook_demo"]["steps"] == 5 and run["notebook_demo"]["threads"] == 1, run["notebook_demo"]


def test_per_sentence_loop_computes_the_batched_models_loss():
    """The tutorial-style loop steps the same model: its loss on one sentence equals the batched forward's."""
    from attention_course.data import PAD_ID
    from autograder.reference.ch05_gpu_training import masked_cross_entropy
    from experiments import training_throughput as benchmark
    from experiments.config import CONFIGS
    from experiments.data import make_batch
    from experiments.models import build_model

    pairs, (src_size, tgt_size) = benchmark.sentence_pool(40, seed=3)
    torch.manual_seed(0)
    model = build_model("attention", CONFIGS["tiny"], src_size, tgt_size)
    for source, target in sorted(pairs, key=lambda pair: len(pair[0]))[::8]:
        batch = make_batch([(source, target)])
        with torch.no_grad():
            expected = masked_cross_entropy(
                model(batch["src"], batch["lengths"], batch["tgt_in"]), batch["tgt_out"], PAD_ID
            )
            got = benchmark.per_sentence_loss(model, source, target)
        assert torch.allclose(got, expected, atol=1e-5), (len(source), float(got), float(expected))


def test_make_batch_pads_as_chapter_05s_pad_batch():
    """make_batch builds its tensors from padded lists; they must be those of chapter 05's pad_batch (the
    reference the trainer was written against), the decoder's inputs being BOS followed by the target without EOS."""
    from attention_course.data import BOS_ID, EOS_ID, PAD_ID
    from autograder.reference.ch05_gpu_training import pad_batch
    from experiments.data import make_batch

    generator = torch.Generator().manual_seed(0)
    pairs = []
    for _ in range(9):
        source_length, target_length = torch.randint(1, 8, (2,), generator=generator).tolist()
        pairs.append(
            (
                torch.randint(4, 30, (source_length,), generator=generator).tolist() + [EOS_ID],
                torch.randint(4, 30, (target_length,), generator=generator).tolist() + [EOS_ID],
            )
        )
    batch = make_batch(pairs)
    src, lengths = pad_batch([source for source, _ in pairs], PAD_ID)
    tgt_in, _ = pad_batch([[BOS_ID] + target[:-1] for _, target in pairs], PAD_ID)
    tgt_out, _ = pad_batch([target for _, target in pairs], PAD_ID)
    for name, expected in (("src", src), ("lengths", lengths), ("tgt_in", tgt_in), ("tgt_out", tgt_out)):
        assert batch[name].dtype == torch.long and torch.equal(batch[name], expected), (name, batch[name], expected)


def test_the_benchmarks_notebook_demo_is_chapter_05s_cell():
    """The training benchmark re-implements chapter 05's in-notebook run (experiments.training_throughput.DEMO),
    and chapter 05 quotes what it recorded (CPU seconds, the final validation loss): the constants must be the
    notebook's own."""
    import re

    import nbformat

    from experiments import training_throughput as benchmark

    notebook = nbformat.read(course.solution_notebook("05_gpu_training"), as_version=4)
    cells = {cell.get("id"): cell.source for cell in notebook.cells}
    data_cell, loop_cell = cells["cell-20"], cells["cell-34"]

    def only(pattern, source):
        found = re.findall(pattern, source)
        assert len(found) == 1, (pattern, found)
        return found[0]

    num_train, num_valid, data_seed = only(r"make_splits\((\d+), (\d+), 0, seed=(\d+)\)", data_cell)
    encoder_sizes = only(r"GRUEncoder\(len\(src_vocab\), (\d+), (\d+)\)", loop_cell)
    decoder_sizes = only(r"AttentionDecoder\(len\(tgt_vocab\), (\d+), (\d+)\)", loop_cell)
    assert encoder_sizes == decoder_sizes
    notebook_demo = {
        "num_train": int(num_train),
        "num_valid": int(num_valid),
        "data_seed": int(data_seed),
        "emb_dim": int(encoder_sizes[0]),
        "hidden_dim": int(encoder_sizes[1]),
        "batch_size": int(only(r"length_bucketed_batches\(src_lengths, (\d+), seed=epoch\)", loop_cell)),
        "lr": float(only(r"torch\.optim\.Adam\(model\.parameters\(\), lr=([\d.e-]+)\)", loop_cell)),
        "steps": int(only(r"(?m)^STEPS = (\d+)$", loop_cell)),
        "validate_every": int(only(r"if step % (\d+) == 0:", loop_cell)),
        "threads": int(only(r"with cpu_threads\((\d+)\):", loop_cell)),
        "seed": int(only(r"torch\.manual_seed\((\d+)\)\nmodel = ", loop_cell)),
    }
    assert benchmark.DEMO == notebook_demo
