"""The shipped results of the training program are what the shipped models compute.

``python -m experiments.translation`` writes the attention models (chapter 05's in
``attention_course/assets/``, chapter 06's in ``experiments/maps_model/``) and, from the
one chapter 06 reads (``experiments.exports.MAPS_MODEL``), chapter 06's ``attention_maps.npz`` and the
black-box scorer ``attention_scorer.pt2``. Recomputing the maps of the chapter's named examples from the
model (a few seconds) catches a data file left behind by a retrained model.
"""

from __future__ import annotations

import ast
import inspect
import json
import zipfile

import numpy as np
import pytest
import torch

from attention_course.data import BOS_ID, EOS_ID
from attention_course.toy_translation import build_vocabularies
from autograder.reference import ch05_gpu_training
from experiments import models
from experiments.cli import ASSETS
from experiments.exports import (
    CHAPTER06_EXAMPLES,
    MAPS_FILE,
    MAPS_MODEL,
    SCORER_FILE,
    greedy_maps,
    load_attention_model,
    saved_test_results,
)

MAPS = ASSETS / MAPS_FILE
SCORER = ASSETS / SCORER_FILE


def _unpack(shapes, flat):
    ends = np.cumsum(np.prod(shapes, axis=1))
    return [flat[end - rows * cols : end].reshape(rows, cols) for (rows, cols), end in zip(shapes, ends)]


def test_chapter06_maps_of_the_named_examples_come_from_the_maps_model():
    archive = np.load(MAPS, allow_pickle=False)
    model, _, _ = load_attention_model(MAPS_MODEL)
    src_vocab, tgt_vocab = build_vocabularies()
    assert [str(t) for t in archive["source_vocab"]] == src_vocab.itos
    assert [str(t) for t in archive["target_vocab"]] == tgt_vocab.itos
    np.testing.assert_array_equal(archive["source_embeddings"], model.encoder.embedding.weight.detach().numpy())
    named = [english for english, _ in CHAPTER06_EXAMPLES]
    assert [str(s) for s in archive["greedy_english"][: len(named)]] == named
    stored = _unpack(archive["greedy_shape"], archive["greedy_weights"])[: len(named)]
    for (output, weights), stored_output, stored_weights in zip(
        greedy_maps(model, named, src_vocab, tgt_vocab), archive["greedy_output"], stored
    ):
        assert " ".join(output) == str(stored_output)
        np.testing.assert_allclose(weights, stored_weights, atol=1e-4)


def test_chapter06_quotes_the_test_results_of_its_model():
    meta = json.loads(str(np.load(MAPS, allow_pickle=False)["meta"]))
    assert meta["test"] == saved_test_results(MAPS_MODEL)
    assert 0 < meta["test"]["exact_match"] <= 1


@pytest.fixture(scope="module")
def scorer():
    return torch.export.load(SCORER).module()


def test_the_scorer_computes_what_the_model_computes(scorer):
    """The exported scorer (padded to its fixed lengths) gives the model's own teacher-forced log-probabilities
    and attention weights, with gradients with respect to the source embeddings that match the model's."""
    model, _, _ = load_attention_model(MAPS_MODEL)
    meta = json.loads(str(np.load(MAPS, allow_pickle=False)["meta"]))
    max_source, max_target = meta["scorer"]["max_source"], meta["scorer"]["max_target"]
    src_vocab, tgt_vocab = build_vocabularies()
    for english, french in CHAPTER06_EXAMPLES:
        src, tgt = torch.tensor(src_vocab.encode(english)), torch.tensor(tgt_vocab.encode(french))
        T_enc, T_dec = len(src), len(tgt)
        assert src[-1] == EOS_ID and tgt[-1] == EOS_ID
        embedded = model.embed_source(src[None]).detach().requires_grad_()  # (1, T_enc, d_e)
        logits, weights = model.forward_embedded(
            embedded, src[None], torch.tensor([T_enc]), torch.cat([torch.tensor([BOS_ID]), tgt[:-1]])[None]
        )
        log_probs = torch.log_softmax(logits[0], -1)[torch.arange(T_dec), tgt]  # (T_dec,)
        log_probs[1].backward()
        E = embedded[0].detach().clone().requires_grad_()
        padded = torch.cat([E, E.new_zeros(max_source - T_enc, E.shape[1])])
        target = torch.full((max_target,), EOS_ID)
        target[:T_dec] = tgt
        got_log_probs, got_weights = scorer(padded, torch.arange(max_source) < T_enc, target)
        assert got_log_probs.shape == (max_target,) and got_weights.shape == (max_target, max_source)
        torch.testing.assert_close(got_log_probs[:T_dec], log_probs.detach(), atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(got_weights[:T_dec, :T_enc], weights[0].detach(), atol=1e-5, rtol=1e-4)
        assert float(got_weights[:T_dec, T_enc:].detach().abs().max()) == 0.0, "no weight on padded source positions"
        got_log_probs[1].backward()
        torch.testing.assert_close(E.grad, embedded.grad[0], atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("source", [ch05_gpu_training, models], ids=["ch05_reference", "experiments.models"])
def test_the_scorer_ships_no_source_code(source):
    """torch.export records stack traces with source lines; the shipped program must hold none of the code of
    chapter 05's solution (the decoder is an exercise there) or of the decoder it was trained with, nor any path
    or name of the course's code."""
    with zipfile.ZipFile(SCORER) as archive:
        text = "\n".join(archive.read(name).decode("latin-1") for name in archive.namelist())
    code = inspect.getsource(source)
    docstrings = {
        ast.get_docstring(node)
        for node in ast.walk(ast.parse(code))
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Module)) and ast.get_docstring(node)
    }
    lines = {line.strip() for line in code.splitlines() if len(line.strip()) >= 20}
    lines |= {line.strip() for doc in docstrings for line in doc.splitlines() if len(line.strip()) >= 20}
    leaked = sorted(line for line in lines if line in text)
    assert not leaked, f"{SCORER.name} contains source lines of {source.__name__}: {leaked[:5]}"
    for needle in ("AttentionDecoder", "VariantDecoder", "ch05_gpu_training", "autograder", "experiments", ".py"):
        assert needle not in text, f"{SCORER.name} mentions {needle!r}"
    assert "stack_trace" not in text and len(lines) > 20  # no stack traces; the check reads real code
