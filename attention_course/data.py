"""Toy sequence tasks, generated on the spot (the course downloads no data).

Sequences are lists of integer token ids. Ids 0, 1 and 2 are reserved for padding, the
beginning and the end of a sequence; content tokens are ``3 .. vocab_size - 1``. Every
generator is deterministic for a given ``seed``.
"""

from __future__ import annotations

import numpy as np

PAD_ID, BOS_ID, EOS_ID = 0, 1, 2
NUM_SPECIAL = 3


def token_vocabulary(vocab_size: int) -> list[str]:
    """Readable names for ids ``0 .. vocab_size - 1``: ``<pad> <bos> <eos> a b c ...``."""
    if vocab_size <= NUM_SPECIAL:
        raise ValueError(f"vocab_size must exceed {NUM_SPECIAL} (the special tokens), got {vocab_size}")
    names = ["<pad>", "<bos>", "<eos>"]
    for index in range(vocab_size - NUM_SPECIAL):
        letters, name = index, ""
        while True:  # a, b, ..., z, aa, ab, ...
            name = chr(ord("a") + letters % 26) + name
            letters = letters // 26 - 1
            if letters < 0:
                break
        names.append(name)
    return names


def _random_sequences(num_sequences: int, min_len: int, max_len: int, vocab_size: int, seed: int) -> list[list[int]]:
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    if vocab_size <= NUM_SPECIAL:
        raise ValueError(f"vocab_size must exceed {NUM_SPECIAL} (the special tokens), got {vocab_size}")
    rng = np.random.default_rng(seed)
    lengths = rng.integers(min_len, max_len + 1, size=num_sequences)
    return [rng.integers(NUM_SPECIAL, vocab_size, size=length).tolist() for length in lengths]


def copy_task(num_sequences: int, min_len: int, max_len: int, vocab_size: int, seed: int = 0):
    """Pairs ``(source, target)`` with ``target == source``: a task a 1:1 tagger can solve.

    Returns a list of ``num_sequences`` pairs of lists of ints, lengths uniform in
    ``[min_len, max_len]``, tokens uniform in ``[3, vocab_size)``.
    """
    return [(seq, list(seq)) for seq in _random_sequences(num_sequences, min_len, max_len, vocab_size, seed)]


def reversal_task(num_sequences: int, min_len: int, max_len: int, vocab_size: int, seed: int = 0):
    """Pairs ``(source, target)`` with ``target == source[::-1]``: output position ``t`` depends
    on input position ``T - 1 - t``, far away for most ``t``."""
    return [(seq, seq[::-1]) for seq in _random_sequences(num_sequences, min_len, max_len, vocab_size, seed)]
