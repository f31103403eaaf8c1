"""How the repository is laid out: each concept has one home, and the code's floors import only down.

- no import circle among the course's packages (``autograder``, ``attention_course``,
  ``experiments``): every import counts, also one inside a function (a circle hidden in a function
  is still two modules that need each other);
- every shipped data file is listed, with the command that makes it, in ``attention_course/assets/__init__.py``,
  and every program of ``experiments/`` in ``experiments/__init__.py``;
- only the model of the course notebook (``autograder/conventions.py``) reads nbgrader's cell
  metadata, apart from a short list of exceptions, each with its reason (``METADATA_READERS``);
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


# ---- one reader of nbgrader's cell metadata -------------------------------------------------------------

# Where reading nbgrader's cell metadata directly is allowed ("path" or "path::top-level function"), and why.
METADATA_READERS = {
    "autograder/conventions.py": "the model of the course notebook: the one reader",
    "autograder/grading/sanitize.py::parse": "a submission's own metadata, read once and distrusted (never the "
    "instructor's notebook)",
    "tests/grader_zoo.py::zoo": "forges hostile submissions (test cells that claim 100 points)",
    "tests/test_hub_end_to_end.py": "checks that nbgrader's exchange hands the metadata back as nbgrader wrote it",
}


def metadata_reads(source: str, filename: str = "<snippet>") -> list[tuple[int, str]]:
    """(line, enclosing top-level function or "") of each place ``source`` reads nbgrader's cell metadata
    itself: ``x["nbgrader"]`` (not as an assignment target), ``x.get("nbgrader")``, ``"nbgrader" in x``,
    ``x.metadata.nbgrader``. Writing it (a test building a notebook) is no read."""
    found = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if function == "" and isinstance(child, (ast.FunctionDef, ast.ClassDef)) else function
            if (
                (isinstance(child, ast.Subscript) and isinstance(child.ctx, ast.Load) and _is_key(child.slice))
                or (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
                    and child.func.attr == "get" and child.args and _is_key(child.args[0]))
                or (isinstance(child, ast.Compare) and _is_key(child.left)
                    and isinstance(child.ops[0], (ast.In, ast.NotIn)))
                or (isinstance(child, ast.Attribute) and child.attr == "nbgrader"
                    and isinstance(child.value, ast.Attribute) and child.value.attr == "metadata")
            ):  # fmt: skip
                found.append((child.lineno, inner))
            visit(child, inner)

    visit(ast.parse(source, filename), "")
    return found


def _is_key(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == "nbgrader"


def test_the_metadata_finder_finds_a_direct_read():
    """Negative control: each way of reading the metadata is found, in the function that does it; writing is not."""
    snippet = (
        "def ids(nb):\n"
        '    return [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if "nbgrader" in c.metadata]\n'
        "def points(cell):\n"
        '    return cell.get("metadata", {}).get("nbgrader", {}).get("points")\n'
        "locked = cell.metadata.nbgrader.locked\n"
        'cell.metadata["nbgrader"] = {"grade_id": "f", "solution": True}\n'
        'template.nbgrader("GET", "/assignments")\n'
    )
    assert metadata_reads(snippet) == [(2, "ids"), (2, "ids"), (4, "points"), (5, "")]


def test_only_the_model_reads_nbgrader_metadata():
    """Every reader of a course notebook goes through autograder.conventions (kind, grade_id, read)."""
    offenders, used = [], set()
    for package in (*PACKAGES, "scripts", "tests"):
        for path in sorted((course.ROOT / package).rglob("*.py")):
            relative = path.relative_to(course.ROOT).as_posix()
            for line, function in metadata_reads(path.read_text(), relative):
                allowed = {relative, f"{relative}::{function}"} & set(METADATA_READERS)
                used |= allowed
                if not allowed:
                    offenders.append(f"{relative}:{line}")
    assert not offenders, (
        "these read nbgrader's cell metadata themselves; use autograder.conventions (kind, grade_id, "
        f"read/instructor for a course notebook), or add the file to METADATA_READERS with the reason: {offenders}"
    )
    stale = sorted(set(METADATA_READERS) - used)
    assert not stale, f"METADATA_READERS allows what no longer reads the metadata: remove {stale}"


MAX_LINES = 450
# Where long files are the point: the wrong and valid answers (a catalogue, one entry after another).
LONG_ALLOWED = ("tests/wrong_answers/",)
SOURCE_SUFFIXES = {".py", ".md", ".sh", ".yml", ".yaml", ".toml", ".cfg", ".txt", ".js", ".css"}


def long_files(paths: list[str]) -> dict[str, int]:
    """The tracked source and prose files over MAX_LINES lines (data, notebooks and drawings excepted)."""
    found = {}
    for name in paths:
        path = course.ROOT / name
        if Path(name).suffix not in SOURCE_SUFFIXES or name.startswith(LONG_ALLOWED) or not path.is_file():
            continue
        lines = len(path.read_text(errors="replace").splitlines())
        if lines > MAX_LINES:
            found[name] = lines
    return found


def test_no_source_file_is_over_450_lines():
    """One job per module: no source or prose file outside tests/wrong_answers/ is over 450 lines (split it by job)."""
    import subprocess

    tracked = subprocess.run(
        ["git", "ls-files"], cwd=course.ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert tracked, "git ls-files listed nothing: run the tests from a clone"
    assert long_files(tracked) == {}, f"files over {MAX_LINES} lines (split each by job): {long_files(tracked)}"
    # negative control: a long file is found, one under tests/wrong_answers/ is not
    probe = course.ROOT / "_build" / "layout_probe.py"
    probe.parent.mkdir(exist_ok=True)
    probe.write_text("x = 1\n" * (MAX_LINES + 1))
    try:
        assert long_files(["_build/layout_probe.py"]) == {"_build/layout_probe.py": MAX_LINES + 1}
    finally:
        probe.unlink()
    assert long_files(["tests/wrong_answers/ch08_attention_at_scale.py"]) == {}
