"""Copy each chapter of chapters/ that work/ does not hold yet into work/ (never overwrite).

``bash scripts/student_lab.sh`` runs this before it opens JupyterLab on work/: students work
on their own copies, so that chapters/ (generated, committed) stays as the course ships it and
a ``git pull`` never meets a student's answers.

Each copy gets the notebook metadata JupyterLab itself would write once the kernel has
started: the ``python3`` kernel's specification and the ``language_info`` of this Python (its
version included). A notebook whose metadata differs is rewritten by JupyterLab as soon as
its kernel starts, and so opens marked as modified. The committed notebooks cannot carry the
version of every student's Python; the copies can.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import nbformat
from ipykernel.ipkernel import IPythonKernel
from ipykernel.kernelspec import get_kernel_dict

ROOT = Path(__file__).resolve().parent.parent.parent


def kernel_metadata() -> dict:
    spec = get_kernel_dict()
    return {
        "kernelspec": {"display_name": spec["display_name"], "language": spec["language"], "name": "python3"},
        "language_info": dict(IPythonKernel.language_info),
    }


def copy_chapters(chapters: Path, work: Path) -> list[Path]:
    """Copy what ``work`` lacks; return the notebooks written."""
    written = []
    for source in sorted(chapters.glob("*/*.ipynb")):
        target = work / source.relative_to(chapters)
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        for other in source.parent.iterdir():  # files shipped beside the notebook, if any
            if other.is_file() and other.suffix != ".ipynb" and not (target.parent / other.name).exists():
                shutil.copy2(other, target.parent / other.name)
        nb = nbformat.read(source, as_version=4)
        nb.metadata.update(kernel_metadata())
        nbformat.write(nb, target)
        written.append(target)
    return written


if __name__ == "__main__":
    work = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "work"
    for path in copy_chapters(ROOT / "chapters", work):
        print(f"new: {path.relative_to(work.parent)}")
