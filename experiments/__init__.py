"""Instructor-side experiments of the course (never released to students).

These programs train the models whose results the chapters show. They may import the
reference implementations in :mod:`autograder.reference` (students never receive them), so
they live outside the student package :mod:`attention_course`.

- :mod:`experiments.translation`: the English -> French models of chapters 05 and 06, with and
  without attention; ``python -m experiments.translation --help``.
"""
