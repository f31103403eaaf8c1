"""How soft are the attention maps of a trained model? The two figures issue 12 asks of chapter 06's model.

    python -m experiments.soft_maps [CHECKPOINT]

loads an ``attention_model.pt`` written by ``python -m experiments.translation`` (default: the one chapter 06
reads, :data:`MAPS_MODEL`) and prints:

- the classic example "i love you" -> "je t' aime" (the gold translation fed to the decoder): the weight that
  each French word puts on its English word (je -> i, t' -> you, aime -> love); the target is 80 % to 99 %
  each, like the 94 / 88 / 95 % of the example in the encyclopedia article on attention;
- on the whole test split (gold translations fed to the decoder, ``<eos>`` rows and columns included, as
  ``attention_maps.npz`` stores them), the share of target rows that put less than 90 % on their most
  attended source token (target: at least 20 %), and the same without the ``<eos>`` rows.

:func:`measure` returns the same figures as a dict.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from attention_course.toy_translation import CLASSIC_PAIR
from experiments.cli import make_parser
from experiments.data import load_data
from experiments.exports import MAPS_MODEL, forced_maps, load_attention_model  # MAPS_MODEL: chapter 06's model

CLASSIC_ALIGNMENT = (("je", "i"), ("t'", "you"), ("aime", "love"))
SOFT_THRESHOLD = 0.9


def soft_row_share(maps, threshold: float = SOFT_THRESHOLD, skip_last_row: bool = False) -> float:
    """The share of rows, over a list of attention maps ``(T, S)``, whose largest weight is below ``threshold``."""
    peaks = np.concatenate([np.asarray(m)[: len(m) - 1 if skip_last_row else len(m)].max(axis=1) for m in maps])
    return float((peaks < threshold).mean())


def measure(checkpoint: Path = MAPS_MODEL) -> dict:
    """The classic example's weights and the share of soft rows on the test split of ``checkpoint``'s model."""
    model, config, saved = load_attention_model(checkpoint)
    src_vocab, tgt_vocab, splits, encoded = load_data(config)
    english, french = CLASSIC_PAIR
    index = splits["test"].index(CLASSIC_PAIR)
    maps = forced_maps(model, encoded["test"])
    classic = maps[index]
    src_tokens, tgt_tokens = english.split(), french.split()
    weights = {
        f"{target}->{source}": float(classic[tgt_tokens.index(target), src_tokens.index(source)])
        for target, source in CLASSIC_ALIGNMENT
    }
    return {
        "checkpoint": str(checkpoint),
        "classic": weights,
        "classic_map": np.round(classic, 4).tolist(),
        "classic_in_range": all(0.80 <= w <= 0.99 for w in weights.values()),
        "test_rows": int(sum(len(m) for m in maps)),
        "soft_row_share": soft_row_share(maps),
        "soft_row_share_without_eos": soft_row_share(maps, skip_last_row=True),
    }


def main(argv=None) -> int:
    parser = make_parser("python -m experiments.soft_maps", __doc__)
    parser.add_argument("checkpoint", nargs="?", type=Path, default=MAPS_MODEL)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    figures = measure(args.checkpoint)
    if args.json:
        print(json.dumps(figures, indent=1))
        return 0
    print(f"model: {figures['checkpoint']}")
    print('"i love you" -> "je t\' aime" (gold translation fed to the decoder), weight on the aligned word:')
    for pair, weight in figures["classic"].items():
        print(f"  {pair:12s} {100 * weight:5.1f} %")
    print(f"  all three between 80 % and 99 %: {figures['classic_in_range']}")
    print(
        f"test split: {100 * figures['soft_row_share']:.1f} % of {figures['test_rows']} target rows put less than "
        f"{100 * SOFT_THRESHOLD:.0f} % on their most attended source token "
        f"({100 * figures['soft_row_share_without_eos']:.1f} % without the <eos> rows)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
