"""The setup cell at the top of every student notebook (autograder/authoring/setup_cell.py), in its three
branches: the course package present (nothing happens), Google Colab (it installs the package
at the course's version from the course's repository, here a local git repository reached by
a file URL, plus the pins of what is missing), and anywhere else without the package (it stops
with one sentence that says what to run). Only the Colab branch may start a process or open a
connection."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest
from course_venv import clean_env, fresh_venv

from autograder import course
from autograder.authoring.setup_cell import (
    course_repository,
    course_version,
    dependency_pins,
    is_setup_cell,
    setup_source,
)

VERSION = course_version()


def test_version_has_one_source():
    """pyproject.toml takes the version from attention_course.__version__; the cell asks for the same."""
    import attention_course

    assert attention_course.__version__ == VERSION
    assert 'version = { attr = "attention_course.__version__" }' in (course.ROOT / "pyproject.toml").read_text()
    assert f'version="{VERSION}"' in setup_source()


def test_readme_and_introduction_give_the_cells_command():
    """The install command the cell prints is the one README and the book's introduction give."""
    command = f'pip install "attention-course @ git+{course_repository()}@v{VERSION}"'
    for page in ("README.md", "intro.md"):
        assert command in " ".join((course.ROOT / page).read_text().split()), f"{page} lacks `{command}`"


def test_every_student_notebook_starts_with_the_same_setup_cell(assignment):
    nb = nbformat.read(course.student_notebook(assignment), as_version=4)
    setup = [index for index, cell in enumerate(nb.cells) if is_setup_cell(cell)]
    assert setup == [1], f"{assignment}: setup cells at {setup}, expected one right after the title"
    assert nb.cells[1].source == setup_source(), f"{assignment}: stale setup cell; run `python -m autograder generate`"
    assert not nb.cells[1].outputs
    assert f"{course_repository()}" in setup_source() and all(pin in setup_source() for pin in dependency_pins())


@pytest.fixture
def offline(monkeypatch):
    """Any process started or connection opened fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"the setup cell tried to reach out: {args[:2]}")

    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)


def _run_cell(source: str = None):
    exec(compile(source or setup_source(), "<setup cell>", "exec"), {"__name__": "__main__"})


def test_present_does_nothing(offline, capsys):
    import attention_course

    assert attention_course.__version__ == VERSION
    _run_cell()
    assert capsys.readouterr() == ("", "")


def _one_sentence(message: str) -> bool:
    return message.endswith(".") and len(re.findall(r"[.!?](?:\s|$)", message)) == 1


def test_missing_stops_with_one_sentence_saying_what_to_run(offline, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "attention_course", None)  # import attention_course -> ImportError
    with pytest.raises(SystemExit) as stopped:
        _run_cell()
    message = str(stopped.value)
    assert _one_sentence(message), f"not one sentence: {message!r}"
    assert f'pip install "attention-course @ git+{course_repository()}@v{VERSION}"' in message
    assert "scripts/setup.sh" in message and "found: none" in message
    assert capsys.readouterr() == ("", "")


def test_other_version_stops_too(offline, monkeypatch):
    monkeypatch.setitem(sys.modules, "attention_course", types.SimpleNamespace(__version__="0.0.1"))
    with pytest.raises(SystemExit) as stopped:
        _run_cell()
    assert "found: 0.0.1" in str(stopped.value) and _one_sentence(str(stopped.value))


def test_colab_installs_the_package_and_the_pins_of_what_is_missing(monkeypatch):
    """In Colab, one pip command: the package at the course's tag, plus pins only for what is absent."""
    import importlib.util

    commands = []
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setitem(sys.modules, "attention_course", None)
    monkeypatch.setattr(subprocess, "run", lambda command, **kwargs: commands.append(command))
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real_find_spec(name))
    with pytest.raises(SystemExit, match="restart"):  # the fake pip installed nothing
        _run_cell()
    torch_pin = next(pin for pin in dependency_pins() if pin.startswith("torch=="))
    package = f"attention-course @ git+{course_repository()}@v{VERSION}"
    assert commands == [[sys.executable, "-m", "pip", "install", "--quiet", package, torch_pin]]


def _git(*args: str, cwd: Path) -> None:
    identity = ["-c", "user.name=course test", "-c", "user.email=test@localhost", "-c", "init.defaultBranch=main"]
    subprocess.run(["git", *identity, *args], cwd=cwd, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_colab_simulated_installs_from_the_repository_tag(tmp_path):
    """A fresh environment without the package, Colab simulated (its module imported), the course's
    repository replaced by a local git repository with the tag v<version>: after the cell, the
    package imports at the course's version, installed from that tag, and nothing was downloaded."""
    repository = tmp_path / "course"
    repository.mkdir()
    shutil.copy(course.ROOT / "pyproject.toml", repository)
    shutil.copytree(
        course.ROOT / "attention_course", repository / "attention_course", ignore=shutil.ignore_patterns("__pycache__")
    )
    _git("init", "-q", cwd=repository)
    _git("add", ".", cwd=repository)
    _git("commit", "-q", "-m", "course", cwd=repository)
    _git("tag", f"v{VERSION}", cwd=repository)

    python = fresh_venv(tmp_path / "venv")
    env = clean_env(tmp_path / "home")
    env["PIP_NO_BUILD_ISOLATION"] = "0"  # build with the environment's setuptools: no download
    # "git+file://localhost/...": a PEP 508 URL needs a host part, and git accepts this one.
    source = setup_source(repository=f"file://localhost{repository}")
    script = (
        "import sys, types\n"
        "sys.modules['google'] = types.ModuleType('google')\n"
        "sys.modules['google.colab'] = types.ModuleType('google.colab')\n"
        f"exec(compile({source!r}, '<setup cell>', 'exec'), {{'__name__': '__main__'}})\n"
        "import attention_course\n"
        "print(attention_course.__version__, attention_course.__file__)\n"
    )
    completed = subprocess.run(
        [str(python), "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert completed.returncode == 0, f"{completed.stdout[-2000:]}\n{completed.stderr[-3000:]}"
    version, location = completed.stdout.strip().splitlines()[-1].split()
    assert version == VERSION
    assert location.startswith(str(tmp_path / "venv")), f"imported from {location}"
