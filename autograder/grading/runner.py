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

import ast
import io
import re
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder import course
from autograder.conventions import normalise as _normalise
from autograder.grading import agent, devices, recording, rpc, state
from autograder.grading.deadline import alarm
from autograder.grading.names import free_names, loaded_names
from autograder.grading.sandbox import CallTimeout, KernelDied, Limits, NotebookTimeout, Sandbox
from autograder.grading.sanitize import Template, load_template, prepare
from autograder.grading.testcell import run_test_cell

_HERE = Path(__file__).parent


def _install_agent() -> str:
    """Code that installs the agent in the student's kernel, from the source of agent.MODULES.

    Each module is made from its file's source, with the modules before it among its globals (the
    files import them from ``autograder.grading`` only when they are imported in the grader). The
    file names ``autograder-<name>`` mark the agent's frames, which tracebacks leave out. The course's
    recording module (``attention_course/profiling.py``) comes along compiled, not yet run: the agent
    runs it privately once the sandbox's imports are done (:func:`_preimports`)."""
    lines = ["import types as _autograder_types", "_autograder_modules = {}"]
    for name in agent.MODULES:
        source = (_HERE / f"{name}.py").read_text()
        lines += [
            f"_autograder_module = _autograder_types.ModuleType('_autograder_{name}')",
            "_autograder_module.__dict__.update(_autograder_modules)",
            f"exec(compile({source!r}, 'autograder-{name}', 'exec'), _autograder_module.__dict__)",
            f"_autograder_modules[{name!r}] = _autograder_module",
        ]
    lines += [
        f"_autograder_recording = compile({recording.source()!r}, 'autograder-profiling', 'exec')",
        "__autograder__ = _autograder_modules['agent'].Agent(get_ipython().user_ns, _autograder_recording)",
        "get_ipython().kernel.comm_manager.register_target('autograder', __autograder__.open)",
        "del _autograder_types, _autograder_modules, _autograder_module, _autograder_recording",
    ]
    return "\n".join(lines) + "\n"


INSTALL_AGENT = _install_agent()
MESSAGE_CHARS = 4000
REASON_CHARS = 300


class SandboxFailed(RuntimeError):
    """The sandbox could not be started: the grader's problem, not the student's."""


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

    def run(self, plan, prestart: int = 0) -> str:
        """Run every step; returns the reason remaining tests fail for ("" if all ran).

        ``prestart``: how many later submissions' sandboxes to keep starting meanwhile (see :func:`grade`)."""
        self.deadline = time.monotonic() + self.options.timeout
        key = _spare_key(self.template.assignment, self.options, self.slot)
        self.sandbox = _take_spare(key)
        failure = ""
        try:
            with alarm(self.deadline - time.monotonic() + 0.5, NotebookTimeout, "the notebook ran past its time limit"):
                if self.sandbox is None:
                    self.sandbox = _ready_sandbox(self.template, self.options, self.slot, self.deadline)
                if prestart:
                    _prestart(key, self.template, self.options, self.slot, prestart)
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


# ---- sandboxes, and the spare one started while a submission is graded -----------------------------


def _preimports(template: Template) -> str:
    """Code that imports (without binding any name) the modules the instructor notebook imports, then
    runs the agent's recording module if torch is among them (before any student cell, so that what
    a submission does to torch's Python-level functions later does not reach it)."""
    modules = []
    for statement, _ in template.imports:
        node = ast.parse(statement).body[0]
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        modules += [name for name in names if name and name not in modules]
    return (
        "def _autograder_preimport():\n    import importlib\n"
        f"    for name in {modules!r}:\n"
        "        try:\n            importlib.import_module(name)\n"
        "        except Exception:\n            pass\n"
        "_autograder_preimport()\ndel _autograder_preimport\n"
        "try:\n    __autograder__.bind_recording()\nexcept Exception:\n    pass\n"
    )


def _ready_sandbox(template: Template, options: Options, slot: int, deadline: float, name: str = "") -> Sandbox:
    """A started sandbox with the agent installed and the notebook's modules imported (SandboxFailed if not).

    A kernel that fails to start is tried once more (a start can fail for reasons of the moment on a
    loaded machine). Importing the modules is the grader's own work: it gets the notebook's time, and
    if it fails, the student's cells import them as usual."""
    for attempt in (1, 2):
        sandbox = Sandbox(options.workdir, slot, options.limits, options.unsafe, name=name)
        try:
            try:  # nothing of the student's runs here: a failure is the grader's
                sandbox.start(deadline)
                limit = max(0.1, min(options.call_timeout, deadline - time.monotonic()))
                installed = sandbox.run(INSTALL_AGENT, deadline, limit, silent=True)
            except (KernelDied, NotebookTimeout, CallTimeout) as exc:
                raise SandboxFailed(f"the sandbox did not start: {exc}") from None
            if (installed.reply or {}).get("status") != "ok":
                raise SandboxFailed(f"could not install the grader's agent: {installed.outputs}")
            try:
                sandbox.run(_preimports(template), deadline, max(0.1, deadline - time.monotonic()), silent=True)
            except CallTimeout:
                pass
            except (KernelDied, NotebookTimeout) as exc:
                raise SandboxFailed(f"the sandbox did not start: {exc}") from None
            sandbox.budget = type(sandbox.budget)(options.limits.output_bytes)  # the student's output starts at 0
            return sandbox
        except SandboxFailed as exc:
            sandbox.close()
            if attempt == 2 or time.monotonic() >= deadline:
                raise SandboxFailed(f"{exc}\n{sandbox.log_tail}") from None
        except BaseException:
            sandbox.close()
            raise
    raise AssertionError("unreachable")


class _Spare:
    """This process's spare sandboxes: the next submissions', started while the current one is graded.

    Up to DEPTH are started ahead, oldest first in ``queue``. Each is used once, by a later
    submission of the same assignment and options, or closed. The batch asks for spares only while
    more submissions are queued than there are workers, and spares nobody takes within IDLE_S of the
    last submission are closed, so nothing stays running.

    Why two: a sandbox's start (the kernel, ``import torch``, numpy, matplotlib: about 2.5 s of CPU)
    takes longer than grading a notebook of chapter 03 (about 2 s). With one spare, the worker then
    waits for it with one core idle; with two, the next one is already starting meanwhile."""

    IDLE_S = 3.0
    DEPTH = 2
    lock = threading.Lock()
    queue: list = []  # [(key, Future of a Sandbox)], oldest first
    count = 0
    last_used = 0.0
    busy = False
    watching = False  # a thread closes idle spares


def _spare_key(assignment: str, options: Options, slot: int) -> tuple:
    return (assignment, options.unsafe, str(options.workdir), slot, repr(options.limits), options.timeout)


def _take_spare(key: tuple) -> Sandbox | None:
    """The oldest spare, if it was started for ``key`` and is alive; spares for another key are closed."""
    with _Spare.lock:
        queue, _Spare.queue = _Spare.queue, []
        taken = queue.pop(0)[1] if queue and queue[0][0] == key else None
        _Spare.queue = [(k, future) for k, future in queue if k == key]
        stale = [future for k, future in queue if k != key]
        _Spare.last_used = time.monotonic()
    for future in stale:
        _close(future)
    if taken is None:
        return None
    try:
        sandbox = taken.result()
    except BaseException:  # noqa: B036 - it did not start: a fresh one will
        return None
    if sandbox.alive:
        return sandbox
    sandbox.close()
    return None


def _prestart(key: tuple, template: Template, options: Options, slot: int, depth: int = 1) -> None:
    """Start spares for ``key`` until ``depth`` (at most DEPTH) are queued."""
    from concurrent.futures import Future

    started = []
    with _Spare.lock:
        while len(_Spare.queue) < min(depth, _Spare.DEPTH):
            _Spare.count += 1
            future: Future = Future()
            _Spare.queue.append((key, future))
            started.append((f"{slot}-{_Spare.count}", future))
        watch, _Spare.watching = not _Spare.watching, True

    def start(name, future):
        try:
            future.set_result(_ready_sandbox(template, options, slot, time.monotonic() + options.timeout, name))
        except BaseException as exc:  # noqa: B036
            future.set_exception(exc)

    for name, future in started:
        threading.Thread(target=start, args=(name, future), name="spare-sandbox", daemon=True).start()
    if watch:
        threading.Thread(target=_watch_idle, name="spare-watch", daemon=True).start()


def _watch_idle() -> None:
    """Close the spares if no submission takes them (the batch ran out of work for this worker)."""
    while True:
        time.sleep(_Spare.IDLE_S / 3)
        with _Spare.lock:
            if _Spare.queue and (_Spare.busy or time.monotonic() - _Spare.last_used < _Spare.IDLE_S):
                continue
            queue, _Spare.queue = _Spare.queue, []
            _Spare.watching = False
        for _, future in queue:
            _close(future)
        return


def _close(future) -> None:
    """Close a spare once it has started (or failed to)."""
    try:
        future.result().close()
    except BaseException:  # noqa: B036 - it never started
        pass


def close_spare_sandbox() -> None:
    """Close the spare sandboxes (at the end of a worker)."""
    with _Spare.lock:
        queue, _Spare.queue = _Spare.queue, []
    for _, future in queue:
        _close(future)


def grade(
    student_id: str,
    data: bytes,
    assignment: str,
    options: Options,
    slot: int = 0,
    source: str = "",
    prestart: int = 0,
) -> Result:
    """Grade one submission (the bytes of a notebook) of ``assignment``.

    ``prestart``: how many more submissions of the same assignment follow in this process, as far as
    sandboxes are worth starting ahead (a batch says so while it has work queued; see
    :func:`autograder.grading.batch.spares_ahead`); up to that many (at most ``_Spare.DEPTH``) start
    while this one is graded."""
    started = time.monotonic()
    template = load_template(assignment)
    plan = prepare(data, template)
    grader = _Grader(template, options, slot)
    baseline = state.baseline()
    baseline.restore()
    _Spare.busy = True
    try:
        failure = plan.status if plan.status != "graded" else grader.run(plan, prestart)
    finally:  # whatever the tests changed in this process, the next submission does not see
        baseline.restore()
        with _Spare.lock:
            _Spare.busy, _Spare.last_used = False, time.monotonic()
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
