"""Chapter 08's positions experiment: chapter 07's Transformer retrained with its position handling swapped.

    python -m experiments.positions --config medium

trains, one after the other, on chapter 07's data with chapter 07's configuration, seed, batches, number of
updates and evaluation (:mod:`experiments.transformer`'s ``CONFIGS``, :func:`~experiments.transformer.train_model`,
:func:`~experiments.evaluation.evaluate`), the Transformer of chapter 07 (the reference ``TransformerTranslator`` of
:mod:`autograder.reference.ch07_transformer`) with three ways of telling it where a token is:

- ``sinusoidal``: chapter 07's model unchanged, sinusoidal positions added to the embeddings (Vaswani et al.,
  2017); the same training as ``python -m experiments.transformer``'s ``transformer``, retrained here so that the
  three models share one run, one machine and one load;
- ``rotary``: no position table; in every self-attention (encoder and decoder) the queries and keys of each head
  are rotated by their positions with chapter 08's ``rotary_embedding`` (Su et al., 2021; interleaved pairs,
  ``--rotary-base``, 10000 by default) before the dot products, so that a score depends only on the two tokens
  and their offset;
- ``alibi``: no position table; every self-attention score gets a per-head linear penalty for distance,
  ``-m_h * (i - j)`` (Press et al., 2022; the head slopes ``m_h`` are the paper's geometric sequence). The paper
  defines the causal case (the decoder); the encoder, which looks both ways, gets ``-m_h * |i - j|``.

Cross-attention (decoder over encoder) has no position information in the rotary and ALiBi models: a target
position and a source position are positions in two different sentences, so their offset means nothing. The
three models have the same parameters (the position handling adds none) and start from the same initial
weights.

Training uses only sentences of at most ``max_train_len`` source words (20 for ``medium``), the test split keeps
every length up to 40. The results file ``attention_course/assets/positions_results.json`` (``--out``) holds,
per model, exact match and BLEU by source length on the test split, the same figures on the in-length
(``exact_match``, ``bleu``, ``in_length``: FORMATS.md section 4; ``transformer_results.json``'s ``exact_match`` and
``bleu`` are over every length, here ``all_lengths``) and the longer test sentences (``beyond_training``) and on the
validation sentences longer than the training ones (``long_validation``: the only long sentences any choice
between variants may look at; the test split is for reporting), the length ratio (words produced per reference
word) of each bin, the same test figures when the decoder may not stop before the reference's length
(``oracle_length``: a diagnosis that separates "lost its place" from "stopped too early", not a result a model
could reach alone), and the training time and throughput. Chapter 08 plots it.

Times (one thread, the default; ``--threads`` changes it): ``--config tiny`` a few seconds; ``--config medium``
about 70 CPU seconds of training per model, then its evaluation (the test split twice, once told the lengths, and
the long validation sentences). The shipped run of the three models took 20 minutes of wall time at a load
average of 7 to 10 on the 2-core machine (the file records the load around every model's training).
``--model rotary`` (etc.) trains one model and keeps the others' results already in the file (same configuration);
``--model rotary --rotary-base 1000`` adds the model ``rotary_base1000``. The shipped file also holds bases 100,
1000 and 100000 (``command`` in each model's entry), trained before the three models' run.
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from autograder.reference import ch08_attention_at_scale as ch08
from autograder.reference.ch05_gpu_training import pick_device
from autograder.reference.ch07_transformer import TransformerTranslator
from experiments import transformer
from experiments.cli import ASSETS, add_run_arguments, make_parser
from experiments.evaluation import LENGTH_BINS, evaluate, transformer_greedy

RESULTS_FILE = "positions_results.json"
MODELS = ("sinusoidal", "rotary", "alibi")
LABELS = {"sinusoidal": "Sinusoidal (chapter 07)", "rotary": "Rotary", "alibi": "ALiBi"}
ROTARY_BASE = 10000.0  # the model "rotary"; another --rotary-base gives the model "rotary_base<base>"
CONFIGS = transformer.CONFIGS  # chapter 07's configurations: the same data, sizes, updates and seed


ROTARY_FUNCTION = "autograder.reference.ch08_attention_at_scale.rotary_embedding"  # chapter 08's reference


def alibi_slopes(num_heads: int) -> torch.Tensor:
    """The head slopes of ALiBi (Press et al., 2022) ``(num_heads,)``: for ``n`` heads, a power of two, the
    geometric sequence ``2^(-8/n), 2^(-16/n), ..., 2^(-8)``; for other ``n``, the slopes of the power of two
    ``k`` just below, then every other slope of ``2k`` heads (those that fall between them), ``n - k`` of them."""
    if num_heads < 1:
        raise ValueError(f"num_heads must be at least 1, got {num_heads}")

    def geometric(n):  # n a power of two
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]

    k = 2 ** int(math.log2(num_heads))
    slopes = geometric(k) + geometric(2 * k)[0::2][: num_heads - k]
    return torch.tensor(slopes)


def alibi_bias(length: int, slopes: torch.Tensor, causal: bool) -> torch.Tensor:
    """ALiBi's additive score bias ``(H, T, T)`` for ``T = length`` tokens and the head ``slopes`` ``(H,)``:
    ``-m_h * (i - j)`` for query ``i`` and key ``j <= i``, and ``-inf`` for ``j > i`` when ``causal`` (the
    decoder); ``-m_h * |i - j|`` everywhere otherwise (the encoder: our extension of the causal case)."""
    positions = torch.arange(length, device=slopes.device)
    offset = positions[:, None] - positions[None, :]  # (T, T): i - j
    bias = -slopes[:, None, None] * offset.abs()  # (H, T, T)
    if causal:
        bias = bias.masked_fill(offset < 0, float("-inf"))
    return bias


class PositionalSelfAttention(nn.MultiheadAttention):
    """Self-attention that knows positions: ``nn.MultiheadAttention``'s parameters (``in_proj_weight``,
    ``in_proj_bias``, ``out_proj``: its ``state_dict`` loads), called like it by chapter 07's layers, with
    ``positions``:

    - ``"rotary"``: each head's queries and keys rotated by their positions 0 .. T - 1 with
      chapter 08's ``rotary_embedding(., positions, rotary_base)`` (its reference) before the scaled dot products;
    - ``"alibi"``: :func:`alibi_bias` added to the scaled scores (``causal`` for the decoder);
    - ``"none"``: neither (the same numbers as ``nn.MultiheadAttention``; for the tests).

    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None, ...)`` with
    ``query is key is value`` ``(B, T, E)`` (batch first); masks in PyTorch's convention (True = may not attend):
    ``key_padding_mask`` ``(B, T)``, ``attn_mask`` ``(T, T)``. Returns ``(output (B, T, E), weights)``, weights
    ``(B, T, T)`` averaged over heads (or ``(B, H, T, T)``) when ``need_weights``, else None.
    """

    def __init__(self, embed_dim, num_heads, positions: str, causal: bool, rotary_base=10000.0, device=None):
        super().__init__(embed_dim, num_heads, batch_first=True, device=device)
        if positions not in ("rotary", "alibi", "none"):
            raise ValueError(f"positions must be 'rotary', 'alibi' or 'none', got {positions!r}")
        self.positions, self.causal, self.rotary_base = positions, causal, rotary_base

    def scores_and_values(self, x: torch.Tensor):
        """x (B, T, E) -> (scores (B, H, T, T), values (B, H, T, d_k)): the scaled dot-product scores of every
        head with the positions applied (rotated queries and keys, or ALiBi's bias; no mask, no softmax)."""
        B, T, E = x.shape
        H, d_k = self.num_heads, self.head_dim
        qkv = F.linear(x, self.in_proj_weight, self.in_proj_bias)  # (B, T, 3E): queries, keys, values
        q, k, v = qkv.view(B, T, 3, H, d_k).permute(2, 0, 3, 1, 4)  # each (B, H, T, d_k)
        if self.positions == "rotary":
            positions = torch.arange(T, device=x.device)
            q = ch08.rotary_embedding(q, positions, self.rotary_base)  # (B, H, T, d_k)
            k = ch08.rotary_embedding(k, positions, self.rotary_base)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (B, H, T, T)
        if self.positions == "alibi":
            slopes = alibi_slopes(H).to(x.device, scores.dtype)
            scores = scores + alibi_bias(T, slopes, causal=self.causal)  # (H, T, T), broadcast over B
        return scores, v

    def forward(
        self,
        query,
        key,
        value,
        key_padding_mask=None,
        need_weights=True,
        attn_mask=None,
        average_attn_weights=True,
        is_causal=False,
    ):
        if not (query is key is value):
            raise ValueError("PositionalSelfAttention is self-attention: query, key and value must be one tensor")
        scores, v = self.scores_and_values(query)  # (B, H, T, T), (B, H, T, d_k)
        if attn_mask is not None:
            scores = scores.masked_fill(attn_mask.to(torch.bool), float("-inf"))  # (T, T)
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask[:, None, None, :].to(torch.bool), float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (B, H, T, T)
        out = (weights @ v).transpose(1, 2).flatten(2)  # (B, T, E), heads side by side
        if not need_weights:
            return self.out_proj(out), None
        return self.out_proj(out), weights.mean(dim=1) if average_attn_weights else weights


class PositionalTranslator(TransformerTranslator):
    """Chapter 07's ``TransformerTranslator`` (the reference: its layers, embeddings, norms and output), with
    ``positions`` ``"rotary"`` or ``"alibi"`` instead of sinusoids: no table is added to the embeddings, and the
    ``self_attn`` of every encoder and decoder layer is a :class:`PositionalSelfAttention` (causal in the
    decoder) holding the very parameters it replaces, so that the model has the same parameters, the same
    ``state_dict`` and, after the same seed, the same initial weights as chapter 07's. Cross-attention is
    unchanged (no positions). ``encode``, ``decode`` and ``forward`` as in chapter 07."""

    def __init__(
        self, src_vocab_size, tgt_vocab_size, embed_dim, num_heads, ff_dim, num_layers, positions, rotary_base=1e4
    ):
        super().__init__(src_vocab_size, tgt_vocab_size, embed_dim, num_heads, ff_dim, num_layers)
        self.positions, self.rotary_base = positions, rotary_base
        for causal, layers in ((False, self.encoder_layers), (True, self.decoder_layers)):
            for layer in layers:
                # built without drawing random numbers, then given the parameters chapter 07's layer drew
                swapped = nn.utils.skip_init(
                    PositionalSelfAttention, embed_dim, num_heads, positions, causal, rotary_base
                )
                swapped.load_state_dict(layer.self_attn.state_dict())
                layer.self_attn = swapped

    def embed(self, tokens, embedding):
        """tokens (B, T) long -> (B, T, d_model): the scaled embeddings, no positional encodings."""
        return self.dropout(embedding(tokens) * math.sqrt(self.embed_dim))


def build(kind: str, config, src_vocab_size: int, tgt_vocab_size: int, rotary_base: float = ROTARY_BASE) -> nn.Module:
    """A freshly initialised model: ``sinusoidal`` is chapter 07's (``experiments.transformer.build``),
    ``rotary`` and ``alibi`` a :class:`PositionalTranslator` of the same sizes."""
    if kind == "sinusoidal":
        return transformer.build("transformer", config, src_vocab_size, tgt_vocab_size)
    if kind not in MODELS:
        raise ValueError(f"unknown model {kind!r}; choose from {MODELS}")
    return PositionalTranslator(
        src_vocab_size,
        tgt_vocab_size,
        config.d_model,
        config.n_heads,
        config.d_ff,
        config.n_layers,
        positions=kind,
        rotary_base=rotary_base,
    )


def model_key(kind: str, rotary_base: float = ROTARY_BASE) -> str:
    """The results file's name for a model: ``kind``, or ``rotary_base<base>`` for a rotary model with a base
    other than :data:`ROTARY_BASE`."""
    return f"rotary_base{rotary_base:g}" if kind == "rotary" and rotary_base != ROTARY_BASE else kind


def command(config_name: str, kind: str | None = None, rotary_base: float = ROTARY_BASE) -> str:
    """The command line that trains ``kind`` (every model of :data:`MODELS` when None)."""
    words = ["python -m experiments.positions --config", config_name]
    words += ["--model", kind] if kind is not None else []
    words += ["--rotary-base", f"{rotary_base:g}"] if rotary_base != ROTARY_BASE else []
    return " ".join(words)


def position_settings(config) -> dict:
    """What each model does with positions (the results file's ``positions``)."""
    return {
        "sinusoidal": "chapter 07's: sinusoidal_positions(T, d_model) added to the scaled embeddings",
        "rotary": {
            "function": ROTARY_FUNCTION,
            "base": f"{ROTARY_BASE:g} for the model 'rotary', <base> for a model 'rotary_base<base>' (rotary_base)",
            "applied_to": "queries and keys of every head of every self-attention (encoder and decoder)",
            "head_dim": config.d_model // config.n_heads,
        },
        "alibi": {
            "slopes": alibi_slopes(config.n_heads).tolist(),
            "decoder": "-m_h * (i - j) for keys j <= i (causal)",
            "encoder": "-m_h * |i - j|",
        },
        "cross_attention": "no position information in the rotary and ALiBi models (chapter 07's otherwise)",
    }


def scores_of(evaluation: dict) -> dict:
    """Count, exact match and BLEU of an :func:`~experiments.evaluation.evaluate` result (overall)."""
    return {
        "count": sum(row["count"] for row in evaluation["by_length"].values()),
        "exact_match": evaluation["exact_match"],
        "bleu": evaluation["bleu"],
    }


def run_positions(
    config_name: str = "medium",
    out: Path | None = None,
    device=None,
    models=MODELS,
    max_seconds: float | None = None,
    threads: int | None = 1,
    rotary_base: float = ROTARY_BASE,
    show_progress: bool = True,
    log=print,
) -> dict:
    """Train and evaluate ``models`` with chapter 07's configuration ``config_name``; returns the results and,
    when ``out`` is given, writes them to ``out/positions_results.json``. ``threads`` sets PyTorch's CPU threads
    (one by default, like chapter 07's shipped run); ``max_seconds`` bounds each model's training time."""
    if threads is not None:
        torch.set_num_threads(threads)
    config = CONFIGS[config_name]
    device = pick_device(device)
    started = time.perf_counter()
    _, tgt_vocab, splits, encoded = transformer.load_run_data(config, device, log=log)
    results = transformer.describe_run(
        config,
        device,
        splits,
        description="chapter 08: chapter 07's Transformer retrained on the same data with sinusoidal, rotary and "
        "ALiBi positions (same configuration, seed, batches, updates and evaluation)",
        made_by=command(config_name, None if tuple(models) == MODELS else ",".join(models), rotary_base),
    )
    results["data"]["long_valid_pairs"] = len(splits["valid_long"])
    del results["models"]  # after the bins and the position settings
    results.update(bins=[f"{low}-{high}" for low, high in LENGTH_BINS], positions=position_settings(config), models={})
    for kind in models:
        key = model_key(kind, rotary_base)
        label = LABELS[kind] if key == kind else f"{LABELS[kind]} (base {rotary_base:g})"
        load_at_start = os.getloadavg()[0]
        model, history, figures = transformer.train_model(
            lambda kind=kind: build(kind, config, *encoded["vocab_sizes"], rotary_base=rotary_base),
            config,
            encoded,
            device,
            peak_lr=config.lr_transformer,
            name=kind,
            label=label,
            max_seconds=max_seconds,
            show_progress=show_progress,
            log=log,
        )
        entry = transformer.measure(
            model, label, history, figures, splits["test"], encoded["test"], tgt_vocab, device,
            decode=transformer_greedy, log=log, max_train_len=config.max_train_len,
        )  # fmt: skip
        long_validation = evaluate(
            model, splits["valid_long"], encoded["valid_long"], tgt_vocab, device, decode=transformer_greedy
        )
        started_oracle = time.perf_counter()
        oracle = evaluate(
            model, splits["test"], encoded["test"], tgt_vocab, device, decode=transformer_greedy,
            max_train_len=config.max_train_len, oracle_length=True,
        )  # fmt: skip
        entry.update(
            positions=kind,
            **({"rotary_base": rotary_base} if kind == "rotary" else {}),
            command=command(config_name, kind, rotary_base if kind == "rotary" else ROTARY_BASE),
            load_average_at_start=load_at_start,  # the 1-minute load average when its training began
            load_average_at_end=os.getloadavg()[0],
            oracle_length={
                "by_length": oracle["by_length"],
                "in_length": oracle["in_length"],
                "beyond_training": oracle["beyond_training"],
                "eval_seconds": time.perf_counter() - started_oracle,
            },
            all_lengths=scores_of(entry),
            exact_match=entry["in_length"]["exact_match"],  # FORMATS.md section 4: overall = the in-length test set
            bleu=entry["in_length"]["bleu"],
            long_validation=scores_of(long_validation),
        )
        results["models"][key] = entry
        log(
            f"{key}: in-length exact match {entry['exact_match']:.3f}; longer than any training sentence: "
            f"{entry['long_validation']['exact_match']:.3f} (validation), {entry['beyond_training']['exact_match']:.3f}"
            f" (test), {entry['oracle_length']['beyond_training']['exact_match']:.3f} (test, no end before the "
            "reference's length)"
        )
        del model
    results["total_seconds"] = time.perf_counter() - started
    results["load_average_at_end"] = os.getloadavg()[0]
    if out is not None:
        transformer.write_results(results, out, RESULTS_FILE, MODELS, same=("config", "positions", "bins"), log=log)
    return results


def main(argv=None) -> int:
    parser = make_parser("python -m experiments.positions", __doc__)
    parser.add_argument("--config", choices=sorted(CONFIGS), default="medium")
    parser.add_argument("--model", choices=["all", *MODELS], default="all")
    parser.add_argument(
        "--rotary-base", type=float, default=ROTARY_BASE, help="the rotary model's base (default 10000); another base "
        "is stored as the model rotary_base<base>, beside the others",
    )  # fmt: skip
    add_run_arguments(parser)
    parser.add_argument("--threads", type=int, default=1, help="PyTorch CPU threads (default 1, as chapter 07's run)")
    parser.add_argument("--out", type=Path, default=ASSETS, help="where positions_results.json goes")
    args = parser.parse_args(argv)
    run_positions(
        args.config,
        out=None if args.no_write else args.out,
        device=args.device,
        models=MODELS if args.model == "all" else (args.model,),
        max_seconds=args.max_seconds,
        threads=args.threads,
        rotary_base=args.rotary_base,
        show_progress=not args.quiet,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
