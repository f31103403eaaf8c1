"""Train the encoder-decoder with every attention variant, side by side (chapter 05's table and figure).

    python -m experiments.variants --config variants

trains six models that differ only in how the decoder attends (issue 13, section 1):

==============  ==========================================================================================
``none``        no attention: the decoder sees the encoder's summary at every step (``PlainDecoder``)
``dot``         Luong's dot score ``e_t,i = s_t . h_i`` (chapter 04's ``dot_score``)
``general``     Luong's multiplicative "general" score ``s_t^T W h_i`` (chapter 04's ``general_score``)
``additive``    Bahdanau's additive score ``v^T tanh(W_q s_t + W_k h_i)`` (chapter 05's ``AdditiveScore``)
``scaled_dot``  the scaled dot product ``s_t . h_i / sqrt(d)`` (chapter 04's ``scaled_dot_product_attention``)
``multi_head``  multi-head scaled dot product, 4 heads (chapter 04's ``MultiHeadAttention``)
==============  ==========================================================================================

Every attention variant lives in chapter 05's decoder (Luong et al.'s architecture): it scores the current state
``s_t``, after the GRU's step, and combines ``a_t`` with it before the output layer. So ``additive`` takes only its
score function from Bahdanau et al. (2015), whose decoder scores the previous state ``s_{t-1}`` and feeds the
attention vector into the GRU.

Everything else is identical: the same data (the toy language of ``attention_course.toy_translation``), the
same bidirectional ``GRUEncoder``, the same decoder sizes and output layers (chapter 05's ``AttentionDecoder``,
whose attention step each variant replaces), the same seed for the weights and the batches, and the same
number of updates. Every variant is built from the course's reference implementations
(``autograder.reference.ch04_qkv_variants`` and ``ch05_gpu_training``), not from copies of them.

For each variant the results hold exact match and BLEU on the test split by source length, the number of
parameters, the training throughput in target tokens per second and the wall time of training and of
evaluation; they go to ``attention_course/assets/variants_results.json`` (``--out`` to change), which chapter
05 reads. :func:`run_variants` does the same from Python (``scripts/gpu_check.py`` calls it with ``full``).

For the attention variants the results also hold how peaked the maps are: the share of target rows of the
test split (gold translation fed to the decoder) that put less than 90 % on their most attended source token
(``soft_row_share``; for multi-head attention on the weights averaged over the heads, and head by head in
``head_soft_row_share``), and how long the decoder and encoder states are and how large their dot products,
before and after training (``score_statistics``, ``at_initialisation``): what makes an unscaled score saturate.

Every file records the machine (``machine``: CPU model, the instruction set of PyTorch's kernels, cores, threads,
load). On one machine a run repeats bit for bit; on a processor whose kernels use another instruction set the
trained models differ by a few points. ``--rerun`` trains the variants again and appends the run to the file's
``reruns`` (``--seed`` to change the seed of the data, weights and batches), leaving the first run's figures,
which chapter 05 quotes, as they were: the spread between the runs is what the chapter quotes as the noise.

Configurations (:data:`CONFIGS`): ``tiny`` (seconds, for tests), ``variants`` (the shipped file: medium's
model sizes, 12,000 training sentences, 500 updates of 64 sentences per variant, 1,000 test sentences;
the shipped run took 7 minutes with one thread on a 2-core CPU, 4.3 of them training and 0.3 evaluation, while
another one-thread job used the second core; on the same CPU busy with other work, an earlier run took 32)
and ``full`` (for one GPU, under bf16 autocast; ``scripts/gpu_check.py`` bounds its time).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from pathlib import Path

import torch

from attention_course.data import PAD_ID
from autograder.reference import ch05_gpu_training as ch05
from experiments.cli import ASSETS, add_run_arguments, make_parser
from experiments.config import Config
from experiments.data import describe, load_data, make_batch
from experiments.evaluation import evaluate, head_soft_row_share, score_statistics, soft_row_share
from experiments.machine import describe_machine
from experiments.models import NUM_HEADS, VARIANTS, build_variant
from experiments.training import autocast_dtype, seed_everything, synchronize, train_updates

RESULTS_FILE = "variants_results.json"
LABELS = {
    "none": "no attention",
    "dot": "dot (Luong)",
    "general": "general (Luong, multiplicative)",
    "additive": "additive (Bahdanau's score)",
    "scaled_dot": "scaled dot product",
    "multi_head": "multi-head (4 heads)",
}


@dataclasses.dataclass(frozen=True)
class VariantsConfig:
    """The data and model sizes (a :class:`experiments.config.Config`) and the number of updates."""

    data: Config
    updates: int
    eval_batch_size: int = 250


CONFIGS = {
    "tiny": VariantsConfig(Config("variants-tiny", 300, 50, 60, 16, 32, 32, 1, 3e-3), updates=12),
    "variants": VariantsConfig(Config("variants", 12000, 500, 1000, 64, 128, 64, 1, 3e-3), updates=500),
    "full": VariantsConfig(Config("variants-full", 100000, 1000, 5000, 128, 256, 128, 1, 1e-3), updates=4000),
}


def train_variant(variant: str, config: VariantsConfig, encoded, device, amp_dtype=None, max_seconds=None, log=print):
    """Train one variant for ``config.updates`` steps (fewer if ``max_seconds`` runs out); returns
    ``(model, figures)`` with the training loss, the number of updates, the seconds and the tokens/s."""
    seed_everything(config.data.seed)  # the same initial encoder and decoder core for every variant
    model = build_variant(variant, config.data, *encoded["vocab_sizes"]).to(device)
    rng = torch.get_rng_state()  # measuring the untrained model must not change the training
    initial = {
        "soft_row_share": soft_row_share(model, encoded["test"]),
        "score_statistics": score_statistics(model, encoded["test"]),
    }
    torch.set_rng_state(rng)
    figures = train_updates(
        model, config.data, config.updates, encoded, device, amp_dtype, max_seconds, f"{variant:>10}", log is print
    )
    return model, {**figures, "at_initialisation": initial}


def measure_throughput(config: VariantsConfig, encoded, variants, device, amp_dtype=None, rounds=3, steps=10):
    """Training throughput in target tokens per second of each variant, measured fairly on a shared machine:
    fresh models train on the same ``steps`` batches, the variants take turns (``rounds`` times, interleaved, so a
    change in the machine's load hits them all alike) and each keeps its best round. Returns ``{variant: tokens/s}``."""
    data = config.data
    train_pairs = encoded["train"]
    indices = ch05.length_bucketed_batches([len(s) for s, _ in train_pairs], data.batch_size, seed=data.seed)[:steps]
    batches = [make_batch([train_pairs[i] for i in b]) for b in indices]
    tokens = sum(int((b["tgt_out"] != PAD_ID).sum()) for b in batches)
    models = {}
    for variant in variants:
        seed_everything(data.seed)
        model = build_variant(variant, data, *encoded["vocab_sizes"]).to(device)
        models[variant] = (model, torch.optim.Adam(model.parameters(), lr=data.lr))
        ch05.train_step(model, batches[0], models[variant][1], PAD_ID, amp_dtype=amp_dtype)  # warm-up
    best = {variant: float("inf") for variant in variants}
    for _ in range(rounds):
        for variant, (model, optimizer) in models.items():
            synchronize(device)
            started = time.perf_counter()
            for batch in batches:
                ch05.train_step(model, batch, optimizer, PAD_ID, amp_dtype=amp_dtype)
            synchronize(device)
            best[variant] = min(best[variant], time.perf_counter() - started)
    return {variant: tokens / seconds for variant, seconds in best.items()}


def run_variants(
    config_name: str,
    out: Path | None = None,
    variants=VARIANTS,
    device=None,
    max_seconds=None,
    log=print,
    seed: int | None = None,
    rerun: bool = False,
):
    """Train and evaluate ``variants`` with the configuration ``config_name``; returns the results dict and,
    when ``out`` (a folder) is given, writes it to ``out/variants_results.json``.

    ``device`` is anything :func:`pick_device` accepts (default: CUDA if present); on CUDA the forward passes
    run under bf16 autocast. ``max_seconds`` bounds the training time of each variant (then fewer updates).
    ``seed`` replaces the configuration's seed (data, initial weights, batches). With ``rerun``, the run is
    appended to the ``reruns`` list of the file already in ``out`` instead of replacing the file.
    """
    config = CONFIGS[config_name]
    if seed is not None:
        config = dataclasses.replace(config, data=dataclasses.replace(config.data, seed=seed))
    device = ch05.pick_device(device)
    amp_dtype = autocast_dtype(device)
    src_vocab, tgt_vocab, splits, encoded = load_data(config.data)
    log(
        f"variants {list(variants)}, config {config_name!r}: {describe(splits, encoded)}, {config.updates} updates "
        f"of {config.data.batch_size} sentences, device {device}, {torch.get_num_threads()} CPU threads"
    )
    results = {
        "made_by": f"python -m experiments.variants --config {config_name}"
        + (f" --seed {seed}" if seed is not None else "")
        + (" --rerun" if rerun else ""),
        "config": {
            **{k: v for k, v in dataclasses.asdict(config.data).items() if k not in ("epochs", "max_seconds", "score")},
            "updates": config.updates,
            "num_heads": NUM_HEADS,
        },
        "device": str(device),
        "amp_dtype": str(amp_dtype).replace("torch.", "") if amp_dtype else "float32",
        "torch": torch.__version__,
        "cpu_threads": torch.get_num_threads(),
        "machine": describe_machine(device),
        "labels": {v: LABELS[v] for v in variants},
        "variants": {},
    }
    for variant in variants:
        model, figures = train_variant(variant, config, encoded, device, amp_dtype, max_seconds, log)
        started = time.perf_counter()
        with torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
            evaluation = evaluate(
                model, splits["test"], encoded["test"], tgt_vocab, device, batch_size=config.eval_batch_size
            )
            soft = soft_row_share(model, encoded["test"])
            head_soft = head_soft_row_share(model, encoded["test"])
            statistics = score_statistics(model, encoded["test"])
        evaluation.pop("examples", None)
        results["variants"][variant] = {
            "label": LABELS[variant],
            "parameters": sum(p.numel() for p in model.parameters()),
            **figures,
            "eval_seconds": time.perf_counter() - started,
            "soft_row_share": soft,
            **({"head_soft_row_share": head_soft} if head_soft is not None else {}),
            "score_statistics": statistics,
            **evaluation,
        }
        log(
            f"{variant}: exact match {evaluation['exact_match']:.3f}, BLEU {evaluation['bleu']:.1f}, "
            f"{figures['target_tokens_per_second']:.0f} target tokens/s, {figures['train_seconds']:.0f} s training"
        )
    add_throughput(results, config, encoded, variants, device, amp_dtype, log)
    results["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        path = out / RESULTS_FILE
        if rerun:
            shipped = json.loads(path.read_text())
            shipped.setdefault("reruns", []).append(results)
            path.write_text(json.dumps(shipped, indent=1) + "\n")
            log(f"appended the run to the reruns of {path}")
        else:
            path.write_text(json.dumps(results, indent=1) + "\n")
            log(f"wrote {path}")
    return results


def add_throughput(results, config, encoded, variants, device, amp_dtype=None, log=print) -> None:
    """Put :func:`measure_throughput`'s figures into ``results`` as ``target_tokens_per_second`` (the speed of the
    training loop itself, which the machine's load of the moment also shapes, stays as ``loop_tokens_per_second``)."""
    speeds = measure_throughput(config, encoded, variants, device, amp_dtype)
    results["throughput"] = "best of 3 interleaved rounds of 10 training steps on the same batches, per variant"
    for variant, speed in speeds.items():
        row = results["variants"][variant]
        row.setdefault("loop_tokens_per_second", row["target_tokens_per_second"])
        row["target_tokens_per_second"] = speed
    log("throughput (target tokens/s): " + ", ".join(f"{v} {speeds[v]:.0f}" for v in variants))


def main(argv=None) -> int:
    parser = make_parser("python -m experiments.variants", __doc__)
    parser.add_argument("--config", choices=sorted(CONFIGS), default="variants")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    add_run_arguments(parser, quiet=False)
    parser.add_argument("--out", type=Path, default=ASSETS, help="folder of variants_results.json")
    parser.add_argument(
        "--throughput-only", action="store_true", help="train nothing: measure the throughputs again into the file"
    )
    parser.add_argument("--seed", type=int, default=None, help="another seed for the data, weights and batches")
    parser.add_argument(
        "--rerun", action="store_true", help="append the run to the file's reruns instead of replacing the file"
    )
    args = parser.parse_args(argv)
    if args.throughput_only:
        path = args.out / RESULTS_FILE
        results = json.loads(path.read_text())
        config = CONFIGS[args.config]
        device = ch05.pick_device(args.device)
        _, _, _, encoded = load_data(config.data)
        add_throughput(results, config, encoded, list(results["variants"]), device, autocast_dtype(device))
        path.write_text(json.dumps(results, indent=1) + "\n")
        print(f"wrote {path}")
        return 0
    run_variants(
        args.config,
        out=None if args.no_write else args.out,
        variants=tuple(args.variants),
        device=args.device,
        max_seconds=args.max_seconds,
        seed=args.seed,
        rerun=args.rerun,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
