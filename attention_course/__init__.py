"""Helpers for the course "Attention, Step by Step".

Everything here supports the chapters without being an exercise: toy data for the course's
tasks (:mod:`attention_course.data`) and figure helpers (:mod:`attention_course.plotting`).
No graded function is implemented in this package.
"""

from attention_course.data import BOS_ID, EOS_ID, PAD_ID, copy_task, reversal_task, token_vocabulary

__all__ = ["BOS_ID", "EOS_ID", "PAD_ID", "copy_task", "reversal_task", "token_vocabulary"]
