"""Chapter 09's first measurement: a Vision Transformer on the handwritten digits, beside a small CNN and an MLP.

    python -m experiments.vit_digits --config full

trains, on the course's one split of the 1,797 digits (:func:`attention_course.images.digits_split`: 1,197
training, 300 validation, 300 test images, 8 x 8), three models of about 18,000 parameters each:

- ``vit``: chapter 09's reference ``VisionTransformer`` (Exercise 9.3): 2 x 2 patches (16 tokens and the class
  token), width 32, 4 heads, feed-forward 64, 2 layers;
- ``cnn``: two 3 x 3 convolutions (32 and 56 channels, ReLU, 2 x 2 max-pool after each) and a linear head;
- ``mlp``: the 64 pixels through two hidden layers of 100 (ReLU);

each with the same budget: ``steps`` AdamW updates of ``batch_size`` images (reshuffled every epoch, from the
seed), weight decay 0.01, warm-up then cosine decay (:mod:`experiments.image_training`), no augmentation, seeds
0, 1 and 2 (the seed sets the initial weights and the order of the batches). The learning rate of each model is
chosen from ``lrs`` by the mean validation accuracy over the seeds at the end of training (then the smaller);
the test accuracy is reported for the chosen one only, as the mean and the sample standard deviation (n - 1)
over the seeds, with each seed's figure. Learning curves: the training loss and the validation accuracy every
``eval_every`` updates.

Then a patch-size sweep of the ViT (the chosen learning rate, the same seeds and budget): patches of 1, 2, 4 and 8
pixels, that is 64, 16, 4 and 1 tokens (and the class token): the test accuracy, and the seconds per update
measured apart, all patch sizes taking turns in one short block (``timing_rounds`` rounds of ``timing_updates``
updates each, the median round), so that they share the machine's load (one thread; the machine and its load
recorded: times differ between machines, the accuracies do not depend on the load). The seconds per update
recorded during training are kept too, but the load can change between runs.

Results: ``attention_course/assets/vit_digits_results.json`` (``--out``). ``--config tiny`` runs in seconds
(tests).
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

from attention_course.images import DIGITS_SPLIT, DIGITS_SPLIT_SEED, digits_split
from experiments.cli import add_cpu_run_arguments, make_parser
from experiments.image_models import MLP, SmallCNN, ViTConfig, parameter_count, vit
from experiments.image_training import accuracy, train_classifier
from experiments.machine import describe_machine

RESULTS_FILE = "vit_digits_results.json"
MODELS = ("vit", "cnn", "mlp")
LABELS = {"vit": "Vision Transformer", "cnn": "small CNN", "mlp": "MLP"}


@dataclasses.dataclass(frozen=True)
class Config:
    name: str
    steps: int
    batch_size: int
    eval_every: int
    lrs: tuple = (1e-3, 3e-3)
    seeds: tuple = (0, 1, 2)
    patch_sizes: tuple = (1, 2, 4, 8)
    vit_patch_size: int = 2
    vit_embed_dim: int = 32
    vit_heads: int = 4
    vit_ff_dim: int = 64
    vit_layers: int = 2
    cnn_channels: tuple = (32, 56)
    mlp_hidden: int = 100
    timing_rounds: int = 5
    timing_updates: int = 10


CONFIGS = {
    "tiny": Config(
        "tiny", steps=30, batch_size=32, eval_every=10, lrs=(1e-3,), seeds=(0, 1), patch_sizes=(2, 8), timing_rounds=1
    ),
    "full": Config("full", steps=1500, batch_size=64, eval_every=50),
}


def command(config_name: str) -> str:
    return f"python -m experiments.vit_digits --config {config_name}"


def build(kind: str, config: Config, patch_size: int | None = None) -> torch.nn.Module:
    """The model ``kind`` for 8 x 8 digits (the current torch seed sets its weights)."""
    if kind == "vit":
        return vit(
            ViTConfig(
                image_size=8,
                patch_size=patch_size or config.vit_patch_size,
                embed_dim=config.vit_embed_dim,
                num_heads=config.vit_heads,
                ff_dim=config.vit_ff_dim,
                num_layers=config.vit_layers,
                num_classes=10,
            )
        )
    if kind == "cnn":
        return SmallCNN(8, channels=config.cnn_channels, num_classes=10)
    if kind == "mlp":
        return MLP(64, config.mlp_hidden, num_classes=10)
    raise ValueError(f"unknown model {kind!r}; known: {MODELS}")


def batches(images: torch.Tensor, labels: torch.Tensor, batch_size: int, steps: int, seed: int):
    """``batch(step) -> (images, labels)``: epochs of a seeded shuffle (torch's CPU generator), cut in batches."""
    generator = torch.Generator().manual_seed(seed)
    per_epoch = len(images) // batch_size  # the last partial batch of each epoch is dropped
    epochs = -(-steps // per_epoch)
    order = torch.cat(
        [torch.randperm(len(images), generator=generator)[: per_epoch * batch_size] for _ in range(epochs)]
    )

    def batch(step: int):
        index = order[step * batch_size : (step + 1) * batch_size]
        return images[index], labels[index]

    return batch


def run_one(kind: str, config: Config, data: dict, lr: float, seed: int, patch_size: int | None = None) -> dict:
    """Train one model from ``seed``; its learning curve, final validation and test accuracy and speed."""
    torch.manual_seed(seed)
    model = build(kind, config, patch_size)
    valid_x, valid_y = data["valid"]
    history = train_classifier(
        model,
        batches(*data["train"], config.batch_size, config.steps, seed),
        config.steps,
        lr,
        eval_every=config.eval_every,
        evaluate=lambda m: {"valid_accuracy": accuracy(m, valid_x, valid_y)},
    )
    return {
        "seed": seed,
        "lr": lr,
        "parameters": parameter_count(model),
        "valid_accuracy": history["valid_accuracy"][-1],
        "test_accuracy": accuracy(model, *data["test"]),
        "seconds_per_step": history["seconds_per_step"],
        "curve": {key: history[key] for key in ("steps", "train_loss", "valid_accuracy")},
    }


def summary(values) -> dict:
    """Mean, sample standard deviation (n - 1; 0 for one value), min, max."""
    values = list(values)
    return {
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "min": min(values),
        "max": max(values),
    }


def choose_lr(by_lr: dict) -> float:
    """The learning rate with the highest mean validation accuracy over the seeds (then the smaller)."""
    return max(by_lr, key=lambda lr: (round(by_lr[lr]["valid_accuracy"]["mean"], 9), -lr))


def time_updates(config: Config, data: dict, lr: float, log=print) -> dict:
    """Seconds per training update of the ViT at each patch size, measured in turns: ``{patch size: seconds}``,
    the median over ``timing_rounds`` rounds of the mean of ``timing_updates`` updates."""
    models = {}
    for p in config.patch_sizes:
        torch.manual_seed(0)
        model = build("vit", config, p)
        models[p] = (model, torch.optim.AdamW(model.parameters(), lr=lr))
    images, labels = data["train"][0][: config.batch_size], data["train"][1][: config.batch_size]
    rounds = {p: [] for p in config.patch_sizes}
    for _ in range(1 + config.timing_rounds):  # the first round warms up and is not counted
        for p, (model, optimizer) in models.items():
            started = time.perf_counter()
            for _ in range(config.timing_updates):
                loss = torch.nn.functional.cross_entropy(model(images), labels)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            rounds[p].append((time.perf_counter() - started) / config.timing_updates)
    return {p: statistics.median(times[1:]) for p, times in rounds.items()}


def run_vit_digits(config_name: str = "full", out: Path | None = None, threads: int = 1, log=print) -> dict:
    torch.set_num_threads(threads)
    config = CONFIGS[config_name]
    started = time.perf_counter()
    data = digits_split()
    results = {
        "description": "chapter 09: a Vision Transformer, a small CNN and an MLP of about 18,000 parameters on the "
        "1,797 handwritten digits (one fixed split), the same budget of updates, 3 seeds, the learning rate of each "
        "chosen on the validation split; test accuracy mean and spread, learning curves; the ViT's patch-size sweep",
        "made_by": command(config_name),
        "config": dataclasses.asdict(config),
        "split": {"sizes": dict(DIGITS_SPLIT), "seed": DIGITS_SPLIT_SEED},
        "machine": describe_machine(torch.device("cpu")),
        "models": {},
    }
    for kind in MODELS:
        by_lr = {}
        for lr in config.lrs:
            runs = [run_one(kind, config, data, lr, seed) for seed in config.seeds]
            by_lr[lr] = {"runs": runs, "valid_accuracy": summary(r["valid_accuracy"] for r in runs)}
            log(f"{LABELS[kind]}, lr {lr}: validation accuracy {by_lr[lr]['valid_accuracy']['mean']:.3f}")
        lr = choose_lr(by_lr)
        runs = by_lr[lr]["runs"]
        results["models"][kind] = {
            "label": LABELS[kind],
            "parameters": runs[0]["parameters"],
            "valid_accuracy_by_lr": {str(r): by_lr[r]["valid_accuracy"]["mean"] for r in config.lrs},
            "chosen_lr": lr,
            "test_accuracy": summary(r["test_accuracy"] for r in runs),
            "valid_accuracy": summary(r["valid_accuracy"] for r in runs),
            "seconds_per_step": statistics.fmean(r["seconds_per_step"] for r in runs),
            "runs": runs,
        }
        t = results["models"][kind]["test_accuracy"]
        log(f"{LABELS[kind]} ({runs[0]['parameters']:,} parameters, lr {lr}): test {t['mean']:.3f} +- {t['std']:.3f}")
    lr = results["models"]["vit"]["chosen_lr"]
    results["patch_sweep"] = {}
    for p in config.patch_sizes:
        if p == config.vit_patch_size and lr in config.lrs:
            runs = results["models"]["vit"]["runs"]  # the same runs: same seeds, budget and learning rate
        else:
            runs = [run_one("vit", config, data, lr, seed, patch_size=p) for seed in config.seeds]
        entry = {
            "tokens": (8 // p) ** 2,
            "parameters": runs[0]["parameters"],
            "test_accuracy": summary(r["test_accuracy"] for r in runs),
            "test_accuracy_per_seed": [r["test_accuracy"] for r in runs],
            "seconds_per_step_in_training": statistics.fmean(r["seconds_per_step"] for r in runs),
        }
        results["patch_sweep"][str(p)] = entry
    load_before = [round(x, 2) for x in os.getloadavg()]
    for p, seconds in time_updates(config, data, lr).items():
        entry = results["patch_sweep"][str(p)]
        entry["seconds_per_update"] = seconds
        log(
            f"ViT, patch {p} ({entry['tokens']} tokens): test {entry['test_accuracy']['mean']:.3f} "
            f"+- {entry['test_accuracy']['std']:.3f}, {1000 * seconds:.1f} ms per update"
        )
    results["patch_sweep_timing"] = {
        "rounds": config.timing_rounds,
        "updates_per_round": config.timing_updates,
        "batch_size": config.batch_size,
        "load_average_before": load_before,
    }
    results["total_seconds"] = time.perf_counter() - started
    results["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if out is not None:
        path = Path(out) / RESULTS_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=1) + "\n")
        log(f"wrote {path}")
    return results


def main(argv=None) -> int:
    parser = make_parser("python -m experiments.vit_digits", __doc__)
    add_cpu_run_arguments(parser, CONFIGS, RESULTS_FILE)
    args = parser.parse_args(argv)
    run_vit_digits(args.config, out=None if args.no_write else args.out, threads=args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
