"""Binder (repo2docker's files in binder/) and conda (environment.yml) give an environment in
which the chapters run: the pinned dependencies and the course package. Neither Binder nor
conda is available offline, so the files are parsed, and the step of each that installs the
course package is run as they would run it, in a fresh virtual environment without network
(tests/course_venv.py)."""

from __future__ import annotations

import os
import re
import subprocess

import yaml
from course_venv import clean_env, fresh_venv
from test_environment import _pins

from autograder import course
from autograder.authoring.setup_cell import course_version

BINDER = course.ROOT / "binder"
PACKAGE_DEPENDENCIES = ("numpy", "matplotlib", "torch")  # pyproject.toml's dependencies


def test_binder_pins_what_the_package_needs_as_requirements_txt_does():
    course_pins = _pins((course.ROOT / "requirements.txt").read_text().splitlines())
    binder_lines = (BINDER / "requirements.txt").read_text().splitlines()
    binder_pins = _pins(binder_lines)
    assert set(binder_pins) == set(PACKAGE_DEPENDENCIES), f"binder/requirements.txt pins {sorted(binder_pins)}"
    assert {name: course_pins[name] for name in binder_pins} == binder_pins
    unpinned = [
        line for line in binder_lines if line.strip() and not line.lstrip().startswith(("#", "--")) and "==" not in line
    ]
    assert not unpinned, f"unpinned lines in binder/requirements.txt: {unpinned}"


def test_binder_python_is_the_course_python():
    runtime = (BINDER / "runtime.txt").read_text().strip()
    environment = yaml.safe_load((course.ROOT / "environment.yml").read_text())
    conda_python = next(d for d in environment["dependencies"] if isinstance(d, str) and d.startswith("python="))
    assert runtime == f"python-{conda_python.split('=', 1)[1]}"


def test_binder_postbuild_installs_the_course_package(tmp_path):
    """repo2docker runs binder/postBuild from the repository root with its environment's python first on PATH."""
    post_build = BINDER / "postBuild"
    assert os.access(post_build, os.X_OK), "binder/postBuild must be executable"
    python = fresh_venv(tmp_path / "venv")
    env = clean_env(tmp_path / "home")
    env["PATH"] = f"{python.parent}{os.pathsep}{env['PATH']}"
    env["PIP_NO_BUILD_ISOLATION"] = "0"  # build with the environment's setuptools: no download
    build = tmp_path / "repo"  # a copy, as repo2docker builds from one (and the checkout stays clean)
    build.mkdir()
    for name in ("pyproject.toml", "attention_course", "binder"):
        subprocess.run(["cp", "-r", name, str(build)], cwd=course.ROOT, check=True)
    completed = subprocess.run(["./binder/postBuild"], cwd=build, env=env, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr[-3000:]
    probe = "import attention_course, sys; print(attention_course.__version__, attention_course.__file__)"
    version, location = subprocess.run(
        [str(python), "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert version == course_version() and location.startswith(str(tmp_path / "venv"))


def test_environment_yml_installs_the_course_package(tmp_path):
    """conda runs pip on the file's pip list from the file's folder; the list's one line that is
    not a pin must install this repository's package."""
    environment = yaml.safe_load((course.ROOT / "environment.yml").read_text())
    pip_lines = next(d["pip"] for d in environment["dependencies"] if isinstance(d, dict))
    others = [line for line in pip_lines if not re.fullmatch(r"[A-Za-z0-9_.\-]+==\S+", line)]
    assert others == ["-e ."], f"environment.yml's pip list should end in the course package, has {others}"
    python = fresh_venv(tmp_path / "venv")
    env = clean_env(tmp_path / "home")
    env["PIP_NO_BUILD_ISOLATION"] = "0"
    requirements = tmp_path / "condaenv.requirements.txt"
    requirements.write_text("\n".join(others) + "\n")
    completed = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "-r", str(requirements)],
        cwd=course.ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    probe = "import attention_course; from attention_course import assets; print(attention_course.__version__)"
    out = subprocess.run([str(python), "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == course_version()
