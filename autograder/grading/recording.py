"""Recording what the student's code computes, where it computes: the grader's side (kernel/recording.py's partner).

Chapter 08's tests record the operations a call runs (``attention_course.profiling.record_ops``)
to check how an answer computes. A test cell runs here, in the grader, and imports the grader's
own copy of the course package; the student's function is a proxy. So while a recording is active
in this process (:func:`active`), every request the session sends (rpc.py) carries ``record``:
the agent runs the operation under its own recording (a private copy of the same module, bound in
the kernel before any student cell ran: kernel/recording.py) and answers with the operations it saw
and what made them untrustworthy. Here :func:`decode` checks that record strictly, and the session adds it to
the test's recording (``Recording.add``), takes the tensors that came back as recorded
(``Recording.adopt``) and keeps the recording aside meanwhile (``Recording.paused``), so that the
proxy's own machinery is never recorded. The test's ``record_ops`` then returns one record, or
raises ``RecordingError`` with the student's side's reasons, exactly as in one process; the runner
flags ``suspicious_code`` with those reasons in the notes.
"""

from __future__ import annotations

import sys
from pathlib import Path

from autograder import course
from autograder.grading.codec import ProtocolError

PROFILING = course.ROOT / "attention_course" / "profiling.py"  # sent into the kernel, run there privately
MAX_OPS = 1 << 20
MAX_PROBLEMS = 20
NO_RECORD = "the student's kernel sent no record of the call (the grader's agent there was changed)"


def source() -> str:
    return Path(PROFILING).read_text()


def active():
    """The recording a test is running in this thread (``attention_course.profiling``), or None."""
    profiling = sys.modules.get("attention_course.profiling")
    return profiling.active_recording() if profiling is not None else None


def _shapes(value) -> tuple:
    if not isinstance(value, list) or len(value) > 64:
        raise ProtocolError("invalid record")
    shapes = []
    for shape in value:
        if not isinstance(shape, list) or len(shape) > 32 or not all(type(n) is int and n >= 0 for n in shape):
            raise ProtocolError("invalid record")
        shapes.append(tuple(shape))
    return tuple(shapes)


def decode(record) -> tuple[list, list[str]]:
    """``(ops, problems)`` from the record in an agent's answer: ``Op`` tuples of the grader's own class,
    and strings. Anything but that exact form is a ProtocolError; no record at all is a problem."""
    from attention_course.profiling import Op

    if record is None:
        return [], [NO_RECORD]
    if not isinstance(record, dict) or not isinstance(record.get("ops"), list) or len(record["ops"]) > MAX_OPS:
        raise ProtocolError("invalid record")
    problems = record.get("problems")
    if not isinstance(problems, list) or len(problems) > MAX_PROBLEMS or not all(isinstance(p, str) for p in problems):
        raise ProtocolError("invalid record")
    ops = []
    for item in record["ops"]:
        if not (isinstance(item, list) and len(item) == 4 and isinstance(item[0], str) and len(item[0]) <= 200):
            raise ProtocolError("invalid record")
        if type(item[3]) is not bool:
            raise ProtocolError("invalid record")
        ops.append(Op(item[0], _shapes(item[1]), _shapes(item[2]), item[3]))
    return ops, [p[:500] for p in problems]


def unexplained(ops, value, sent) -> list[str]:
    """A check of the record against what came back: each tensor of a call's result must have the shape of
    a tensor some recorded operation made (or of an argument). An agent changed to send an empty or
    unrelated record fails it; one that forges a plausible record does not (the agent runs in the
    student's process: see BOUNDARY.md)."""
    from autograder.grading.kernel import protocol

    made = {shape for op in ops for shape in op.outputs}
    made |= {tuple(t.shape) for t in protocol.tensors(list(sent.values()))}
    missing = [shape for shape in dict.fromkeys(tuple(t.shape) for t in protocol.tensors(value)) if shape not in made]
    if not missing:
        return []
    shapes = ", ".join(str(shape) for shape in missing)
    return [f"the record from the student's kernel shows no operation that made the result's tensors of shape {shapes}"]
