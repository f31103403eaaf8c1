"""Data files the chapters read, shipped inside the package (package data).

They are results of the course's training programs and benchmarks (``experiments/``) and its diagrams,
regenerable from the repository:

- ``bottleneck_results.json``: chapter 02's bottleneck curve (``python -m experiments.bottleneck``);
- ``benchmark_training.json``: chapter 05's training throughput, batched vs per sentence, with the machine and
  its load for each run (``python -m experiments.benchmark_training --threads 1 --out``);
- ``translation_results.json`` and ``attention_model.pt``: chapter 05's trained translation
  models (``python -m experiments.translation --config medium``);
- ``attention_maps.npz`` and ``attention_scorer.pt2``: the maps chapter 06 reads and its model as a black-box
  scorer (a ``torch.export`` program, no Python source), both from ``python -m experiments.exports``;
- ``variants_results.json``: chapter 05's comparison of attention variants (``python -m experiments.variants``);
- ``transformer_results.json``: chapter 07's Transformer beside the RNN with attention
  (``python -m experiments.transformer --config medium``);
- ``positions_results.json``: chapter 08's length curves of chapter 07's Transformer with sinusoidal, rotary and
  ALiBi positions (``python -m experiments.positions --config medium``);
- ``beam_results.json``: chapter 08's beam search on chapter 07's Transformer (with a key-value cache) and
  chapter 05's RNN with attention, by beam size, length normalisation and source length
  (``python -m experiments.beam --config medium``);
- ``attention_at_scale_results.json``: chapter 08's memory, time and work of naive, tiled and PyTorch's attention,
  the per-layer costs and decoding with and without a key-value cache
  (``python -m experiments.benchmark_attention_at_scale``);
- ``digits.npz``: chapter 09's real images, the 1,797 handwritten digits (8 x 8, 10 classes) of the UCI "Optical
  Recognition of Handwritten Digits" set, E. Alpaydin and C. Kaynak (1998), https://doi.org/10.24432/C50P49,
  licensed CC BY 4.0 (https://creativecommons.org/licenses/by/4.0/; the file carries its licence and citation),
  copied unchanged from scikit-learn's bundled copy (``python -m experiments.export_digits``, once; scikit-learn
  is not a course dependency); read by :func:`attention_course.images.load_digits`;
- ``vit_digits_results.json``: chapter 09's Vision Transformer, small CNN and MLP on the digits (3 seeds, learning
  curves) and the ViT's patch-size sweep (``python -m experiments.vit_digits --config full``);
- ``marks_maps_results.json`` and ``marks_vit.pt``: chapter 09's ViT trained on the matching-marks task, the
  one-mark control, and the pointing game of its maps (rollout, last layer, gradient x input, occlusion) against
  the deciding marks (``python -m experiments.marks_maps --config full``);
- ``perceiver_marks_results.json``: chapter 09's Perceiver on the matching-marks task, the ViT's data and budget
  (``python -m experiments.perceiver_marks --config full``), and ``perceiver_marks_x5_results.json``, the same with
  five times the updates (``python -m experiments.perceiver_marks --config full --steps-factor 5``);
- ``perceiver_cost_results.json`` and ``perceiver_cost.svg``: chapter 09's memory and time of cross-attention
  against self-attention as the inputs grow from 16 to 16,384, and their log-log plot
  (``python -m experiments.perceiver_cost``);
- ``gpu_check_results.json``: what the course's GPU check measured on one GPU, read by chapters 05, 07 and 08 (its
  ``summary.json``, unchanged, from ``python3 scripts/gpu_check.py --max-seconds 30 --quiet --out DIR`` run once
  at commit b311fc7 on one NVIDIA H200 with torch 2.11.0+cu130, 2026-12-04; the file names the GPU and versions);
- ``diagrams/``: the chapters' schematic diagrams, SVG (``python -m scripts.diagrams``; one module per diagram
  in ``scripts/diagrams/``).

A notebook finds them with :func:`path`, wherever the package is installed::

    from attention_course import assets
    results = json.loads(assets.path("bottleneck_results.json").read_text())
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def path(name: str) -> Path:
    """The path of the shipped data file ``name`` (raises ``FileNotFoundError`` naming the known files)."""
    folder = resources.files(__name__)
    candidate = folder / name
    if not candidate.is_file():
        known = sorted(p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith(("_", ".")))
        raise FileNotFoundError(f"attention_course ships no data file {name!r}; it has: {', '.join(known)}")
    return Path(str(candidate))
