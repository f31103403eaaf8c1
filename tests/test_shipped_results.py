"""The shipped results of the training program are what the shipped models compute.

``python -m experiments.translation`` writes the attention models (chapter 05's beside its
notebook, the left-to-right encoder's in ``experiments/forward_encoder/``) and, from them,
chapter 06's ``attention_maps.npz``. Recomputing the maps of the chapter's named examples from
the models (a few seconds) catches a data file left behind by a retrained model.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from attention_course.toy_translation import build_vocabularies
from experiments.exports import (
    CHAPTER05_EXAMPLES,
    MAPS_FILE,
    greedy_maps,
    load_attention_model,
    saved_test_results,
)
from experiments.translation import DEFAULT_OUT, FORWARD_OUT

MAPS = DEFAULT_OUT / MAPS_FILE


def _unpack(shapes, flat):
    ends = np.cumsum(np.prod(shapes, axis=1))
    return [flat[end - rows * cols : end].reshape(rows, cols) for (rows, cols), end in zip(shapes, ends)]


@pytest.mark.parametrize("prefix, checkpoint", [("greedy", DEFAULT_OUT), ("forward", FORWARD_OUT)])
def test_chapter05_maps_of_the_named_examples_come_from_the_shipped_models(prefix, checkpoint):
    archive = np.load(MAPS, allow_pickle=False)
    model, _, _ = load_attention_model(checkpoint / "attention_model.pt")
    src_vocab, tgt_vocab = build_vocabularies()
    named = [english for english, _ in CHAPTER05_EXAMPLES]
    assert [str(s) for s in archive[f"{prefix}_english"][: len(named)]] == named
    stored = _unpack(archive[f"{prefix}_shape"], archive[f"{prefix}_weights"])[: len(named)]
    for (output, weights), stored_output, stored_weights in zip(
        greedy_maps(model, named, src_vocab, tgt_vocab), archive[f"{prefix}_output"], stored
    ):
        assert " ".join(output) == str(stored_output)
        np.testing.assert_allclose(weights, stored_weights, atol=1e-4)


def test_chapter05_quotes_the_test_results_of_both_models():
    meta = json.loads(str(np.load(MAPS, allow_pickle=False)["meta"]))
    assert meta["test"] == saved_test_results(DEFAULT_OUT / "attention_model.pt")
    assert meta["forward"]["test"] == saved_test_results(FORWARD_OUT / "attention_model.pt")
    assert meta["forward"]["config"]["bidirectional"] is False and meta["config"].get("bidirectional", True)
    assert 0 < meta["forward"]["test"]["exact_match"] < meta["test"]["exact_match"] <= 1
