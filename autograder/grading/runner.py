"""Grade one submission: its code runs in a sandboxed kernel, every test runs here.

The steps come from :func:`sanitize.prepare`, in the student's order with the instructor's
test cells restored. A code step (the student's answers, demos and extra cells) executes
in the sandbox. A test step executes in this process, the trusted one, in a namespace of
its own that holds:

- the instructor notebook's imports (numpy, torch, ...): the real modules of this process;
- whatever earlier test cells defined (helpers, ``ref``): never overwritten by the student;
- for every other name the test reads, the student's value: plain data, or a
  :class:`rpc.Proxy` that calls into the sandbox.

So the assertion helpers, the reference module and the comparison all live where the
student's code cannot reach, and a test passes only if the data that came back from the
student's code is right. Warnings are recorded, never printed: a warning costs nothing.

If the kernel dies, the tests that already passed keep their points and every remaining
one scores 0 with reason ``kernel_died``; past the notebook's time limit likewise with
``timeout``. A single call that runs too long is interrupted and fails its test.
"""

from __future__ import annotations

import contextlib
import io
import re
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder import course
from autograder.conventions import normalise as _normalise
from autograder.grading import devices, rpc, state
from autograder.grading.deadline import alarm
from autograder.grading.jail import Limits
from autograder.grading.names import free_names, loaded_names
from autograder.grading.sandbox import CallTimeout, KernelDied, NotebookTimeout, Sandbox
from autograder.grading.sanitize import prepare
from autograder.grading.spares import SparePool
from autograder.grading.startup import ready_sandbox
from autograder.grading.template import Template, load_template
from autograder.grading.testcell import run_test_cell

MESSAGE_CHARS = 4000
REASON_CHARS = 300


@dataclass
class Options:
    timeout: float = 600.0  # seconds per notebook, wall clock
    call_timeout: float = course.CELL_TIMEOUT  # seconds per cell or call (then interrupted)
    limits: Limits = field(default_factory=Limits)
    unsafe: bool = False  # no sandbox (the tests still run here, through the proxies)
    workdir: Path = Path("/tmp")  # where scratch folders are made (short: it holds Unix sockets)


@dataclass
class CellGrade:
    grade_id: str
    kind: str  # "test" or "written"
    score: float
    max_score: float
    reason: str  # one line: "passed", the failure, kernel_died, timeout, needs_manual_grade, a status
    message: str = ""  # for the student's feedback: hidden-test lines removed
    output: str = ""  # what a visible test printed (hidden tests' output is never shown)
    hidden: bool = False


@dataclass
class Result:
    student_id: str
    assignment: str
    status: str
    flags: list[str]
    notes: list[str]
    cells: list[CellGrade]
    notebook: str | None = None  # the autograded notebook (nbformat JSON), for the gradebook
    seconds: float = 0.0
    source: str = ""  # where the submission came from

    @property
    def score(self) -> float:
        return sum(c.score for c in self.cells)

    @property
    def max_score(self) -> float:
        return sum(c.max_score for c in self.cells)


def _one_line(text: str, limit: int = REASON_CHARS) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _safe_message(text: str, template: Template) -> str:
    """The message without any line of a hidden test, capped."""
    kept = []
    for line in text.splitlines():
        normal = _normalise(line)
        if normal and any(secret in normal for secret in template.hidden_lines):
            kept.append("[a line of a hidden test, not shown]")
        else:
            kept.append(line)
    text = "\n".join(kept)
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + "\n[...]"


def _error_output(exc: BaseException, remote: str = "") -> dict:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    if remote:
        lines += ["\nIn the student's code:\n", remote]
    return {"output_type": "error", "ename": type(exc).__name__, "evalue": str(exc)[:MESSAGE_CHARS],
            "traceback": ["".join(lines)[-20000:]]}  # fmt: skip


class _Grader:
    """The state of one grading run: sandbox, trusted namespace, outputs, results."""

    def __init__(self, template: Template, options: Options, slot: int):
        self.template = template
        self.options = options
        self.slot = slot
        self.deadline = 0.0
        self.sandbox: Sandbox | None = None
        self.session: rpc.Session | None = None
        self.namespace: dict = {"__name__": "__grading__"}
        self.remote_names: dict = {}  # name -> the value bound from the student's namespace
        self.sink: list | None = None  # where the student's output during a call goes
        self.flags: set[str] = set()
        self.notes: list[str] = []
        self.noted = 0  # how many of the session's recording problems are in the notes
        self.grades: dict[str, CellGrade] = {}
        self.execution_count = 0
        self.devices: dict | None = None  # the sandbox's answers to torch's device queries

    def _sandbox_devices(self) -> dict:
        """What the student's torch says about devices (asked once; known without asking on a machine
        where the grader's torch sees no accelerator: the sandbox sees no more)."""
        if self.devices is None:
            import torch

            mps = getattr(getattr(torch.backends, "mps", None), "is_available", lambda: False)
            if not torch.cuda.is_available() and not torch.cuda.device_count() and not mps():
                self.devices = {name: 0 if name.endswith("count") else False for name in devices.DEVICE_QUERIES}
            else:
                self.devices = self.session.devices()
        return self.devices

    # ---- talking to the sandbox --------------------------------------------------------------

    def _call_limit(self) -> float:
        return max(0.1, min(self.options.call_timeout, self.deadline - time.monotonic()))

    def transport(self, text: str) -> str:
        answer, out = self.sandbox.call({"request": text}, self.deadline, self._call_limit())
        if self.sink is not None:
            self.sink.extend(out.outputs)
        if not isinstance(answer, dict) or not isinstance(answer.get("autograder"), str):
            raise rpc.ProtocolError("the grader's agent in the student's kernel did not answer")
        return answer["autograder"]

    # ---- steps -------------------------------------------------------------------------------

    def run_code(self, cell) -> None:
        self.execution_count += 1
        cell.execution_count = self.execution_count
        try:
            out = self.sandbox.run(cell.source, self.deadline, self._call_limit())
        except CallTimeout:
            self.flags.add("timeout")
            cell.outputs = [nbformat.from_dict(_error_output(TimeoutError("the cell ran past its time limit")))]
            return
        cell.outputs = [nbformat.from_dict(o) for o in out.outputs]
        if out.truncated:
            self.flags.add("output_truncated")
        if any(o.get("ename") == "MemoryError" for o in out.outputs):
            self.flags.add("memory")

    def run_test(self, step) -> CellGrade:
        test = self.template.tests[step.grade_id]
        grade = CellGrade(step.grade_id, "test", 0.0, test.points, "", hidden=test.hidden)
        wanted = free_names(test.source) - (set(self.namespace) - set(self.remote_names))
        printed, outputs = io.StringIO(), []
        self.sink = outputs
        step.cell.execution_count = self.execution_count = self.execution_count + 1
        try:
            if wanted:
                for name, value in self.session.lookup(wanted).items():
                    self.namespace[name] = self.remote_names[name] = value
            with devices.sandbox_devices(self._sandbox_devices()):
                run_test_cell(step.grade_id, test.source, self.namespace, printed)
        except CallTimeout:
            self.flags.add("timeout")
            grade.reason = "timeout"
            grade.message = "a call to your code ran past its time limit and was interrupted"
            outputs.append(_error_output(TimeoutError(grade.message)))
        except rpc.ProtocolError as exc:
            grade.reason = _one_line(f"invalid answer from the student's kernel: {exc}")
            grade.message = grade.reason
            outputs.append(_error_output(exc))
        except Exception as exc:  # the test failed: an assertion, or an error in the student's code
            remote = getattr(exc, "remote_traceback", "")
            text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            grade.reason = _one_line(_safe_message(text, self.template))
            grade.message = _safe_message(text, self.template)
            if remote and not test.hidden:
                grade.message += "\n\nTraceback in your code:\n" + _safe_message(remote, self.template)
            if type(exc).__name__ == "MemoryError":
                self.flags.add("memory")
            outputs.append(_error_output(exc, remote))
        else:
            grade.score, grade.reason = test.points, "passed"
        finally:
            self.sink = None
            self._flush()
            self._note_recording_problems(step.grade_id)
            for name, value in list(self.remote_names.items()):
                if self.namespace.get(name) is not value:  # the test rebound it: it is the test's now
                    del self.remote_names[name]
        text = printed.getvalue() + "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
        if not test.hidden:
            grade.output = text[-MESSAGE_CHARS:]
        cell_outputs = [{"output_type": "stream", "name": "stdout", "text": text[-20000:]}] if text else []
        cell_outputs += [o for o in outputs if o.get("output_type") == "error"]
        step.cell.outputs = [nbformat.from_dict(o) for o in cell_outputs]
        return grade

    def _note_recording_problems(self, grade_id: str) -> None:
        """A recording in the student's kernel that saw the call compute out of its sight is a note for the
        instructor (the test itself fails with the reason: record_ops raised)."""
        new = list(dict.fromkeys(self.session.problems[self.noted :]))
        self.noted = len(self.session.problems)
        if new:
            self.flags.add("suspicious_code")
            self.notes += [f"recording in {grade_id}: {p}" for p in new]

    def _flush(self) -> None:
        try:
            self.session.flush()
        except (rpc.ProtocolError, CallTimeout, TypeError, ValueError):
            pass

    # ---- the whole notebook ------------------------------------------------------------------

    def run(self, plan, spares: SparePool | None = None, prestart: int = 0) -> str:
        """Run every step; returns the reason remaining tests fail for ("" if all ran).

        ``spares``, ``prestart``: where this submission's sandbox may be waiting, and how many later
        submissions' sandboxes to keep starting there meanwhile (see :func:`grade`)."""
        self.deadline = time.monotonic() + self.options.timeout
        key = _spare_key(self.template.assignment, self.options, self.slot)
        self.sandbox = spares.take(key) if spares is not None else None
        failure = ""
        try:
            with alarm(self.deadline - time.monotonic() + 0.5, NotebookTimeout, "the notebook ran past its time limit"):
                if self.sandbox is None:
                    self.sandbox = ready_sandbox(self.template, self.options, self.slot, self.deadline)
                if prestart and spares is not None:
                    spares.prestart(key, self._start_spare, prestart)
                self.session = rpc.Session(self.transport)
                for name, value in self._trusted_imports().items():
                    self.namespace[name] = value
                for step in plan.steps:
                    if step.kind == "code":
                        self.run_code(step.cell)
                    elif step.kind == "test":
                        self.grades[step.grade_id] = self.run_test(step)
        except KernelDied:
            failure = "kernel_died"
            if self.sandbox.oom_killed():
                self.flags.add("memory")
        except NotebookTimeout:
            failure = "timeout"
        finally:
            if self.sandbox is not None:
                self.sandbox.close()
        if failure:
            self.flags.add(failure)
        return failure

    def _start_spare(self, number: int) -> Sandbox:
        """A ready sandbox for a later submission of the same assignment and options (in its own thread)."""
        options, deadline = self.options, time.monotonic() + self.options.timeout
        return ready_sandbox(self.template, options, self.slot, deadline, f"{self.slot}-{number}")

    def _trusted_imports(self) -> dict:
        """The instructor's imports that the tests use: here, the real modules (numpy, torch, ...);
        matplotlib's from the student's process, where the figures their code draws live."""
        used = set().union(*(loaded_names(t.source) for t in self.template.tests.values()))
        namespace: dict = {}
        for statement, bound in self.template.imports:
            if not bound & used:
                continue
            if re.match(r"(import|from)\s+matplotlib\b", statement):
                namespace.update(self.session.request("imports", statement))
            else:
                exec(statement, namespace)
        namespace.pop("__builtins__", None)
        return namespace


def _spare_key(assignment: str, options: Options, slot: int) -> tuple:
    return (assignment, options.unsafe, str(options.workdir), slot, repr(options.limits), options.timeout)


def grade(
    student_id: str,
    data: bytes,
    assignment: str,
    options: Options,
    slot: int = 0,
    source: str = "",
    prestart: int = 0,
    spares: SparePool | None = None,
) -> Result:
    """Grade one submission (the bytes of a notebook) of ``assignment``.

    ``spares``: the grading worker's spare sandboxes (spares.py), where this submission's may already
    be started. ``prestart``: how many more submissions of the same assignment follow in this worker,
    as far as sandboxes are worth starting ahead (a batch says so while it has work queued; see
    :func:`autograder.grading.batch.spares_ahead`); up to that many (at most ``spares.depth``) start
    in ``spares`` while this one is graded."""
    started = time.monotonic()
    template = load_template(assignment)
    plan = prepare(data, template)
    grader = _Grader(template, options, slot)
    baseline = state.baseline()
    baseline.restore()
    with spares.grading() if spares is not None else contextlib.nullcontext():
        try:
            failure = plan.status if plan.status != "graded" else grader.run(plan, spares, prestart)
        finally:  # whatever the tests changed in this process, the next submission does not see
            baseline.restore()
    messages = {
        "kernel_died": "the kernel died before this test could run (a crash, os._exit, a signal, the memory limit)",
        "timeout": "the notebook ran past its time limit before this test could run",
    }
    cells = []
    for grade_id, test in template.tests.items():
        cell = grader.grades.get(grade_id)
        if cell is None:
            message = messages.get(failure, f"not graded: {failure}")
            cell = CellGrade(grade_id, "test", 0.0, test.points, failure or "not_run", message, hidden=test.hidden)
        cells.append(cell)
    for grade_id, (_, points, _) in template.written.items():
        reason = "needs_manual_grade" if plan.status == "graded" else plan.status
        cells.append(CellGrade(grade_id, "written", 0.0, points, reason, "graded by hand"))
    cells.sort(key=lambda cell: template.indices[cell.grade_id])  # notebook order
    flags = sorted(plan.flags | grader.flags)
    notebook = nbformat.writes(plan.notebook(template)) if plan.status == "graded" else None
    return Result(student_id, assignment, plan.status, flags, [*plan.notes, *grader.notes], cells, notebook,
                  round(time.monotonic() - started, 2), source)  # fmt: skip
