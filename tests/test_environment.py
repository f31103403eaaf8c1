"""environment.yml (conda) and requirements.txt (pip) pin the same packages."""

from __future__ import annotations

import yaml

from autograder import course

_pins = course.pins


def test_environment_yml_agrees_with_requirements():
    pip_pins = _pins((course.ROOT / "requirements.txt").read_text().splitlines())
    assert pip_pins, "requirements.txt pins nothing"
    environment = yaml.safe_load((course.ROOT / "environment.yml").read_text())
    conda_lines, pip_lines = [], []
    for dependency in environment["dependencies"]:
        if isinstance(dependency, dict):
            pip_lines += dependency.get("pip", [])
        else:
            conda_lines.append(dependency.replace("=", "==", 1) if "==" not in dependency else dependency)
    listed = {**_pins(conda_lines), **_pins(pip_lines)}
    listed.pop("python", None)
    assert listed == pip_pins, f"environment.yml {listed} != requirements.txt {pip_pins}"
