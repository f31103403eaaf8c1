"""The kernel's side of recording (its partner in the grader: ../recording.py).

Runs in the student's kernel (sent there as source by startup.py). The course's recording module
(``attention_course/profiling.py``) comes compiled with the agent and is run here privately
(:func:`load`, called by the agent right after the sandbox's imports and before any student cell),
so that what the student's cells later do to the package, to ``TorchDispatchMode`` or to
``torch.utils._python_dispatch`` leaves it as it was. A recorded call's record goes back as plain
data (:func:`answer`), which the grader's recording.py decodes strictly.
"""

import types


def load(code):
    """The course's recording module, run from its compiled ``code`` in a module of its own."""
    module = types.ModuleType("_autograder_profiling")
    exec(code, module.__dict__)
    return module


def answer(recording):
    """A recording as plain data: its operations and its problems."""
    ops = [[op.name, [list(s) for s in op.inputs], [list(s) for s in op.outputs], bool(op.is_view)]
           for op in recording.ops]  # fmt: skip
    return {"ops": ops, "problems": [str(p)[:500] for p in recording.problems[:20]]}
