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
    """Train one model for ``config.steps`` steps on :func:`experiments.training.batch_schedule`'s batches (the
    same for both models), its learning rate warmed up over ``config.warmup`` steps, then decayed to 10 %;
    returns ``(model, history, figures)`` where ``figures`` holds the timing (training seconds without
    validation, steps, target tokens per second)."""
    seed_everything(config.seed)
    model = build(kind, config, *encoded["vocab_sizes"]).to(device)
    batches = batch_schedule([len(s) for s, _ in encoded["train"]], config.steps, config.batch_size, config.seed)
    history, figures = train_steps(
        model,
        batches,
        encoded,
        device,
        peak_lr=config.lr_transformer if kind == "transformer" else config.lr_rnn,
        warmup=config.warmup,
        name=kind,
        label=LABELS[kind],
        max_seconds=max_seconds if max_seconds is not None else config.max_seconds,
        show_progress=show_progress,
        log=log,
    )
    return model, history, figures


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
    src_vocab, tgt_vocab, splits, encoded = load_data(config, max_train_len=config.max_train_len)
    longest = max(len(english.split()) for english, _ in splits["train"])
    log(
        f"data: {len(splits['train'])} training pairs of at most {config.max_train_len} source words (longest "
        f"{longest}), {len(splits['valid'])} valid, {len(splits['test'])} test (all lengths); device {device}, "
        f"{torch.get_num_threads()} threads ({time.perf_counter() - started:.1f} s)"
    )
    results = {
        "description": "chapter 07: a Transformer and an RNN with attention trained on the same data, same updates",
        "made_by": f"python -m experiments.transformer --config {config_name}",
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
            "longest_train_source": longest,
            "length_bins": [f"{low}-{high}" for low, high in LENGTH_BINS],
        },
        "models": {},
    }
    for kind in models:
        model, history, figures = train(
            kind, config, encoded, device, max_seconds=max_seconds, show_progress=show_progress, log=log
        )
        t0 = time.perf_counter()
        decode = transformer_greedy if kind == "transformer" else None
        evaluation = evaluate(model, splits["test"], encoded["test"], tgt_vocab, device, decode=decode)
        eval_seconds = time.perf_counter() - t0
        results["models"][kind] = {
            "label": LABELS[kind],
            "parameters": sum(p.numel() for p in model.parameters()),
            **figures,
            "eval_seconds": eval_seconds,
            "history": history,
            **evaluation,
        }
        log(
            f"{kind}: {results['models'][kind]['parameters']} parameters, {figures['steps']} steps in "
            f"{figures['train_seconds']:.0f} s ({figures['target_tokens_per_second']:.0f} target tokens/s), test exact "
            f"match {evaluation['exact_match']:.3f}, BLEU {evaluation['bleu']:.1f} (evaluation {eval_seconds:.0f} s)"
        )
        del model
    results["total_seconds"] = time.perf_counter() - started
    results["load_average_at_end"] = os.getloadavg()[0]
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        path = out / RESULTS_FILE
        if path.exists():  # keep the other model's results of the same configuration (--model trains one)
            previous = json.loads(path.read_text())
            if previous.get("config") == results["config"]:
                results["models"] = {kind: ({**previous["models"], **results["models"]})[kind] for kind in MODELS
                                     if kind in previous["models"] or kind in results["models"]}  # fmt: skip
        path.write_text(json.dumps(results, indent=1) + "\n")
        log(f"wrote {out / RESULTS_FILE}")
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
