"""Chapter 06's data, exported from one trained attention model of chapter 05's program.

    python -m experiments.exports [--checkpoint PATH]

trains nothing: from :data:`MAPS_MODEL` (``experiments/maps_model/attention_model.pt``, the model that
``python -m experiments.translation --config maps --model attention`` trains) it writes
``attention_course/assets/attention_maps.npz`` (maps, translations, vocabularies, the source embedding table) and
``attention_course/assets/attention_scorer.pt2`` (the model as a black-box scorer, a ``torch.export`` program;
see :func:`export_scorer`). ``python -m experiments.translation``
calls :func:`export_attention_maps` itself after training that model. About a minute on a 2-core CPU; the files
are about 2 MB each, and the scorer loads in about 4 s.

What a student can read from ``attention_scorer.pt2``: the trained weights, named by module path
(``decoder.combine.weight``...), and the computation as a flat graph of about a thousand aten operations (the GRU
steps unrolled, matrix products, softmax, tanh), which the chapter's prose describes anyway. What it does not hold:
Python source, docstrings, class names, stack traces or file paths (``torch.export`` records them; they are
stripped here, and ``tests/test_shipped_results.py`` checks that no line of chapter 05's solution is in the file).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from attention_course.data import BOS_ID, EOS_ID, PAD_ID
from attention_course.translation import Seq2Seq, greedy_translate
from autograder.reference.ch05_gpu_training import pad_batch
from experiments.cli import ASSETS, ROOT, make_parser
from experiments.config import Config
from experiments.data import load_data, make_batch
from experiments.models import build_model

# the one model chapter 06 reads (``--config maps``: bidirectional encoder, scaled dot-product score; see
# experiments.soft_maps for its two measured figures), in the folder ``--config maps`` writes to
MAPS_OUT = ROOT / "experiments" / "maps_model"
MAPS_MODEL = MAPS_OUT / "attention_model.pt"

# Chapter 06 reads data and a black box, never the model's code: chapter 05 asks the students to write the
# decoder, so what ships is numbers and an exported graph of aten operations (no Python source, see export_scorer).
MAPS_FILE = "attention_maps.npz"
# the sentences chapter 06 draws, with their correct translations ("i love you" is also the first test sentence)
CHAPTER06_EXAMPLES = (
    ("i love you", "je t' aime"),
    ("the young girl that sees my dog hears the boys", "la jeune fille qui voit mon chien entend les garçons"),
    ("she finds the small red cars", "elle trouve les petites voitures rouges"),
    ("he does not see them", "il ne les voit pas"),
)
# the scorer's fixed lengths (tokens, <eos> included): torch.export unrolls the recurrences, so the time of a call
# and of loading grows with them; chapter 06 scores short sentences only
SCORER_MAX_SOURCE, SCORER_MAX_TARGET = 17, 25
NUM_GREEDY = 300  # test sentences with stored greedy translations (besides the named examples)


def load_attention_model(path: Path):
    """The attention model saved by :func:`experiments.translation.run` (``attention_model.pt``: weights,
    configuration, vocabularies), on the CPU in evaluation mode; returns ``(model, config, saved)``."""
    saved = torch.load(path, map_location="cpu")
    config = Config(**saved["config"])
    model = build_model("attention", config, len(saved["source_vocab"]), len(saved["target_vocab"]))
    model.load_state_dict(saved["model"])
    return model.eval(), config, saved


SCORER_FILE = "attention_scorer.pt2"
STRIPPED_META = ("stack_trace", "nn_module_stack", "source_fn_stack", "torch_fn", "from_node", "custom")


def _gru_step(x, h, w_ih, w_hh, b_ih, b_hh):
    """One step of ``nn.GRU``'s cell (gates r, z, n in PyTorch's order): ``x`` ``(B, d_in)``, ``h`` ``(B, d)``."""
    r_x, z_x, n_x = (x @ w_ih.T + b_ih).chunk(3, dim=-1)
    r_h, z_h, n_h = (h @ w_hh.T + b_hh).chunk(3, dim=-1)
    r, z = torch.sigmoid(r_x + r_h), torch.sigmoid(z_x + z_h)
    n = torch.tanh(n_x + r * n_h)
    return (1 - z) * n + z * h


class TeacherForcedScorer(nn.Module):
    """The trained model as chapter 06's black box: ``(src_embedded (L_enc, d_e), src_mask (L_enc,) bool,
    tgt_ids (L_dec,) long) -> (log p(y_t | y_<t, x) (L_dec,), attention weights (L_dec, L_enc))`` for one
    sentence, the decoder fed the gold prefix ``<bos> y_1 .. y_{t-1}``.

    Inputs are padded to the fixed lengths ``L_enc``, ``L_dec`` the program is exported with (``torch.export``
    unrolls recurrences, so the lengths cannot be dynamic): the encoder's GRU (each direction) keeps its state
    at masked positions (a GRU step by hand, the same arithmetic as ``nn.GRU``), which gives at the real positions what
    the packed sequence of :class:`attention_course.translation.GRUEncoder` gives; padded target positions
    come after the real ones and change nothing before them.
    """

    def __init__(self, model: Seq2Seq):
        super().__init__()
        self.encoder_rnn = model.encoder.rnn  # no source embedding: the scorer starts from the embeddings
        self.project, self.bridge, self.decoder = model.encoder.project, model.encoder.bridge, model.decoder

    def _direction(self, suffix: str, xs, mask, reverse: bool):
        weights = [
            getattr(self.encoder_rnn, f"{n}_l0{suffix}") for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        ]
        h = xs.new_zeros(xs.shape[0], self.encoder_rnn.hidden_size)  # (B, d)
        states = [h] * xs.shape[1]
        for i in reversed(range(xs.shape[1])) if reverse else range(xs.shape[1]):
            h = torch.where(mask[:, i, None], _gru_step(xs[:, i], h, *weights), h)  # padding keeps the state
            states[i] = h
        return torch.stack(states, dim=1), h  # (B, L_enc, d), (B, d)

    def forward(self, src_embedded, src_mask, tgt_ids):
        src_embedded, src_mask, tgt_ids = src_embedded[None], src_mask[None], tgt_ids[None]  # a batch of one
        states, last = self._direction("", src_embedded, src_mask, reverse=False)  # (B, L_enc, d), (B, d)
        if self.encoder_rnn.bidirectional:
            backward_states, first = self._direction("_reverse", src_embedded, src_mask, reverse=True)
            states, last = torch.cat([states, backward_states], dim=-1), torch.cat([last, first], dim=-1)
        outputs = self.project(states) * src_mask[..., None].to(states.dtype)  # (B, L_enc, d)
        summary = torch.tanh(self.bridge(last))  # (B, d)
        tgt_in = torch.cat([torch.full_like(tgt_ids[:, :1], BOS_ID), tgt_ids[:, :-1]], dim=1)  # (B, L_dec)
        logits, weights = self.decoder(tgt_in, summary, outputs, src_mask)
        log_probs = torch.log_softmax(logits, dim=-1).gather(2, tgt_ids[..., None])[..., 0]  # (B, L_dec)
        return log_probs[0], weights[0]


def export_scorer(model: Seq2Seq, path: Path, max_source: int, max_target: int) -> dict:
    """Export :class:`TeacherForcedScorer` of ``model`` with ``torch.export`` (static shapes: lengths
    ``max_source``, ``max_target``; a dynamic batch size doubles the loading time) to ``path``, without the
    stack traces and module paths that ``torch.export`` records (they quote source lines); returns size and
    timings."""
    scorer = TeacherForcedScorer(model).eval()
    example = (
        torch.zeros(max_source, scorer.encoder_rnn.input_size),
        torch.ones(max_source, dtype=torch.bool),
        torch.full((max_target,), EOS_ID, dtype=torch.long),
    )
    started = time.perf_counter()
    program = torch.export.export(scorer, example)
    for node in program.graph.nodes:
        for key in STRIPPED_META:
            node.meta.pop(key, None)
    torch.export.save(program, path)
    exported = time.perf_counter() - started
    started = time.perf_counter()
    loaded = torch.export.load(path).module()
    loading = time.perf_counter() - started
    with torch.no_grad():
        np.testing.assert_allclose(loaded(*example)[0].numpy(), scorer(*example)[0].numpy(), atol=1e-5)
    return {
        "file": SCORER_FILE,
        "max_source": max_source,
        "max_target": max_target,
        "bytes": path.stat().st_size,
        "nodes": len(program.graph.nodes),
        "export_seconds": round(exported, 1),
        "load_seconds": round(loading, 1),
    }


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


def _check_vocabularies(checkpoint: Path, saved: dict, src_vocab, tgt_vocab) -> None:
    if saved["source_vocab"] != src_vocab.itos or saved["target_vocab"] != tgt_vocab.itos:
        raise ValueError(f"{checkpoint} was trained with other vocabularies than build_vocabularies() gives")


def saved_test_results(checkpoint: Path) -> dict:
    """Exact match and BLEU on the test split (overall and by source length) of the attention model saved
    in ``checkpoint``, from the ``translation_results.json`` beside it ({} when there is none)."""
    path = checkpoint.parent / "translation_results.json"
    results = json.loads(path.read_text())["models"].get("attention", {}) if path.exists() else {}
    return {key: results[key] for key in ("exact_match", "bleu", "by_length") if key in results}


def export_attention_maps(checkpoint: Path, maps_out: Path, log=print) -> Path:
    """Write chapter 06's data from the attention model in ``checkpoint`` (:data:`MAPS_MODEL`, the one model that
    draws every map of the chapter): ``maps_out/attention_scorer.pt2``, the model as a black box
    (:func:`export_scorer`), and ``maps_out/attention_maps.npz``.

    The ``.npz`` holds only numbers and strings (loadable with ``np.load(path, allow_pickle=False)``); token
    sequences are strings of space-separated tokens, ragged matrices are concatenated row-major with their shapes
    beside:

    - ``meta``: JSON (configuration, number of parameters, test results, the scorer's file, lengths and size,
      how the file was made);
    - ``greedy_english``, ``greedy_output``, ``greedy_reference``, ``greedy_shape`` (N, 2), ``greedy_weights``
      (float32): the chapter's named examples and the first ``NUM_GREEDY`` test sentences, greedily translated
      (output up to ``<eos>`` included) with their attention maps ``(T_dec, T_enc)`` (source ``<eos>`` included);
    - ``test_english``, ``test_french``, ``test_shape``, ``test_weights`` (float32): the whole test split with
      the attention maps of the gold translation fed to the decoder (``<eos>`` row and column included);
    - ``source_vocab``, ``target_vocab``: the vocabularies (token strings in id order), and
      ``source_embeddings`` (float32, ``(n_vocab, d_e)``): the encoder's embedding table, which turns source ids
      into the embeddings the scorer takes.
    """
    started = time.perf_counter()
    torch.manual_seed(0)
    model, config, saved = load_attention_model(checkpoint)
    src_vocab, tgt_vocab, splits, encoded = load_data(config)
    _check_vocabularies(checkpoint, saved, src_vocab, tgt_vocab)
    test = splits["test"]
    named = [english for english, _ in CHAPTER06_EXAMPLES]
    greedy_pairs = list(CHAPTER06_EXAMPLES) + [pair for pair in test[:NUM_GREEDY] if pair[0] not in named]
    greedy = greedy_maps(model, [english for english, _ in greedy_pairs], src_vocab, tgt_vocab)
    greedy_shape, greedy_weights = _flat([w for _, w in greedy], np.float32)
    test_shape, test_weights = _flat(forced_maps(model, encoded["test"]), np.float32)
    maps_out.mkdir(parents=True, exist_ok=True)
    scorer = export_scorer(model, maps_out / SCORER_FILE, SCORER_MAX_SOURCE, SCORER_MAX_TARGET)
    log(f"wrote {maps_out / SCORER_FILE}: {scorer}")
    meta = {
        "description": "attention maps of chapter 05's attention model and what chapter 06 needs to score it",
        "made_by": "python -m experiments.exports",
        "checkpoint": str(checkpoint.relative_to(ROOT)) if checkpoint.is_relative_to(ROOT) else str(checkpoint),
        "config": saved["config"],
        "parameters": sum(p.numel() for p in model.parameters()),
        "test": saved_test_results(checkpoint),
        "torch": torch.__version__,
        "scorer": scorer,
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
        "source_vocab": np.array(src_vocab.itos),
        "target_vocab": np.array(tgt_vocab.itos),
        "source_embeddings": model.encoder.embedding.weight.detach().numpy().astype(np.float32),
    }
    path = maps_out / MAPS_FILE
    np.savez_compressed(path, **arrays)
    log(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB, {time.perf_counter() - started:.0f} s)")
    return path


def main(argv=None) -> int:
    parser = make_parser("python -m experiments.exports", __doc__)
    parser.add_argument("--checkpoint", type=Path, default=MAPS_MODEL, help="the model (default: %(default)s)")
    parser.add_argument("--maps-out", type=Path, default=ASSETS, help="where chapter 06's data goes")
    args = parser.parse_args(argv)
    export_attention_maps(args.checkpoint, args.maps_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
