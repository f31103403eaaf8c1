"""Wrong and valid answers to the exercises, run against the exercises' own test cells.

Each chapter has a file ``tests/wrong_answers/chNN_name.py`` (the reference module's name,
e.g. ``ch02_seq2seq_bottleneck.py``) with two lists of :class:`Variant`:

- ``WRONG``: the likeliest mistakes a student makes. Each must fail the exercise's hidden test
  cell, and its visible test cell too (``visible=True``, the default) so that Validate's
  "Success" means something; ``visible=False`` marks a mistake only the hidden test can see
  (say why in ``name``).
- ``VALID``: other correct ways to write the answer (loops, einsum, other dtypes): each must
  pass both test cells.

A variant is the instructor's answer cell (solution markers removed) with exact substitutions
(``replace=[(old, new), ...]``, each ``old`` occurring exactly once, so that a variant cannot
silently stop applying when the reference changes) or rewritten whole (``source=...``, with
``replace`` then applied to that source). A cell rewritten whole is written as real Python, which
ruff lints: the body of a function in ``tests/wrong_answers/cells/chNN.py`` decorated with
:func:`wrong` or :func:`valid` (the exercise and what the student did, next to the code), which
turns it into the :class:`Variant` whose source is the function's body (:func:`cell_text`); the
chapter's file lists it in ``WRONG`` or ``VALID`` in its place among the others.

:func:`run` executes, in this process and without a kernel, what a student's notebook holds
when it reaches the exercise's tests: the export cell, the import statements of the other code
cells, and every answer cell (the reference's, with the variant swapped in for its exercise).
Then the exercise's visible and hidden test cells (hidden part included) run as the class
grader runs them: in a namespace of their own holding the instructor's imports, what the
earlier test cell of the exercise defined, and each name the cell reads before defining it
(``names.free_names``) taken from the answers' namespace. Demo cells do not run: a test cell
that reads a name only a demo cell (or another exercise's test cell) defines makes
:func:`run` fail with a message naming the cell (:func:`unresolved_names`).

The chapter's base namespace (export cell and imports) is built once per process; each variant
costs its answer cells and the exercise's two test cells. ``python tests/wrong_answers`` prints
the closing table (tests/README.md, "What the tests check"); ``tests/test_wrong_answers.py`` holds the
pytest items.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import inspect
import io
import os
import textwrap
import time
from dataclasses import dataclass, field

from autograder import conventions, course
from autograder.conventions import without_markers
from autograder.grading.deadline import alarm
from autograder.grading.names import free_names
from autograder.grading.template import load_template
from autograder.grading.testcell import run_test_cell

os.environ.setdefault("MPLBACKEND", "Agg")  # demo imports may pull in pyplot; never open a window

CELL_TIMEOUT = 120  # seconds a test cell may run here (an answer that loops forever fails, it does not hang)


class HarnessError(Exception):
    """The variant or the chapter cannot be run as written (not a verdict on the answer)."""


@dataclass
class Variant:
    """An answer to one exercise: the reference with substitutions, or a whole new cell (with substitutions)."""

    exercise: str  # the exercise's function or class name = its answer cell's grade_id
    name: str  # what the student did, in a few words (printed in the closing table)
    replace: list[tuple[str, str]] | tuple = ()
    source: str | None = None
    visible: bool = True  # WRONG only: the visible test must catch it too
    kind: str = ""  # "wrong" or "valid" when the variant says which list it belongs in (:func:`wrong`, :func:`valid`)

    def __post_init__(self):
        if not self.replace and self.source is None:
            raise HarnessError(f"{self.exercise}: {self.name!r}: give replace=[...], source=... or both")
        if self.kind not in ("", "wrong", "valid"):
            raise HarnessError(f"{self.exercise}: {self.name!r}: kind must be 'wrong' or 'valid', not {self.kind!r}")

    def apply(self, reference: str) -> str:
        """The answer cell's source for this variant (solution markers removed)."""
        new = reference if self.source is None else without_markers(self.source)
        for old, replacement in self.replace:
            count = new.count(old)
            if count != 1:
                raise HarnessError(
                    f"{self.exercise}: {self.name!r}: the text to replace occurs {count} times in the "
                    f"{'reference answer' if self.source is None else 'source'} (it must occur exactly once): {old!r}"
                )
            new = new.replace(old, replacement)
        if new.strip() == reference.strip():
            raise HarnessError(f"{self.exercise}: {self.name!r} is the reference answer itself")
        return new


def cell_text(function) -> str:
    """The body of ``function`` (its ``def name():`` line and decorators dropped, dedented): an answer
    cell written as real Python in tests/wrong_answers/cells/, read back as the text a student's cell holds."""
    lines, _ = inspect.getsourcelines(function)
    header = ast.parse(textwrap.dedent("".join(lines))).body[0]
    if (
        not isinstance(header, ast.FunctionDef)
        or header.args.args
        or not lines[header.lineno - 1].rstrip().endswith("():")
    ):
        raise HarnessError(f"{function.__qualname__}: an answer cell is the body of a `def name():` without arguments")
    return textwrap.dedent("".join(lines[header.lineno :]))


def wrong(exercise: str, name: str, *, visible: bool = True):
    """Decorator: the function's body is a wrong answer to ``exercise`` (see :class:`Variant`)."""
    return lambda function: Variant(exercise, name, source=cell_text(function), visible=visible, kind="wrong")


def valid(exercise: str, name: str):
    """Decorator: the function's body is a valid answer to ``exercise`` (see :class:`Variant`)."""
    return lambda function: Variant(exercise, name, source=cell_text(function), kind="valid")


@dataclass
class CellResult:
    grade_id: str
    passed: bool
    error: str = ""  # "AssertionError: <first line of the message>", or the error the answer raised
    seconds: float = 0.0

    @property
    def headline(self) -> str:
        return "passes" if self.passed else self.error


@dataclass
class Outcome:
    assignment: str
    variant: Variant
    visible: CellResult
    hidden: CellResult
    seconds: float = 0.0


@dataclass
class Chapter:
    """An instructor notebook's parts, as the harness needs them."""

    assignment: str
    export: str
    imports: list[str]  # import statements of the other code cells (the student's kernel ran them)
    answers: dict[str, str] = field(default_factory=dict)  # grade_id -> source, markers removed, in order
    tests: dict[str, str] = field(default_factory=dict)  # grade_id -> source, hidden part included
    demo_binds: dict[str, str] = field(default_factory=dict)  # name -> id of the first demo cell binding it
    test_binds: dict[str, str] = field(default_factory=dict)  # name -> grade_id of the first test cell binding it


# ---- reading a chapter ----------------------------------------------------------------------------------


def _bound_names(source: str) -> set[str]:
    """Every name a cell binds anywhere at module level or below (assignments, defs, imports)."""
    tree = ast.parse(source)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
    return names


@functools.cache
def chapter(assignment: str) -> Chapter:
    nb = conventions.instructor(assignment)  # the course's one reading of the notebook
    if len(nb.exports) != 1:
        raise HarnessError(f"{assignment}: expected one export cell, found {len(nb.exports)}")
    template = load_template(assignment)  # the grader's reading of the notebook: its trusted imports
    result = Chapter(assignment, nb.exports[0].source, [statement for statement, _ in template.imports])
    for cell in nb.cells:
        if cell.kind == "answer":
            result.answers[cell.grade_id] = without_markers(cell.source)
        elif cell.kind == "test":
            result.tests[cell.grade_id] = cell.source
            for name in _bound_names(cell.source):
                result.test_binds.setdefault(name, cell.grade_id)
        elif cell.cell_type == "code" and cell.kind != "export":  # demo cells
            for name in _bound_names(cell.source):
                result.demo_binds.setdefault(name, cell.id or "?")
    return result


def exercises(assignment: str) -> list[str]:
    """The exercises of a chapter (answer cells' grade_ids), in notebook order. An answer cell without a visible
    test cell is run with the others but is no exercise (chapter 07's optional, ungraded cell where a student may
    paste chapter 04's code)."""
    ch = chapter(assignment)
    return [grade_id for grade_id in ch.answers if f"{grade_id}_visible" in ch.tests]


def test_cells(assignment: str, exercise: str) -> tuple[str, str]:
    """(visible, hidden) test-cell grade_ids of an exercise."""
    tests = chapter(assignment).tests
    ids = (f"{exercise}_visible", f"{exercise}_hidden")
    missing = [i for i in ids if i not in tests]
    if missing:
        raise HarnessError(f"{assignment}: exercise {exercise} has no test cell {missing}")
    return ids


def unresolved_names(assignment: str, exercise: str) -> list[str]:
    """Names the exercise's test cells read that neither the imports, the answer cells nor the
    exercise's own earlier test cell define: one message per name, saying which cell defines it."""
    ch = chapter(assignment)
    available = set().union(*(_bound_names(s) for s in [ch.export, *ch.imports, *ch.answers.values()]))
    problems = []
    for grade_id in test_cells(assignment, exercise):
        source = ch.tests[grade_id]
        for name in sorted(free_names(source) - available):
            where = (
                f"demo cell {ch.demo_binds[name]!r}"
                if name in ch.demo_binds
                else f"test cell {ch.test_binds[name]!r}"
                if name in ch.test_binds
                else "no cell"
            )
            problems.append(
                f"{assignment}: test cell {grade_id} reads {name!r}, which only {where} defines; the wrong-answer "
                "harness runs no demo and no other exercise's tests: define it in the test cell (or the export cell)"
            )
        available |= _bound_names(source)
    return problems


# ---- running ---------------------------------------------------------------------------------------------


@functools.cache
def _base_namespaces(assignment: str) -> tuple[dict, dict]:
    """(answers' namespace with the export cell and the imports run, tests' namespace with the imports)."""
    ch = chapter(assignment)
    answers: dict = {"__name__": "__main__"}
    tests: dict = {"__name__": "__main__"}
    with _quiet():
        exec(compile(ch.export, f"<{assignment} export cell>", "exec"), answers)
        for statement in ch.imports:
            exec(statement, answers)
            exec(statement, tests)
    return answers, tests


class _CellTimeout(Exception):
    pass


def _time_limit(seconds: float):
    """The grader's own limit (autograder.grading.deadline), raising _CellTimeout."""
    return alarm(seconds, _CellTimeout, f"the cell ran past {seconds:.0f} s")


@contextlib.contextmanager
def _quiet():
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


BOILERPLATE = (
    "Not equal to tolerance",
    "Arrays are not",
    "Mismatched elements",
    "Max absolute difference",
    "Max relative difference",
    "Tensor-likes are not",
    "Scalars are not",
    "(shapes",
    "x:",
    "y:",
)


def headline(exc: BaseException) -> str:
    """``Type: first meaningful line of the message`` (numpy's and torch's assert boilerplate skipped)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    meaningful = [line for line in lines if not line.startswith(BOILERPLATE)]
    first = (meaningful or lines or [""])[0]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _run_test(grade_id: str, source: str, namespace: dict, answers: dict) -> CellResult:
    start = time.perf_counter()
    for name in free_names(source) - set(namespace):
        if name in answers:
            namespace[name] = answers[name]
    try:
        with _time_limit(CELL_TIMEOUT):
            run_test_cell(grade_id, source, namespace, io.StringIO())  # as the class grader runs it
    except Exception as exc:  # the cell failed: an assertion, or an error raised by the answer
        return CellResult(grade_id, False, headline(exc), time.perf_counter() - start)
    return CellResult(grade_id, True, "", time.perf_counter() - start)


def run(assignment: str, variant: Variant) -> Outcome:
    """Run ``variant.exercise``'s test cells on the reference answers with ``variant`` swapped in."""
    ch = chapter(assignment)
    if variant.exercise not in exercises(assignment):
        raise HarnessError(
            f"{assignment}: no exercise {variant.exercise!r} (exercises: {', '.join(exercises(assignment))})"
        )
    return _run(assignment, variant.exercise, variant.apply(ch.answers[variant.exercise]), variant)


def reference_outcomes(assignment: str) -> dict[str, Outcome]:
    """exercise -> the outcome of the reference answers (both test cells must pass)."""
    ch = chapter(assignment)
    return {
        exercise: _run(
            assignment, exercise, ch.answers[exercise], Variant(exercise, "the reference", source=ch.answers[exercise])
        )
        for exercise in exercises(assignment)
    }


def _run(assignment: str, exercise: str, source: str, variant: Variant) -> Outcome:
    start = time.perf_counter()
    ch = chapter(assignment)
    problems = unresolved_names(assignment, exercise)
    if problems:
        raise HarnessError("\n".join(problems))
    base_answers, base_tests = _base_namespaces(assignment)
    answers = dict(base_answers)
    for grade_id, reference in ch.answers.items():
        cell = source if grade_id == exercise else reference
        try:
            with _quiet(), _time_limit(CELL_TIMEOUT):
                exec(compile(cell, f"<answer {grade_id}>", "exec"), answers)
        except Exception as exc:
            if grade_id != exercise:
                raise HarnessError(
                    f"{assignment}: the reference answer cell {grade_id} failed: {headline(exc)}"
                ) from exc
            failed = CellResult(grade_id, False, f"the answer cell raised {headline(exc)}")
            return Outcome(assignment, variant, failed, failed, time.perf_counter() - start)
    if exercise not in answers:
        raise HarnessError(f"{assignment}: {variant.name!r} does not define {exercise}")
    visible_id, hidden_id = test_cells(assignment, exercise)
    tests = dict(base_tests)
    visible = _run_test(visible_id, ch.tests[visible_id], tests, answers)
    hidden = _run_test(hidden_id, ch.tests[hidden_id], tests, answers)
    return Outcome(assignment, variant, visible, hidden, time.perf_counter() - start)


def verdict(kind: str, outcome: Outcome) -> list[str]:
    """What is wrong with this outcome ([] when the tests did their job)."""
    v, name = outcome.variant, outcome.variant.name
    problems = []
    if kind == "wrong":
        if outcome.hidden.passed:
            problems.append(f"the hidden test passed a wrong answer: {name}")
        if v.visible and outcome.visible.passed:
            problems.append(f"the visible test passed a wrong answer: {name}")
        if not v.visible and not outcome.visible.passed:
            problems.append(
                f"{name}: marked visible=False, but the visible test catches it ({outcome.visible.error}): "
                "remove visible=False"
            )
    else:
        for result in (outcome.visible, outcome.hidden):
            if not result.passed:
                problems.append(f"the {_kind(result)} test rejected a valid answer: {name}: {result.error}")
    return problems


def _kind(result: CellResult) -> str:
    return "hidden" if result.grade_id.endswith("_hidden") else "visible"


# ---- discovery -------------------------------------------------------------------------------------------


def module_name(assignment: str) -> str:
    return f"wrong_answers.{course.reference_module_name(assignment)}"


def has_variants(assignment: str) -> bool:
    return (course.ROOT / "tests" / "wrong_answers" / f"{course.reference_module_name(assignment)}.py").exists()


def variants(assignment: str) -> tuple[list[Variant], list[Variant]]:
    """(WRONG, VALID) of a chapter's file (both empty when it has none)."""
    if not has_variants(assignment):
        return [], []
    module = importlib.import_module(module_name(assignment))
    wrong, valid = list(getattr(module, "WRONG", [])), list(getattr(module, "VALID", []))
    for variant in valid:
        if not variant.visible:
            raise HarnessError(f"{assignment}: VALID {variant.name!r}: visible=False means nothing for a valid answer")
    for kind, listed in (("wrong", wrong), ("valid", valid)):
        for variant in listed:
            if variant.kind not in ("", kind):
                raise HarnessError(
                    f"{assignment}: {variant.name!r} is a {variant.kind} answer listed in {kind.upper()}"
                )
    return wrong, valid


def no_valid_alternative(assignment: str) -> dict[str, str]:
    """exercise -> why it has no VALID variant (the chapter file's optional ``NO_VALID_ALTERNATIVE``)."""
    if not has_variants(assignment):
        return {}
    return dict(getattr(importlib.import_module(module_name(assignment)), "NO_VALID_ALTERNATIVE", {}))


def chapters_with_variants() -> list[str]:
    return [a for a in course.assignments() if has_variants(a)]


__all__ = [
    "CellResult",
    "HarnessError",
    "Outcome",
    "Variant",
    "cell_text",
    "chapters_with_variants",
    "exercises",
    "has_variants",
    "headline",
    "no_valid_alternative",
    "reference_outcomes",
    "run",
    "unresolved_names",
    "valid",
    "variants",
    "verdict",
    "wrong",
]
