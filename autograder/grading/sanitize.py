"""Turn the bytes a student handed in into the cells to grade, repaired against the instructor notebook.

Nothing in a submission is trusted: not its JSON, not its encoding, not its nbgrader
metadata. The instructor notebook of the assignment (``solutions/``) is the template
(:class:`template.Template`): it says which cells are answers, which are tests (with their points
and their hidden part) and which are written questions. The submission only contributes
its answers, its other code cells and its order:

- cells are matched to the template by nbgrader ``grade_id``; a cell that lost its metadata
  (copied into a fresh notebook) is recognised by the exercise it defines, by its test code,
  or, for a written answer, by the question just above it (flag ``metadata_missing``);
- every test cell, visible and hidden, is the instructor's: an edited, deleted or duplicated
  test cell is restored (flag ``tests_restored``; ``duplicate_cells``), inserted where the
  instructor notebook has it; points always come from the template;
- an answer or written cell that cannot be found is reported (``cells_missing``);
- a notebook from another assignment is recognised (status ``wrong_assignment``), so are a
  different kernel (``kernel_name``), non-UTF-8 bytes (``non_utf8``, decoded as cp1252), and
  code that tries things a submission should not (``suspicious_code``, suspicious.py: a note for
  the instructor; it never changes a score).

:func:`prepare` returns a :class:`Plan`: the steps to run, in order (student code runs in
the sandbox, tests in the grader), or the one-word status that says why there is nothing
to run (``empty_file``, ``invalid_json``, ``invalid_notebook``, ``wrong_assignment``,
``too_large``).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder.conventions import nbgrader as _template_metadata
from autograder.conventions import normalise as _normalise
from autograder.conventions import without_regions
from autograder.grading.names import defined_names
from autograder.grading.suspicious import suspicious
from autograder.grading.template import Template, other_assignments

MAX_BYTES = 32 << 20
MAX_CELLS = 2000


@dataclass
class Step:
    """One thing to do, in order: run student code, run a test, or keep a markdown cell."""

    kind: str  # "code" (sandbox), "test" (grader), "markdown", "written"
    cell: nbformat.NotebookNode
    grade_id: str | None = None
    index: int | None = None  # position of the matching template cell


@dataclass
class Plan:
    status: str = "graded"
    flags: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    kernel_name: str | None = None

    def notebook(self, template: Template) -> nbformat.NotebookNode:
        nb = new_notebook(metadata=copy.deepcopy(template.notebook.metadata))
        nb.cells = [step.cell for step in self.steps]
        return nb


# ---- bytes -> cells ------------------------------------------------------------------------------


def parse(data: bytes, plan: Plan) -> list[dict] | None:
    """The cells of a notebook as plain dicts (source str, cell_type, metadata), or None with a status."""
    if len(data) > MAX_BYTES:
        plan.status = "too_large"
        return None
    if not data.strip():
        plan.status = "empty_file"
        return None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("cp1252", errors="replace")
        plan.flags.add("non_utf8")
        plan.notes.append("the file is not UTF-8; it was read as Windows-1252")
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError):
        plan.status = "invalid_json"
        return None
    if isinstance(raw, dict) and "worksheets" in raw and "cells" not in raw:
        try:  # nbformat 3
            raw = json.loads(nbformat.writes(nbformat.reads(text, as_version=4)))
        except Exception:
            plan.status = "invalid_notebook"
            return None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        plan.status = "invalid_notebook"
        return None
    if len(raw["cells"]) > MAX_CELLS:
        plan.status = "too_large"
        return None
    metadata = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    kernelspec = metadata.get("kernelspec") if isinstance(metadata.get("kernelspec"), dict) else {}
    plan.kernel_name = kernelspec.get("name") if isinstance(kernelspec.get("name"), str) else None
    cells = []
    for cell in raw["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            plan.flags.add("invalid_cells")
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            plan.flags.add("invalid_cells")
            continue
        meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        nbg = meta.get("nbgrader") if isinstance(meta.get("nbgrader"), dict) else {}
        grade_id = nbg.get("grade_id") if isinstance(nbg.get("grade_id"), str) else None
        tags = [t for t in meta.get("tags", []) if isinstance(t, str)] if isinstance(meta.get("tags"), list) else []
        cells.append({"cell_type": cell["cell_type"], "source": source.replace("\r\n", "\n"), "grade_id": grade_id,
                      "tags": tags})  # fmt: skip
    return cells


# ---- cells -> plan ---------------------------------------------------------------------------------


def _identify(cell: dict, previous: dict | None, template: Template, used: set[str]) -> str | None:
    """The grade id of a cell that has no (valid) nbgrader metadata, recognised by its content."""
    if cell["cell_type"] == "code":
        text = _normalise(cell["source"])
        for grade_id, test in template.tests.items():
            if grade_id not in used and text and text in (_normalise(test.released), _normalise(test.source)):
                return grade_id
        names = defined_names(cell["source"])
        for grade_id, (_, wanted) in template.answers.items():
            if grade_id not in used and wanted and wanted <= names:
                return grade_id
    elif cell["cell_type"] == "markdown" and previous is not None and previous["cell_type"] == "markdown":
        above = _normalise(without_regions(previous["source"]))  # the question as released
        for grade_id, (_, _, prompt) in template.written.items():
            if grade_id not in used and prompt and above == prompt:
                return grade_id
    return None


def _clean_cell(cell: dict):
    maker = new_code_cell if cell["cell_type"] == "code" else new_markdown_cell
    made = maker(cell["source"])
    if cell["tags"]:
        made.metadata["tags"] = cell["tags"]
    return made


def prepare(data: bytes, template: Template) -> Plan:
    """The plan to grade ``data`` (a notebook file's bytes) against ``template``."""
    plan = Plan()
    cells = parse(data, plan)
    if cells is None:
        return plan
    if plan.kernel_name and plan.kernel_name != template.kernel_name:
        plan.flags.add("kernel_name")
        plan.notes.append(f"kernel {plan.kernel_name!r} replaced by {template.kernel_name!r}")
    ours = template.grade_ids
    theirs = {c["grade_id"] for c in cells if c["grade_id"]}
    names = set().union(*(defined_names(c["source"]) for c in cells if c["cell_type"] == "code"))
    answer_names = set().union(*(n for _, n in template.answers.values()))
    if not theirs & ours and not names & answer_names:
        for other, (ids, other_names) in other_assignments(template.assignment).items():
            if theirs & ids or (not theirs and names & other_names):
                plan.status = "wrong_assignment"
                plan.flags.add("wrong_assignment")
                plan.notes.append(f"this looks like the notebook of {other}")
                return plan

    used: set[str] = set()
    previous = None
    for cell in cells:
        grade_id = cell["grade_id"] if cell["grade_id"] in ours else None
        if grade_id is None:
            grade_id = _identify(cell, previous, template, used)
            if grade_id is not None and grade_id not in template.tests:
                plan.flags.add("metadata_missing")
        previous = cell
        if grade_id in template.tests:
            test = template.tests[grade_id]
            if grade_id in used:
                plan.flags.add("duplicate_cells")
                continue
            if _normalise(cell["source"]) not in (_normalise(test.released), _normalise(test.source)):
                plan.flags.add("tests_restored")
                plan.notes.append(f"test cell {grade_id} was edited; the original was restored")
            used.add(grade_id)
            plan.steps.append(Step("test", copy.deepcopy(template.cell(grade_id)), grade_id, test.index))
            continue
        if grade_id is not None and grade_id in used:
            plan.flags.add("duplicate_cells")
            grade_id = None
        if cell["cell_type"] == "code":
            made = _clean_cell(cell)
            if _normalise(cell["source"]) not in template.given and (found := suspicious(cell["source"])):
                plan.flags.add("suspicious_code")
                plan.notes.extend(f"suspicious code ({what}): {_normalise(cell['source'])[:120]}" for what in found)
            if grade_id in template.answers:
                made.metadata["nbgrader"] = copy.deepcopy(_template_metadata(template.cell(grade_id)))
                used.add(grade_id)
                plan.steps.append(Step("code", made, grade_id, template.answers[grade_id][0]))
            else:
                plan.steps.append(Step("code", made))
        elif cell["cell_type"] == "markdown":
            made = _clean_cell(cell)
            if grade_id in template.written:
                made.metadata["nbgrader"] = copy.deepcopy(_template_metadata(template.cell(grade_id)))
                used.add(grade_id)
                plan.steps.append(Step("written", made, grade_id, template.written[grade_id][0]))
            elif grade_id in template.locked:
                used.add(grade_id)
                plan.steps.append(Step("markdown", copy.deepcopy(template.cell(grade_id)), grade_id,
                                       template.locked[grade_id]))  # fmt: skip
            else:
                plan.steps.append(Step("markdown", made))

    for grade_id, test in sorted(template.tests.items(), key=lambda item: item[1].index):
        if grade_id in used:
            continue
        plan.flags.add("tests_restored")
        plan.notes.append(f"test cell {grade_id} was missing; the original was restored")
        position = 0
        for at, step in enumerate(plan.steps):
            if step.index is not None and step.index < test.index:
                position = at + 1
        plan.steps.insert(position, Step("test", copy.deepcopy(template.cell(grade_id)), grade_id, test.index))
    missing = [g for g in (*template.answers, *template.written) if g not in used]
    if missing:
        plan.flags.add("cells_missing")
        plan.notes.append("missing answer cells: " + ", ".join(missing))
    return plan
