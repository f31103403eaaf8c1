"""Unit tests of attention_course.taggers (the recurrent tagger of chapter 01; not an exercise)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attention_course import copy_task, reversal_task
from attention_course.taggers import RecurrentTagger, equal_length_tensors, per_position_accuracy, train_tagger


@pytest.mark.parametrize("cell", ["gru", "rnn"])
def test_tagger_emits_one_prediction_per_position_from_the_past_only(cell):
    torch.manual_seed(0)
    model = RecurrentTagger(vocab_size=9, emb_dim=4, hidden_dim=5, cell=cell)
    tokens = torch.randint(3, 9, (2, 6))
    logits = model(tokens)
    assert logits.shape == (2, 6, 9)
    changed = tokens.clone()
    changed[:, 4] = (changed[:, 4] - 3 + 1) % 6 + 3  # change the input at position 4 only
    new_logits = model(changed)
    assert torch.allclose(logits[:, :4], new_logits[:, :4]), "positions before 4 must not see position 4"
    assert not torch.allclose(logits[:, 4:], new_logits[:, 4:])


def test_tagger_rejects_unknown_cell():
    with pytest.raises(ValueError):
        RecurrentTagger(5, cell="lstm")


def test_equal_length_tensors():
    sources, targets = equal_length_tensors(reversal_task(4, 3, 3, 8, seed=0))
    assert sources.shape == targets.shape == (4, 3) and sources.dtype == torch.long
    assert torch.equal(targets, sources.flip(1))
    with pytest.raises(ValueError):
        equal_length_tensors(copy_task(10, 2, 5, 8, seed=0))


def test_per_position_accuracy_of_a_known_model():
    """A model whose logits are a one-hot of its input is a perfect copier and a poor reverser."""

    class Echo(torch.nn.Module):
        def forward(self, tokens):
            return torch.nn.functional.one_hot(tokens, 8).double()

    assert np.array_equal(per_position_accuracy(Echo(), copy_task(20, 5, 5, 8, seed=1)), np.ones(5))
    reversed_accuracy = per_position_accuracy(Echo(), reversal_task(20, 5, 5, 8, seed=1))
    assert reversed_accuracy.shape == (5,) and reversed_accuracy[2] == 1.0  # the middle maps to itself


def test_train_tagger_learns_to_copy_deterministically_and_restores_global_state():
    pairs = copy_task(300, 6, 6, 8, seed=0)
    threads, rng_state = torch.get_num_threads(), torch.random.get_rng_state()
    model, losses = train_tagger(pairs, 8, steps=150, hidden_dim=16, seed=3)
    assert torch.get_num_threads() == threads, "train_tagger must restore the number of threads"
    assert torch.equal(torch.random.get_rng_state(), rng_state), "train_tagger must not consume the global RNG"
    assert not model.training
    assert len(losses) == 150 and losses[-1] < 0.5 * losses[0]
    assert per_position_accuracy(model, copy_task(100, 6, 6, 8, seed=1)).min() > 0.9
    _, again = train_tagger(pairs, 8, steps=150, hidden_dim=16, seed=3)
    assert again == losses, "the same seed must give the same run"
