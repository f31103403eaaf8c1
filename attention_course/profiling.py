"""What PyTorch computes during a call: every operation, the shapes it reads and creates.

Chapter 08's tests look at *how* an answer computes, not only at what it returns: tiled attention must
never create a ``T_q x T_k`` tensor, and a cached decoding step must project only the new tokens.
:func:`record_ops` runs a function under a ``TorchDispatchMode`` (PyTorch's hook below every operator,
factory functions included) and returns, with the result, one :class:`Op` per operation that ran:
``(O, L), ops = record_ops(tiled_attention, Q, K, V, 16)``. A record is plain data (named tuples of
strings, ints and tuples), so it can be read anywhere: in the notebook, in nbgrader, and through the
course's class grader, which runs the call in the student's sandbox and records it there
(``autograder/BOUNDARY.md``). :mod:`attention_course.op_counts` reads what a record says (the largest
tensor created, the matrix products and their cost); its functions can be imported from here too.

**A record you can trust.** A record only says something if the call computed where the recording could
see it. So :func:`record_ops` refuses (raises :class:`RecordingError`, a ``RuntimeError`` that says why)
a call that

- switched the recording off: its dispatch mode was taken off PyTorch's stack (and put back),
  or a torch function returned a tensor, or changed one in place, without any recorded operation
  (``torch._C._DisableTorchDispatch``, ``no_dispatch``, ``_disable_current_modes``...);
- brought data in from outside PyTorch: ``torch.tensor`` / ``torch.from_numpy`` of an array or
  list of more than one floating-point number (integers and booleans, such as positions and
  masks, are fine), or read a tensor's memory directly (``Tensor.numpy``,
  ``__array__``, ``__dlpack__``, ``data_ptr``, ``untyped_storage``), which is how NumPy writes into
  a tensor behind PyTorch's back;
- ran a thread (started with ``threading``): the recording sees only the calling thread;
- returned a tensor that no recorded operation made during the call (a tensor kept from an earlier
  call, or computed out of sight), other than one of its own arguments.

It watches at two levels, both PyTorch's own: a ``TorchFunctionMode`` sees each torch function the call
uses (``torch.matmul``, ``Tensor.numpy``), the ``TorchDispatchMode`` each operation they run. It pushes
its modes and reads tensors only through C functions and descriptors bound when this module is imported,
so that replacing ``torch.Tensor`` attributes, ``TorchDispatchMode`` or the functions of
``torch.utils._python_dispatch`` afterwards does not change what it sees, and it keeps no tensor alive.
Honest code of every style passes: loops, ``einsum``, ``F.scaled_dot_product_attention`` on blocks,
in-place updates, ``torch.no_grad()``, float64, views, modules, factory functions, scalars made with
``torch.tensor``, printing, autograd inside the call.

What it cannot catch: code written against it that disables both levels at once (raw ``torch.ops.aten``
calls), carries values out of sight one Python number at a time, uses a thread started before the call
(or started with ``_thread`` directly), or digs out the recording's own objects. In one process a
submission can also replace this module's functions before a test imports them. The class grader closes
that gap and flags the rest: there the test's ``record_ops`` is the grader's own, the recording in the
student's process is a private copy of this module bound before any student cell runs, and code that
names this machinery is flagged (``autograder/BOUNDARY.md``, "Recording what the student's code
computes"). Record calls on fresh inputs: then no result kept from an earlier call passes for one.

**For tools that run part of a call elsewhere** (the class grader, which sends this one file into the
student's kernel and runs it there privately: so it imports nothing of the course there):
:class:`Recording` is the recording itself (``with Recording() as recording: ...``; ``.ops``,
``.problems``), :func:`active_recording` the one running in this thread; a recording takes in what was
recorded in another process (:meth:`Recording.add`), accepts tensors that came from there
(:meth:`Recording.adopt`), and steps aside while its own machinery runs (:meth:`Recording.paused`)."""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from typing import NamedTuple

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["Op", "Recording", "RecordingError", "active_recording", "record_ops"]

if __name__ == "attention_course.profiling":  # (not in the kernel's private copy: it only records)
    from attention_course.op_counts import MATMUL_OPS, largest_created, matmul_flops, matmuls  # noqa: F401


class Op(NamedTuple):
    """One operation PyTorch ran: its ATen name, the shapes of the tensors it read and created."""

    name: str  # the ATen overload, e.g. "aten.mm.default", "aten.ones.default"
    inputs: tuple  # shapes (tuples of ints) of its tensor arguments, in order
    outputs: tuple  # shapes of the tensors it returned, in order
    is_view: bool  # True when its outputs share the memory of an input (view, slice, expand, ...)


class RecordingError(RuntimeError):
    """The call computed where the recording could not see it, so its record cannot be trusted."""


# ---- what the recording reads of PyTorch, bound now ------------------------------------------------
# The call under test runs in the same process and may replace Python-level attributes of torch
# (torch.Tensor's methods, the functions of torch.utils._python_dispatch) or the mode classes'
# methods. The recording reads tensors and pushes its modes only through these C functions and
# descriptors, taken when this module is imported (torch._C.TensorBase cannot be patched).
_C = torch._C
_TensorBase = getattr(_C, "TensorBase", None) or _C._TensorBase
_size, _tensor_numel, _storage_of = _TensorBase.size, _TensorBase.numel, _TensorBase.untyped_storage
_version_of = _TensorBase._version.__get__
_is_floating_point, _is_complex = _TensorBase.is_floating_point, _TensorBase.is_complex
_storage_ptr = _C.StorageBase.data_ptr
_no_torch_function = _C.DisableTorchFunction  # the recording's own reads are never seen by any function mode
_DISPATCH = (_C._push_on_torch_dispatch_stack, functools.partial(_C._pop_torch_dispatch_stack, None),
             _C._len_torch_dispatch_stack, _C._get_dispatch_stack_at)  # fmt: skip
_FUNCTION = (_C._push_on_torch_function_stack, _C._pop_torch_function_stack, _C._len_torch_function_stack,
             _C._get_function_stack_at)  # fmt: skip
_setprofile, _getprofile, _get_ident = threading.setprofile, threading.getprofile, threading.get_ident

# torch functions that hand out a tensor's memory outside PyTorch's operations
_MEMORY_ACCESS = frozenset({"numpy", "__array__", "__dlpack__", "data_ptr", "untyped_storage", "storage",
                            "_typed_storage"})  # fmt: skip
# torch functions that format a tensor: torch takes every dispatch mode off the stack while it does (and
# puts them back), and computes nothing the call can use
_PRINTING = frozenset({"__repr__", "__str__", "__format__"})
_MAX_PROBLEMS = 20
_active = threading.local()  # .stack: the recordings running in this thread, innermost last


def _tensors(value, depth=0) -> list:
    """The tensors in ``value`` (inside tuples, lists and dict values), in order."""
    if _TensorBase in type(value).__mro__:
        return [value]
    if depth > 10 or not isinstance(value, (tuple, list, dict)):
        return []
    found = []
    for item in value.values() if isinstance(value, dict) else value:
        if _TensorBase in type(item).__mro__:
            found.append(item)
        elif isinstance(item, (tuple, list, dict)):
            found += _tensors(item, depth + 1)
    return found


def _shape(tensor) -> tuple:
    return tuple(_size(tensor))


def _key(tensor):
    """Where a tensor's memory lives (its storage), or None for a tensor without one (empty, sparse...)."""
    try:
        storage = _storage_of(tensor)
        pointer = _storage_ptr(storage)
        return pointer or None  # (CPU and CUDA memory never share addresses)
    except (RuntimeError, NotImplementedError, TypeError):
        return None


def _version(tensor):
    """The tensor's version counter (bumped by every in-place change PyTorch makes), None if it has none."""
    try:
        return _version_of(tensor)
    except RuntimeError:  # inference tensors have no version counter
        return None


def _is_real_valued(tensor) -> bool:
    """Floating-point or complex: values an answer is made of (positions, masks and counts are not)."""
    return bool(_is_floating_point(tensor) or _is_complex(tensor))


def _describe(func) -> str:
    """``torch.matmul``, ``Tensor.add_``: a torch function as the student wrote it."""
    name = getattr(func, "__name__", None) or str(func)
    owner = getattr(func, "__qualname__", name).rpartition(".")[0]
    if name == "__get__" or name == "__set__":
        return f"the attribute {getattr(getattr(func, '__self__', None), '__name__', '?')}"
    if owner in ("TensorBase", "Tensor", "_TensorBase"):
        return f"Tensor.{name}"
    return f"torch.{name}" if owner in ("", "_VariableFunctionsClass") else f"{owner}.{name}"


class _Operations(TorchDispatchMode):
    """The dispatch level: every operation PyTorch runs in this thread while the recording is on."""

    def __init__(self, recording):  # (TorchDispatchMode.__init__ is not needed: the recording pushes it itself)
        self.recording = recording

    @property
    def _mode_key(self):
        # PyTorch reads this attribute each time the mode is pushed onto its stack (by any route): the
        # recording pushes it exactly once, or once more each time it steps aside (paused).
        self.recording._pushes += 1
        raise AttributeError("_mode_key")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        with _no_torch_function():
            self.recording._operation(func, (args, kwargs), out)
        return out


class _Calls(TorchFunctionMode):
    """The function level: each torch function the call uses (``torch.matmul``, ``Tensor.numpy``...)."""

    def __init__(self, recording):
        self.recording = recording

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        recording = self.recording
        with _no_torch_function():
            if getattr(func, "__name__", "") in _MEMORY_ACCESS:
                recording._problem(
                    f"{_describe(func)} read a tensor's memory outside PyTorch's operations "
                    "(how NumPy computes with or writes into a tensor): use PyTorch operations only",
                    "memory",
                )
            before, pushes = recording._sequence, recording._pushes
            inputs = [(t, _version(t)) for t in _tensors((args, kwargs))]
        recording._handling += 1
        try:
            out = func(*args, **kwargs)
        finally:
            recording._handling -= 1
            if getattr(func, "__name__", "") in _PRINTING:  # torch formats tensors with every mode set aside
                recording._expected_pushes += recording._pushes - pushes
        with _no_torch_function():
            recording._function_returned(func, before, inputs, out)
        return out


class Recording:
    """Records every PyTorch operation this thread runs while it is on (``with Recording() as recording:``).

    ``ops``: the :class:`Op` list, in order; ``problems``: what made the record untrustworthy (see the
    module's docstring); :meth:`check_result` adds the problems of a call's result.
    """

    def __init__(self):
        self.ops: list[Op] = []
        self.problems: list[str] = []
        self._kinds: set[str] = set()
        self._operations, self._calls = _Operations(self), _Calls(self)
        self._written: dict = {}  # storage -> the sequence number of the last recorded operation that wrote it
        self._sequence = 0  # operations recorded here, and tensors adopted
        self._count = 0  # operations appended to ops
        self._pushes = self._expected_pushes = 0  # times PyTorch pushed the dispatch mode, and times we did
        self._counts_pushes = False  # whether this PyTorch says when it pushes a mode
        self._handling = 0  # >0 while a torch function runs under the function mode (it is off the stack then)
        self._thread = None
        self._profile = None  # threading's profile hook before ours
        self._hook = self._thread_started  # ours (one bound method, compared by identity)

    # ---- on and off ---------------------------------------------------------------------------------

    def __enter__(self):
        self._thread = _get_ident()
        self._switch_on()
        _active.__dict__.setdefault("stack", []).append(self)
        return self

    def __exit__(self, *exc):
        stack = _active.__dict__.get("stack", [])
        if self in stack:
            stack.remove(self)
        self._switch_off()
        self._check_pushes()
        if len(self.ops) != self._count:
            self._problem("the record was changed during the call")
        return False

    def _check_pushes(self):
        """PyTorch pushed the dispatch mode more often than the recording did: someone pushed it back."""
        if self._counts_pushes and self._pushes > self._expected_pushes:
            self._problem(
                "the recording was switched off and on again during the call (its mode was taken off "
                "PyTorch's dispatch stack and pushed back)"
            )

    def _switch_on(self, skip_functions=False):
        if not skip_functions:
            _FUNCTION[0](self._calls)
        self._check_pushes()
        pushes = self._pushes
        _DISPATCH[0](self._operations)
        self._counts_pushes = self._pushes > pushes  # (a PyTorch that pushes without reading _mode_key gives no count)
        self._expected_pushes = self._pushes
        self._profile = _getprofile()
        _setprofile(self._hook)

    def _switch_off(self, skip_functions=False):
        if _getprofile() is self._hook:
            _setprofile(self._profile)
        else:
            self._problem("the recording's watch on new threads was removed during the call")
        self._take_off(_DISPATCH, self._operations, "dispatch")
        if not skip_functions:
            self._take_off(_FUNCTION, self._calls, "function")

    def _take_off(self, stack, mode, what):
        """Pop ``mode`` from one of PyTorch's mode stacks, putting back whatever was pushed above it."""
        push, pop, length, at = stack
        if not any(at(i) is mode for i in range(length())):
            self._problem(f"the recording's {what} mode was taken off PyTorch's {what} stack during the call")
            return
        above = []
        while at(length() - 1) is not mode:
            above.append(pop())
        pop()
        if above:
            self._problem(f"the call left a {what} mode of its own on PyTorch's stack, above the recording's")
            for other in reversed(above):
                push(other)

    @contextlib.contextmanager
    def paused(self):
        """Step aside (record nothing, check nothing) for the length of the block: for a tool's own machinery."""
        inside_call = self._handling > 0  # the function mode is already off its stack while a function runs
        self._switch_off(skip_functions=inside_call)
        try:
            yield self
        finally:
            self._switch_on(skip_functions=inside_call)

    def _thread_started(self, frame, event, arg):
        """threading's profile hook while the recording is on: called once in each thread started meanwhile."""
        sys.setprofile(None)
        if _get_ident() != self._thread:
            self._problem(
                f"a thread ({threading.current_thread().name}) ran during the call: the recording "
                "sees only the calling thread's operations"
            )

    # ---- what it sees ---------------------------------------------------------------------------------

    def _problem(self, text: str, kind: str = "") -> None:
        """Note what makes the record untrustworthy (once per ``kind``: the first instance says enough)."""
        if kind and kind in self._kinds:
            return
        self._kinds.add(kind)
        if text not in self.problems and len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(text)

    def _operation(self, func, inputs, out) -> None:
        """The dispatch mode saw ``func`` run on ``inputs`` and return ``out``."""
        ins, outs = _tensors(inputs), _tensors(out)
        name = str(func)
        self.ops.append(
            Op(
                name,
                tuple(_shape(t) for t in ins),
                tuple(_shape(t) for t in outs),
                bool(getattr(func, "is_view", False)),
            )
        )
        self._count += 1
        self._sequence += 1
        if name.startswith("aten.lift") and ins and _tensor_numel(ins[0]) > 1 and _is_real_valued(ins[0]):
            self._problem(
                f"{_tensor_numel(ins[0])} numbers came in from outside PyTorch ({name}: torch.tensor or "
                "torch.from_numpy of an array or a list): compute with PyTorch operations on the inputs",
                "outside",
            )
        for tensor in outs:
            key = _key(tensor)
            if key is not None:
                self._written[key] = self._sequence

    def _written_since(self, key, sequence) -> bool:
        return key is not None and self._written.get(key, -1) > sequence

    def _function_returned(self, func, before, inputs, out) -> None:
        """A torch function ran: what it changed or made must come from operations recorded meanwhile."""
        for tensor, version in inputs:
            if version is None or _version(tensor) == version:
                continue
            if not self._written_since(_key(tensor), before):
                self._problem(
                    f"{_describe(func)} changed a tensor in place without any recorded operation: the "
                    "recording was switched off while it ran",
                    "off",
                )
        if getattr(func, "__name__", "") == "__get__":  # an attribute (x.grad, x.data) hands out what exists
            return
        sources = None
        for tensor in _tensors(out):
            key = _key(tensor)
            if key is None or self._written_since(key, before):
                continue
            if sources is None:  # the function may hand back (a view of) one of its inputs
                sources = {_key(t) for t, _ in inputs}
            if key in sources:
                continue
            self._problem(
                f"{_describe(func)} returned a tensor of shape {_shape(tensor)} that no recorded "
                "operation made: the recording was switched off while it ran",
                "off",
            )

    def check_result(self, result, arguments=()) -> None:
        """Each tensor in ``result`` must have been made by an operation recorded here (or be one of
        the ``arguments``' tensors): note a problem for any other."""
        with _no_torch_function():
            given = {_key(t) for t in _tensors(arguments)}
            for index, tensor in enumerate(_tensors(result)):
                key = _key(tensor)
                if key is None or key in given or key in self._written:
                    continue
                self._problem(
                    f"the result's tensor #{index + 1} (shape {_shape(tensor)}) was not made by any "
                    "recorded operation during the call: it was kept from earlier, or computed where the "
                    "recording could not see it",
                    "result",
                )

    # ---- for tools that run part of the call in another process -----------------------------------

    def add(self, ops, problems=()) -> None:
        """Append operations recorded elsewhere (:class:`Op` tuples), and that recording's problems."""
        for op in ops:
            self.ops.append(op)
            self._count += 1
        for text in problems:
            self._problem(text)

    def adopt(self, tensors) -> None:
        """Count these tensors as made by recorded operations now (they came from a call recorded elsewhere)."""
        with _no_torch_function():
            self._sequence += 1
            for tensor in _tensors(list(tensors)):
                key = _key(tensor)
                if key is not None:
                    self._written[key] = self._sequence


def active_recording() -> Recording | None:
    """The innermost recording running in this thread, or None."""
    stack = _active.__dict__.get("stack")
    return stack[-1] if stack else None


def _name(fn) -> str:
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) else "the call"


def record_ops(fn, *args, **kwargs):
    """Call ``fn(*args, **kwargs)`` and record every PyTorch operation it runs.

    Returns ``(result, ops)``: what ``fn`` returned, and a list of :class:`Op`, in the order they
    ran. Raises :class:`RecordingError` when the record cannot be trusted (the module's docstring
    says when): the call must compute with PyTorch operations, in this thread, with the recording on.
    """
    recording = Recording()
    with recording:
        result = fn(*args, **kwargs)
    recording.check_result(result, (args, kwargs))
    if recording.problems:
        raise RecordingError(
            f"record_ops cannot trust its record of {_name(fn)}: " + "; ".join(recording.problems) + ". The test "
            "records how the answer computes, so compute with PyTorch operations on the inputs, in this thread, "
            "and leave the recording on."
        )
    return result, recording.ops
