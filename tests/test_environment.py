"""environment.yml (conda) and requirements.txt (pip) pin the same packages."""

from __future__ import annotations

import re

import yaml

from autograder import course


def _pins(lines) -> dict[str, str]:
    pins = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*==\s*([^\s;]+)", line)
        if match:
            pins[match.group(1).lower().replace("_", "-")] = match.group(2)
    return pins


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
