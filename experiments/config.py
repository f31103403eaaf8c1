"""The configurations of chapter 05's runs: data sizes, model sizes and training, one :class:`Config` each.

:data:`CONFIGS` holds the configurations of ``python -m experiments.translation --config NAME``; the other
programs reuse :class:`Config` for their data and model sizes (``experiments.variants``) or start from one of
these (``experiments.transformer``'s RNN with attention).
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Config:
    name: str
    num_train: int
    num_valid: int
    num_test: int
    emb_dim: int
    hidden_dim: int
    batch_size: int
    epochs: int
    lr: float
    seed: int = 0
    max_seconds: float | None = None  # stop training (and still evaluate) after this long
    bidirectional: bool = True  # False: the encoder reads left to right only
    score: str = "dot"  # attention score: "dot" (chapter 05's AttentionDecoder) or an experiments.models.VARIANTS name


CONFIGS = {
    # seconds, for tests
    "tiny": Config("tiny", 300, 50, 100, 16, 32, 32, 2, 3e-3),
    # the sizes of chapter 05's in-notebook run (which trains them for 400 steps on 4000 sentences); as a
    # program, 6000 sentences, bounded to 50 s of training on a 2-core CPU
    "small": Config("small", 6000, 300, 600, 32, 64, 64, 3, 3e-3, max_seconds=50.0),
    # the shipped results, trained on a 2-core CPU
    "medium": Config("medium", 30000, 1000, 3000, 64, 128, 64, 6, 3e-3),
    # chapter 06's model (experiments/maps_model/): medium's sizes, scaled dot-product score, a shorter run
    "maps": Config("maps", 12000, 500, 1000, 64, 128, 64, 3, 3e-3, score="scaled_dot"),
    # for a GPU
    "full": Config("full", 200000, 2000, 5000, 128, 256, 128, 15, 1e-3),
}
