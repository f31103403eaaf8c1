"""Chapter 09's third measurement, its accuracy half: a Perceiver that reads the matching-marks images as pixels.

    python -m experiments.perceiver_marks --config full

trains :class:`experiments.image_models.PerceiverClassifier` on the matching-marks task with exactly the data,
budget, learning-rate schedule and seed of ``python -m experiments.marks_maps`` (its configuration of the same
name: the same generated batches at every update, the same validation and test images), so its test accuracy
stands beside the ViT's there. Each 32 x 32 image is a set of M = 1,024 inputs, one per pixel: its grey level
and its position's Fourier features (``num_frequencies`` per axis, Jaegle et al., 2021); N = ``num_latents``
learned latents read them once through chapter 09's reference ``PerceiverCrossAttention`` (Exercise 9.5), then
``num_layers`` self-attention layers over the latents alone, then a linear head on the latents' mean.

Also recorded: where the cross-attention looks, the share of its weights (averaged over the heads, the latents and
the test images) that falls on the two deciding marks' pixels, against their share of the pixels (what uniform
weights would give), and on all marked pixels (bright and dim).

``--steps-factor K`` trains K times as many updates (the same data stream, the schedule stretched), to see
whether the Perceiver leaves chance with a larger budget than the ViT needed; its results go to
``perceiver_marks_xK_results.json``.

A check that the model can learn at all: the same Perceiver (its sizes, 10 classes) trained on the digits with
``python -m experiments.vit_digits``'s budget, split and batches (1,500 updates of 64 images, seed 0, learning
rate 1e-3), reading the 64 pixels the same way; its test accuracy is recorded (``digits_check``).

The cost of reading more inputs is measured apart: ``python -m experiments.perceiver_cost``.
Results: ``attention_course/assets/perceiver_marks_results.json`` (``--out``). ``--config tiny`` runs in seconds.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from pathlib import Path

import torch

from attention_course.images import digits_split
from experiments import marks_maps, vit_digits
from experiments.cli import add_cpu_run_arguments, make_parser
from experiments.image_models import PerceiverClassifier, parameter_count
from experiments.image_training import accuracy, train_classifier
from experiments.machine import describe_machine

RESULTS_FILE = "perceiver_marks_results.json"


@dataclasses.dataclass(frozen=True)
class PerceiverConfig:
    num_latents: int = 32
    latent_dim: int = 64
    num_heads: int = 4
    num_layers: int = 2
    num_frequencies: int = 4


def command(config_name: str, steps_factor: int = 1) -> str:
    extra = f" --steps-factor {steps_factor}" if steps_factor != 1 else ""
    return f"python -m experiments.perceiver_marks --config {config_name}{extra}"


def results_file(steps_factor: int = 1) -> str:
    return RESULTS_FILE if steps_factor == 1 else RESULTS_FILE.replace("_results", f"_x{steps_factor}_results")


def build(config: marks_maps.Config, perceiver: PerceiverConfig) -> PerceiverClassifier:
    return PerceiverClassifier(config.image_size, num_classes=2, **dataclasses.asdict(perceiver))


@torch.no_grad()
def where_it_reads(model: PerceiverClassifier, batch, chunk: int = 100) -> dict:
    """The cross-attention's mean weight share on the deciding marks' pixels and on every marked pixel."""
    on_marks, on_marked, count = 0.0, 0.0, 0
    for start in range(0, len(batch.images), chunk):
        images = batch.images[start : start + chunk]
        _, weights = model(images, return_weights=True)  # (B, N, M)
        evidence = batch.evidence[start : start + chunk].flatten(1).float()  # (B, M)
        marked = (images[:, 0] > 0).flatten(1).float()
        on_marks += float(torch.einsum("bnm,bm->b", weights, evidence).sum()) / weights.shape[1]
        on_marked += float(torch.einsum("bnm,bm->b", weights, marked).sum()) / weights.shape[1]
        count += len(images)
    pixels = batch.evidence.flatten(1).float()
    return {
        "weight_on_marks": on_marks / count,
        "uniform_weight_on_marks": float(pixels.mean()),
        "weight_on_marked_pixels": on_marked / count,
        "uniform_weight_on_marked_pixels": float((batch.images[:, 0] > 0).float().mean()),
    }


def digits_check(perceiver: PerceiverConfig, config_name: str = "full", lr: float = 1e-3) -> dict:
    """The Perceiver on the digits, with vit_digits's budget and batches (seed 0): its test accuracy."""
    digits = vit_digits.CONFIGS[config_name]
    data = digits_split()
    torch.manual_seed(0)
    model = PerceiverClassifier(8, num_classes=10, **dataclasses.asdict(perceiver))
    train_classifier(
        model,
        vit_digits.batches(*data["train"], digits.batch_size, digits.steps, 0),
        digits.steps,
        lr,
        eval_every=digits.steps,
    )
    return {
        "steps": digits.steps,
        "batch_size": digits.batch_size,
        "lr": lr,
        "parameters": parameter_count(model),
        "test_accuracy": accuracy(model, *data["test"]),
        "test_images": len(data["test"][1]),
    }


def run_perceiver_marks(
    config_name: str = "full", out: Path | None = None, threads: int = 1, steps_factor: int = 1, log=print
) -> dict:
    torch.set_num_threads(threads)
    config, perceiver = marks_maps.CONFIGS[config_name], PerceiverConfig()
    config = dataclasses.replace(config, steps=config.steps * steps_factor, eval_every=config.eval_every * steps_factor)
    started = time.perf_counter()
    torch.manual_seed(config.seed)
    model = build(config, perceiver)
    valid, test = marks_maps.data(config, "valid"), marks_maps.data(config, "test")
    history = train_classifier(
        model,
        lambda step: tuple(marks_maps.data(config, "train", step=step)[:2]),
        config.steps,
        config.lr,
        eval_every=config.eval_every,
        evaluate=lambda m: {"valid_accuracy": accuracy(m, valid.images, valid.labels)},
        log=log,
    )
    results = {
        "description": "chapter 09: a Perceiver (latents reading the 1,024 pixels by the reference "
        "PerceiverCrossAttention, then latent self-attention) on the matching-marks task, with the data, budget and "
        "seed of experiments.marks_maps",
        "made_by": command(config_name, steps_factor),
        "steps_factor": steps_factor,
        "config": dataclasses.asdict(config),
        "perceiver": dataclasses.asdict(perceiver),
        "inputs": {"M": config.image_size**2, "input_dim": 1 + 2 + 4 * perceiver.num_frequencies},
        "machine": describe_machine(torch.device("cpu")),
        "parameters": parameter_count(model),
        "test_accuracy": accuracy(model, test.images, test.labels),
        "curve": {key: history[key] for key in ("steps", "train_loss", "valid_accuracy")},
        "seconds_per_step": history["seconds_per_step"],
        "cross_attention": where_it_reads(model, test),
    }
    log(f"Perceiver ({results['parameters']:,} parameters): test accuracy {results['test_accuracy']:.3f}")
    log(f"cross-attention: {results['cross_attention']}")
    results["digits_check"] = digits_check(perceiver, "tiny" if config_name == "tiny" else "full")
    log(f"the same Perceiver on the digits: test accuracy {results['digits_check']['test_accuracy']:.3f}")
    results["total_seconds"] = time.perf_counter() - started
    results["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if out is not None:
        path = Path(out) / results_file(steps_factor)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=1) + "\n")
        log(f"wrote {path}")
    return results


def main(argv=None) -> int:
    parser = make_parser("python -m experiments.perceiver_marks", __doc__)
    add_cpu_run_arguments(parser, marks_maps.CONFIGS, RESULTS_FILE)
    parser.add_argument(
        "--steps-factor", type=int, default=1, help="train K times as many updates (results: perceiver_marks_xK_...)"
    )
    args = parser.parse_args(argv)
    run_perceiver_marks(
        args.config, out=None if args.no_write else args.out, threads=args.threads, steps_factor=args.steps_factor
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
