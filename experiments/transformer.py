"""Train chapter 07's Transformer and an RNN with attention on the same toy English -> French data.

    python -m experiments.transformer --config medium

trains, one after the other and on the same batches in the same order (same seed, same number of
updates, the same ``train_step`` of chapter 05):

- ``transformer``: the encoder-decoder ``TransformerTranslator`` of chapter 07 (its reference
  implementation, :mod:`autograder.reference.ch07_transformer`: sinusoidal positions, pre-norm
  encoder and decoder layers);
- ``rnn_attention``: chapter 05's attention model (bidirectional GRU encoder, GRU decoder with
  Luong dot attention, built by :func:`experiments.models.build_model`) at its ``medium`` sizes.

Training uses only sentences of at most ``max_train_len`` source words (20 for ``medium``); the
test split keeps every length up to 40, so the longer test sentences are longer than any sentence
either model has seen. It then evaluates greedy translations of the test split by source length
(exact match and BLEU, :func:`experiments.evaluation.evaluate`) and writes
``attention_course/assets/transformer_results.json`` (``--out``): the configuration, the device,
and per model the number of parameters, training time, target tokens per second, training
curves and the length table. Chapter 07 reads that file.

Times: ``--config tiny`` a few seconds; ``--config medium`` (the shipped file, 1 thread):
1200 updates took 87 CPU seconds for the Transformer and 65 for the RNN; with data and evaluation (the
Transformer's greedy evaluation re-reads the prefix at every step: 19 s against 3 s) the shipped run took 3.5
minutes of wall time on a 2-core CPU while another one-thread job used the second core.
``--model transformer`` / ``--model rnn_attention`` train one model and keep the other's results already in
the file (same configuration). ``--config full`` is sized for a GPU
(``scripts/gpu_check.py`` runs it with a time bound per model).
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import sys
import time
from pathlib import Path

import torch

from autograder.reference.ch05_gpu_training import pick_device
from autograder.reference.ch07_transformer import TransformerTranslator
from experiments.cli import ASSETS, add_run_arguments, make_parser
from experiments.config import CONFIGS as RNN_CONFIGS
from experiments.data import load_data
from experiments.evaluation import LENGTH_BINS, evaluate, transformer_greedy
from experiments.models import build_model
from experiments.training import batch_schedule, seed_everything, train_steps

RESULTS_FILE = "transformer_results.json"
MODELS = ("transformer", "rnn_attention")
LABELS = {"transformer": "Transformer", "rnn_attention": "RNN with attention"}


@dataclasses.dataclass(frozen=True)
class Config:
    name: str
    num_train: int  # sentence pairs drawn for training, before the length cap
    num_valid: int
    num_test: int
    max_train_len: int  # longest source (words, without EOS) kept for training and validation
    steps: int  # optimisation steps, the same for both models
    batch_size: int
    # the Transformer
    d_model: int
    n_heads: int
    d_ff: int
    n_layers: int
    lr_transformer: float
    # the RNN with attention (chapter 05's model)
    emb_dim: int
    hidden_dim: int
    lr_rnn: float
    warmup: int = 200  # linear warm-up of the learning rate (both models), then linear decay to 10 %
    seed: int = 0
    max_seconds: float | None = None  # stop each model's training after this long (and still evaluate)


CONFIGS = {
    # seconds, for tests
    "tiny": Config("tiny", 600, 50, 150, 12, 30, 32, 32, 4, 64, 1, 1e-3, 16, 32, 3e-3, warmup=5),
    # the shipped results: about 10 minutes on a 2-core CPU
    "medium": Config("medium", 30000, 1000, 3000, 20, 1200, 64, 80, 4, 256, 2, 2e-3, 64, 128, 3e-3),
    # for one GPU (scripts/gpu_check.py bounds each model's time)
    "full": Config("full", 200000, 2000, 5000, 20, 12000, 128, 256, 8, 1024, 3, 5e-4, 128, 256, 1e-3, warmup=1000),
}


def build(kind: str, config: Config, src_vocab_size: int, tgt_vocab_size: int) -> torch.nn.Module:
    """A freshly initialised ``transformer`` or ``rnn_attention`` model."""
    if kind == "transformer":
        return TransformerTranslator(
            src_vocab_size, tgt_vocab_size, config.d_model, config.n_heads, config.d_ff, config.n_layers
        )
    rnn_config = dataclasses.replace(RNN_CONFIGS["medium"], emb_dim=config.emb_dim, hidden_dim=config.hidden_dim)
    return build_model("attention", rnn_config, src_vocab_size, tgt_vocab_size)


def train(kind: str, config: Config, encoded, device, max_seconds=None, show_progress=True, log=print):
    """Train one model (``transformer`` or ``rnn_attention``) with :func:`train_model`, at its own peak learning
    rate; returns ``(model, history, figures)``."""
    return train_model(
        lambda: build(kind, config, *encoded["vocab_sizes"]),
        config,
        encoded,
        device,
        peak_lr=config.lr_transformer if kind == "transformer" else config.lr_rnn,
        name=kind,
        label=LABELS[kind],
        max_seconds=max_seconds,
        show_progress=show_progress,
        log=log,
    )


def train_model(
    make_model,
    config: Config,
    encoded,
    device,
    peak_lr: float,
    name: str,
    label: str,
    max_seconds=None,
    show_progress=True,
    log=print,
):
    """Seed with ``config.seed``, build ``make_model()`` and train it for ``config.steps`` steps on
    :func:`experiments.training.batch_schedule`'s batches (the same for every model of a configuration), its
    learning rate warmed up over ``config.warmup`` steps to ``peak_lr``, then decayed to 10 %; returns
    ``(model, history, figures)`` where ``figures`` holds the timing (training seconds without validation,
    steps, target tokens per second). ``experiments.positions`` trains its Transformers with it too."""
    seed_everything(config.seed)
    model = make_model().to(device)
    batches = batch_schedule([len(s) for s, _ in encoded["train"]], config.steps, config.batch_size, config.seed)
    history, figures = train_steps(
        model,
        batches,
        encoded,
        device,
        peak_lr=peak_lr,
        warmup=config.warmup,
        name=name,
        label=label,
        max_seconds=max_seconds if max_seconds is not None else config.max_seconds,
        show_progress=show_progress,
        log=log,
    )
    return model, history, figures


def load_run_data(config: Config, device, log=print):
    """Chapter 07's data for ``config``: training and validation sentences of at most ``config.max_train_len``
    source words, the test split at every length (:func:`experiments.data.load_data`). Logs one line; returns
    ``(tgt_vocab, splits, encoded)``."""
    started = time.perf_counter()
    src_vocab, tgt_vocab, splits, encoded = load_data(config, max_train_len=config.max_train_len)
    longest = max(len(english.split()) for english, _ in splits["train"])
    log(
        f"data: {len(splits['train'])} training pairs of at most {config.max_train_len} source words (longest "
        f"{longest}), {len(splits['valid'])} valid, {len(splits['test'])} test (all lengths); device {device}, "
        f"{torch.get_num_threads()} threads ({time.perf_counter() - started:.1f} s)"
    )
    return tgt_vocab, splits, encoded


def describe_run(config: Config, device, splits, description: str, made_by: str) -> dict:
    """The head of a results file: what made it, the configuration, the machine (device, threads, precision,
    torch, the load average at the start) and the data; ``models`` empty, for the runs to fill in."""
    return {
        "description": description,
        "made_by": made_by,
        "config": dataclasses.asdict(config),
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
        "threads": torch.get_num_threads(),
        "precision": "bf16 autocast" if device.type == "cuda" else "float32",
        "torch": torch.__version__,
        "load_average_at_start": os.getloadavg()[0],  # other work on the machine slows every figure below
        "data": {
            "train_pairs": len(splits["train"]),
            "valid_pairs": len(splits["valid"]),
            "test_pairs": len(splits["test"]),
            "longest_train_source": max(len(english.split()) for english, _ in splits["train"]),
            "length_bins": [f"{low}-{high}" for low, high in LENGTH_BINS],
        },
        "models": {},
    }


def measure(
    model, label: str, history, figures, pairs, encoded_pairs, tgt_vocab, device, decode=None, log=print, **options
):
    """One model's entry in a results file: its label, number of parameters, training ``figures`` and
    ``history``, and the greedy evaluation of ``pairs`` by length (:func:`experiments.evaluation.evaluate`, given
    ``options``) with its time."""
    started = time.perf_counter()
    evaluation = evaluate(model, pairs, encoded_pairs, tgt_vocab, device, decode=decode, **options)
    entry = {
        "label": label,
        "parameters": sum(p.numel() for p in model.parameters()),
        **figures,
        "eval_seconds": time.perf_counter() - started,
        "history": history,
        **evaluation,
    }
    log(
        f"{label}: {entry['parameters']} parameters, {figures['steps']} steps in {figures['train_seconds']:.0f} s "
        f"({figures['target_tokens_per_second']:.0f} target tokens/s), test exact match "
        f"{evaluation['exact_match']:.3f}, BLEU {evaluation['bleu']:.1f} (evaluation {entry['eval_seconds']:.0f} s)"
    )
    return entry


def write_results(results: dict, out: Path, file_name: str, kinds, same=("config",), log=print) -> Path:
    """Write ``results`` to ``out/file_name``. A file already there made with the same values of ``same``
    (the configuration) keeps its other models' results (a run of one model): those of ``kinds`` first, in that
    order, then any others."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / file_name
    if path.exists():
        previous = json.loads(path.read_text())
        if all(previous.get(key) == results[key] for key in same):
            merged = {**previous["models"], **results["models"]}
            order = [kind for kind in kinds if kind in merged] + [kind for kind in merged if kind not in kinds]
            results["models"] = {kind: merged[kind] for kind in order}
    path.write_text(json.dumps(results, indent=1) + "\n")
    log(f"wrote {path}")
    return path


def run_transformer(
    config_name: str = "medium",
    out: Path | None = None,
    device=None,
    models=MODELS,
    max_seconds: float | None = None,
    threads: int | None = None,
    show_progress: bool = True,
    log=print,
) -> dict:
    """Train and evaluate ``models`` with configuration ``config_name``; returns the results and, when
    ``out`` is given, writes them to ``out/transformer_results.json``. ``max_seconds`` bounds each model's
    training time (``scripts/gpu_check.py``); ``threads`` sets PyTorch's CPU threads."""
    if threads is not None:
        torch.set_num_threads(threads)
    config = CONFIGS[config_name]
    device = pick_device(device)
    started = time.perf_counter()
    tgt_vocab, splits, encoded = load_run_data(config, device, log=log)
    results = describe_run(
        config,
        device,
        splits,
        description="chapter 07: a Transformer and an RNN with attention trained on the same data, same updates",
        made_by=f"python -m experiments.transformer --config {config_name}",
    )
    for kind in models:
        model, history, figures = train(
            kind, config, encoded, device, max_seconds=max_seconds, show_progress=show_progress, log=log
        )
        decode = transformer_greedy if kind == "transformer" else None
        results["models"][kind] = measure(
            model, LABELS[kind], history, figures, splits["test"], encoded["test"], tgt_vocab, device, decode, log
        )
        del model
    results["total_seconds"] = time.perf_counter() - started
    results["load_average_at_end"] = os.getloadavg()[0]
    if out is not None:  # keeps the other model's results of the same configuration (--model trains one)
        write_results(results, out, RESULTS_FILE, MODELS, log=log)
    return results


def main(argv=None) -> int:
    parser = make_parser("python -m experiments.transformer", __doc__)
    parser.add_argument("--config", choices=sorted(CONFIGS), default="medium")
    parser.add_argument("--model", choices=["both", *MODELS], default="both")
    add_run_arguments(parser)
    parser.add_argument("--threads", type=int, default=None, help="PyTorch CPU threads (default: PyTorch's)")
    parser.add_argument("--out", type=Path, default=ASSETS, help="where transformer_results.json goes")
    args = parser.parse_args(argv)
    run_transformer(
        args.config,
        out=None if args.no_write else args.out,
        device=args.device,
        models=MODELS if args.model == "both" else (args.model,),
        max_seconds=args.max_seconds,
        threads=args.threads,
        show_progress=not args.quiet,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
