"""The setup cell at the top of every student notebook (autograder/authoring/setup_cell.py), in its three
branches: the course package present (nothing happens), Google Colab (it installs the wheel that
the course's release v<version> publishes, plus the pins of what is missing; here the wheel is
built from this repository and served from 127.0.0.1 at the path GitHub gives a release asset),
and anywhere else without the package (it stops with one sentence that says what to run). Only
the Colab branch may start a process or open a connection."""

from __future__ import annotations

import functools
import http.server
import re
import socket
import subprocess
import sys
import threading
import types

import nbformat
import pytest
from course_venv import build_wheel, clean_env, fresh_venv

from autograder import course
from autograder.authoring.publishing import install_command, repository, wheel_name, wheel_url
from autograder.authoring.setup_cell import course_version, dependency_pins, is_setup_cell, setup_source

VERSION = course_version()


def test_version_has_one_source():
    """pyproject.toml takes the version from attention_course.__version__; the cell asks for the same."""
    import attention_course

    assert attention_course.__version__ == VERSION
    assert 'version = { attr = "attention_course.__version__" }' in (course.ROOT / "pyproject.toml").read_text()
    assert f'version="{VERSION}"' in setup_source()


def test_readme_and_introduction_give_the_cells_command():
    """The install command the cell prints is the one README and the book's introduction give."""
    command = install_command()
    for page in ("README.md", "intro.md"):
        assert command in " ".join((course.ROOT / page).read_text().split()), f"{page} lacks `{command}`"


def test_every_student_notebook_starts_with_the_same_setup_cell(assignment):
    nb = nbformat.read(course.student_notebook(assignment), as_version=4)
    setup = [index for index, cell in enumerate(nb.cells) if is_setup_cell(cell)]
    assert setup == [1], f"{assignment}: setup cells at {setup}, expected one right after the title"
    assert nb.cells[1].source == setup_source(), f"{assignment}: stale setup cell; run `python -m autograder generate`"
    assert not nb.cells[1].outputs
    assert f'wheel="{wheel_url()}"' in setup_source() and all(pin in setup_source() for pin in dependency_pins())


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
    assert install_command() in message
    assert "scripts/setup.sh" in message and "found: none" in message
    assert capsys.readouterr() == ("", "")


def test_other_version_stops_too(offline, monkeypatch):
    monkeypatch.setitem(sys.modules, "attention_course", types.SimpleNamespace(__version__="0.0.1"))
    with pytest.raises(SystemExit) as stopped:
        _run_cell()
    assert "found: 0.0.1" in str(stopped.value) and _one_sentence(str(stopped.value))


def _fake_pip(monkeypatch, returncode: int) -> list:
    """Colab simulated, the package absent, torch absent; pip replaced by a recorder."""
    import importlib.util

    commands = []
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setitem(sys.modules, "attention_course", None)

    def pip(command, **kwargs):
        commands.append(command)
        return subprocess.CompletedProcess(command, returncode)

    monkeypatch.setattr(subprocess, "run", pip)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real_find_spec(name))
    return commands


def test_colab_installs_the_release_wheel_and_the_pins_of_what_is_missing(monkeypatch):
    """In Colab, one pip command: the wheel of the release v<version>, plus pins only for what is absent."""
    commands = _fake_pip(monkeypatch, returncode=0)
    with pytest.raises(SystemExit, match="restart"):  # the fake pip installed nothing
        _run_cell()
    torch_pin = next(pin for pin in dependency_pins() if pin.startswith("torch=="))
    assert commands == [[sys.executable, "-m", "pip", "install", "--quiet", wheel_url(), torch_pin]]
    assert wheel_url() == (
        f"https://github.com/{repository()}/releases/download/v{VERSION}/attention_course-{VERSION}-py3-none-any.whl"
    )


def test_colab_without_the_release_stops_with_one_sentence(monkeypatch):
    """pip fails (no such release yet, no network): the cell says which file it needed and who publishes it."""
    _fake_pip(monkeypatch, returncode=1)
    with pytest.raises(SystemExit) as stopped:
        _run_cell()
    message = str(stopped.value)
    assert _one_sentence(message.replace(wheel_url(), "URL")), f"not one sentence: {message!r}"
    assert wheel_url() in message and f"release v{VERSION}" in message


class _ReleaseServer(http.server.SimpleHTTPRequestHandler):
    """Serves a folder laid out like GitHub's release downloads; records each request's path."""

    def __init__(self, *args, requests: list, **kwargs):
        self.requests = requests
        super().__init__(*args, **kwargs)

    def log_message(self, *args):
        self.requests.append((self.command, self.path))


def test_colab_simulated_installs_the_wheel_the_release_publishes(tmp_path):
    """A fresh environment without the package, Colab simulated (its module imported), the wheel
    built from this repository and served from 127.0.0.1 at the path GitHub gives the asset of the
    release v<version> (/OWNER/NAME/releases/download/v<version>/<wheel>; the cell's URL differs only
    in its host): after the cell, the package imports at the course's version from that wheel, and
    pip asked for nothing else."""
    built = build_wheel(tmp_path / "built")
    assert built.name == wheel_name(), f"pip wheel gives {built.name}, the release publishes {wheel_name()}"
    served = tmp_path / "served"
    asset = served / repository() / "releases" / "download" / f"v{VERSION}" / wheel_name()
    asset.parent.mkdir(parents=True)
    built.rename(asset)

    requests: list = []
    handler = functools.partial(_ReleaseServer, directory=str(served), requests=requests)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = wheel_url(repository=f"http://127.0.0.1:{server.server_address[1]}/{repository()}")
        assert url.endswith(f"/{asset.relative_to(served).as_posix()}")
        python = fresh_venv(tmp_path / "venv")
        env = clean_env(tmp_path / "home")  # PIP_NO_INDEX: the dependencies must already be there
        env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1"
        script = (
            "import sys, types\n"
            "sys.modules['google'] = types.ModuleType('google')\n"
            "sys.modules['google.colab'] = types.ModuleType('google.colab')\n"
            f"exec(compile({setup_source(wheel=url)!r}, '<setup cell>', 'exec'), {{'__name__': '__main__'}})\n"
            "import attention_course\n"
            "print(attention_course.__version__, attention_course.__file__)\n"
        )
        completed = subprocess.run(
            [str(python), "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )
    finally:
        server.shutdown()
        server.server_close()
    assert completed.returncode == 0, f"{completed.stdout[-2000:]}\n{completed.stderr[-3000:]}"
    version, location = completed.stdout.strip().splitlines()[-1].split()
    assert version == VERSION
    assert location.startswith(str(tmp_path / "venv")), f"imported from {location}"
    assert requests == [("GET", f"/{asset.relative_to(served).as_posix()}")], f"pip asked for {requests}"
