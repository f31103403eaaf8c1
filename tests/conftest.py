"""Shared fixtures: each notebook runs once, graded by the class grader's runner (cached across runs
in _build/graded/ by autograder/authoring/check.py; autograder/authoring/execute.py gives the book
and these fixtures that run's outputs), and each edition of the book is built once per run.

Test tiers (markers registered in pyproject.toml; README's second command runs them all; tests/README.md):
``book`` builds an edition of the book, ``browser`` drives headless Chromium, ``root`` needs
root (sandboxes, local users), ``hub`` runs a real JupyterHub, ``slow`` executes notebooks,
trains models or builds environments. The authors' quick loop deselects them all:
``.venv/bin/python -m pytest -m "not (book or browser or root or hub or slow)"``.
"""

from __future__ import annotations

import sys

import pytest
from chapter_matrix import params as representative_params

from autograder import course
from autograder.authoring import book
from autograder.authoring.execute import executed

ASSIGNMENTS = course.assignments()


# module -> tiers, for the modules whose every test belongs to a tier
MODULE_TIERS = {
    "test_book": ("book",),
    "test_browser": ("book", "browser"),
    "test_student_lab": ("browser", "slow"),
    "test_hub_end_to_end": ("hub", "root", "slow"),
    "test_grader_class": ("root", "slow"),
    "test_grader_sandbox": ("root", "slow"),
    "test_grader_term": ("root", "slow"),
    "test_grader_dask": ("root", "slow"),
    "test_z2jh_exchange": ("root",),  # seconds; tests/test_z2jh.py (no tier) needs .venv/z2jh/ from setup.sh
    "test_grader_boundary": ("slow",),  # starts kernels and grades whole notebooks
    "test_grader_collect": ("slow",),
    "test_grader_release": ("slow",),  # nbgrader's exchange code end to end (seconds: the gradebook's migrations)
    "test_both_ways": ("slow",),
    "test_nbgrader_end_to_end": ("slow",),
    "test_distributed_training": ("slow",),
    "test_training_scripts": ("slow",),
    "test_transformer_experiment": ("slow",),
    "test_reader": ("slow",),
}
# fixtures that put a test in a tier wherever it is
FIXTURE_TIERS = {
    "student_html": "book",
    "instructor_html": "book",
    "executed_reference": "slow",
}


# The suite runs on every core (pytest-xdist, `-n auto --dist loadscope` in pyproject.toml) with the
# scheduler below: each module is one unit of work, run by one worker in file order, so that its module
# fixtures run once; the modules with a test that needs root are one unit together, so that two of them
# never run at once (the sandboxes of parallel jobs take fixed uids, the hub adds local users).
ROOT_GROUP = "root"
ROOT_MODULES = {module for module, tiers in MODULE_TIERS.items() if "root" in tiers} | {
    "test_grader_recording",  # its sandbox cases
}
# Units are handed out in this order, the longest first (measured: `pytest --durations=0`, summed per
# unit), so that no long unit starts last and keeps one worker busy while the others wait; the rest
# follow in file order.
LONGEST_FIRST = (
    ROOT_GROUP,
    "test_browser",
    "test_both_ways",
    "test_reader",
    "test_nbgrader_end_to_end",
    "test_student_lab",
    "test_wrong_answers",
    "test_grader_boundary",
    "test_training_scripts",
)


def _group(module: str) -> str:
    return ROOT_GROUP if module in ROOT_MODULES else module


def _module(item) -> str:
    return item.module.__name__.rsplit(".", 1)[-1] if item.module else ""


def pytest_collection_modifyitems(config, items):
    for item in items:
        tiers = set(MODULE_TIERS.get(_module(item), ()))
        tiers.update(tier for name, tier in FIXTURE_TIERS.items() if name in getattr(item, "fixturenames", ()))
        for tier in sorted(tiers):
            item.add_marker(getattr(pytest.mark, tier))
    strays = sorted({_module(item) for item in items if item.get_closest_marker("root")} - ROOT_MODULES)
    if strays:
        raise pytest.UsageError(f"tests/conftest.py: {strays} need root: add them to ROOT_MODULES")
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(_group(_module(item)), len(rank)))  # stable: file order within


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's loadscope scheduler with the course's units: a module, or every module that needs root."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleOrRoot(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py"))

    return ModuleOrRoot(config, log)


def pytest_runtest_setup(item):
    """Every test starts with one PyTorch thread, whatever an earlier test set (the experiments' ``threads=1``
    is process-wide): a result does not depend on which tests ran before, and training in this process does
    not spin a second thread against the kernels and processes the suite runs beside it (on two cores, under
    load, test_variants' tiny run took 75 s of CPU with two threads instead of 8 s with one)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def pytest_generate_tests(metafunc):
    """``assignment``: every chapter; for a test marked ``representatives`` (a costly path), the chapters of
    tests/chapter_matrix.py, the others skipped unless COURSE_FULL_MATRIX=1."""
    if "assignment" in metafunc.fixturenames:
        costly = metafunc.definition.get_closest_marker("representatives") is not None
        metafunc.parametrize("assignment", representative_params(ASSIGNMENTS) if costly else ASSIGNMENTS)


@pytest.fixture(scope="session")
def executed_reference():
    """assignment -> the executed instructor notebook."""
    cache = {}

    def get(assignment: str):
        if assignment not in cache:
            cache[assignment] = executed(course.solution_notebook(assignment))
        return cache[assignment]

    return get


@pytest.fixture(scope="session")
def student_html():
    """The student edition, built with warnings as errors; its HTML folder."""
    return book.build("student")


@pytest.fixture(scope="session")
def instructor_html():
    """The instructor edition, built with warnings as errors; its HTML folder."""
    return book.build("instructor")
