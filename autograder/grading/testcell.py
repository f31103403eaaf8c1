"""Running one test cell's code in a namespace: the step that the class grader's runner
(``runner._Grader.run_test``) and the tests' wrong-answer harness (``tests/wrong_answers``) share, so
that the harness runs the exercises' test cells exactly as the grader does.

What each does around this step differs, because they do different jobs:

- the names a test cell reads: the grader fetches them from the student's kernel (through the
  sandbox), the harness takes them from the answers it ran in its own process;
- the time limit: the grader's is the notebook's deadline (:func:`deadline.alarm` around the whole
  run) and the sandbox's limit on each call into the student's code; the harness, which runs the
  student's code in its own process, puts :func:`deadline.alarm` around each cell;
- the failure's one-line reason: the grader's is the whole message on one line with every line of
  a hidden test taken out (students read it in their feedback), the harness's is the first line of
  the message that is not numpy's or torch's assertion boilerplate (authors read it in a table of
  wrong answers). Different readers, so two functions, each beside its caller.
"""

from __future__ import annotations

import contextlib
import io
import warnings


def run_test_cell(grade_id: str, source: str, namespace: dict, output: io.StringIO) -> None:
    """Compile ``source`` (named ``<test grade_id>`` in tracebacks) and run it in ``namespace``, what it
    prints written to ``output``, warnings caught (each recorded once, none printed). The cell's exception,
    an assertion or an error raised by the code it tests, goes to the caller."""
    code = compile(source, f"<test {grade_id}>", "exec")
    with (
        warnings.catch_warnings(record=True),
        contextlib.redirect_stdout(output),
        contextlib.redirect_stderr(output),
    ):
        warnings.simplefilter("default")
        exec(code, namespace)
