"""Chapter 06's data, exported from the trained attention model of chapter 05.

    python -m experiments.exports

trains nothing: it rewrites ``attention_course/assets/attention_maps.npz`` from the saved
``attention_course/assets/attention_model.pt`` (and the left-to-right encoder's model in
``experiments/forward_encoder/``, for the comparison). ``python -m experiments.translation`` calls
:func:`export_attention_maps` itself after training the attention model.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from attention_course.data import BOS_ID, PAD_ID
from attention_course.translation import Seq2Seq, greedy_translate
from autograder.reference.ch05_gpu_training import pad_batch
from experiments.translation import DEFAULT_OUT, FORWARD_OUT, ROOT, Config, build_model, load_data, make_batch

# Chapter 06 reads data, never the model: a model file would carry the decoder's code or enough to
# rebuild it, and chapter 05 asks the students to write that decoder.
MAPS_FILE = "attention_maps.npz"
# the sentences chapter 06 draws, with their correct translations ("i love you" is also the first test sentence)
CHAPTER05_EXAMPLES = (
    ("i love you", "je t' aime"),
    ("the young girl that sees my dog hears the boys", "la jeune fille qui voit mon chien entend les garçons"),
    ("she finds the small red cars", "elle trouve les petites voitures rouges"),
    ("he does not see them", "il ne les voit pas"),
)
# (english, french, output word) whose source-token importances chapter 06 compares with attention
CHAPTER05_EXPLAINED = (
    ("she finds the small red cars", "elle trouve les petites voitures rouges", "rouges"),
    ("i love you", "je t' aime", "t'"),
)
NUM_GREEDY = 300  # test sentences with stored greedy translations (besides the named examples)
NUM_AGREEMENT = 150  # test sentences (after "i love you") with occlusion importances of every output word


def load_attention_model(path: Path):
    """The attention model saved by :func:`run` (``attention_model.pt``: weights, configuration, vocabularies),
    on the CPU in evaluation mode; returns ``(model, config, saved)``."""
    saved = torch.load(path, map_location="cpu")
    config = Config(**saved["config"])
    model = build_model("attention", config, len(saved["source_vocab"]), len(saved["target_vocab"]))
    model.load_state_dict(saved["model"])
    return model.eval(), config, saved


def _flat(arrays, dtype) -> tuple[np.ndarray, np.ndarray]:
    """Ragged 2-d arrays as (shapes (N, 2) int32, all entries concatenated in row-major order)."""
    shapes = np.array([a.shape for a in arrays], dtype=np.int32).reshape(len(arrays), 2)
    flat = np.concatenate([np.asarray(a, dtype=dtype).ravel() for a in arrays]) if arrays else np.zeros(0, dtype)
    return shapes, flat


@torch.no_grad()
def greedy_maps(model: Seq2Seq, sentences, src_vocab, tgt_vocab, batch_size: int = 100):
    """Greedy translations (``greedy_translate`` of the package) of English sentences: for each, the output
    tokens up to and including the first ``<eos>``, and the attention weights ``(T, S)`` (``S`` counts the
    source's ``<eos>``)."""
    results = []
    for start in range(0, len(sentences), batch_size):
        encoded = [src_vocab.encode(s) for s in sentences[start : start + batch_size]]
        src, lengths = pad_batch(encoded, PAD_ID)
        tokens, weights = greedy_translate(model, src, lengths, max_len=60)
        for row, ids in enumerate(encoded):
            output = tgt_vocab.decode(tokens[row].tolist(), strip=False)
            output = output[: output.index("<eos>") + 1] if "<eos>" in output else output
            results.append((output, weights[row, : len(output), : len(ids)].numpy()))
    return results


@torch.no_grad()
def forced_maps(model: Seq2Seq, encoded_pairs, batch_size: int = 250):
    """Attention weights ``(T, S)`` (``<eos>`` row and column included) with the gold target fed to the decoder."""
    maps = []
    for start in range(0, len(encoded_pairs), batch_size):
        chunk = encoded_pairs[start : start + batch_size]
        batch = make_batch(chunk)
        _, weights = model.forward_with_weights(batch["src"], batch["lengths"], batch["tgt_in"])
        maps.extend(weights[row, : len(t), : len(s)].numpy() for row, (s, t) in enumerate(chunk))
    return maps


def occlusion_drops(model: Seq2Seq, src_ids, tgt_ids) -> tuple[np.ndarray, np.ndarray]:
    """Occlusion with the gold prefix: ``drops[i, t] = log p(y_t | x) - log p(y_t | x with word i replaced by
    padding)`` for the ``S`` source words and ``T`` target words (``<eos>`` of neither); returns ``(drops (S, T),
    log p(y_t | x) (T,))``."""
    S, T = len(src_ids) - 1, len(tgt_ids) - 1
    src, lengths = torch.tensor([src_ids]), torch.tensor([len(src_ids)])
    tgt_in = torch.tensor([[BOS_ID] + tgt_ids[:-1]])
    gold = torch.tensor(tgt_ids[:T])
    with torch.no_grad():
        logits, _ = model.forward_with_weights(src, lengths, tgt_in)
        base = torch.log_softmax(logits[0, :T], -1)[torch.arange(T), gold]
        occluded = src.repeat(S, 1)
        occluded[torch.arange(S), torch.arange(S)] = PAD_ID  # row i hides word i
        logits_occ, _ = model.forward_with_weights(occluded, lengths.repeat(S), tgt_in.repeat(S, 1))
        logp_occ = torch.log_softmax(logits_occ[:, :T], -1)[:, torch.arange(T), gold]  # (S, T)
    return (base[None, :] - logp_occ).numpy(), base.numpy()


def token_importances(model: Seq2Seq, src_vocab, tgt_vocab, english: str, french: str, word: str) -> dict:
    """Attention weight, occlusion drop (clamped at 0) and |gradient x input| of every source word (without
    ``<eos>``) for the first occurrence of ``word`` in ``french``, with the gold prefix; unnormalised."""
    src_ids, tgt_ids = src_vocab.encode(english), tgt_vocab.encode(french)
    t, S = french.split().index(word), len(src_ids) - 1
    drops, base = occlusion_drops(model, src_ids, tgt_ids)
    src, lengths = torch.tensor([src_ids]), torch.tensor([len(src_ids)])
    tgt_in = torch.tensor([[BOS_ID] + tgt_ids[:-1]])
    embedded = model.embed_source(src).detach().requires_grad_()
    logits, weights = model.forward_embedded(embedded, src, lengths, tgt_in)
    torch.log_softmax(logits[0, t], -1)[tgt_ids[t]].backward()
    grad_x_input = (embedded.grad[0, :S] * embedded[0, :S]).sum(-1).abs().detach()
    return {
        "position": t,
        "attention": weights[0, t, :S].detach().numpy(),
        "occlusion": np.clip(drops[:, t], 0.0, None),
        "grad_x_input": grad_x_input.numpy(),
        "probability": float(np.exp(base[t])),
    }


def _check_vocabularies(checkpoint: Path, saved: dict, src_vocab, tgt_vocab) -> None:
    if saved["source_vocab"] != src_vocab.itos or saved["target_vocab"] != tgt_vocab.itos:
        raise ValueError(f"{checkpoint} was trained with other vocabularies than build_vocabularies() gives")


def saved_test_results(checkpoint: Path) -> dict:
    """Exact match and BLEU on the test split (overall and by source length) of the attention model saved
    in ``checkpoint``, from the ``translation_results.json`` beside it ({} when there is none)."""
    path = checkpoint.parent / "translation_results.json"
    results = json.loads(path.read_text())["models"].get("attention", {}) if path.exists() else {}
    return {key: results[key] for key in ("exact_match", "bleu", "by_length") if key in results}


def export_attention_maps(checkpoint: Path, maps_out: Path, forward_checkpoint: Path | None = None, log=print) -> Path:
    """Write chapter 06's data file ``maps_out/attention_maps.npz`` from the attention model in ``checkpoint``
    (and, where ``forward_checkpoint`` exists, the model of ``--config forward`` for comparison).

    Only numbers and strings (loadable with ``np.load(path, allow_pickle=False)``); token sequences are
    strings of space-separated tokens, ragged matrices are concatenated row-major with their shapes beside:

    - ``meta``: JSON (configuration, number of parameters, test results, how the file was made);
    - ``greedy_english``, ``greedy_output``, ``greedy_reference``, ``greedy_shape`` (N, 2), ``greedy_weights``
      (float32): the chapter's named examples and the first ``NUM_GREEDY`` test sentences, greedily translated
      (output up to ``<eos>`` included) with their attention maps ``(T, S)`` (source ``<eos>`` included);
    - ``test_english``, ``test_french``, ``test_shape``, ``test_weights`` (float32): the whole test split with
      the attention maps of the gold translation fed to the decoder (``<eos>`` row and column included);
    - ``agreement_index`` (test sentences 1 to ``NUM_AGREEMENT``), ``agreement_shape``, ``agreement_drops``
      (float32): the occlusion drops ``(S, T)`` of every source word for every output word of those sentences
      (no ``<eos>``);
    - ``explain_english``, ``explain_french``, ``explain_word``, ``explain_position``, ``explain_probability``,
      ``explain_length`` and the concatenated per-word ``explain_attention``, ``explain_occlusion``,
      ``explain_grad_x_input`` (float32) for the outputs of ``CHAPTER05_EXPLAINED``;
    - ``forward_english``, ``forward_output``, ``forward_shape``, ``forward_weights``: the greedy translations and
      attention maps of the named examples by the left-to-right encoder's model, whose configuration, size
      and test results (from its ``translation_results.json``) are in ``meta["forward"]``.
    """
    started = time.perf_counter()
    torch.manual_seed(0)
    model, config, saved = load_attention_model(checkpoint)
    src_vocab, tgt_vocab, splits, encoded = load_data(config)
    _check_vocabularies(checkpoint, saved, src_vocab, tgt_vocab)
    test = splits["test"]
    named = [english for english, _ in CHAPTER05_EXAMPLES]
    greedy_pairs = list(CHAPTER05_EXAMPLES) + [pair for pair in test[:NUM_GREEDY] if pair[0] not in named]
    greedy = greedy_maps(model, [english for english, _ in greedy_pairs], src_vocab, tgt_vocab)
    greedy_shape, greedy_weights = _flat([w for _, w in greedy], np.float32)
    test_shape, test_weights = _flat(forced_maps(model, encoded["test"]), np.float32)
    agreement_index = np.arange(1, min(NUM_AGREEMENT, len(test) - 1) + 1)
    drops = [occlusion_drops(model, *encoded["test"][i])[0] for i in agreement_index]
    explained = [token_importances(model, src_vocab, tgt_vocab, *example) for example in CHAPTER05_EXPLAINED]
    forward_meta, forward_arrays = {}, {}
    if forward_checkpoint is not None and forward_checkpoint.exists():
        forward_model, _, forward_saved = load_attention_model(forward_checkpoint)
        _check_vocabularies(forward_checkpoint, forward_saved, src_vocab, tgt_vocab)
        forward = greedy_maps(forward_model, named, src_vocab, tgt_vocab)
        forward_shape, forward_weights = _flat([w for _, w in forward], np.float32)
        forward_meta["forward"] = {
            "made_by": "python -m experiments.translation --config forward --model attention",
            "config": forward_saved["config"],
            "parameters": sum(p.numel() for p in forward_model.parameters()),
            "test": saved_test_results(forward_checkpoint),
        }
        forward_arrays = {
            "forward_english": np.array(named),
            "forward_output": np.array([" ".join(output) for output, _ in forward]),
            "forward_shape": forward_shape,
            "forward_weights": forward_weights,
        }
    meta = {
        "description": "attention maps and source-word importances of chapter 05's attention model, for chapter 06",
        "made_by": "python -m experiments.translation --export-only",
        "checkpoint": str(checkpoint.relative_to(ROOT)) if checkpoint.is_relative_to(ROOT) else str(checkpoint),
        "config": saved["config"],
        "parameters": sum(p.numel() for p in model.parameters()),
        "test": saved_test_results(checkpoint),
        "torch": torch.__version__,
        **forward_meta,
    }
    arrays = {
        "meta": np.array(json.dumps(meta)),
        "greedy_english": np.array([english for english, _ in greedy_pairs]),
        "greedy_output": np.array([" ".join(output) for output, _ in greedy]),
        "greedy_reference": np.array([french for _, french in greedy_pairs]),
        "greedy_shape": greedy_shape,
        "greedy_weights": greedy_weights,
        "test_english": np.array([english for english, _ in test]),
        "test_french": np.array([french for _, french in test]),
        "test_shape": test_shape,
        "test_weights": test_weights,
        "agreement_index": agreement_index.astype(np.int32),
        "agreement_shape": np.array([d.shape for d in drops], dtype=np.int32).reshape(len(drops), 2),
        "agreement_drops": np.concatenate([d.astype(np.float32).ravel() for d in drops]),
        "explain_english": np.array([e for e, _, _ in CHAPTER05_EXPLAINED]),
        "explain_french": np.array([f for _, f, _ in CHAPTER05_EXPLAINED]),
        "explain_word": np.array([w for _, _, w in CHAPTER05_EXPLAINED]),
        "explain_position": np.array([x["position"] for x in explained], dtype=np.int32),
        "explain_probability": np.array([x["probability"] for x in explained], dtype=np.float32),
        "explain_length": np.array([len(x["attention"]) for x in explained], dtype=np.int32),
        **{
            f"explain_{key}": np.concatenate([x[key] for x in explained]).astype(np.float32)
            for key in ("attention", "occlusion", "grad_x_input")
        },
        **forward_arrays,
    }
    maps_out.mkdir(parents=True, exist_ok=True)
    path = maps_out / MAPS_FILE
    np.savez_compressed(path, **arrays)
    log(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB, {time.perf_counter() - started:.0f} s)")
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.exports", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--checkpoint", type=Path, default=DEFAULT_OUT / "attention_model.pt")
    parser.add_argument("--maps-out", type=Path, default=DEFAULT_OUT, help="where chapter 06's data goes")
    args = parser.parse_args(argv)
    export_attention_maps(args.checkpoint, args.maps_out, FORWARD_OUT / "attention_model.pt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
