"""Correct work never loses a point to the grader's trust boundary (issue 15).

These run the grader's own runner without a sandbox (``Options(unsafe=True)``: no root needed,
the tests still run in this process and the student's code in a kernel of its own), or the call
protocol in-process (an agent in this process, same requests and answers). Each test names the
defect it pins down.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import gc
import json
from pathlib import Path

import nbformat
import pytest
import torch
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder import course
from autograder.authoring import check
from autograder.conventions import is_demo_cell, is_export_cell
from autograder.grading import rpc, runner, startup, state, template
from autograder.grading.kernel.rpc import Agent
from autograder.grading.names import free_names, import_statements
from autograder.grading.sandbox import Sandbox

UNSAFE = dict(unsafe=True, timeout=300, call_timeout=120)
state.baseline()  # this process's state before any test below patches anything


def loopback(namespace: dict) -> tuple[rpc.Session, Agent]:
    agent = Agent(namespace)
    return rpc.Session(agent.rpc), agent


def _grade(assignment: str, nb, student="s", **options) -> runner.Result:
    data = nbformat.writes(nb).encode() if not isinstance(nb, bytes) else nb
    return runner.grade(student, data, assignment, runner.Options(**{**UNSAFE, **options}), slot=11)


def _without_demos(nb):
    """The notebook with each demo cell cut to its import statements: what a test cell may read (the imports,
    the answers, its own exercise's cells; tests/test_wrong_answers.py checks that of every chapter), without
    the demos' figures and training runs, which the tests below are not about."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if is_demo_cell(cell) and not is_export_cell(cell):
            cell.source = "\n".join(statement for statement, _ in import_statements(cell.source))
            cell.outputs = []
    return nb


def _rows(result: runner.Result) -> list[tuple]:
    return [(c.grade_id, c.score, c.reason, c.output) for c in result.cells]


# ---- a small assignment of our own -------------------------------------------------------------------


def _cell(source, grade_id, *, solution=False, grade=False, points=0):
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade_id": grade_id, "solution": solution, "grade": grade, "locked": not solution,
                                 "schema_version": 3, **({"points": points} if grade else {})}  # fmt: skip
    return cell


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """``make(tests, answer)``: an assignment ``99_toy`` whose instructor notebook defines ``f`` by
    ``answer`` and holds these test cells; returns (reference notebook, stub notebook)."""

    def make(tests: dict[str, str], answer="def f(x):\n    return x"):
        cells = [new_markdown_cell("# Toy"), new_code_cell("import numpy as np\nimport torch"),
                 _cell(answer, "f", solution=True)]  # fmt: skip
        cells += [_cell(source, grade_id, grade=True, points=1) for grade_id, source in tests.items()]
        reference = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "language": "python",
                                                                       "display_name": "Python 3"}})  # fmt: skip
        stub = nbformat.from_dict(json.loads(nbformat.writes(reference)))
        stub.cells[2].source = "def f(x):\n    raise NotImplementedError()"
        for name, nb in (("solutions", reference), ("chapters", stub)):
            path = tmp_path / name / "99_toy" / "99_toy.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, path)
        monkeypatch.setattr(course, "solution_notebook", lambda a: tmp_path / "solutions" / a / f"{a}.ipynb")
        monkeypatch.setattr(course, "student_notebook", lambda a: tmp_path / "chapters" / a / f"{a}.ipynb")
        template.load_template.cache_clear()
        return reference, stub

    yield make
    template.load_template.cache_clear()


# ---- 1. names a test assigns are not the student's -----------------------------------------------------


def test_free_names_are_only_what_a_cell_reads_before_defining():
    source = (
        "got = f(H)\nassert got == E\n"
        "for i in range(3):\n    x = g(i)\n    assert x\n"
        "[y for y in Z if y > k]\n"
        "def h(a):\n    return a + w + got\n"
        "t += 1\nimport numpy as np\nnp.x\n(lambda q: q + r)\n"
        "try:\n    pass\nexcept ValueError as e:\n    print(e)\n"
    )
    assert free_names(source) == {"f", "H", "E", "g", "Z", "k", "w", "t", "r"}
    # names a function binds with `except ... as` or `import ... as` are its own, not the student's
    inner = (
        "def check(call):\n    import math as m\n    try:\n        call()\n"
        "    except ValueError as error:\n        return m.pi, str(error)\n"
    )
    assert free_names(inner + "check(f)\n") == {"f"}


def test_a_students_large_globals_under_the_tests_names_cost_nothing():
    """Defect 1: exploration left large arrays under names the tests assign (got, logits, E...)."""
    nb = nbformat.read(course.solution_notebook("03_attention_steps"), as_version=4)
    names = ["got", "expected", "E", "alpha", "logits", "scores", "weights", "out", "a", "s", "x", "e", "w"]
    nb.cells.insert(2, new_code_cell("import numpy as np\n" + "\n".join(f"{n} = np.ones(3_000_000)" for n in names)))
    result = _grade("03_attention_steps", nb)
    assert [c for c in result.cells if c.kind == "test" and c.score != c.max_score] == []


# ---- 2. plain data crosses as data ------------------------------------------------------------------------


STUDENT_CONTAINERS = """
import collections, dataclasses
Pair = collections.namedtuple("Pair", ["left", "right"])
class MyList(list):
    pass
class MyTuple(tuple):
    pass
@dataclasses.dataclass
class Point:
    x: float
    y: list
def containers():
    counts = collections.defaultdict(int)
    counts["a"] += 2
    return {
        "defaultdict": counts,
        "ordered": collections.OrderedDict([("b", 1), ("a", 2)]),
        "counter": collections.Counter("abca"),
        "pair": Pair(1, [2.5]),
        "mylist": MyList([1, 2]),
        "mytuple": MyTuple((3, 4)),
        "point": Point(1.5, [1, 2]),
    }
"""


def test_containers_of_plain_data_compare_by_value():
    namespace = {}
    exec(STUDENT_CONTAINERS, namespace)
    session, _ = loopback(namespace)
    got = session.lookup({"containers"})["containers"]()
    assert got["defaultdict"] == {"a": 2} and isinstance(got["defaultdict"], collections.defaultdict)
    assert got["ordered"] == collections.OrderedDict([("b", 1), ("a", 2)]) and list(got["ordered"]) == ["b", "a"]
    assert got["counter"] == collections.Counter({"a": 2, "b": 1, "c": 1}) and got["counter"].most_common(1)
    assert got["pair"] == (1, [2.5]) and got["pair"].left == 1 and got["pair"]._fields == ("left", "right")
    assert got["mylist"] == [1, 2] and got["mytuple"] == (3, 4)
    assert dataclasses.is_dataclass(got["point"]) and dataclasses.asdict(got["point"]) == {"x": 1.5, "y": [1, 2]}
    assert got["point"].x == 1.5
    point_class = session.lookup({"Point"})["Point"]
    assert got["point"] == point_class(1.5, [1, 2]) and got["point"] != point_class(0.0, [])


# ---- 3. CPU and GPU graders agree ------------------------------------------------------------------------


def test_a_grader_that_sees_cuda_grades_like_one_that_does_not(monkeypatch):
    """Defect 3: the grader's torch claims a GPU (as torch's own functions would on a CUDA machine); the
    sandbox has none. Chapter 05's device tests must still give the reference full marks, the stub 0."""

    def is_available():
        return True

    def device_count():
        return 1

    for function in (is_available, device_count):
        function.__module__ = "torch.cuda"  # indistinguishable from torch's own
    monkeypatch.setattr(torch.cuda, "is_available", is_available)
    monkeypatch.setattr(torch.cuda, "device_count", device_count)
    reference = nbformat.read(course.solution_notebook("05_gpu_training"), as_version=4)
    graded = _grade("05_gpu_training", _without_demos(reference))
    lost = [(c.grade_id, c.reason) for c in graded.cells if c.kind == "test" and c.score != c.max_score]
    assert not lost, lost
    assert [c.grade_id for c in graded.cells if c.kind == "test"] == list(
        template.load_template("05_gpu_training").tests
    )
    stub = _grade("05_gpu_training", nbformat.read(course.student_notebook("05_gpu_training"), as_version=4))
    assert [c.grade_id for c in stub.cells if c.score] == []


# ---- 4. each submission starts from the same grader state ----------------------------------------------------

POLLUTES = """
import random, warnings, matplotlib
torch.set_default_dtype(torch.float64)
torch.manual_seed(1); np.random.seed(1); random.seed(1)
warnings.filters.insert(0, ("error", None, Warning, None, 0))
matplotlib.rcParams["lines.linewidth"] = 9.0
np.testing.assert_allclose = lambda *args, **kwargs: None
torch.Tensor.tolist = lambda self: "patched"
assert f(1) == 1  # the stub raises here: nothing below runs
torch.set_default_dtype(torch.float32)
"""
OBSERVES = """
import random, warnings, matplotlib
print(torch.get_default_dtype(), torch.rand(1).item(), np.random.rand(), random.random(), len(warnings.filters),
      matplotlib.rcParams["lines.linewidth"], np.testing.assert_allclose.__name__, torch.ones(1).tolist())
assert f(2) == 2
"""


def test_the_same_submissions_in_two_orders_get_the_same_rows(toy):
    """Defect 4: a test cell that fails half-way leaves global state behind in the (reused) grader process."""
    reference, stub = toy({"observes": OBSERVES, "pollutes": POLLUTES})
    first = [_rows(_grade("99_toy", nb, who)) for who, nb in (("stub", stub), ("reference", reference))]
    second = [_rows(_grade("99_toy", nb, who)) for who, nb in (("reference", reference), ("stub", stub))]
    assert first == second[::-1]
    seen = first[1][0][3]  # what the reference's first test saw, after the stub had been graded
    assert seen.startswith("torch.float32") and "9.0" not in seen and "patched" not in seen, seen


# ---- 5. memory is released ---------------------------------------------------------------------------------


def test_handles_and_graphs_are_released_when_the_grader_drops_them():
    namespace = {}
    exec("import torch\nclass Box:\n    pass\ndef f(x):\n    return (x * 2).sum()\ndef box():\n    return Box()",
         namespace)  # fmt: skip
    session, agent = loopback(namespace)
    found = session.lookup({"f", "box"})
    x = torch.ones(1000, requires_grad=True)
    for _ in range(1000):
        found["f"](x).backward()
        found["box"]()
    gc.collect()
    session.flush()
    assert torch.equal(x.grad, torch.full((1000,), 2000.0))
    assert len(agent.graphs.kept) == 0 and len(agent.objects) <= 3, (len(agent.graphs.kept), len(agent.objects))


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_many_calls_with_gradients_keep_the_kernels_memory_flat(tmp_path):
    """Defect 5, measured: 300 calls whose results carry a graph (400 KB of input each) in one test cell;
    kept alive, their inputs alone would add 120 MB, three times what the test allows."""
    with Sandbox(tmp_path, slot=12, unsafe=True) as sandbox:
        deadline = __import__("time").monotonic() + 300
        sandbox.start(deadline)
        assert sandbox.run(startup.INSTALL_AGENT, deadline, 60, silent=True).reply["status"] == "ok"
        sandbox.run("import torch\ndef f(x):\n    return (x * 2).sum()", deadline, 60)

        def transport(text):
            answer, _ = sandbox.call({"request": text}, deadline, 60)
            return answer["autograder"]

        session = rpc.Session(transport)
        f = session.lookup({"f"})["f"]
        x = torch.ones(100_000, requires_grad=True)
        for _ in range(50):
            f(x).backward()
        before = _rss_mb(sandbox.proc.pid)
        for _ in range(300):
            f(x).backward()
        session.flush()
        after = _rss_mb(sandbox.proc.pid)
        print(f"kernel RSS: {before:.0f} MB after 50 calls, {after:.0f} MB after 350")
        assert after - before < 40, (before, after)
        assert torch.equal(x.grad, torch.full((100_000,), 2.0 * 350))


# ---- 6. the authoring loop goes through the boundary ---------------------------------------------------------

CANNOT_CROSS = """
class Probe:
    def __init__(self):
        self.seen = []
    def __call__(self, x):
        self.seen.append(x)
        return x
probe = Probe()
assert f(probe) is probe or True
assert probe.seen == [], "the student's code is handed an object with behaviour that lives only in the grader"
f(probe)(3)
assert probe.seen == [3]
"""


def test_check_grades_through_the_boundary(toy, tmp_path, monkeypatch):
    """Defect 6: a test cell that hands the student's code an object of its own (a probe) passes when one
    kernel runs everything (nbclient), and fails through the grader's boundary, which check now uses."""
    reference, _ = toy({"probe": CANNOT_CROSS})
    monkeypatch.setattr(check, "CACHE", tmp_path / "cache")
    graded = check.grade_through_boundary(course.solution_notebook("99_toy"), "99_toy")
    assert graded.status == "graded" and [c.score for c in graded.cells] == [0.0], graded.cells
