"""The setup cell: the first code cell of every student notebook, the same in every chapter.

This file is its one source. ``python -m autograder generate`` inserts it (through
:class:`InsertSetupCell`, an nbgrader preprocessor that autograder/authoring/generate.py adds to
``generate_assignment``) right after each notebook's title cell, so that a student notebook
runs wherever it is opened:

- when ``attention_course`` at the course's version is importable (this repository's
  ``.venv``, the course's JupyterHub, Binder, a conda environment made from
  ``environment.yml``, a ``pip install`` of the wheel), the cell does nothing;
- in Google Colab (detected by its ``google.colab`` module having been imported), it
  pip-installs the wheel that the course's release ``v<version>`` publishes (its URL, derived
  from ``repository.url`` in ``_config.yml`` by autograder/authoring/publishing.py, is written
  into the cell when the notebooks are generated), plus the pinned version of each of the
  package's dependencies that Colab lacks (pins from ``requirements.txt``);
- anywhere else it stops with one sentence that says what to run.

It touches the network only in Colab.

The same preprocessor gives every student notebook the kernel specification JupyterLab writes
when the course's kernel (ipykernel's ``python3``) starts (:data:`NOTEBOOK_METADATA`): a
notebook whose kernel metadata differs from the running kernel's is rewritten, and so marked
modified, as soon as it opens. The other half of that metadata, ``language_info``, names the
kernel's exact Python version, which a committed file cannot know; the student's own
JupyterLab fills it into the student's copies (scripts/student_lab/copy_chapters.py).
"""

from __future__ import annotations

import json

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor

from autograder import course
from autograder.authoring.publishing import course_version, wheel_url

# The package's runtime dependencies (pyproject.toml), pinned in the cell as requirements.txt pins them.
DEPENDENCIES = ("numpy", "matplotlib", "torch")
TAG = "course-setup"

# What JupyterLab stores as "kernelspec" when it starts ipykernel's "python3" kernel.
NOTEBOOK_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
}

TEMPLATE = """\
# Setup, the same in every chapter: checks that the course's package attention_course is
# installed. It installs nothing, except in Google Colab, where it installs the package.
def _course_setup(
    version={version},
    wheel={wheel},
    pins={pins},
):
    import importlib
    import importlib.util
    import subprocess
    import sys
    import warnings

    def installed_version():
        try:
            import attention_course
        except ImportError:
            return None
        return getattr(attention_course, "__version__", "unknown")

    found = installed_version()
    if found == version:
        return
    warnings.filterwarnings("ignore", message="To exit")  # IPython's hint when a cell raises SystemExit
    if "google.colab" not in sys.modules:
        raise SystemExit(
            f"This notebook needs the course's package attention_course {{version}} (found: {{found or 'none'}}): "
            f"run `pip install \\"{{wheel}}\\"` (or `bash scripts/setup.sh` in a clone of the course), "
            "then restart the kernel and run this cell again."
        )
    missing = [pin for pin in pins if importlib.util.find_spec(pin.split("==")[0]) is None]
    print(f"Installing attention_course {{version}}", *missing)
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", wheel, *missing])
    if pip.returncode != 0:
        raise SystemExit(f"pip could not install {{wheel}} (see above), which the release v{{version}} publishes.")
    importlib.invalidate_caches()
    if found is not None or installed_version() != version:
        raise SystemExit(f"Installed attention_course {{version}}: restart the session, then run this cell again.")


_course_setup()"""


def dependency_pins() -> tuple[str, ...]:
    """``name==version`` of each of the package's dependencies, from requirements.txt."""
    pins = course.pins((course.ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines())
    absent = [name for name in DEPENDENCIES if name not in pins]
    if absent:
        raise ValueError(f"requirements.txt pins none of {absent}")
    return tuple(f"{name}=={pins[name]}" for name in DEPENDENCIES)


def setup_source(version: str | None = None, wheel: str | None = None, pins: tuple[str, ...] | None = None) -> str:
    """The cell's source; the arguments (tests only) default to the course's own values: its
    version, the URL of the wheel its release publishes, the pins of its dependencies."""
    pins = tuple(pins if pins is not None else dependency_pins())
    version = version or course_version()
    return TEMPLATE.format(
        version=json.dumps(version),
        wheel=json.dumps(wheel or wheel_url(version)),
        pins="(" + ", ".join(json.dumps(pin) for pin in pins) + ("," if len(pins) == 1 else "") + ")",
    )


def setup_cell() -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(setup_source(), metadata={"tags": [TAG]})
    cell.id = TAG  # a fixed id, so that regenerating gives the same file
    return cell


def is_setup_cell(cell) -> bool:
    return cell.cell_type == "code" and TAG in cell.metadata.get("tags", [])


def with_setup_cell(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` with exactly one setup cell, right after its first (title) cell, and the kernel
    specification of :data:`NOTEBOOK_METADATA` (idempotent)."""
    cells = [cell for cell in nb.cells if not is_setup_cell(cell)]
    nb.cells = cells[:1] + [setup_cell()] + cells[1:]
    nb.metadata.update(nbformat.from_dict(NOTEBOOK_METADATA))
    return nb


class InsertSetupCell(NbGraderPreprocessor):
    """nbgrader preprocessor: see :func:`with_setup_cell`. Runs last in ``generate_assignment``."""

    def preprocess(self, nb, resources):
        return with_setup_cell(nb), resources
