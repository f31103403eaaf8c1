"""Honest and hostile submissions, generated from the chapters, for the grader's tests.

Each builder returns the bytes of a notebook file. The hostile ones start from the
instructor notebook (correct answers) or the student stub, and add or change a few cells;
:data:`EXPECTED` says what row each one must get. Used by tests/test_grader_*.py.
"""

from __future__ import annotations

import copy
import json

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell

from autograder import conventions, course

BASE = "03_attention_steps"  # numpy and torch; its stub fails fast


def _read(path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def reference(assignment: str = BASE) -> nbformat.NotebookNode:
    return _read(course.solution_notebook(assignment))


def stub(assignment: str = BASE) -> nbformat.NotebookNode:
    return _read(course.student_notebook(assignment))


def _bytes(nb) -> bytes:
    return nbformat.writes(nb).encode("utf-8")


def _index(nb, grade_id: str) -> int:
    for i, cell in enumerate(nb.cells):
        if conventions.grade_id(cell) == grade_id:
            return i
    raise KeyError(grade_id)


def _insert_after(nb, grade_id: str, source: str) -> nbformat.NotebookNode:
    nb = copy.deepcopy(nb)
    nb.cells.insert(_index(nb, grade_id) + 1, new_code_cell(source))
    return nb


def _answers(nb, replacements: dict[str, str]) -> nbformat.NotebookNode:
    """The notebook with these answer cells (by grade id) replaced by other code."""
    nb = copy.deepcopy(nb)
    for grade_id, source in replacements.items():
        nb.cells[_index(nb, grade_id)].source = source
    return nb


AFTER_FIRST = "softmax_hidden"  # attention_scores and softmax are graded before this point: 6 points

WRONG_ANSWERS = {
    "attention_scores": "def attention_scores(s_t, H):\n    return np.zeros(len(H))",
    "softmax": "def softmax(e, axis=-1):\n    return np.ones_like(np.asarray(e, dtype=float))",
}

FORGERIES = """
import builtins, sys, numpy, torch
numpy.testing.assert_allclose = lambda *args, **kwargs: None
numpy.testing.assert_array_equal = lambda *args, **kwargs: None
numpy.allclose = lambda *args, **kwargs: True
numpy.array_equal = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None
torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
builtins.AssertionError = type("Nothing", (Exception,), {})
get_ipython().set_custom_exc((BaseException,), lambda *args, **kwargs: None)
get_ipython().events.register("post_run_cell", lambda *args, **kwargs: None)
sys.modules["autograder"] = type(sys)("autograder")
"""

CLAIMS_EQUALITY = '''
class Anything:
    """Equal to everything, true, any shape: the answer to every assertion, if anyone asks."""
    shape = (3,)
    def __eq__(self, other): return True
    def __bool__(self): return True
    def __len__(self): return 3
    def __array__(self, *args, **kwargs): raise RuntimeError("no")
def attention_scores(s_t, H):
    return Anything()
'''

SNOOP = """
import importlib.util, os, sys
# find the course as a student's code would: where the course package, the interpreter and the
# import path say it is, and what the environment names
roots = {os.path.dirname(sys.prefix), os.getcwd()}
spec = importlib.util.find_spec("attention_course")
if spec and spec.submodule_search_locations:
    roots |= {os.path.dirname(os.path.realpath(p)) for p in spec.submodule_search_locations}
roots |= {os.path.dirname(os.path.realpath(p)) for p in sys.path if p}
roots |= {v for k, v in os.environ.items() if k in ("PYTHONPATH", "VIRTUAL_ENV", "PWD", "HOME") and v}
print("roots", sorted(roots))
for root in sorted(roots):
    for rel in ["solutions/03_attention_steps/03_attention_steps.ipynb", "autograder/reference/ch03_attention_steps.py",
                "_grading/gradebook.db", "chapters"]:
        path = os.path.join(root, rel)
        try:
            print("READ", path, open(path).read()[:100])
        except Exception as exc:
            print("blocked", path, type(exc).__name__)
    if root == os.getcwd() or root.startswith(os.getcwd() + "/"):
        continue  # the scratch folder: writing there is allowed
    for rel in ["_grading/pwned", "pwned", ".venv/pwned"]:
        path = os.path.join(root, rel)
        try:
            open(path, "w").write("pwned")
            print("WROTE", path)
        except Exception as exc:
            print("blocked", path, type(exc).__name__)
for path in ["/etc/pwned", "/usr/pwned", "/root/pwned"]:
    try:
        open(path, "w").write("pwned")
        print("WROTE", path)
    except Exception as exc:
        print("blocked", path, type(exc).__name__)
open("/tmp/inside-scratch", "w").write("fine")
print("uid", os.getuid(), "root listing", sorted(os.listdir("/")))
"""

NETWORK = """
import socket
for address in [("127.0.0.1", 22), ("8.8.8.8", 53), ("1.1.1.1", 443)]:
    try:
        socket.create_connection(address, timeout=2)
        print("CONNECTED", address)
    except OSError as exc:
        print("blocked", address, exc.errno)
"""

LEFTOVERS = """
import os, subprocess, time
subprocess.Popen(["sleep", "1000"])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(1000)
    os._exit(0)
"""

IGNORES_INTERRUPT = """
import signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
while True:
    try:
        pass
    except BaseException:
        pass
"""

LOOPS_ON_VISIBLE_TEST = '''
def attention_scores(s_t, H):
    """Right, except that it never returns for an H of shape (3, 2): the first visible test."""
    while H.shape == (3, 2):
        pass
    return H @ s_t
'''

NOISY_BUT_RIGHT = '''
import sys, warnings
def attention_scores(s_t, H):
    """Right, but noisy: a warning and some stderr on every call."""
    warnings.warn("this API is deprecated", DeprecationWarning)
    warnings.warn("a user warning", UserWarning)
    print("debug: computing scores", file=sys.stderr)
    return H @ s_t
'''


def zoo() -> dict[str, bytes]:
    """student id -> notebook bytes, for every case of EXPECTED (and the honest chapter submissions)."""
    ref, stb = reference(), stub()
    cases: dict[str, bytes] = {}
    cases["honest_reference"] = _bytes(ref)
    cases["honest_stub"] = _bytes(stb)
    cases["loop_ignores_interrupt"] = _bytes(_insert_after(ref, AFTER_FIRST, IGNORES_INTERRUPT))
    cases["loop_in_function"] = _bytes(_answers(ref, {"attention_scores": LOOPS_ON_VISIBLE_TEST}))
    cases["exits"] = _bytes(_insert_after(ref, AFTER_FIRST, "import os\nos._exit(3)"))
    cases["segfault"] = _bytes(_insert_after(ref, AFTER_FIRST, "import ctypes\nctypes.string_at(0)"))
    cases["memory_bomb"] = _bytes(_insert_after(ref, AFTER_FIRST, (
        "blocks = []\nwhile True:\n    blocks.append(np.empty(2**27))  # 1 GB more, until the limit")))  # fmt: skip
    cases["fork_bomb"] = _bytes(_insert_after(ref, AFTER_FIRST, "import os\nwhile True:\n    os.fork()"))
    cases["huge_output"] = _bytes(_insert_after(ref, AFTER_FIRST, 'for _ in range(50):\n    print("x" * 2**20)'))
    escape = _insert_after(_insert_after(_insert_after(ref, AFTER_FIRST, LEFTOVERS), AFTER_FIRST, NETWORK),
                           AFTER_FIRST, SNOOP)  # fmt: skip
    cases["escape"] = _bytes(escape)  # read the solutions, write outside, connect, leave processes behind
    cases["forger"] = _bytes(_forger(stb))
    cases["claims_equality"] = _bytes(_answers(stb, {"attention_scores": CLAIMS_EQUALITY}))
    cases["noisy_but_right"] = _bytes(_answers(stb, {"attention_scores": NOISY_BUT_RIGHT}))

    nb = copy.deepcopy(ref)  # two test cells deleted, one duplicated twice
    del nb.cells[_index(nb, "softmax_visible")]
    del nb.cells[_index(nb, "softmax_hidden")]
    at = _index(nb, "attention_scores_visible")
    for copy_id in ("copy-1", "copy-2"):
        nb.cells.insert(at + 1, copy.deepcopy(nb.cells[at]))
        nb.cells[at + 1].id = copy_id
    cases["deleted_and_duplicated_tests"] = _bytes(nb)
    nb = copy.deepcopy(_answers(stb, WRONG_ANSWERS))
    for grade_id in ("attention_scores_visible", "attention_scores_hidden", "softmax_visible", "softmax_hidden"):
        nb.cells[_index(nb, grade_id)].source = "pass  # tests removed"
        nb.cells[_index(nb, grade_id)].metadata["nbgrader"]["points"] = 100
    cases["edited_tests"] = _bytes(nb)
    fresh = nbformat.v4.new_notebook()  # cells copied into a fresh notebook: no metadata at all
    fresh.cells = [(new_code_cell if c.cell_type == "code" else new_markdown_cell)(c.source) for c in ref.cells]
    cases["no_metadata"] = _bytes(fresh)
    cases["invalid_json"] = _bytes(ref)[:5000]
    text = _bytes(ref).decode("utf-8").replace("Attention is what lets", "Attention — café — is what lets")
    cases["not_utf8"] = text.encode("cp1252", errors="replace")
    cases["empty"] = b""
    cases["other_chapter"] = _bytes(reference(_other_chapter()))
    nb = copy.deepcopy(ref)
    nb.metadata["kernelspec"] = {"name": "conda-env-myenv-py", "display_name": "Python (myenv)", "language": "python"}
    cases["other_kernel"] = _bytes(nb)
    return cases


def _forger(stb) -> nbformat.NotebookNode:
    nb = _answers(stb, WRONG_ANSWERS)
    nb.cells.insert(_index(nb, "attention_scores"), new_code_cell(FORGERIES))
    return nb


def _other_chapter() -> str:
    return next(a for a in released_assignments() if a != BASE)


def released_assignments() -> list[str]:
    """Assignments with both an instructor and a student notebook (a chapter being written has not)."""
    return [a for a in course.assignments() if course.student_notebook(a).exists()]


def chapter_cases(assignment: str) -> dict[str, bytes]:
    """Honest and hostile submissions of any chapter: the reference, the stub, and two that crash
    after the first exercise's hidden test: the reference (its points so far are kept) and the
    stub after forging every assertion helper (no point)."""
    from autograder.grading.template import load_template

    ref, stb = reference(assignment), stub(assignment)
    first_hidden = min((t for t in load_template(assignment).tests.values() if t.hidden), key=lambda t: t.index)
    crash = "import os\nos._exit(1)"
    forger = _insert_after(stb, first_hidden.grade_id, crash)
    forger.cells.insert(1, new_code_cell(FORGERIES))
    return {
        f"{assignment}-reference": _bytes(ref),
        f"{assignment}-stub": _bytes(stb),
        f"{assignment}-crash": _bytes(_insert_after(ref, first_hidden.grade_id, crash)),
        f"{assignment}-forger": _bytes(forger),
    }


FULL, FIRST_TWO = 24.0, 6.0  # autograded points of 03: all of them; attention_scores + softmax
EXPECTED = {
    # student: (status, score, flags that must be there)
    "honest_reference": ("graded", FULL, set()),
    "honest_stub": ("graded", 0.0, set()),
    "loop_ignores_interrupt": ("graded", FIRST_TWO, {"timeout"}),
    "loop_in_function": ("graded", FULL - 1, {"timeout"}),
    "exits": ("graded", FIRST_TWO, {"kernel_died", "suspicious_code"}),
    "segfault": ("graded", FIRST_TWO, {"kernel_died", "suspicious_code"}),
    "memory_bomb": ("graded", FULL, {"memory"}),
    "fork_bomb": ("graded", None, {"suspicious_code"}),  # the kernel may survive its children's failures
    "huge_output": ("graded", FULL, {"output_truncated"}),
    "escape": ("graded", FULL, {"suspicious_code"}),
    "forger": ("graded", 0.0, {"suspicious_code"}),
    "claims_equality": ("graded", 0.0, set()),
    "noisy_but_right": ("graded", 3.0, set()),
    "deleted_and_duplicated_tests": ("graded", FULL, {"tests_restored", "duplicate_cells"}),
    "edited_tests": ("graded", 0.0, {"tests_restored"}),
    "no_metadata": ("graded", FULL, {"metadata_missing"}),
    "invalid_json": ("invalid_json", None, set()),  # not graded: no score
    "not_utf8": ("graded", FULL, {"non_utf8"}),
    "empty": ("empty_file", None, set()),
    "other_chapter": ("wrong_assignment", None, {"wrong_assignment"}),
    "other_kernel": ("graded", FULL, {"kernel_name"}),
}


def write_folder(folder, cases: dict[str, bytes]) -> None:
    """One folder per student, the notebook under the assignment's name."""
    for student, data in cases.items():
        (folder / student).mkdir(parents=True, exist_ok=True)
        (folder / student / f"{BASE}.ipynb").write_bytes(data)


def as_json(data: bytes) -> dict:
    return json.loads(data)
