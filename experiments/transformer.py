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
curves and the length table, and the attention maps chapter 07 draws (:func:`attention_maps`: the
cross-attention of every decoder layer and head of the Transformer, and the attention of the RNN, on chapter
06's example sentences with their correct French fed to the decoder). Chapter 07 reads that file.

Times: ``--config tiny`` a few seconds; ``--config medium`` (the shipped file, 1 thread): 1200 updates took 76
CPU seconds for the Transformer and 52 for the RNN; with data and evaluation (the Transformer's greedy evaluation
re-reads the prefix at every step: 159 s against 7 s) the shipped run took 19 minutes of wall time on a 2-core CPU
shared with other work (load average 10.7 to 12.2; an earlier run at load 1.0 to 2.6 took 3.5 minutes).
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

from attention_course.data import BOS_ID
from autograder.reference.ch05_gpu_training import pick_device
from autograder.reference.ch07_transformer import TransformerTranslator
from experiments.cli import ASSETS, add_run_arguments, make_parser
from experiments.config import CONFIGS as RNN_CONFIGS
from experiments.data import load_data
from experiments.evaluation import LENGTH_BINS, evaluate, fast_greedy, transformer_greedy
from experiments.exports import CHAPTER06_EXAMPLES
from experiments.machine import describe_machine
from experiments.models import build_model
from experiments.training import batch_schedule, seed_everything, train_steps

RESULTS_FILE = "transformer_results.json"
MODELS = ("transformer", "rnn_attention")
LABELS = {"transformer": "Transformer", "rnn_attention": "RNN with attention"}
# the sentences whose attention maps chapter 07 draws: chapter 06's examples, with their correct translations
MAP_PAIRS = CHAPTER06_EXAMPLES
MAP_DECIMALS = 4  # the maps are stored rounded (each row still sums to 1 within 5e-4)


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
    # the shipped results: a few minutes per model on an idle 2-core CPU
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


def _ask_for_weights(module, args, kwargs):
    """A forward pre-hook on an ``nn.MultiheadAttention``: return the attention weights, one map per head."""
    return args, {**kwargs, "need_weights": True, "average_attn_weights": False}


@torch.no_grad()
def cross_attention_weights(model: TransformerTranslator, src, lengths, tgt_in) -> torch.Tensor:
    """The cross-attention weights of every decoder layer of ``model`` on one batch, ``(n_layers, B, n_heads,
    T_dec, T_enc)``: what each layer's ``multihead_attn`` computes when asked for its weights (a pre-hook sets
    ``need_weights=True, average_attn_weights=False``; the logits are checked to be those of the model without
    hooks)."""
    captured = []
    hooks = []
    for layer in model.decoder_layers:
        hooks.append(layer.multihead_attn.register_forward_pre_hook(_ask_for_weights, with_kwargs=True))
        hooks.append(layer.multihead_attn.register_forward_hook(lambda module, inputs, out: captured.append(out[1])))
    try:
        logits = model(src, lengths, tgt_in)
    finally:
        for hook in hooks:
            hook.remove()
    torch.testing.assert_close(logits, model(src, lengths, tgt_in), atol=1e-5, rtol=1e-5)
    return torch.stack(captured)


@torch.no_grad()
def attention_maps(kind: str, model: torch.nn.Module, pairs, src_vocab, tgt_vocab, device) -> dict:
    """The attention maps of ``model`` on ``pairs`` (English, French), the correct French fed to the decoder
    (teacher forcing), rows = the French tokens and ``<eos>`` (``T_dec``), columns = the English tokens and
    ``<eos>`` (``T_enc``), and the model's greedy translation of each English sentence.

    ``transformer``: every decoder layer's cross-attention, head by head, ``(n_layers, n_heads, T_dec, T_enc)``
    (:func:`cross_attention_weights`); ``rnn_attention``: the ``(T_dec, T_enc)`` weights of chapter 05's attention
    decoder. Returns ``{"maps": [...], "translations": [...]}``, the maps as nested lists rounded to
    :data:`MAP_DECIMALS` decimals."""
    model.eval()
    maps, translations = [], []
    for english, french in pairs:
        src = torch.tensor([src_vocab.encode(english)], device=device)  # (1, T_enc), <eos> included
        target = tgt_vocab.encode(french)  # French ids and <eos>
        lengths = torch.tensor([src.shape[1]])
        tgt_in = torch.tensor([[BOS_ID] + target[:-1]], device=device)  # (1, T_dec)
        if kind == "transformer":
            weights = cross_attention_weights(model, src, lengths, tgt_in)[:, 0]  # (n_layers, n_heads, T_dec, T_enc)
            tokens = transformer_greedy(model, src, lengths, max_len=len(target) + 10)
        else:
            weights = model.forward_with_weights(src, lengths, tgt_in)[1][0]  # (T_dec, T_enc)
            tokens = fast_greedy(model, src, lengths, max_len=len(target) + 10)
        maps.append(weights.double().cpu().numpy().round(MAP_DECIMALS).tolist())
        translations.append(" ".join(tgt_vocab.decode(tokens[0].tolist())))
    return {"maps": maps, "translations": translations}


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
    return src_vocab, tgt_vocab, splits, encoded


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
        "cpu_count": os.cpu_count(),  # the machine's cores, shared with whatever else ran (the load averages)
        "precision": "bf16 autocast" if device.type == "cuda" else "float32",
        "torch": torch.__version__,
        "load_average_at_start": os.getloadavg()[0],  # other work on the machine slows every figure below
        "machine": describe_machine(device),  # the CPU model and the instruction set of PyTorch's kernels too
        "data": {
            "train_pairs": len(splits["train"]),
            "valid_pairs": len(splits["valid"]),
            "test_pairs": len(splits["test"]),
            "longest_train_source": max(len(english.split()) for english, _ in splits["train"]),  # words, no <eos>
            # tokens, <eos> included: the decoder's positions 0 .. this - 1
            "longest_train_target": max(len(french.split()) + 1 for _, french in splits["train"]),
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
    src_vocab, tgt_vocab, splits, encoded = load_run_data(config, device, log=log)
    results = describe_run(
        config,
        device,
        splits,
        description="chapter 07: a Transformer and an RNN with attention trained on the same data, same updates",
        made_by=f"python -m experiments.transformer --config {config_name}",
    )
    results["maps"] = {
        "description": "attention maps, the correct French fed to the decoder; rows: French tokens and <eos>, "
        "columns: English tokens and <eos>; the Transformer's per decoder layer and head (n_layers, n_heads, "
        "T_dec, T_enc), the RNN's (T_dec, T_enc); each model's greedy translation beside",
        "sentences": [
            {
                "english": english,
                "french": french,
                "source_tokens": english.split() + ["<eos>"],
                "target_tokens": french.split() + ["<eos>"],
            }
            for english, french in MAP_PAIRS
        ],
    }
    for kind in models:
        load_before = os.getloadavg()[0]
        model, history, figures = train(
            kind, config, encoded, device, max_seconds=max_seconds, show_progress=show_progress, log=log
        )
        figures["load_average_during_training"] = [load_before, os.getloadavg()[0]]  # 1-minute load, start and end
        decode = transformer_greedy if kind == "transformer" else None
        results["models"][kind] = {
            **measure(
                model, LABELS[kind], history, figures, splits["test"], encoded["test"], tgt_vocab, device, decode, log
            ),
            **attention_maps(kind, model, MAP_PAIRS, src_vocab, tgt_vocab, device),
        }
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
