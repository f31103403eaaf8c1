"""Recording what the student's code computes, through the class grader's boundary (recording.py, kernel/recording.py).

Chapter 08's test cells call ``attention_course.profiling.record_ops`` on the student's function or
module. Through the class grader that function is a proxy to the student's kernel: the call and its
recording happen there, and the record comes back (autograder/BOUNDARY.md, "Recording what the
student's code computes"). Here:

- through the protocol, in-process (an agent in this process, the same requests and answers; no
  kernel): honest answers are recorded as in one process, every way around the recording that the
  recording itself can see is refused, and the session keeps the reasons;
- through the runner (a kernel without the sandbox, marked ``slow``): a small notebook whose test cells
  record an honest answer, honest variants, a key-value module, the full-matrix mistake and every
  cheap way around the recording, including patches the submission makes to the course package, to
  ``TorchDispatchMode`` and to the grader's agent in its own process: the rows, their reasons, the
  ``suspicious_code`` flag and the notes; then the same test cells in one process, as nbgrader and
  Validate run them.
"""

# ruff: noqa: E741 (O and L are the course's names for the output and the logsumexp)
from __future__ import annotations

import json
import os

import nbformat
import pytest
import torch
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from attention_course.profiling import RecordingError, largest_created, matmuls, record_ops
from autograder import course
from autograder.grading import recording, rpc, runner, template
from autograder.grading.kernel.rpc import Agent

# ---- the student's side: honest answers, the mistake, and the ways around the recording -------------------

ANSWER = '''
def tiled_attention(Q, K, V, block_size):
    """Online-softmax attention over key blocks: running maximum m, normaliser l, output acc."""
    m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)
    l = torch.zeros(Q.shape[:-1], dtype=Q.dtype)
    acc = torch.zeros(*Q.shape[:-1], V.shape[-1], dtype=Q.dtype)
    for j in range(0, K.shape[-2], block_size):
        S = Q @ K[..., j : j + block_size, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
        m_new = torch.maximum(m, S.amax(-1))
        P = torch.exp(S - m_new.unsqueeze(-1))
        alpha = torch.exp(m - m_new)
        l = l * alpha + P.sum(-1)
        acc = acc * alpha.unsqueeze(-1) + P @ V[..., j : j + block_size, :]
        m = m_new
    return acc / l.unsqueeze(-1), m + torch.log(l)
'''

MODULE = '''
class CachedSelfAttention(nn.Module):
    """One head with a key-value cache: forward(x, cache) projects x only and appends to the cache."""

    def __init__(self, E):
        super().__init__()
        self.qkv, self.out = nn.Linear(E, 3 * E), nn.Linear(E, E)

    def forward(self, x, cache=None):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=1), torch.cat([cache[1], v], dim=1)
        return self.out(F.softmax(q @ k.transpose(1, 2) / math.sqrt(q.shape[-1]), dim=-1) @ v), (k, v)
'''

VARIANTS = '''
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def _formula(Q, K, V):
    S = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    return torch.softmax(S, -1) @ V, torch.logsumexp(S, -1)


def tiled_in_place(Q, K, V, block_size):
    """Honest: query blocks, einsum, a preallocated output written in place, no_grad, float64 inside."""
    with torch.no_grad():
        O, L = torch.empty(*Q.shape[:-1], V.shape[-1]), torch.empty(Q.shape[:-1])
        for i in range(0, Q.shape[-2], block_size):
            q = Q[..., i : i + block_size, :].double()
            m, l = torch.full(q.shape[:-1], -math.inf, dtype=q.dtype), torch.zeros(q.shape[:-1], dtype=q.dtype)
            acc = torch.zeros(*q.shape[:-1], V.shape[-1], dtype=q.dtype)
            for j in range(0, K.shape[-2], block_size):
                k = K[..., j : j + block_size, :].double()
                S = torch.einsum("...id,...jd->...ij", q, k) / math.sqrt(q.shape[-1])
                m_new = torch.maximum(m, S.amax(-1))
                P = (S - m_new.unsqueeze(-1)).exp_()
                l.mul_((m - m_new).exp()).add_(P.sum(-1))
                acc.mul_((m - m_new).exp().unsqueeze(-1)).add_(P @ V[..., j : j + block_size, :].double())
                m = m_new
            O[..., i : i + block_size, :] = acc / l.unsqueeze(-1)
            L[..., i : i + block_size].copy_(m + l.log())
    return O, L


def tiled_sdpa(Q, K, V, block_size):
    """Honest: F.scaled_dot_product_attention on query blocks; the logsumexp block by block; a dict inside."""
    parts = {"O": [], "L": []}
    for i in range(0, Q.shape[-2], block_size):
        q = Q[..., i : i + block_size, :]
        parts["O"].append(F.scaled_dot_product_attention(q, K, V))
        parts["L"].append(torch.logsumexp(q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), -1))
    return torch.cat(parts["O"], -2), torch.cat(parts["L"], -1)


def full_matrix(Q, K, V, block_size):
    """The honest mistake: the whole score matrix, then blocks sliced out of it."""
    S = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    L = torch.logsumexp(torch.cat([S[..., j : j + block_size] for j in range(0, K.shape[-2], block_size)], -1), -1)
    return torch.exp(S - L.unsqueeze(-1)) @ V, L


def dispatch_disabled(Q, K, V, block_size):
    with torch._C._DisableTorchDispatch():
        O, L = _formula(Q, K, V)
    return O.clone(), L.clone()


def modes_popped(Q, K, V, block_size):
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes():
        O, L = _formula(Q, K, V)
    return O * 1, L * 1


def mode_pushed_back_raw(Q, K, V, block_size):
    mode = torch._C._pop_torch_dispatch_stack(None)
    O, L = _formula(Q, K, V)
    torch._C._push_on_torch_dispatch_stack(mode)
    return O + 0, L + 0


def in_a_thread(Q, K, V, block_size):
    with ThreadPoolExecutor(1) as pool:
        O, L = pool.submit(_formula, Q, K, V).result()
    return O.clone(), L.clone()


def thread_watch_removed(Q, K, V, block_size):
    threading.setprofile(None)
    return in_a_thread(Q, K, V, block_size)


def in_numpy(Q, K, V, block_size):
    q, k, v = Q.numpy(), K.numpy(), V.numpy()
    S = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    L = np.log(np.exp(S - S.max(-1, keepdims=True)).sum(-1)) + S.max(-1)
    return torch.tensor(np.exp(S - L[..., None]) @ v), torch.from_numpy(L)


def numpy_into_a_tensor(Q, K, V, block_size):
    q, k, v = (np.array(t.tolist()) for t in (Q, K, V))
    S = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    L = np.log(np.exp(S - S.max(-1, keepdims=True)).sum(-1)) + S.max(-1)
    O, L_out = torch.empty(*Q.shape[:-1], V.shape[-1]), torch.empty(Q.shape[:-1])
    np.asarray(O)[...] = np.exp(S - L[..., None]) @ v
    L_out.numpy()[...] = L
    return O, L_out


def tensor_methods_replaced(Q, K, V, block_size):
    original = torch.Tensor.__matmul__
    torch.Tensor.__matmul__ = lambda a, b: torch.from_numpy(np.matmul(a.numpy(), b.numpy()))
    try:
        return _formula(Q, K, V)
    finally:
        torch.Tensor.__matmul__ = original


_KEPT = {}


def kept_from_before(Q, K, V, block_size):
    key = (tuple(Q.shape), round(float(Q.sum()), 4))
    if key not in _KEPT:
        _KEPT[key] = _formula(Q, K, V)
    return _KEPT[key]


def record_emptied(Q, K, V, block_size):
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    result = _formula(Q, K, V)
    _get_current_dispatch_mode().recording.ops.clear()
    return result
'''

# Patches a submission makes in its own process before the tests run: to the course package, to
# TorchDispatchMode and to the functions PyTorch pushes modes with. The grader's recordings do not use them.
PATCHES = """
import torch.utils._python_dispatch


def patched(Q, K, V, block_size):
    return _formula(Q, K, V)


torch.utils._python_dispatch.TorchDispatchMode.__enter__ = lambda self: self
torch.utils._python_dispatch._push_mode = lambda mode: None
torch._C._push_on_torch_dispatch_stack = lambda mode: None
import attention_course.profiling  # (last: a sandbox started from a git worktree may not find the package)

attention_course.profiling.record_ops = lambda fn, *args, **kwargs: (fn(*args, **kwargs), [])
attention_course.profiling.largest_created = lambda ops: (0, None)
"""

# What only works against the grader: the agent in the student's kernel changed to forge the record
# of the next recorded call (an empty record; a plausible one).
FORGERIES = """
def _forge(record):
    def once(recording):
        del __autograder__.record_answer
        return record

    __autograder__.record_answer = once


def forged_empty_record(Q, K, V, block_size):
    _forge({"ops": [], "problems": []})
    return _formula(Q, K, V)


def forged_plausible_record(Q, K, V, block_size):
    _forge({"ops": [["aten.mm.default", [[2, 24, 8], [2, 8, 40]], [list(Q.shape[:-1]) + [V.shape[-1]]], False],
                    ["aten.sum.dim_IntList", [[2, 24, 40]], [list(Q.shape[:-1])], False]], "problems": []})
    return _formula(Q, K, V)
"""

# ---- the test cells (the instructor's) ----------------------------------------------------------------

IMPORTS = "import math\n\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn"
RECORDED = '''
"""{name}, recorded: the values of attention, and no tensor of T_q * T_k elements or more."""
from attention_course.profiling import largest_created, record_ops

torch.manual_seed(0)
Q, K, V = torch.randn(2, 24, 8), torch.randn(2, 40, 8), torch.randn(2, 40, 4)
{warm}(O, L), ops = record_ops({name}, Q, K, V, 8)
S = Q.double() @ K.double().transpose(-2, -1) / math.sqrt(8)
assert torch.allclose(O.double(), torch.softmax(S, -1) @ V.double(), atol=1e-5), "O is not attention's output"
assert torch.allclose(L.double(), torch.logsumexp(S, -1), atol=1e-5), "L is not the logsumexp"
n, op = largest_created(ops)
assert n < 24 * 40, f"{name} created a tensor of {{n}} elements ({{op.name}} -> {{op.outputs}}): the T_q x T_k matrix"
'''
CACHED_STEP = '''
"""CachedSelfAttention, recorded: a one-token step projects the new token only."""
from attention_course.profiling import matmuls, record_ops

torch.manual_seed(1)
attention = CachedSelfAttention(6)
(y, cache), ops = record_ops(attention, torch.randn(2, 5, 6))
(y, cache), ops = record_ops(attention.forward, torch.randn(2, 1, 6), cache)
projections = [op for op in matmuls(ops) if op.name.startswith("aten.addmm")]
assert projections and all(op.inputs[1][0] == 2 for op in projections), f"a step projected more: {projections}"
assert y.shape == (2, 1, 6) and cache[0].shape == (2, 6, 6), (y.shape, cache[0].shape)
'''

HONEST = ["tiled_attention", "tiled_in_place", "tiled_sdpa"]
# variant -> (what the failing row's reason says, a runtime note is expected: the recording saw it)
REFUSED = {
    "full_matrix": ("created a tensor of", False),
    "dispatch_disabled": ("switched off", True),
    "modes_popped": ("switched off", True),
    "mode_pushed_back_raw": ("switched off", True),
    "in_a_thread": ("a thread", True),
    "thread_watch_removed": ("watch on new threads", True),
    "in_numpy": ("outside PyTorch", True),
    "numpy_into_a_tensor": ("read a tensor's memory", True),
    "tensor_methods_replaced": ("outside PyTorch", True),
    "kept_from_before": ("was not made by any recorded operation", True),
    "record_emptied": ("the record was changed", True),
}
THROUGH_THE_GRADER_ONLY = {
    "patched": ("created a tensor of", False),  # in one process the patched record_ops would answer
    "forged_empty_record": ("shows no operation that made the result", True),
}


def _test_source(name):
    warm = (
        f"{name}(Q, K, V, 8)  # an earlier call, whose result the answer keeps\n" if name == "kept_from_before" else ""
    )
    return RECORDED.format(name=name, warm=warm)


# ---- 1. through the protocol, in-process -------------------------------------------------------------------


@pytest.fixture(scope="module")
def student():
    """The student's namespace, and a session whose 'kernel' is an agent in this process."""
    namespace = {}
    exec(IMPORTS + "\n" + ANSWER + VARIANTS + MODULE, namespace)
    session = rpc.Session(Agent(namespace).rpc)
    names = [*HONEST, *REFUSED, "CachedSelfAttention"]
    return session, session.lookup(set(names))


@pytest.mark.parametrize("name", HONEST)
def test_honest_answers_are_recorded_where_they_run(student, name):
    session, found = student
    Q, K, V = torch.randn(2, 24, 8), torch.randn(2, 40, 8), torch.randn(2, 40, 4)
    (O, L), ops = record_ops(found[name], Q, K, V, 8)
    S = Q @ K.transpose(-2, -1) / 8**0.5
    assert torch.allclose(O, torch.softmax(S, -1) @ V, atol=1e-5) and torch.allclose(L, torch.logsumexp(S, -1))
    assert 0 < largest_created(ops)[0] < 24 * 40 and len(matmuls(ops)) >= 3
    assert session.problems == []


def test_a_remote_module_and_a_function_that_calls_it_are_recorded(student):
    session, found = student
    attention = found["CachedSelfAttention"](6)
    (y, cache), ops = record_ops(attention, torch.randn(2, 3, 6))
    (y, cache), ops = record_ops(lambda x: attention(x, cache), torch.randn(2, 1, 6))  # a test's own function
    assert [op.inputs[1][0] for op in matmuls(ops) if op.name.startswith("aten.addmm")] == [2, 2]
    assert cache[0].shape == (2, 4, 6) and session.problems == []
    x = torch.randn(2, 1, 6, requires_grad=True)
    (y, _), ops = record_ops(lambda: attention(x, cache))
    _, backward_ops = record_ops(lambda: y.sum().backward())  # the student's backward runs and is recorded
    assert x.grad is not None and len(matmuls(backward_ops)) >= 4 and session.problems == []


@pytest.mark.parametrize("name", list(REFUSED))
def test_each_way_around_the_recording_is_refused_where_it_runs(student, name):
    session, found = student
    reason, seen = REFUSED[name]
    Q, K, V = torch.randn(2, 24, 8), torch.randn(2, 40, 8), torch.randn(2, 40, 4)
    if name == "kept_from_before":
        found[name](Q, K, V, 8)
    before = list(session.problems)
    if not seen:
        (O, L), ops = record_ops(found[name], Q, K, V, 8)
        assert largest_created(ops)[0] >= 24 * 40 and session.problems == before
        return
    with pytest.raises(RecordingError, match=reason) as refused:
        record_ops(found[name], Q, K, V, 8)
    assert any(p in str(refused.value) for p in session.problems), "the session keeps the reason for the runner's flag"
    assert torch._C._len_torch_dispatch_stack() == 0 and torch._C._len_torch_function_stack() == 0


def test_a_record_that_is_not_plain_data_is_a_protocol_error():
    ops, problems = recording.decode({"ops": [["aten.mm.default", [[2, 3], [3, 4]], [[2, 4]], False]], "problems": []})
    assert ops[0].outputs == ((2, 4),) and type(ops[0]).__module__ == "attention_course.profiling" and not problems
    assert recording.decode(None) == ([], [recording.NO_RECORD])
    for bad in ({"ops": [["x", [[-1]], [], False]], "problems": []}, {"ops": [["x", [], [], 1]], "problems": []},
                {"ops": [], "problems": [3]}, {"ops": "no"}, [1]):  # fmt: skip
        with pytest.raises(rpc.ProtocolError):
            recording.decode(bad)


# ---- 2. through the runner: a notebook, its rows, flags and notes -------------------------------------------


def _cell(source, grade_id, **meta):
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade_id": grade_id, "locked": not meta.get("solution"), "schema_version": 3,
                                 "solution": False, "grade": False, **meta}  # fmt: skip
    return cell


TESTS = [*HONEST, *REFUSED, *THROUGH_THE_GRADER_ONLY, "forged_plausible_record"]


@pytest.fixture
def notebook(tmp_path, monkeypatch):
    """An assignment ``99_recording`` (answers: tiled_attention, CachedSelfAttention) whose test cells record;
    returns the instructor notebook."""
    cells = [new_markdown_cell("# Recording"), new_code_cell(IMPORTS),
             _cell(ANSWER, "tiled_attention", solution=True), _cell(MODULE, "CachedSelfAttention", solution=True),
             _cell(CACHED_STEP, "cached_step", grade=True, points=1)]  # fmt: skip
    cells += [_cell(_test_source(name), f"rec_{name}", grade=True, points=1) for name in TESTS]
    nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "language": "python",
                                                            "display_name": "Python 3"}})  # fmt: skip
    for folder in ("solutions", "chapters"):
        path = tmp_path / folder / "99_recording" / "99_recording.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, path)
    monkeypatch.setattr(course, "solution_notebook", lambda a: tmp_path / "solutions" / a / f"{a}.ipynb")
    monkeypatch.setattr(course, "student_notebook", lambda a: tmp_path / "chapters" / a / f"{a}.ipynb")
    template.load_template.cache_clear()
    yield nb
    template.load_template.cache_clear()


ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
IN_THE_SANDBOX = pytest.param(True, id="sandbox", marks=[pytest.mark.root, pytest.mark.skipif(
    not ROOT, reason="the grader's sandbox needs root: run under the lock of RULES.md")])  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("sandboxed", [pytest.param(False, id="kernel"), IN_THE_SANDBOX])
def test_the_grader_records_in_the_kernel_refuses_each_way_around_and_flags_it(notebook, sandboxed):
    submission = nbformat.from_dict(json.loads(nbformat.writes(notebook)))
    submission.cells[4:4] = [new_code_cell(VARIANTS), new_code_cell(PATCHES), new_code_cell(FORGERIES)]
    options = runner.Options(unsafe=not sandboxed, timeout=300, call_timeout=120)
    result = runner.grade(
        "s", nbformat.writes(submission).encode(), "99_recording", options, slot=0 if sandboxed else 12
    )
    rows = {c.grade_id: c for c in result.cells}
    passed = {g for g, c in rows.items() if c.score == c.max_score}
    # honest answers pass, though the submission patched the package, TorchDispatchMode and torch's push
    assert {"cached_step", *(f"rec_{n}" for n in HONEST)} <= passed, {g: rows[g].reason for g in rows}
    runtime_notes = [n for n in result.notes if n.startswith("recording in")]
    for name, (reason, seen) in {**REFUSED, **THROUGH_THE_GRADER_ONLY}.items():
        row = rows[f"rec_{name}"]
        assert row.score == 0 and reason in row.reason, (name, row.reason)
        assert any(n.startswith(f"recording in rec_{name}:") for n in runtime_notes) == seen, (name, runtime_notes)
    # what the grader cannot see: an agent changed to forge a plausible record passes; the forgery is flagged
    assert rows["rec_forged_plausible_record"].score == 1
    assert "suspicious_code" in result.flags
    static = " ".join(n for n in result.notes if n.startswith("suspicious code"))
    for what in ("switching off the recording", "patching the recording", "the grader's agent"):
        assert what in static, (what, result.notes)


@pytest.mark.slow
def test_the_same_test_cells_in_one_process(notebook, monkeypatch):
    """As nbgrader and Validate run them: the honest answers pass, every way around the recording that
    the recording can see fails (the patches to the package and the forged agent need the grader)."""
    namespace: dict = {}
    exec(IMPORTS + "\n" + ANSWER + MODULE + VARIANTS, namespace)
    outcome = {}
    for name in ["cached_step", *HONEST, *REFUSED]:
        source = CACHED_STEP if name == "cached_step" else _test_source(name)
        try:
            exec(source, namespace)
            outcome[name] = "passed"
        except (AssertionError, RecordingError) as exc:
            outcome[name] = f"{type(exc).__name__}: {exc}"
    assert all(outcome[name] == "passed" for name in ["cached_step", *HONEST]), outcome
    for name, (reason, _) in REFUSED.items():
        assert reason in outcome[name], (name, outcome[name])
