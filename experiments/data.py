"""The data of the training programs: the toy English -> French splits, encoded, and their padded batches.

:func:`load_data` draws the splits of :mod:`attention_course.toy_translation` and encodes them;
:func:`make_batch` pads a list of encoded pairs into the tensors a model and ``train_step`` take;
:func:`fixed_batches` cuts a split into length-bucketed batches in a fixed order (validation).
"""

from __future__ import annotations

import torch

from attention_course.data import BOS_ID, PAD_ID
from attention_course.toy_translation import build_vocabularies, encode_pairs, make_splits
from autograder.reference.ch05_gpu_training import length_bucketed_batches


def load_data(config, max_train_len: int | None = None):
    """The splits drawn with ``config``'s ``num_train``, ``num_valid``, ``num_test`` and ``seed``, as text and
    encoded. With ``max_train_len``, the training and validation splits keep only the sentences of at most that
    many source words (the test split keeps every length), and the validation sentences the cap drops become a
    fourth split, ``valid_long``: longer than any training sentence, in neither the training nor the test split
    (``experiments.positions`` chooses among its variants on it, never on the test split).

    Returns ``(src_vocab, tgt_vocab, splits, encoded)``: ``splits[name]`` lists ``(english, french)`` pairs,
    ``encoded[name]`` the same pairs as ``(source ids, target ids)`` (both ending with EOS), and
    ``encoded["vocab_sizes"]`` is ``(len(src_vocab), len(tgt_vocab))``."""
    src_vocab, tgt_vocab = build_vocabularies()
    splits = make_splits(config.num_train, config.num_valid, config.num_test, seed=config.seed)
    encoded = {name: encode_pairs(pairs, src_vocab, tgt_vocab) for name, pairs in splits.items()}
    if max_train_len is not None:
        for name in ("train", "valid"):
            keep = [len(english.split()) <= max_train_len for english, _ in splits[name]]
            if name == "valid":
                splits["valid_long"] = [pair for pair, short in zip(splits[name], keep) if not short]
                encoded["valid_long"] = [pair for pair, short in zip(encoded[name], keep) if not short]
            splits[name] = [pair for pair, short in zip(splits[name], keep) if short]
            encoded[name] = [pair for pair, short in zip(encoded[name], keep) if short]
    encoded["vocab_sizes"] = (len(src_vocab), len(tgt_vocab))
    return src_vocab, tgt_vocab, splits, encoded


def describe(splits, encoded) -> str:
    """One line for the log: the sizes of the splits and of the vocabularies."""
    src_size, tgt_size = encoded["vocab_sizes"]
    return (
        f"{len(splits['train'])} train / {len(splits['valid'])} valid / {len(splits['test'])} test pairs, "
        f"vocabularies {src_size} / {tgt_size}"
    )


def make_batch(pairs) -> dict:
    """Padded tensors for a list of ``(source ids, target ids)`` (both ending with EOS): ``src`` ``(B, T_enc)``,
    ``lengths`` ``(B,)``, ``tgt_in`` ``(B, T_dec)`` (BOS, then the target without its EOS) and ``tgt_out``
    ``(B, T_dec)`` (the target); every row padded with PAD. These are the tensors chapter 05's ``pad_batch`` gives,
    built from padded lists with one ``torch.tensor`` call each instead of one per sentence: about 3 ms instead
    of 10 ms for 256 sentences on a 2-core CPU, where a training step on them takes about 170 ms."""
    return {
        "src": _padded([source for source, _ in pairs]),
        "lengths": torch.tensor([len(source) for source, _ in pairs]),
        "tgt_in": _padded([[BOS_ID] + target[:-1] for _, target in pairs]),
        "tgt_out": _padded([target for _, target in pairs]),
    }


def _padded(rows) -> torch.Tensor:
    """``rows`` (lists of ids) as one long tensor ``(len(rows), longest)``, PAD after each shorter row."""
    width = max(len(row) for row in rows)
    return torch.tensor([list(row) + [PAD_ID] * (width - len(row)) for row in rows], dtype=torch.long)


def fixed_batches(encoded_pairs, batch_size: int = 256) -> list[dict]:
    """``encoded_pairs`` in length-bucketed batches of at most ``batch_size``, in a fixed order (no shuffling)."""
    order = length_bucketed_batches([len(s) for s, _ in encoded_pairs], batch_size, shuffle=False)
    return [make_batch([encoded_pairs[i] for i in indices]) for indices in order]
