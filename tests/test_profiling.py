"""attention_course.profiling in one process (the student's Validate, nbgrader, the instructor's run).

``record_ops`` records the operations a call runs, and refuses (``RecordingError``) a call that
computed where it could not see: honest code of every style passes and records what it did; each
cheap way around the recording fails with a message that says what happened. The same functions
go through the class grader in tests/test_grader_recording.py.
"""

# ruff: noqa: E741 (O and L are the course's names for the output and the logsumexp)
from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attention_course import profiling
from attention_course.profiling import RecordingError, largest_created, matmul_flops, matmuls, record_ops

# ---- honest answers, in several styles -------------------------------------------------------------


def tiled(Q, K, V, block_size, causal=False):
    """An online-softmax tiled attention: key blocks, running maximum, normaliser and output."""
    T_q, T_k = Q.shape[-2], K.shape[-2]
    m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)  # (..., T_q)
    l = torch.zeros(Q.shape[:-1], dtype=Q.dtype)  # noqa: E741
    acc = torch.zeros(*Q.shape[:-1], V.shape[-1], dtype=Q.dtype)  # (..., T_q, d_v)
    for start in range(0, T_k, block_size):
        S = Q @ K[..., start : start + block_size, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
        if causal:
            keys = torch.arange(start, min(start + block_size, T_k))
            S = S.masked_fill(keys > torch.arange(T_q).unsqueeze(-1), -math.inf)
        m_new = torch.maximum(m, S.amax(-1))
        safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        P = torch.exp(S - safe.unsqueeze(-1))
        alpha = torch.exp(m - safe)
        l = l * alpha + P.sum(-1)  # noqa: E741
        acc = acc * alpha.unsqueeze(-1) + P @ V[..., start : start + block_size, :]
        m = m_new
    return acc / l.unsqueeze(-1), m + torch.log(l)


def tiled_einsum_in_place(Q, K, V, block_size, causal=False):
    """Another style: einsum, a preallocated output written in place, torch.no_grad, a scalar tensor."""
    with torch.no_grad():
        O = torch.empty(*Q.shape[:-1], V.shape[-1], dtype=Q.dtype)
        L = torch.empty(Q.shape[:-1], dtype=Q.dtype)
        scale = torch.tensor(1 / math.sqrt(Q.shape[-1]), dtype=Q.dtype)
        for q0 in range(0, Q.shape[-2], block_size):
            q = Q[..., q0 : q0 + block_size, :]
            m = torch.full(q.shape[:-1], -math.inf, dtype=Q.dtype)
            l = torch.zeros_like(m)  # noqa: E741
            acc = torch.zeros(*q.shape[:-1], V.shape[-1], dtype=Q.dtype)
            for k0 in range(0, K.shape[-2], block_size):
                S = torch.einsum("...id,...jd->...ij", q, K[..., k0 : k0 + block_size, :]) * scale
                m_new = torch.maximum(m, S.amax(-1))
                P = (S - m_new.unsqueeze(-1)).exp_()
                l.mul_((m - m_new).exp()).add_(P.sum(-1))
                acc.mul_((m - m_new).exp().unsqueeze(-1)).add_(
                    torch.einsum("...ij,...jd->...id", P, V[..., k0 : k0 + block_size, :])
                )
                m = m_new
            O[..., q0 : q0 + block_size, :] = acc / l.unsqueeze(-1)
            L[..., q0 : q0 + block_size].copy_(m + l.log())
    return O, L


def tiled_sdpa_blocks(Q, K, V, block_size, causal=False):
    """Another style: F.scaled_dot_product_attention on query blocks, the logsumexp block by block."""
    outs, lses = [], []
    for q0 in range(0, Q.shape[-2], block_size):
        q = Q[..., q0 : q0 + block_size, :]
        outs.append(F.scaled_dot_product_attention(q, K, V))  # (..., block, T_k) scores: q's block only
        lses.append(torch.logsumexp(q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1))
    return torch.cat(outs, dim=-2), torch.cat(lses, dim=-1)


def full_matrix_then_slice(Q, K, V, block_size, causal=False):
    """The mistake the memory test exists for: the whole score matrix, then blocks sliced out of it."""
    S = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])  # (..., T_q, T_k)
    blocks = [S[..., :, j : j + block_size] for j in range(0, K.shape[-2], block_size)]
    L = torch.logsumexp(torch.cat(blocks, dim=-1), dim=-1)
    return torch.exp(S - L.unsqueeze(-1)) @ V, L


class CachedSelfAttention(nn.Module):
    """A one-head key-value cache: forward(x, cache) projects only x, appends to the cache."""

    def __init__(self, E):
        super().__init__()
        self.qkv, self.out = nn.Linear(E, 3 * E), nn.Linear(E, E)

    def forward(self, x, cache=None):
        q, k, v = self.qkv(x).chunk(3, dim=-1)  # (B, T_new, E) each
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=1), torch.cat([cache[1], v], dim=1)
        y = F.softmax(q @ k.transpose(1, 2) / math.sqrt(q.shape[-1]), dim=-1) @ v
        return self.out(y), (k, v)


def formula(Q, K, V):
    S = Q.double() @ K.double().transpose(-2, -1) / math.sqrt(Q.shape[-1])
    return torch.softmax(S, -1) @ V.double(), torch.logsumexp(S, -1)


@pytest.fixture
def QKV():
    gen = torch.Generator().manual_seed(0)
    return (
        torch.randn(2, 24, 8, generator=gen),
        torch.randn(2, 40, 8, generator=gen),
        torch.randn(2, 40, 4, generator=gen),
    )


@pytest.mark.parametrize("answer", [tiled, tiled_einsum_in_place, tiled_sdpa_blocks])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_honest_tiled_answers_are_recorded_and_pass(QKV, answer, dtype):
    Q, K, V = (t.to(dtype) for t in QKV)
    (O, L), ops = record_ops(answer, Q, K, V, 8)
    want_O, want_L = formula(Q, K, V)
    assert torch.allclose(O.double(), want_O, atol=1e-5) and torch.allclose(L.double(), want_L, atol=1e-5)
    n, op = largest_created(ops)
    assert 0 < n < 24 * 40, f"{answer.__name__} created {n} elements ({op})"
    assert matmuls(ops) and matmul_flops(ops) >= 24 * 40 * 8 * 2


def test_the_full_matrix_is_seen_whatever_happens_to_it_afterwards(QKV):
    Q, K, V = QKV
    (O, L), ops = record_ops(full_matrix_then_slice, Q, K, V, 8)
    n, op = largest_created(ops)
    assert n >= 24 * 40 and op.outputs[0][-2:] == (24, 40), (n, op)
    assert torch.allclose(O.double(), formula(Q, K, V)[0], atol=1e-5)


def test_honest_modules_methods_views_and_plain_values_pass():
    torch.manual_seed(0)
    attn = CachedSelfAttention(6)
    x = torch.randn(2, 5, 6)
    (y, cache), ops = record_ops(attn, x)  # an nn.Module, a tuple holding a tuple
    step, ops = record_ops(attn.forward, torch.randn(2, 1, 6), cache)  # a bound method, the cache as argument
    shapes = [op.inputs for op in matmuls(ops) if op.name.startswith("aten.addmm")]
    assert shapes and all(inputs[1][0] == 2 for inputs in shapes), shapes  # the projections see the new token only
    assert record_ops(lambda t: t[..., :2], y)[0].shape == (2, 5, 2)  # a view of an argument
    assert record_ops(lambda t: t, y)[0] is y  # an argument handed back
    assert record_ops(lambda t: (t * 2)[:, :1].transpose(0, 2), y)[0].shape == (6, 1, 2)  # a view of a recorded result
    assert record_ops(lambda: {"a": torch.ones(3), "n": 3})[0]["n"] == 3  # a dict, a factory, plain data
    with torch.inference_mode():
        assert record_ops(lambda t: t.exp(), y)[0].shape == y.shape

    def under_inference_mode(t):
        with torch.inference_mode():
            out = torch.zeros_like(t)
            out += t.exp()
            return out

    assert record_ops(under_inference_mode, y)[0].shape == y.shape
    positions = record_ops(lambda t: t[:, torch.tensor(list(range(1, 4)))], y)[0]  # integer data from a list
    assert positions.shape == (2, 3, 6)
    assert record_ops(lambda t: print(t.sum()) or t.detach().data + 1, y)[0].shape == y.shape


def test_autograd_inside_the_call_is_recorded():
    def block_gradients(Q, K, V, dO):
        Q, K, V = (t.detach().requires_grad_() for t in (Q, K, V))
        with torch.enable_grad():
            O = torch.softmax(Q @ K.T, -1) @ V
            return torch.autograd.grad(O, (Q, K, V), dO)

    grads, ops = record_ops(block_gradients, torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2), torch.randn(3, 2))
    assert [g.shape for g in grads] == [(3, 4), (5, 4), (5, 2)] and len(matmuls(ops)) >= 4


# ---- what the recording refuses --------------------------------------------------------------------


def _naive(Q, K, V, block_size=None, causal=False):
    return formula(Q, K, V)[0].to(Q.dtype), formula(Q, K, V)[1].to(Q.dtype)


def dispatch_disabled(Q, K, V, block_size, causal=False):
    with torch._C._DisableTorchDispatch():
        return _naive(Q, K, V)


def no_dispatch_then_clone(Q, K, V, block_size, causal=False):
    from torch.utils._mode_utils import no_dispatch

    with no_dispatch():
        O, L = _naive(Q, K, V)
    return O.clone(), L + 0


def no_dispatch_into_a_recorded_buffer(Q, K, V, block_size, causal=False):
    from torch.utils._mode_utils import no_dispatch

    O, L = torch.empty(*Q.shape[:-1], V.shape[-1]), torch.empty(Q.shape[:-1])
    values = _naive(Q, K, V)
    with no_dispatch():  # the copy is not recorded
        for buffer, value in zip((O, L), values):
            buffer.copy_(value)
    return O, L


def modes_popped(Q, K, V, block_size, causal=False):
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes():
        O, L = _naive(Q, K, V)
    return O * 1, L * 1


def mode_popped_and_pushed_back_raw(Q, K, V, block_size, causal=False):
    mode = torch._C._pop_torch_dispatch_stack(None)
    O, L = _naive(Q, K, V)
    torch._C._push_on_torch_dispatch_stack(mode)
    return O * 1, L * 1


def mode_popped_for_good(Q, K, V, block_size, causal=False):
    from torch.utils._python_dispatch import _pop_mode

    _pop_mode()
    return _naive(Q, K, V)


def in_a_thread(Q, K, V, block_size, causal=False):
    with ThreadPoolExecutor(1) as pool:
        O, L = pool.submit(_naive, Q, K, V).result()
    return O.clone(), L.clone()


def in_a_thread_filling_a_buffer(Q, K, V, block_size, causal=False):
    O = torch.zeros(*Q.shape[:-1], V.shape[-1])
    L = torch.zeros(Q.shape[:-1])
    worker = threading.Thread(target=lambda: [b.copy_(v) for b, v in zip((O, L), _naive(Q, K, V))])
    worker.start()
    worker.join()
    return O, L


def thread_watch_removed(Q, K, V, block_size, causal=False):
    threading.setprofile(None)
    return in_a_thread(Q, K, V, block_size)


def in_numpy(Q, K, V, block_size, causal=False):
    q, k, v = Q.numpy(), K.numpy(), V.numpy()
    S = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    L = np.log(np.exp(S - S.max(-1, keepdims=True)).sum(-1)) + S.max(-1)
    return torch.from_numpy(np.exp(S - L[..., None]) @ v), torch.tensor(L)


def numpy_writes_into_a_tensor(Q, K, V, block_size, causal=False):
    O, L = torch.empty(*Q.shape[:-1], V.shape[-1]), torch.empty(Q.shape[:-1])
    np.asarray(O)[...] = _numpy_attention(Q, K, V)[0]
    L.numpy()[...] = _numpy_attention(Q, K, V)[1]
    return O, L


def _numpy_attention(Q, K, V):
    O, L = formula(Q, K, V)
    return O.float().tolist(), L.float().tolist()


_CACHE = {}


def cached_from_an_earlier_call(Q, K, V, block_size, causal=False):
    key = (tuple(Q.shape), tuple(K.shape), float(Q.sum()))
    if key not in _CACHE:
        _CACHE[key] = _naive(Q, K, V)
    return _CACHE[key]


def record_emptied(Q, K, V, block_size, causal=False):
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    result = _naive(Q, K, V)
    _get_current_dispatch_mode().recording.ops.clear()
    return result


REFUSED = {
    dispatch_disabled: "returned a tensor",
    no_dispatch_then_clone: "switched off",
    no_dispatch_into_a_recorded_buffer: "changed a tensor in place without any recorded operation",
    modes_popped: "switched off and on again",
    mode_popped_and_pushed_back_raw: "switched off and on again",
    mode_popped_for_good: "taken off PyTorch's dispatch stack",
    in_a_thread: "a thread",
    in_a_thread_filling_a_buffer: "a thread",
    thread_watch_removed: "watch on new threads was removed",
    in_numpy: "outside PyTorch",
    numpy_writes_into_a_tensor: "read a tensor's memory",
    cached_from_an_earlier_call: "was not made by any recorded operation during the call",
    record_emptied: "the record was changed",
}


@pytest.mark.parametrize("cheat", REFUSED, ids=lambda f: f.__name__)
def test_each_way_around_the_recording_is_refused_with_a_reason(QKV, cheat):
    Q, K, V = QKV
    if cheat is cached_from_an_earlier_call:
        cheat(Q, K, V, 8)  # an earlier call, whose result the cheat keeps
    with pytest.raises(RecordingError, match=REFUSED[cheat]) as refused:
        record_ops(cheat, Q, K, V, 8)
    assert "compute with PyTorch operations" in str(refused.value)
    assert torch._C._len_torch_dispatch_stack() == 0 and torch._C._len_torch_function_stack() == 0
    assert threading.getprofile() is None


def test_unsetting_pytorchs_own_modes_leaves_the_recording_on(QKV):
    """torch._C._unset_dispatch_mode takes off PyTorch's infrastructure modes (functionalization, proxy
    tracing), never the recording's: the full matrix is still seen."""

    def unset_then_full_matrix(Q, K, V, block_size, causal=False):
        for key in (torch._C._TorchDispatchModeKey.PROXY, torch._C._TorchDispatchModeKey.FUNCTIONAL):
            torch._C._unset_dispatch_mode(key)
        return full_matrix_then_slice(Q, K, V, block_size)

    _, ops = record_ops(unset_then_full_matrix, *QKV, 8)
    assert largest_created(ops)[0] >= 24 * 40


def test_patching_torch_after_import_does_not_change_what_is_recorded(QKV, monkeypatch):
    """Replacing torch.Tensor's size/shape, TorchDispatchMode's methods or the mode stack's Python
    helpers, or pushing a function mode that lies about sizes, leaves the record as it was."""
    from torch.overrides import TorchFunctionMode
    from torch.utils import _python_dispatch

    class SmallSizes(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", "") == "size":
                return torch.Size([1])
            return func(*args, **(kwargs or {}))

    monkeypatch.setattr(torch.Tensor, "size", lambda self, *dim: torch.Size([1]), raising=False)
    monkeypatch.setattr(_python_dispatch, "_push_mode", lambda mode: None)
    monkeypatch.setattr(_python_dispatch.TorchDispatchMode, "__enter__", lambda self: self)
    Q, K, V = QKV

    def lying(Q, K, V, block_size, causal=False):
        with SmallSizes():
            return full_matrix_then_slice(Q, K, V, block_size)

    _, ops = record_ops(lying, Q, K, V, 8)
    assert largest_created(ops)[0] >= 24 * 40


def test_recordings_nest_and_step_aside():
    outer = profiling.Recording()
    with outer:
        torch.ones(2) + 1
        inner, ops = record_ops(lambda: torch.zeros(3) * 2)
        with outer.paused():
            torch.ones(4) * 3  # not recorded by the outer recording
        assert profiling.active_recording() is outer
    assert outer.problems == [] and profiling.active_recording() is None
    names = [op.name for op in outer.ops]
    assert names.count("aten.mul.Tensor") == 1 and "aten.zeros.default" in names, names
