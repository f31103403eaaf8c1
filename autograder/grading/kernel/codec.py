"""The kernel's side of the wire (its partner in the grader: ../codec.py): requests in, answers out.

Runs in the student's kernel (sent there as source by startup.py).

Requests: a request is a pickle made by the grader (``codec.encode_request``): arrays and tensors
travel as persistent ids carrying their raw bytes (and a tensor's ``.grad``), proxies as handle
numbers. Unpickling here only endangers this process, which is the student's anyway. After the
call, :func:`mutated` and :func:`grads_changed` list the arguments whose values, or whose
``.grad``, the student's code changed, so that the grader mirrors them onto its originals.

Answers: :func:`encode` turns a result into the JSON structure that ``codec.decode`` accepts:
numbers, strings, containers, raw array and tensor bytes, each tagged; anything else becomes a
numbered handle (:class:`Handles`) that later requests can name, and that the grader wraps in a
proxy; errors and warnings likewise (:func:`encode_error`, :func:`encode_warnings`). The student's
code can replace or break all of this: nothing it answers is trusted (``codec.decode`` checks every
answer strictly).
"""

import io
import math
import pickle
import sys
import traceback

if __name__.startswith("autograder."):  # in the grader; in the kernel, startup.py provides the module
    from autograder.grading.kernel import protocol

MAX_STRING = 1 << 20
MAX_DEPTH = 40

# ---- requests: the grader's pickle; what the call changed in its arguments ----------------------


def tensor_from_bytes(dtype, shape, raw):
    """A tensor of ``shape`` from the raw bytes the grader sent (a copy: the tensor is writable)."""
    import numpy as np
    import torch

    if dtype == "bfloat16":
        return torch.from_numpy(np.frombuffer(raw, dtype=np.int16).reshape(shape).copy()).view(torch.bfloat16)
    return torch.from_numpy(np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape).copy())


class RequestUnpickler(pickle.Unpickler):
    """The grader's pickle, with arrays, tensors and handles as persistent ids.

    ``objects``: handle number -> object, the objects the grader holds proxies for. ``sent`` keeps,
    for each array or tensor the grader sent, ``[the object here, its bytes as sent, its .grad's bytes]``.
    """

    def __init__(self, data, objects):
        super().__init__(io.BytesIO(data))
        self.objects = objects
        self.sent = {}  # number -> [object, bytes as sent, bytes of its .grad as sent]

    def persistent_load(self, pid):
        kind = pid[0]
        if kind == "handle":
            return self.objects[pid[1]]
        if kind == "ref":
            return self.sent[pid[1]][0]
        grad_raw = None
        if kind == "array":
            import numpy as np

            _, number, dtype, shape, raw = pid
            value = np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape).copy()
        elif kind == "tensor":
            import torch

            _, number, dtype, shape, raw, requires_grad, is_param, grad = pid
            value = tensor_from_bytes(dtype, shape, raw)
            if is_param:
                value = torch.nn.Parameter(value, requires_grad=requires_grad)
            elif requires_grad:
                value.requires_grad_(True)
            if grad is not None and value.requires_grad:
                grad_dtype, grad_raw = grad
                value.grad = tensor_from_bytes(grad_dtype, shape, grad_raw)
        else:
            raise pickle.UnpicklingError(f"unknown persistent id {kind!r}")
        self.sent[number] = [value, raw, grad_raw]
        return value


def mutated(sent, encode_value):
    """``[number, encoded value]`` of each array or tensor the grader sent whose values changed here."""
    changed = []
    for number, (value, raw, _) in sent.items():
        try:
            now = protocol.tensor_bytes(value)[1] if type(value).__module__.startswith("torch") else value.tobytes()
        except Exception:
            continue
        if now != raw:
            changed.append([number, encode_value(value, data=True)])
    return changed


def grads_changed(sent, encode_value):
    """``[number, encoded .grad or None]`` of the grader's leaf tensors whose ``.grad`` the student's code
    set, changed or cleared."""
    changed = []
    for number, (value, _, grad_sent) in sent.items():
        try:
            if not (getattr(value, "is_leaf", False) and value.requires_grad):
                continue
            grad = value.grad
            now = protocol.tensor_bytes(grad)[1] if grad is not None else None
        except Exception:
            continue
        if now != grad_sent:
            changed.append([number, encode_value(grad, data=True) if grad is not None else None])
    return changed


# ---- answers: plain data, or numbered handles ---------------------------------------------------


class Handles:
    """The objects that stay here, numbered: number -> object, while the grader holds a proxy for it.

    ``numbers`` gives new numbers (shared with the kept autograd graphs, so no two are the same)."""

    def __init__(self, numbers):
        self.numbers = numbers
        self.objects = {}  # number -> object
        self.ids = {}  # id(object) -> number

    def handle(self, obj):
        """``["H", number, what the grader may know of the object]``."""
        number = self.ids.get(id(obj))
        if number is None or self.objects.get(number) is not obj:
            number = next(self.numbers)
            self.objects[number] = obj
            self.ids[id(obj)] = number
        torch = sys.modules.get("torch")
        info = {
            "type": protocol.type_name(type(obj)),
            "mro": [protocol.type_name(c) for c in type(obj).__mro__],
            "callable": callable(obj),
            "name": str(getattr(obj, "__name__", "")) if isinstance(obj, type) else "",
            "qualname": protocol.type_name(obj) if isinstance(obj, type) else "",
            "tensor": bool(torch is not None and isinstance(obj, torch.Tensor)),
        }
        return ["H", number, info]

    def release(self, numbers):
        """Drop the objects the grader no longer holds."""
        for number in numbers:
            obj = self.objects.pop(number, None)
            if obj is not None and self.ids.get(id(obj)) == number:
                del self.ids[id(obj)]


def plain_dataclass(cls) -> bool:
    """A dataclass of plain data: every function of its classes was written by ``dataclasses``."""
    if not isinstance(getattr(cls, "__dataclass_fields__", None), dict) or not hasattr(cls, "__dataclass_params__"):
        return False
    import dataclasses

    generated = ("<string>", dataclasses.__file__)
    for klass in cls.__mro__[:-1]:
        for value in vars(klass).values():
            if isinstance(value, (property, classmethod, staticmethod)):
                return False
            code = getattr(value, "__code__", None)
            if callable(value) and not isinstance(value, type) and getattr(code, "co_filename", "") not in generated:
                return False
    return True


def encode(obj, handle, data=False, depth=0):
    """``obj`` as tagged plain data; anything else as ``handle(obj)``.

    ``data``: a tensor of a subclass (a ``Parameter``) is sent as data too, not as a handle."""
    if depth > MAX_DEPTH:
        raise ValueError("the value is nested too deeply to be sent to the grader")
    kind = type(obj)
    if obj is None or kind is bool or kind is int:
        return obj
    if kind is float:
        return obj if math.isfinite(obj) else ["f", repr(obj)]
    if kind is str:
        return obj if len(obj) <= MAX_STRING else obj[:MAX_STRING]
    if kind is complex:
        return ["c", encode(obj.real, handle), encode(obj.imag, handle)]
    if kind is bytes:
        return ["B", protocol.b64(obj)]
    if isinstance(obj, list):  # list subclasses too: they compare as lists
        return ["L", [encode(x, handle, data, depth + 1) for x in obj]]
    if isinstance(obj, tuple):
        items = [encode(x, handle, data, depth + 1) for x in obj]
        fields = getattr(kind, "_fields", None)
        if isinstance(fields, tuple) and len(fields) == len(obj) and all(type(f) is str for f in fields):
            return ["NT", str(kind.__name__), list(fields), items]  # a namedtuple keeps its fields
        return ["T", items]
    if isinstance(obj, dict):
        pairs = [[encode(k, handle, data, depth + 1), encode(v, handle, data, depth + 1)] for k, v in obj.items()]
        name = protocol.type_name(kind)
        if name == "collections.defaultdict":
            factory = obj.default_factory
            builtin = isinstance(factory, type) and factory.__module__ == "builtins"
            name = factory.__name__ if builtin and factory.__name__ in protocol.DEFAULT_FACTORIES else None
            return ["D", pairs, "defaultdict", name]
        if name in ("collections.OrderedDict", "collections.Counter"):
            return ["D", pairs, name.rpartition(".")[2]]
        return ["D", pairs]
    if plain_dataclass(kind):
        import dataclasses

        params = kind.__dataclass_params__
        fields = [[f.name, encode(getattr(obj, f.name), handle, data, depth + 1)] for f in dataclasses.fields(obj)]
        return ["DC", protocol.type_name(kind), str(kind.__name__), fields,
                [bool(params.eq), bool(params.frozen), bool(params.order)]]  # fmt: skip
    if kind in (set, frozenset):
        return ["set", [encode(x, handle, data, depth + 1) for x in obj]]
    if kind is slice:
        return ["sl", encode(obj.start, handle), encode(obj.stop, handle), encode(obj.step, handle)]
    if obj is Ellipsis:
        return ["E"]
    if kind is range:
        return ["R", obj.start, obj.stop, obj.step]
    np, torch = sys.modules.get("numpy"), sys.modules.get("torch")
    if np is not None:
        if isinstance(obj, np.ndarray) and obj.dtype.kind in "biufc" and not obj.dtype.fields:
            array = np.ascontiguousarray(np.asarray(obj))
            return ["A", array.dtype.str, list(array.shape), protocol.b64(array.tobytes())]
        if isinstance(obj, np.generic) and obj.dtype.kind in "biufc":
            return ["a", obj.dtype.str, protocol.b64(obj.tobytes())]
        if isinstance(obj, np.dtype):
            return ["nd", obj.str]
    if torch is not None:
        if isinstance(obj, torch.Tensor) and (data or type(obj) is torch.Tensor):
            if obj.layout == torch.strided and not obj.is_quantized:
                dtype, raw = protocol.tensor_bytes(obj)
                return ["X", dtype, list(obj.shape), protocol.b64(raw), bool(obj.requires_grad)]
        if isinstance(obj, torch.Size):
            return ["S", [int(x) for x in obj]]
        if isinstance(obj, torch.dtype):
            return ["dt", str(obj).replace("torch.", "")]
        if isinstance(obj, torch.device):
            return ["dev", str(obj)]
    return handle(obj)


def encode_error(exc):
    """An exception as plain data: its classes' names, its message, the student's traceback."""
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    # drop the agent's own frames: the student sees their code, not the machinery
    kept = [line for line in lines if '"autograder-' not in line]
    return {"mro": [protocol.type_name(c) for c in type(exc).__mro__], "message": str(exc)[:4000],
            "traceback": "".join(kept)[-8000:]}  # fmt: skip


def encode_warnings(caught):
    """The warnings a request raised (the first 50): their classes' names, message, file and line."""
    return [
        [[protocol.type_name(c) for c in w.category.__mro__], str(w.message)[:2000], str(w.filename),
         int(w.lineno or 0)]
        for w in caught[:50]
    ]  # fmt: skip
