"""A reader's Python, for the tests: the course's wheel in a fresh virtual environment.

The fresh environment has the pinned dependencies of this repository's ``.venv`` (numpy,
torch, matplotlib, ipykernel, nbclient, pip, ...) without a network: a ``.pth`` file points
at a folder of links to the entries of ``.venv``'s site-packages, leaving out the course
package's editable install (its finder, its ``.pth`` and its metadata) and every other
``.pth`` file. Neither the repository nor the editable install is on its ``sys.path``; the
course package comes only from the wheel installed into it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from autograder import course

KERNEL = "course-reader"


def build_wheel(out: Path) -> Path:
    """``pip wheel --no-deps`` of the course package (built from a copy: the checkout stays clean)."""
    with tempfile.TemporaryDirectory(prefix="course-src-") as scratch:
        source = Path(scratch)
        shutil.copy(course.ROOT / "pyproject.toml", source)
        shutil.copytree(course.ROOT / "attention_course", source / "attention_course",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))  # fmt: skip
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
             "--no-index", "--wheel-dir", str(out), str(source)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
    (wheel,) = out.glob("attention_course-*.whl")
    return wheel


def _excluded(name: str) -> bool:
    lowered = name.lower()
    return lowered.endswith(".pth") or lowered.startswith(("attention_course", "__editable__"))


def fresh_venv(path: Path) -> Path:
    """A virtual environment at ``path`` with the pinned dependencies and no course package;
    returns its python. A kernel spec named :data:`KERNEL` starts that python's ipykernel."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    site_packages = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )  # fmt: skip
    deps = path / "course-deps"
    deps.mkdir()
    ours = Path(sysconfig.get_paths()["purelib"])
    for entry in sorted(ours.iterdir()):
        if not _excluded(entry.name):
            (deps / entry.name).symlink_to(entry)
    (site_packages / "course-deps.pth").write_text(f"{deps}\n")
    spec = path / "share" / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "course reader", "language": "python"}))
    return python


def clean_env(home: Path) -> dict[str, str]:
    """Environment variables for the reader's processes: no PYTHONPATH, Jupyter folders of their own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "JUPYTER", "VIRTUAL_ENV"))}
    env.update(
        HOME=str(home),
        JUPYTER_CONFIG_DIR=str(home / ".jupyter"),
        JUPYTER_DATA_DIR=str(home / ".local" / "share" / "jupyter"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        MPLBACKEND="Agg",
        OMP_NUM_THREADS="1",
        PIP_NO_INDEX="1",  # nothing is downloaded
    )
    return env
