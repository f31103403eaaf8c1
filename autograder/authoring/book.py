"""Stage and build the two editions of the book.

Student edition: the pages of ``_toc.yml``; each chapter notebook is the student notebook
from ``chapters/`` (stubs and visible tests only), and each of its demo cells (figures,
printed examples: cells without nbgrader metadata, identical in both versions) carries the
output that cell produced in the executed instructor notebook. So the reader sees every
figure as the reference draws it, and no line of a solution or hidden test.

Instructor edition: the same ToC with ``solutions/`` for ``chapters/``: the executed
instructor notebooks, solutions, hidden tests and all.

Both are staged under ``_build/stage/<edition>/`` with a local copy of MathJax, then built
with ``jupyter-book build -W --all`` into ``_build/<edition>/_build/html`` (every page written again:
each carries the whole book's navigation). A build that passed leaves a
stamp of everything it was made from (:func:`_inputs_digest`); building again from the same inputs
(the test suite after README's first command) reuses it instead of running jupyter-book again. A
build that failed leaves no stamp and no Sphinx environment, so that the next one reads every page
again and reports every warning (an incremental build would re-read only the changed pages).
"""

from __future__ import annotations

import copy
import fcntl
import hashlib
import importlib.metadata
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml

from autograder import course
from autograder.authoring.execute import executed
from autograder.authoring.setup_cell import is_setup_cell
from autograder.conventions import (
    MARK_SCHEME_REGION,
    SOLUTION,
    is_demo_cell,
    is_rubric_cell,
    is_written_answer,
    without_markers,
)

EDITIONS = ("student", "instructor")
MATHJAX_ES5 = course.ROOT / ".venv" / "npm" / "node_modules" / "mathjax" / "es5"
MATHJAX_PARTS = ("tex-chtml.js", "output/chtml/fonts/woff-v2", "input/tex/extensions")


def html_dir(edition: str) -> Path:
    return course.BUILD / edition / "_build" / "html"


def toc_entries(node) -> list[str]:
    """Every ``root`` and ``file`` entry of a (nested) Jupyter Book ToC, in order."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("root", "file") and isinstance(value, str):
                found.append(value)
            else:
                found.extend(toc_entries(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(toc_entries(item))
    return found


def _rename_toc(node, old: str, new: str):
    if isinstance(node, dict):
        return {
            k: (
                v.replace(old, new, 1)
                if k == "file" and isinstance(v, str) and v.startswith(old)
                else _rename_toc(v, old, new)
            )
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_rename_toc(item, old, new) for item in node]
    return node


def _source_file(entry: str) -> Path:
    for suffix in ("", ".ipynb", ".md"):
        path = course.ROOT / f"{entry}{suffix}"
        if path.is_file():
            return path
    raise FileNotFoundError(f"_toc.yml lists {entry!r}, but no {entry}.ipynb or {entry}.md exists")


def student_page(assignment: str) -> nbformat.NotebookNode:
    """The student notebook with the reference outputs of its demo cells.

    The setup cell (autograder/authoring/setup_cell.py), which only student notebooks have, is shown
    without output and is left out when the two notebooks' cells are paired.
    """
    student = nbformat.read(course.student_notebook(assignment), as_version=4)
    reference = executed(course.solution_notebook(assignment))
    paired = [cell for cell in student.cells if not is_setup_cell(cell)]
    if len(paired) != len(reference.cells):
        raise ValueError(
            f"{assignment}: chapters/ and solutions/ differ in cell count; run `python -m autograder generate`"
        )
    for index, (cell, ref_cell) in enumerate(zip(paired, reference.cells)):
        if is_demo_cell(cell):
            if not is_demo_cell(ref_cell) or cell.source != ref_cell.source:
                stale = f"{assignment}: cell {index} differs from the instructor notebook"
                raise ValueError(f"{stale}; run `python -m autograder generate`")
            cell.outputs = copy.deepcopy(ref_cell.outputs)
            cell.execution_count = ref_cell.execution_count
    return student


def instructor_page(assignment: str) -> nbformat.NotebookNode:
    """The executed instructor notebook; model answers and rubrics of written questions shown as such."""
    nb = copy.deepcopy(executed(course.solution_notebook(assignment)))
    for cell in nb.cells:
        if is_written_answer(cell):
            answer = without_markers(cell.source, SOLUTION)
            cell.source = f":::{{admonition}} Model answer\n{answer.strip()}\n:::"
        elif is_rubric_cell(cell):
            cell.source = MARK_SCHEME_REGION.sub(
                lambda match: f":::{{admonition}} Rubric (for the grader)\n{match.group(1).strip()}\n:::", cell.source
            )
    return nb


def _write_if_changed(path: Path, data: bytes) -> None:
    """Unchanged files keep their timestamps, so Sphinx rebuilds only what changed."""
    if path.exists() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def stage(edition: str) -> Path:
    """Write the sources of one edition to ``_build/stage/<edition>`` and return that folder."""
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}, got {edition!r}")
    if not (MATHJAX_ES5 / "tex-chtml.js").exists():
        raise FileNotFoundError(f"MathJax is missing at {MATHJAX_ES5}: run `bash scripts/setup.sh` first")
    target = course.BUILD / "stage" / edition
    config = yaml.safe_load((course.ROOT / "_config.yml").read_text())
    toc = yaml.safe_load((course.ROOT / "_toc.yml").read_text())
    if edition == "instructor":
        config["title"] = f"{config['title']} (instructor edition)"
        toc = _rename_toc(toc, "chapters/", "solutions/")

    written = set()

    def put(relative: str, data: bytes) -> None:
        _write_if_changed(target / relative, data)
        written.add(relative)

    banner = (
        f"# GENERATED by autograder/authoring/book.py from the repository's {{}} ({edition} edition). Do not edit.\n"
    )
    put("_config.yml", (banner.format("_config.yml") + yaml.safe_dump(config, sort_keys=False)).encode())
    put("_toc.yml", (banner.format("_toc.yml") + yaml.safe_dump(toc, sort_keys=False)).encode())

    for entry in toc_entries(toc):
        source = _source_file(entry)
        relative = source.relative_to(course.ROOT).as_posix()
        if source.suffix == ".ipynb" and relative.startswith("chapters/"):
            nb = student_page(source.parent.name)
        elif source.suffix == ".ipynb" and relative.startswith("solutions/"):
            nb = instructor_page(source.parent.name)
        else:
            put(relative, source.read_bytes())
            continue
        put(relative, nbformat.writes(nb).encode())

    for bibfile in config.get("bibtex_bibfiles", []):
        put(bibfile, (course.ROOT / bibfile).read_bytes())

    for part in MATHJAX_PARTS:
        origin = MATHJAX_ES5 / part
        for path in [origin] if origin.is_file() else sorted(p for p in origin.rglob("*") if p.is_file()):
            put(f"_vendor/mathjax/{path.relative_to(MATHJAX_ES5).as_posix()}", path.read_bytes())

    for path in sorted(target.rglob("*"), reverse=True):  # drop what an earlier stage left behind
        relative = path.relative_to(target).as_posix()
        if path.is_file() and relative not in written and not relative.startswith("_build/"):
            path.unlink()
    return target


def _stamp(edition: str) -> Path:
    return course.BUILD / edition / "built-from.sha256"


def _inputs_digest(source: Path) -> str:
    """A hash of everything a build is made from: the staged sources (pages, notebooks with their
    outputs, configuration, MathJax), the book's Sphinx extension and theme files, and the installed
    packages' versions (jupyter-book, Sphinx, the theme, ...)."""
    digest = hashlib.sha256(b"book-v1")
    extension = sorted((course.AUTOGRADER / "authoring").glob("book*.py"))  # book.py, book_extension.py
    theme = course.AUTOGRADER / "authoring" / "book_theme"
    files = [
        *(p for p in sorted(source.rglob("*")) if p.is_file() and "_build" not in p.relative_to(source).parts),
        *extension,
        *(sorted(p for p in theme.rglob("*") if p.is_file()) if theme.is_dir() else []),
    ]
    for path in files:
        digest.update(path.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    versions = sorted(f"{d.metadata.get('Name', '')}=={d.version}" for d in importlib.metadata.distributions())
    digest.update("\n".join(versions).encode())
    return digest.hexdigest()


def build(edition: str) -> Path:
    """Stage and build one edition with warnings as errors; return its HTML folder. When the last build
    passed from exactly these inputs, its HTML is returned as it is. One process at a time builds an
    edition (the test suite's workers ask for it at the same time): the others wait, then reuse it."""
    course.BUILD.mkdir(parents=True, exist_ok=True)
    with open(course.BUILD / f".{edition}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        return _build(edition)


def _build(edition: str) -> Path:
    source = stage(edition)
    digest = _inputs_digest(source)
    stamp = _stamp(edition)
    if stamp.exists() and stamp.read_text().strip() == digest and (html_dir(edition) / "index.html").is_file():
        return html_dir(edition)
    stamp.unlink(missing_ok=True)
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    command = [
        str(jupyter_book),
        "build",
        str(source),
        "--path-output",
        str(course.BUILD / edition),
        "-W",
        "--keep-going",
        # Every page, not only the changed ones: each page carries the whole book's navigation, and an
        # incremental Sphinx build leaves the other pages' sidebars without a chapter added to _toc.yml.
        "--all",
    ]
    # The book's Sphinx extension is autograder.authoring.book_extension: the build must import it.
    completed = subprocess.run(command, capture_output=True, text=True, env=course.environment_with_course())
    if completed.returncode != 0:
        shutil.rmtree(course.BUILD / edition / "_build" / ".doctrees", ignore_errors=True)
        output = f"{completed.stdout[-6000:]}\n{completed.stderr[-6000:]}"
        raise RuntimeError(f"jupyter-book build of the {edition} edition failed:\n{output}")
    if edition == "student":
        # The download button serves _sources/: give readers exactly the notebook students receive.
        for assignment in course.assignments():
            download = html_dir(edition) / "_sources" / "chapters" / assignment / f"{assignment}.ipynb"
            if download.exists():
                download.write_bytes(course.student_notebook(assignment).read_bytes())
    stamp.write_text(digest + "\n")
    return html_dir(edition)
