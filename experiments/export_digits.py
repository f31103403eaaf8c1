"""Chapter 09's real images: a copy of the 1,797 handwritten digits shipped inside the course's package.

    python -m experiments.export_digits

writes ``attention_course/assets/digits.npz`` (``--out``) from scikit-learn's bundled copy of the test part of
the UCI "Optical Recognition of Handwritten Digits" set (Alpaydin and Kaynak, 1998; CC BY 4.0): ``images``
uint8 (1797, 8, 8), each pixel a count from 0 to 16 (how many of the 4 x 4 cells of the original 32 x 32 bitmap
were inked), ``target`` uint8 (1797,), and ``licence`` and ``citation`` (strings), so the file carries its
attribution wherever it is copied. The values are scikit-learn's, unchanged (only their type: uint8 instead of
float64).

Why a copy and not a dependency: scikit-learn is not in the course's environment (``requirements.txt``). It would
add tens of megabytes (and SciPy) to every student's environment, Binder image and wheel install for one 40 kB
table, and its version would have to be pinned with the course's. The copy is under 50 kB, works offline
and cannot change under the course. This program is the only place scikit-learn is used; it needs it installed
(``pip install scikit-learn``, into the instructor's environment only) and is run once.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from experiments.cli import ASSETS, make_parser

DIGITS_FILE = "digits.npz"
LICENCE = (
    "Creative Commons Attribution 4.0 International (CC BY 4.0), https://creativecommons.org/licenses/by/4.0/ . "
    "Changes: the 1,797 images of scikit-learn's load_digits, stored as uint8 instead of float64; values unchanged."
)
CITATION = (
    "E. Alpaydin and C. Kaynak (1998). Optical Recognition of Handwritten Digits [Dataset]. "
    "UCI Machine Learning Repository. https://doi.org/10.24432/C50P49 "
    "(the copy bundled with scikit-learn as sklearn.datasets.load_digits)"
)


def export(out: Path = ASSETS) -> Path:
    """Write ``digits.npz`` into ``out`` from scikit-learn's bundled copy (no network); returns its path."""
    from sklearn.datasets import load_digits  # the instructor's one-time export only: not a course dependency

    bunch = load_digits()
    images = bunch.images  # (1797, 8, 8) float64, integers 0..16
    if not np.array_equal(images, np.round(images)) or images.min() < 0 or images.max() > 16:
        raise ValueError("scikit-learn's digits are no longer integers from 0 to 16: check the copy")
    path = Path(out) / DIGITS_FILE
    np.savez_compressed(
        path,
        images=images.astype(np.uint8),
        target=bunch.target.astype(np.uint8),
        licence=np.array(LICENCE),
        citation=np.array(CITATION),
    )
    return path


def main(argv=None) -> int:
    parser = make_parser("python -m experiments.export_digits", __doc__)
    parser.add_argument("--out", type=Path, default=ASSETS, help="where digits.npz goes")
    args = parser.parse_args(argv)
    print(f"wrote {export(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
