"""Helpers for the course "Attention, Step by Step".

Everything here supports the chapters without being an exercise:

- :mod:`attention_course.data`: toy sequence tasks (copy, reversal) and the special token ids;
- :mod:`attention_course.toy_translation`: the course's toy English -> French language;
- :mod:`attention_course.taggers`: the 1:1 recurrent tagger of chapter 01's experiment;
- :mod:`attention_course.translation`: the given parts of chapters 05-06's translation model
  (a bidirectional encoder, the model wrapper, greedy translation, BLEU);
- :mod:`attention_course.images`: chapter 09's images (the handwritten digits, the matching-marks task);
- :mod:`attention_course.plotting`: figure helpers;
- :mod:`attention_course.checks`: the helpers of the chapters' visible tests (one module per chapter).

No graded function is implemented in this package (tests/test_attention_course.py checks
the names against every exercise).
"""

# The course's version: the package's version (pyproject.toml reads it from here), the version
# every student notebook's setup cell asks for (autograder/authoring/setup_cell.py), and the
# release ``v<version>`` whose wheel that cell installs in Colab (the tag ``v<version>`` makes
# it: .github/workflows/course.yml; autograder/authoring/publishing.py derives its address).
__version__ = "0.1.0"

from attention_course.data import BOS_ID, EOS_ID, PAD_ID, copy_task, reversal_task, token_vocabulary

__all__ = ["__version__", "BOS_ID", "EOS_ID", "PAD_ID", "copy_task", "reversal_task", "token_vocabulary"]
