"""Helpers of the chapters' visible tests, one module per chapter (``chNN``).

A chapter whose checks are long splits them by exercise into ``chNN_topic`` modules, and ``chNN``
hands their names on (the test cells import from ``chNN``). ``compare`` holds the one comparison of
an answer with its expected value (shape, dtype, values) behind chapters 01-04's ``close``.

A visible test cell in a student notebook stays short (at most 30 lines, so that a failure in
Validate's dialog reads as a few lines and one message): what it needs beyond a few asserts (a
small model to call the answer with, a comparison that says what differs and the likely fix) lives
here, where a student can read it. Nothing here implements an exercise (tests/test_leaks.py and
tests/test_attention_course.py check it); every helper raises ``AssertionError`` with a message
that teaches (expected vs got, shapes, the likely fix), and prints nothing when the answer is right.
"""
