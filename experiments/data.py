"""The data of the training programs: the toy English -> French splits, encoded, and their padded batches.

:func:`load_data` draws the splits of :mod:`attention_course.toy_translation` and encodes them;
:func:`make_batch` pads a list of encoded pairs into the tensors a model and ``train_step`` take;
:func:`fixed_batches` cuts a split into length-bucketed batches in a fixed order (validation).
"""

from __future__ import annotations

from attention_course.data import BOS_ID, PAD_ID
from attention_course.toy_translation import build_vocabularies, encode_pairs, make_splits
from autograder.reference.ch05_gpu_training import length_bucketed_batches, pad_batch


def load_data(config, max_train_len: int | None = None):
    """The splits drawn with ``config``'s ``num_train``, ``num_valid``, ``num_test`` and ``seed``, as text and
    encoded. With ``max_train_len``, the training and validation splits keep only the sentences of at most that
    many source words (the test split keeps every length).

    Returns ``(src_vocab, tgt_vocab, splits, encoded)``: ``splits[name]`` lists ``(english, french)`` pairs,
    ``encoded[name]`` the same pairs as ``(source ids, target ids)`` (both ending with EOS), and
    ``encoded["vocab_sizes"]`` is ``(len(src_vocab), len(tgt_vocab))``."""
    src_vocab, tgt_vocab = build_vocabularies()
    splits = make_splits(config.num_train, config.num_valid, config.num_test, seed=config.seed)
    encoded = {name: encode_pairs(pairs, src_vocab, tgt_vocab) for name, pairs in splits.items()}
    if max_train_len is not None:
        for name in ("train", "valid"):
            keep = [i for i, (english, _) in enumerate(splits[name]) if len(english.split()) <= max_train_len]
            splits[name] = [splits[name][i] for i in keep]
            encoded[name] = [encoded[name][i] for i in keep]
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
    ``(B, T_dec)`` (the target)."""
    src, lengths = pad_batch([s for s, _ in pairs], PAD_ID)
    tgt_in, _ = pad_batch([[BOS_ID] + t[:-1] for _, t in pairs], PAD_ID)
    tgt_out, _ = pad_batch([t for _, t in pairs], PAD_ID)
    return {"src": src, "lengths": lengths, "tgt_in": tgt_in, "tgt_out": tgt_out}


def fixed_batches(encoded_pairs, batch_size: int = 256) -> list[dict]:
    """``encoded_pairs`` in length-bucketed batches of at most ``batch_size``, in a fixed order (no shuffling)."""
    order = length_bucketed_batches([len(s) for s, _ in encoded_pairs], batch_size, shuffle=False)
    return [make_batch([encoded_pairs[i] for i in indices]) for indices in order]
