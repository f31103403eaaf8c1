"""How the repository is laid out: each concept has one home, and the code's floors import only down.

- no import circle among the course's packages (``autograder``, ``attention_course``,
  ``experiments``): every import counts, also one inside a function (a circle hidden in a function
  is still two modules that need each other);
- every shipped data file is listed, with the command that makes it, in ``attention_course/assets/__init__.py``,
  and every program of ``experiments/`` in ``experiments/__init__.py``;
- README stays a guide a newcomer reads in minutes (at most 200 lines; what it leaves out lives in
  the guides it links to: ``solutions/README.md``, ``tests/README.md``, ``autograder/GRADING.md``,
  ``deploy/README.md``).
"""

from __future__ import annotations

import ast
from pathlib import Path

from autograder import course

PACKAGES = ("autograder", "attention_course", "experiments")


def _modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (course.ROOT / package).rglob("*.py"):
            parts = path.relative_to(course.ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def import_graph() -> dict[str, set[str]]:
    """Module -> the course's modules it imports (anywhere in its source)."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parents = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parents, base] if base else parents)
                for alias in node.names:
                    imported.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
        graph[name] = {other for other in imported if other in modules and other != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in sorted(graph[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_the_circle_finder_finds_a_circle():
    """Negative control: a two-module circle and a three-module one are found, a chain is not."""
    graph = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert sorted(circles(graph)) == [["a", "b"], ["c", "d", "e"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_import_circle():
    found = circles(import_graph())
    assert not found, (
        "modules that import each other (directly or around a circle; move what both need into one of "
        f"them, or into a module below both): {found}"
    )


def test_readme_is_a_guide():
    lines = (course.ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, (
        f"README.md has {len(lines)} lines (at most 200): move details to the guide it links to "
        "(solutions/README.md, tests/README.md, autograder/GRADING.md, deploy/README.md)"
    )
    for guide in ("solutions/README.md", "tests/README.md", "autograder/GRADING.md", "deploy/README.md"):
        assert guide in " ".join(lines), f"README does not link to {guide}"
        assert (course.ROOT / guide).is_file(), f"README links to {guide}, which does not exist"


def test_every_shipped_file_and_every_program_is_listed():
    import attention_course.assets
    import experiments

    folder = course.ROOT / "attention_course" / "assets"
    shipped = sorted(
        p.name + ("/" if p.is_dir() else "") for p in folder.iterdir() if not p.name.startswith(("_", "."))
    )
    unlisted = [name for name in shipped if f"``{name}``" not in attention_course.assets.__doc__]
    assert not unlisted, f"attention_course/assets/__init__.py does not list (with its command): {unlisted}"
    programs = sorted(p.stem for p in (course.ROOT / "experiments").glob("*.py") if p.stem != "__init__")
    unlisted = [name for name in programs if f":mod:`experiments.{name}`" not in experiments.__doc__]
    assert not unlisted, f"experiments/__init__.py does not list: {unlisted}"
