"""Instructor-side experiments of the course (never released to students).

These programs train the models and run the benchmarks whose results the chapters show (every program that
writes a shipped result lives here; ``attention_course/assets/__init__.py`` lists each file with its command).
They may import the reference implementations in :mod:`autograder.reference` (students never receive them),
so they live outside the student package :mod:`attention_course`.

The programs (each ``python -m experiments.NAME --help``): the run and its command line.

- :mod:`experiments.translation`: the English -> French models of chapters 05 and 06, with and
  without attention (several processes under ``torchrun``);
- :mod:`experiments.variants`: the six attention variants of chapter 05's comparison;
- :mod:`experiments.transformer`: chapter 07's Transformer beside the RNN with attention;
- :mod:`experiments.exports`: chapter 06's data (maps and the black-box scorer) from its trained model;
- :mod:`experiments.soft_maps`: how soft the maps of chapter 06's model are;
- :mod:`experiments.positions`: chapter 07's Transformer with rotary and ALiBi positions (chapter 08);
- :mod:`experiments.beam`: chapter 08's beam search on chapter 07's Transformer (over a key-value cache) and
  chapter 05's RNN with attention;
- :mod:`experiments.bottleneck`: chapter 02's bottleneck curve (the encoder-decoder without attention on reversal);
- :mod:`experiments.benchmark_training`: chapter 05's training throughput, batched against a per-sentence loop,
  and the Transformer's beside the RNN's; each line measured in a fresh process by
  :mod:`experiments.training_throughput`;
- :mod:`experiments.benchmark_attention_at_scale`: chapter 08's memory, time and work of attention at length
  (:mod:`experiments.attention_memory`), the per-layer costs (:mod:`experiments.layer_costs`) and decoding
  with and without a key-value cache (:mod:`experiments.cached_decoding`);
- :mod:`experiments.export_digits`: chapter 09's digits, copied once from scikit-learn into the package;
- :mod:`experiments.vit_digits`: chapter 09's ViT beside a small CNN and an MLP on the digits, and its patch sizes;
- :mod:`experiments.marks_maps`: chapter 09's ViT on the matching marks, and where its maps point;
- :mod:`experiments.perceiver_marks`: chapter 09's Perceiver on the matching marks;
- :mod:`experiments.perceiver_cost`: chapter 09's cost of cross-attention against self-attention as the inputs grow.

What they share, one concern a module:

- :mod:`experiments.config`: the configurations of chapter 05's runs (``Config``, ``CONFIGS``);
- :mod:`experiments.data`: the toy data's splits, encoded, and their padded batches;
- :mod:`experiments.models`: the decoder without attention, the attention variants' decoder, the builders;
- :mod:`experiments.training`: the training loops, seeds, progress bars, precision, ``torchrun`` set-up;
- :mod:`experiments.evaluation`: greedy decoding, exact match and BLEU by source length, soft attention rows;
- :mod:`experiments.cli`: where things go, the parser and the options every training program takes.
- :mod:`experiments.machine`: what every results file records about the machine that made it;
- :mod:`experiments.image_models`: chapter 09's models for images (the reference ViT, a CNN, an MLP, a Perceiver);
- :mod:`experiments.image_training`: chapter 09's training loop and accuracy for image classifiers.
"""
