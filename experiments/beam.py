"""Chapter 08's beam search experiment: chapter 07's Transformer and chapter 05's RNN with attention, decoded
with the reference ``beam_search`` (Exercise 8.5) instead of greedily.

    python -m experiments.beam --config medium

retrains both models of ``python -m experiments.transformer`` with its own code, configuration, data, seed and
updates (:func:`experiments.transformer.train`; chapter 07 ships their results, not their weights: about 80 and
50 CPU seconds of training with one thread), then decodes with
:func:`autograder.reference.ch08_attention_at_scale.beam_search`, beam sizes 1, 2, 4 and 8 and length-normalisation
exponents alpha 0, 0.6 and 1.0 (a finished hypothesis competes by its log-probability divided by n ** alpha):

- the Transformer's hypotheses are the rows of a batch whose state is every decoder layer's key-value cache:
  each layer's self-attention is chapter 08's reference ``KVCacheSelfAttention`` loaded with that layer's
  ``self_attn`` weights (the same parameter names), the cross-attention and the feed-forward network are the
  layer's own; ``reorder`` is ``index_select`` along the batch dimension of every cached tensor. The same search
  without the cache (the state is the tokens; every step reruns chapter 07's ``decode`` on each whole prefix)
  checks the cached one (the same log-probabilities, the same tokens) and is timed beside it;
- the RNN's state is its decoder state ``s_t``, one row per hypothesis; the encoder states are repeated to as
  many rows as there are hypotheses.

The search does not depend on alpha (alpha only chooses among the finished hypotheses), so each sentence is
searched once per beam size, and the search's calls to the model are replayed for the other alphas (checked:
the same tokens are asked for). ``max_len`` is the reference's length in tokens plus 10, as chapter 07's greedy
evaluation allows.

To keep the run within about a quarter of an hour on the 2-core machine, the sentences are a seeded sample:
``test_per_bin`` test sentences of each source-length bin (all of a bin that has fewer), ``valid_count``
validation sentences (all within the training lengths), ``timing_per_bin`` of the test sample's sentences per
bin for the times. For each model and beam size, alpha is chosen on the validation sentences (the highest BLEU,
then exact match, then the smaller alpha), and the test figures are reported at every alpha, the chosen one
marked. Figures: exact match, BLEU and length ratio (words produced per reference word) by source length, and
the mean log-probability of the chosen translations (what the search maximises). Times: seconds per sentence
(one thread, the machine and its load recorded); the trained figures do not depend on the machine's load.

Results: ``attention_course/assets/beam_results.json`` (``--out``). ``--config tiny`` runs in seconds (tests).
"""

from __future__ import annotations

import dataclasses
import math
import os
import random
import sys
import time
from pathlib import Path

import torch

from attention_course.data import BOS_ID, EOS_ID
from attention_course.translation import corpus_bleu
from autograder.reference import ch08_attention_at_scale as ch08
from autograder.reference.ch07_transformer import sinusoidal_positions
from experiments.cli import ASSETS, add_run_arguments, make_parser
from experiments.evaluation import LENGTH_BINS
from experiments.machine import describe_machine
from experiments.transformer import CONFIGS, LABELS, load_run_data, train, write_results

RESULTS_FILE = "beam_results.json"
MODELS = ("transformer", "rnn_attention")
BEAM_SIZES = (1, 2, 4, 8)
ALPHAS = (0.0, 0.6, 1.0)
EXTRA_TOKENS = 10  # max_len = the reference's tokens + this, as chapter 07's greedy evaluation


@dataclasses.dataclass(frozen=True)
class Sample:
    test_per_bin: int
    valid_count: int
    timing_per_bin: int
    seed: int = 31


SAMPLES = {"tiny": Sample(3, 8, 1), "medium": Sample(40, 150, 3)}


def command(config_name: str) -> str:
    return f"python -m experiments.beam --config {config_name}"


def bin_of(words: int) -> str | None:
    for low, high in LENGTH_BINS:
        if low <= words <= high:
            return f"{low}-{high}"
    return None


def choose_sentences(splits, sample: Sample) -> dict:
    """The seeded sample: ``test`` (indices into the test split, up to ``test_per_bin`` per length bin, sorted),
    ``valid`` (``valid_count`` indices into the validation split), ``timing`` (the first ``timing_per_bin`` of
    each bin's test sample). Depends only on the splits and the seed, not on the machine."""
    rng = random.Random(sample.seed)
    chosen, timing = [], []
    for low, high in LENGTH_BINS:
        in_bin = [i for i, (english, _) in enumerate(splits["test"]) if low <= len(english.split()) <= high]
        picked = sorted(rng.sample(in_bin, min(sample.test_per_bin, len(in_bin))))
        chosen += picked
        timing += picked[: sample.timing_per_bin]
    valid = sorted(rng.sample(range(len(splits["valid"])), min(sample.valid_count, len(splits["valid"]))))
    return {"test": sorted(chosen), "valid": valid, "timing": sorted(timing)}


# ---- the models as step and reorder functions ------------------------------------------------------------------


def transformer_cached(model, src, lengths, max_positions: int):
    """``(step, reorder, state)`` for the Transformer with a key-value cache per decoder layer."""
    d = model.embed_dim
    memory, _ = model.encode(src, lengths)  # (1, T_enc, d_model); one sentence, no padding
    attentions = []
    for layer in model.decoder_layers:
        attention = ch08.KVCacheSelfAttention(d, layer.self_attn.num_heads).to(src.device)
        attention.load_state_dict(layer.self_attn.state_dict())  # nn.MultiheadAttention's names and shapes
        attentions.append(attention.eval())
    P = sinusoidal_positions(max_positions, d).to(src.device)  # (positions, d_model)

    def step(last_tokens, caches):
        rows = last_tokens.shape[0]
        position = 0 if caches is None else caches[0][0].shape[2]
        x = model.tgt_embedding(last_tokens.to(src.device)[:, None]) * math.sqrt(d) + P[position]  # (rows, 1, d)
        keys = memory.expand(rows, -1, -1)
        new_caches = []
        for i, layer in enumerate(model.decoder_layers):  # pre-norm, as chapter 07's TransformerDecoderLayer
            attended, cache = attentions[i](layer.norm1(x), None if caches is None else caches[i])
            x = x + attended
            new_caches.append(cache)
            x = x + layer.multihead_attn(layer.norm2(x), keys, keys, need_weights=False)[0]
            x = x + layer.linear2(torch.relu(layer.linear1(layer.norm3(x))))
        return torch.log_softmax(model.out(model.decoder_norm(x))[:, -1], dim=-1), new_caches

    def reorder(caches, index):  # every cached tensor's rows follow the hypotheses
        return [(K.index_select(0, index), V.index_select(0, index)) for K, V in caches]

    return step, reorder, None


def transformer_recompute(model, src, lengths):
    """``(step, reorder, state)`` for the Transformer without a cache: the state is each hypothesis's tokens, and
    every step runs chapter 07's ``decode`` on the whole prefixes (as its greedy decoder does)."""
    memory, src_mask = model.encode(src, lengths)

    def step(last_tokens, prefixes):
        prefixes = torch.cat([prefixes, last_tokens.to(src.device)[:, None]], dim=1)  # (rows, t)
        rows = prefixes.shape[0]
        logits = model.decode(prefixes, memory.expand(rows, -1, -1), src_mask.expand(rows, -1))[:, -1]
        return torch.log_softmax(logits, dim=-1), prefixes

    return step, (lambda prefixes, index: prefixes.index_select(0, index)), src.new_zeros(1, 0)


def rnn_stepper(model, src, lengths):
    """``(step, reorder, state)`` for chapter 05's RNN with attention: the state is the decoder state s_t, (rows, d)."""
    outputs, summary = model.encoder(src, lengths)  # (1, T_enc, d), (1, d)
    mask = model.source_mask(src, lengths)
    decoder = model.decoder

    def step(last_tokens, hidden):
        rows = last_tokens.shape[0]
        y = last_tokens.to(src.device)[:, None]
        logits, _ = decoder(y, hidden, outputs.expand(rows, -1, -1), mask.expand(rows, -1))
        hidden = decoder.rnn(decoder.embedding(y), hidden.unsqueeze(0))[1][0]  # s_t, as experiments' fast_greedy
        return torch.log_softmax(logits[:, -1], dim=-1), hidden

    return step, (lambda hidden, index: hidden.index_select(0, index)), summary


def stepper(kind, model, src, lengths, max_len):
    if kind == "transformer":
        return transformer_cached(model, src, lengths, max_len + 1)
    return rnn_stepper(model, src, lengths)


# ---- the search, once per beam size, replayed for every alpha ------------------------------------------------------


def search_every_alpha(step, reorder, state, beam_size: int, max_len: int, alphas=ALPHAS) -> dict:
    """``{alpha: (tokens, score)}``: the reference's beam search with each alpha. The model is called during the
    first search only; the others replay its log-probabilities (the search is the same for every alpha, and the
    replay checks that it asks for the same tokens)."""
    calls = []

    def recording(last_tokens, state):
        log_probs, state = step(last_tokens, state)
        calls.append((last_tokens.tolist(), log_probs))
        return log_probs, state

    results = {alphas[0]: ch08.beam_search(recording, reorder, state, BOS_ID, EOS_ID, beam_size, max_len, alphas[0])}
    for alpha in alphas[1:]:
        recorded = iter(calls)

        def replay(last_tokens, state, recorded=recorded):
            asked, log_probs = next(recorded)
            if asked != last_tokens.tolist():
                raise RuntimeError("the search differs between alphas: the replay cannot stand for the model")
            return log_probs, state

        results[alpha] = ch08.beam_search(replay, lambda s, i: s, None, BOS_ID, EOS_ID, beam_size, max_len, alpha)
    return results


@torch.no_grad()
def decode_sentences(kind, model, encoded, indices, tgt_vocab, device, beam_sizes=BEAM_SIZES) -> dict:
    """``{beam_size: {alpha: [(words, log-probability), ...]}}`` for the sentences ``indices`` of ``encoded``."""
    model.eval()
    out = {b: {a: [] for a in ALPHAS} for b in beam_sizes}
    for i in indices:
        source, target = encoded[i]
        src, lengths = torch.tensor([source], device=device), torch.tensor([len(source)])
        max_len = len(target) + EXTRA_TOKENS
        for beam_size in beam_sizes:
            step, reorder, state = stepper(kind, model, src, lengths, max_len)
            for alpha, (tokens, score) in search_every_alpha(step, reorder, state, beam_size, max_len).items():
                out[beam_size][alpha].append((tgt_vocab.decode(tokens), score))
    return out


def figures(outputs, references, lengths) -> dict:
    """Exact match, BLEU, length ratio and mean log-probability, over all the sentences and by source length."""

    def scores(chosen):
        hypotheses = [outputs[i][0] for i in chosen]
        wanted = [references[i] for i in chosen]
        return {
            "count": len(chosen),
            "exact_match": sum(h == r for h, r in zip(hypotheses, wanted)) / len(chosen),
            "bleu": corpus_bleu(hypotheses, wanted),
            "length_ratio": sum(map(len, hypotheses)) / sum(map(len, wanted)),
            "mean_log_prob": sum(outputs[i][1] for i in chosen) / len(chosen),
        }

    table = {}
    for low, high in LENGTH_BINS:
        chosen = [i for i, n in enumerate(lengths) if low <= n <= high]
        if chosen:
            table[f"{low}-{high}"] = scores(chosen)
    return {**scores(range(len(outputs))), "by_length": table}


def choose_alpha(valid: dict) -> float:
    """The alpha with the highest validation BLEU, then exact match, then the smaller alpha."""
    return max(ALPHAS, key=lambda a: (round(valid[str(a)]["bleu"], 6), valid[str(a)]["exact_match"], -a))


@torch.no_grad()
def time_decoding(makers: dict, model, encoded, indices, device, beam_sizes=BEAM_SIZES) -> dict:
    """Seconds per sentence of each way (``makers``: name -> (model, src, lengths, max_len) -> (step, reorder,
    state)) at each beam size, alpha 0, the ways taking turns sentence by sentence; and whether they wrote the same
    tokens."""
    seconds = {name: {str(b): 0.0 for b in beam_sizes} for name in makers}
    same = {str(b): 0 for b in beam_sizes}
    for i in indices:
        source, target = encoded[i]
        src, lengths = torch.tensor([source], device=device), torch.tensor([len(source)])
        max_len = len(target) + EXTRA_TOKENS
        for beam_size in beam_sizes:
            written = []
            for name, make in makers.items():
                started = time.perf_counter()
                step, reorder, state = make(model, src, lengths, max_len)
                written.append(ch08.beam_search(step, reorder, state, BOS_ID, EOS_ID, beam_size, max_len)[0])
                seconds[name][str(beam_size)] += time.perf_counter() - started
            same[str(beam_size)] += all(tokens == written[0] for tokens in written)
    return {
        "seconds_per_sentence": {name: {b: s / len(indices) for b, s in row.items()} for name, row in seconds.items()},
        "same_tokens": same,
        "sentences": len(indices),
    }


def check_cache(model, encoded, index, device) -> float:
    """The largest difference between the cached and the recomputed log-probabilities along one greedy decoding."""
    source, target = encoded[index]
    src, lengths = torch.tensor([source], device=device), torch.tensor([len(source)])
    cached, _, caches = transformer_cached(model, src, lengths, len(target) + 1)
    recompute, _, prefixes = transformer_recompute(model, src, lengths)
    last, worst = torch.tensor([BOS_ID]), 0.0
    with torch.no_grad():
        for _ in range(len(target)):
            a, caches = cached(last, caches)
            b, prefixes = recompute(last, prefixes)
            worst = max(worst, (a - b).abs().max().item())
            last = a.argmax(-1)
    return worst


def run_beam(
    config_name: str = "medium", out: Path | None = None, device=None, threads: int = 1, show_progress=True, log=print
) -> dict:
    torch.set_num_threads(threads)
    config, sample = CONFIGS[config_name], SAMPLES[config_name]
    device = torch.device(device or "cpu")
    started = time.perf_counter()
    src_vocab, tgt_vocab, splits, encoded = load_run_data(config, device, log=log)
    chosen = choose_sentences(splits, sample)
    results = {
        "description": "chapter 08: beam search (the reference beam_search) on chapter 07's Transformer, with a "
        "key-value cache, and on chapter 05's RNN with attention, both retrained as in chapter 07's run; exact "
        "match, BLEU and length ratio by source length per beam size and alpha on a seeded sample of the test "
        "split, alpha chosen on validation sentences; seconds per sentence with and without the cache",
        "made_by": command(config_name),
        "config": dataclasses.asdict(config),
        "sample": {**dataclasses.asdict(sample), **chosen},
        "beam_sizes": list(BEAM_SIZES),
        "alphas": list(ALPHAS),
        "max_len": f"the reference's tokens + {EXTRA_TOKENS}",
        "bins": [f"{low}-{high}" for low, high in LENGTH_BINS],
        "device": str(device),
        "machine": describe_machine(device),
        "models": {},
    }
    references = {name: [french.split() for _, french in splits[name]] for name in ("test", "valid")}
    lengths = {name: [len(english.split()) for english, _ in splits[name]] for name in ("test", "valid")}
    trained = {}
    for kind in MODELS:
        load_before = os.getloadavg()[0]
        model, history, timing = train(kind, config, encoded, device, show_progress=show_progress, log=log)
        model.eval()
        trained[kind] = model
        entry = {
            "label": LABELS[kind],
            "parameters": sum(p.numel() for p in model.parameters()),
            "train_seconds": timing["train_seconds"],
            "final_train_loss": history["train_loss"][-1] if "train_loss" in history else None,
            "load_average_during_training": [load_before, os.getloadavg()[0]],
        }
        decode_started = time.perf_counter()
        for split in ("valid", "test"):
            indices = chosen[split]
            decoded = decode_sentences(kind, model, encoded[split], indices, tgt_vocab, device)
            refs = [references[split][i] for i in indices]
            lens = [lengths[split][i] for i in indices]
            entry[split] = {str(b): {str(a): figures(decoded[b][a], refs, lens) for a in ALPHAS} for b in BEAM_SIZES}
            if split == "valid":
                for row in entry["valid"].values():
                    for cell in row.values():
                        del cell["by_length"]  # all within the training lengths
        entry["chosen_alpha"] = {str(b): choose_alpha(entry["valid"][str(b)]) for b in BEAM_SIZES}
        entry["decode_seconds"] = time.perf_counter() - decode_started
        log(
            f"{LABELS[kind]}: trained in {timing['train_seconds']:.0f} s; test BLEU by beam size (alpha 0): "
            + ", ".join(f"{b}: {entry['test'][str(b)]['0.0']['bleu']:.1f}" for b in BEAM_SIZES)
            + f"; chosen alpha {entry['chosen_alpha']} (decoding {entry['decode_seconds']:.0f} s)"
        )
        results["models"][kind] = entry
    results["cache_check_max_difference"] = check_cache(
        trained["transformer"], encoded["test"], chosen["test"][-1], device
    )

    def cached(model, src, lengths, max_len):
        return transformer_cached(model, src, lengths, max_len + 1)

    def recompute(model, src, lengths, max_len):
        return transformer_recompute(model, src, lengths)

    results["timing"] = {
        "transformer": time_decoding(
            {"cache": cached, "recompute": recompute}, trained["transformer"], encoded["test"], chosen["timing"], device
        ),
        "rnn_attention": time_decoding(
            {"state": lambda m, s, n, _: rnn_stepper(m, s, n)},
            trained["rnn_attention"],
            encoded["test"],
            chosen["timing"],
            device,
        ),
    }
    log(f"times per sentence: {results['timing']}")
    results["total_seconds"] = time.perf_counter() - started
    results["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if out is not None:
        write_results(results, out, RESULTS_FILE, MODELS, same=("config", "made_by"), log=log)
    return results


def main(argv=None) -> int:
    parser = make_parser("python -m experiments.beam", __doc__)
    parser.add_argument("--config", choices=sorted(SAMPLES), default="medium")
    add_run_arguments(parser)
    parser.add_argument("--threads", type=int, default=1, help="PyTorch CPU threads (default 1)")
    parser.add_argument("--out", type=Path, default=ASSETS, help="where beam_results.json goes")
    args = parser.parse_args(argv)
    run_beam(
        args.config,
        out=None if args.no_write else args.out,
        device=args.device,
        threads=args.threads,
        show_progress=not args.quiet,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
