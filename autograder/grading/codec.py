"""The grader's side of the wire (its partner in the kernel: kernel/codec.py): answers in, requests out.

Answers come from the student's kernel, so :func:`decode` accepts plain data only: ``None``,
booleans, numbers, strings, bytes, lists, tuples and namedtuples, dicts (``OrderedDict``,
``Counter``, ``defaultdict`` with a builtin factory), sets, slices, dataclasses of plain data,
numpy arrays and scalars of numeric dtypes, torch tensors (dtype, shape and raw bytes),
``torch.Size``, dtypes, devices, and handles (a number; the claimed type only answers
``isinstance`` against torch and numpy classes). It never unpickles, imports or instantiates
anything the sandbox names (a namedtuple or dataclass is rebuilt here from its field names);
depth, element count and size are bounded. Errors and warnings the student's code raised
come back as the nearest built-in class.

Requests are pickled here (:func:`encode_request`): arrays and tensors as raw bytes, proxies
as handle numbers. The changes the student's code made in place to them are mirrored back
onto the originals (:func:`mirror`).
"""

from __future__ import annotations

import base64
import builtins
import collections
import dataclasses
import io
import math
import pickle
import sys
import warnings

from autograder.grading.kernel import protocol
from autograder.grading.proxy import Proxy, RemoteClass

MAX_DEPTH = 64
MAX_ELEMENTS = 1 << 26  # numbers in one array or tensor
MAX_NODES = 1 << 20  # Python objects (numbers, strings, containers) in one answer

# numeric dtypes that may cross the boundary, numpy spelling (byte order added when decoding)
_NUMPY_KINDS = {"b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"}
_TORCH_DTYPES = {
    "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
    "complex64", "complex128", "bfloat16", "uint16", "uint32", "uint64",
}  # fmt: skip


class ProtocolError(Exception):
    """The student's kernel answered something that is not plain data."""


# ---- decoding answers (strict) ------------------------------------------------------------------


def _numpy_dtype(spec):
    import numpy as np

    if not isinstance(spec, str) or len(spec) < 2 or spec[0] not in "<>|=" or spec[1:] not in _NUMPY_KINDS:
        raise ProtocolError(f"unexpected array dtype {spec!r}")
    return np.dtype(spec)


def _shape(value):
    if not isinstance(value, list) or len(value) > 32 or not all(type(n) is int and n >= 0 for n in value):
        raise ProtocolError("invalid shape")
    if math.prod(value) > MAX_ELEMENTS:
        raise ProtocolError("array too large")
    return tuple(value)


def _raw(value, size):
    if not isinstance(value, str):
        raise ProtocolError("invalid data")
    raw = base64.b64decode(value, validate=True)
    if len(raw) != size:
        raise ProtocolError("data does not match the shape")
    return raw


def decode(value, session=None, depth=0, budget=None):
    """Plain data from the JSON structure the agent sent; anything else is a ProtocolError."""
    budget = budget if budget is not None else [MAX_NODES]
    budget[0] -= 1
    if budget[0] < 0:
        raise ProtocolError("the answer holds too many values")
    if depth > MAX_DEPTH:
        raise ProtocolError("nested too deeply")
    if value is None or type(value) in (bool, int, float, str):
        return value
    if not isinstance(value, list) or not value or not isinstance(value[0], str):
        raise ProtocolError(f"unexpected value of type {type(value).__name__}")
    tag, rest = value[0], value[1:]

    def items(seq):
        if not isinstance(seq, list):
            raise ProtocolError("invalid container")
        return [decode(x, session, depth + 1, budget) for x in seq]

    if tag == "L" and len(rest) == 1:
        return items(rest[0])
    if tag == "T" and len(rest) == 1:
        return tuple(items(rest[0]))
    if tag in ("set", "fset") and len(rest) == 1:
        try:
            return set(items(rest[0]))
        except TypeError as exc:
            raise ProtocolError("unhashable set item") from exc
    if tag == "D" and 1 <= len(rest) <= 3 and isinstance(rest[0], list):
        result = _dict_type(rest[1:])
        for pair in rest[0]:
            if not isinstance(pair, list) or len(pair) != 2:
                raise ProtocolError("invalid dict item")
            key = decode(pair[0], session, depth + 1, budget)
            try:
                result[key] = decode(pair[1], session, depth + 1, budget)
            except TypeError as exc:
                raise ProtocolError("unhashable dict key") from exc
        return result
    if tag == "NT" and len(rest) == 3:
        values = items(rest[2])
        return _namedtuple(rest[0], rest[1], len(values))(*values)
    if tag == "DC" and len(rest) == 4 and isinstance(rest[2], list):
        pairs = [p for p in rest[2] if isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)]
        if len(pairs) != len(rest[2]):
            raise ProtocolError("invalid dataclass")
        values = [decode(p[1], session, depth + 1, budget) for p in pairs]
        cls = _dataclass(rest[0], rest[1], tuple(p[0] for p in pairs), rest[3])
        return cls(*values)
    if tag == "f" and len(rest) == 1 and rest[0] in ("nan", "inf", "-inf"):
        return float(rest[0])
    if tag == "c" and len(rest) == 2:
        real, imag = (decode(x, session, depth + 1, budget) for x in rest)
        if type(real) is not float or type(imag) is not float:
            raise ProtocolError("invalid complex")
        return complex(real, imag)
    if tag == "B" and len(rest) == 1 and isinstance(rest[0], str):
        return base64.b64decode(rest[0], validate=True)
    if tag == "sl" and len(rest) == 3:
        parts = [decode(x, session, depth + 1, budget) for x in rest]
        if not all(p is None or type(p) is int for p in parts):
            raise ProtocolError("invalid slice")
        return slice(*parts)
    if tag == "E" and not rest:
        return Ellipsis
    if tag == "R" and len(rest) == 3 and all(type(x) is int for x in rest):
        return range(*rest)
    if tag == "A" and len(rest) == 3:
        import numpy as np

        dtype, shape = _numpy_dtype(rest[0]), _shape(rest[1])
        raw = _raw(rest[2], math.prod(shape) * dtype.itemsize)
        return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    if tag == "a" and len(rest) == 2:
        import numpy as np

        dtype = _numpy_dtype(rest[0])
        return np.frombuffer(_raw(rest[1], dtype.itemsize), dtype=dtype)[0]
    if tag == "nd" and len(rest) == 1:
        return _numpy_dtype(rest[0])
    if tag == "X" and len(rest) == 4 and type(rest[3]) is bool:
        return _tensor(*rest)
    if tag == "S" and len(rest) == 1:
        import torch

        if not isinstance(rest[0], list) or len(rest[0]) > 32 or not all(type(n) is int and n >= 0 for n in rest[0]):
            raise ProtocolError("invalid size")
        return torch.Size(rest[0])
    if tag == "dt" and len(rest) == 1 and rest[0] in _TORCH_DTYPES:
        import torch

        return getattr(torch, rest[0])
    if tag == "dev" and len(rest) == 1 and isinstance(rest[0], str) and len(rest[0]) < 32:
        import torch

        try:
            return torch.device(rest[0])
        except RuntimeError as exc:
            raise ProtocolError("invalid device") from exc
    if tag == "H" and len(rest) == 2 and type(rest[0]) is int and isinstance(rest[1], dict) and session is not None:
        return session.proxy(rest[0], rest[1])
    raise ProtocolError(f"unexpected value tagged {tag!r}")


def _tensor(dtype, shape, data, requires_grad):
    import numpy as np
    import torch

    if dtype not in _TORCH_DTYPES:
        raise ProtocolError(f"unexpected tensor dtype {dtype!r}")
    shape = _shape(shape)
    if dtype == "bfloat16":
        raw = _raw(data, math.prod(shape) * 2)
        tensor = torch.from_numpy(np.frombuffer(raw, dtype=np.int16).reshape(shape).copy()).view(torch.bfloat16)
    else:
        target = getattr(torch, dtype)
        itemsize = torch.empty((), dtype=target).element_size()
        raw = _raw(data, math.prod(shape) * itemsize)
        tensor = torch.from_numpy(
            np.frombuffer(raw, dtype=np.dtype(str(target).replace("torch.", ""))).reshape(shape).copy()
        )
    if requires_grad and (tensor.is_floating_point() or tensor.is_complex()):
        tensor.requires_grad_(True)
    return tensor


_DEFAULT_FACTORIES = {name: getattr(builtins, name) for name in protocol.DEFAULT_FACTORIES}
_rebuilt: dict = {}  # (kind, names...) -> a namedtuple or dataclass made here
_REBUILT_TYPES: set = set()


def _dict_type(spec):
    if not spec:
        return {}
    if spec == ["OrderedDict"]:
        return collections.OrderedDict()
    if spec == ["Counter"]:
        return collections.Counter()
    if len(spec) == 2 and spec[0] == "defaultdict" and (spec[1] is None or spec[1] in _DEFAULT_FACTORIES):
        return collections.defaultdict(_DEFAULT_FACTORIES.get(spec[1]))
    raise ProtocolError("invalid dict type")


def _names(name, fields, limit=256):
    if not isinstance(name, str) or not name.isidentifier() or not isinstance(fields, (list, tuple)):
        raise ProtocolError("invalid type description")
    if len(fields) > limit or not all(isinstance(f, str) and f.isidentifier() for f in fields):
        raise ProtocolError("invalid field names")
    return name, tuple(fields)


def _namedtuple(name, fields, count):
    """A namedtuple class made here with the student's type and field names."""
    name, fields = _names(name, fields)
    if len(fields) != count:
        raise ProtocolError("invalid namedtuple")
    key = ("namedtuple", name, fields)
    if key not in _rebuilt:
        try:
            _rebuilt[key] = collections.namedtuple(name, fields, module="student")
            _REBUILT_TYPES.add(_rebuilt[key])
        except ValueError as exc:
            raise ProtocolError("invalid namedtuple") from exc
    return _rebuilt[key]


def _dataclass(qualified, name, fields, flags):
    """A dataclass made here with the student's class name and fields (compared by value)."""
    name, fields = _names(name, fields)
    if not isinstance(qualified, str) or len(qualified) > 300:
        raise ProtocolError("invalid dataclass")
    if not (isinstance(flags, list) and len(flags) == 3 and all(type(f) is bool for f in flags)):
        raise ProtocolError("invalid dataclass")
    eq, frozen, order = flags
    key = ("dataclass", qualified, name, fields, eq, frozen, order)
    if key not in _rebuilt:
        try:
            cls = dataclasses.make_dataclass(name, fields, eq=eq, frozen=frozen, order=order and eq,
                                             namespace={"__student_class__": qualified})  # fmt: skip
        except (TypeError, ValueError) as exc:
            raise ProtocolError("invalid dataclass") from exc
        cls.__module__ = "student"
        _rebuilt[key] = cls
        _REBUILT_TYPES.add(cls)
    return _rebuilt[key]


# ---- encoding requests ------------------------------------------------------------------------------


class _Pickler(pickle.Pickler):
    """Pickle a request; arrays, tensors and proxies become persistent ids (raw bytes, handles)."""

    def __init__(self, file):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.sent = {}  # number -> the trusted object (to mirror in-place changes onto)
        self.seen = {}  # id(object) -> number

    def reducer_override(self, obj):
        """A namedtuple or dataclass rebuilt here from an answer goes back as its values."""
        if type(obj) in _REBUILT_TYPES:
            if isinstance(obj, tuple):
                return tuple, (tuple(obj),)
            return dict, ({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)},)
        return NotImplemented

    def persistent_id(self, obj):
        if isinstance(obj, (Proxy, RemoteClass)) or type(obj) is RemoteClass:
            return ("handle", object.__getattribute__(obj, "_hid"))
        np, torch = sys.modules.get("numpy"), sys.modules.get("torch")
        is_array = np is not None and isinstance(obj, np.ndarray) and obj.dtype.kind in "biufc"
        is_tensor = torch is not None and isinstance(obj, torch.Tensor)
        if not (is_array or is_tensor):
            return None
        if id(obj) in self.seen:
            return ("ref", self.seen[id(obj)])
        number = len(self.sent)
        self.seen[id(obj)] = number
        self.sent[number] = obj
        if is_array:
            array = np.ascontiguousarray(obj)
            return ("array", number, array.dtype.str, list(array.shape), array.tobytes())
        dtype, raw = protocol.tensor_bytes(obj)
        grad = obj.grad if obj.is_leaf and obj.requires_grad else None  # (.grad of a non-leaf only warns)
        return (
            "tensor",
            number,
            dtype,
            list(obj.shape),
            raw,
            bool(obj.requires_grad),
            isinstance(obj, torch.nn.Parameter),
            protocol.tensor_bytes(grad) if grad is not None and grad.shape == obj.shape else None,
        )


def encode_request(request: dict) -> tuple[str, dict]:
    """The base64 text of the pickled request, and the trusted objects it carries by number."""
    buffer = io.BytesIO()
    pickler = _Pickler(buffer)
    try:
        pickler.dump(request)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        raise TypeError(f"this value cannot be passed to the student's code: {exc}") from None
    return base64.b64encode(buffer.getvalue()).decode("ascii"), pickler.sent


def mirror(sent: dict, mutated, grads=()) -> None:
    """Apply in place, to the trusted originals, the changes the student's code made to them:
    their values (``mutated``) and, for leaf tensors that require grad, their ``.grad`` (``grads``:
    a tensor of the same shape and dtype, or None where the student's code cleared it)."""
    if not isinstance(mutated, list) or not isinstance(grads, list | tuple):
        raise ProtocolError("invalid mutation list")
    np, torch = sys.modules.get("numpy"), sys.modules.get("torch")
    for item in grads:
        if not isinstance(item, list) or len(item) != 2 or type(item[0]) is not int or item[0] not in sent:
            raise ProtocolError("invalid gradient mutation")
        original, new = sent[item[0]], decode(item[1])
        if torch is None or not isinstance(original, torch.Tensor) or not (original.is_leaf and original.requires_grad):
            continue
        if new is None:
            original.grad = None
        elif isinstance(new, torch.Tensor) and new.shape == original.shape and new.dtype == original.dtype:
            original.grad = new.detach().to(original.device)
    for item in mutated:
        if not isinstance(item, list) or len(item) != 2 or type(item[0]) is not int or item[0] not in sent:
            raise ProtocolError("invalid mutation")
        original, new = sent[item[0]], decode(item[1])
        if torch is not None and isinstance(original, torch.Tensor):
            if isinstance(new, torch.Tensor) and new.shape == original.shape and new.dtype == original.dtype:
                with torch.no_grad():
                    original.copy_(new.to(original.device))
        elif np is not None and isinstance(original, np.ndarray):
            same = isinstance(new, np.ndarray) and new.shape == original.shape and new.dtype == original.dtype
            if same and original.flags.writeable:
                np.copyto(original, new)


# ---- random states and errors from the student's process ---------------------------------------------


def set_rng_states(states) -> None:
    """Adopt random states that came from the sandbox, if they have exactly the expected form."""
    if not isinstance(states, dict):
        raise ProtocolError("invalid random states")
    torch, np = sys.modules.get("torch"), sys.modules.get("numpy")
    if torch is not None and isinstance(states.get("torch"), str):
        raw = base64.b64decode(states["torch"], validate=True)
        if len(raw) == torch.get_rng_state().numel():
            torch.set_rng_state(torch.frombuffer(bytearray(raw), dtype=torch.uint8))
    value = states.get("numpy")
    if np is not None and isinstance(value, list) and len(value) == 4 and isinstance(value[0], str):
        raw = base64.b64decode(value[0], validate=True)
        pos, has_gauss, gauss = value[1:]
        if (
            len(raw) == 624 * 4
            and type(pos) is int
            and 0 <= pos <= 624
            and has_gauss in (0, 1)
            and type(gauss) is float
        ):
            np.random.set_state(("MT19937", np.frombuffer(raw, dtype="<u4").copy(), pos, has_gauss, gauss))
    value = states.get("random")
    if "random" in sys.modules and isinstance(value, list) and len(value) == 3 and isinstance(value[0], str):
        import array

        raw = base64.b64decode(value[0], validate=True)
        pos, gauss = value[1:]
        if len(raw) == 624 * 4 and type(pos) is int and 0 <= pos <= 624 and (gauss is None or type(gauss) is float):
            internal = tuple(array.array("I", raw)) + (pos,)
            sys.modules["random"].setstate((3, internal, gauss))


_BUILTIN_EXCEPTIONS = {
    name: cls
    for name, cls in vars(builtins).items()
    if isinstance(cls, type) and issubclass(cls, Exception) and not issubclass(cls, Warning)
}
_BUILTIN_WARNINGS = {
    name: cls for name, cls in vars(builtins).items() if isinstance(cls, type) and issubclass(cls, Warning)
}
_exception_classes: dict = {}


class RemoteError(Exception):
    """Base of the exceptions re-raised from the student's process."""

    remote_traceback = ""


def remote_exception(error) -> BaseException:
    """An exception of the nearest built-in class to what the student's code raised."""
    if (
        not isinstance(error, dict)
        or not isinstance(error.get("mro"), list)
        or not isinstance(error.get("message"), str)
    ):
        return ProtocolError("invalid error report")
    names = [n for n in error["mro"] if isinstance(n, str)]
    base = RuntimeError
    for name in names:
        module, _, short = name.rpartition(".")
        if module == "builtins" and short in _BUILTIN_EXCEPTIONS:
            base = _BUILTIN_EXCEPTIONS[short]
            break
    shown = names[0].rpartition(".")[2] if names else "Error"
    if not shown.isidentifier():
        shown = base.__name__
    key = (shown, base)
    if key not in _exception_classes:
        _exception_classes[key] = type(shown, (RemoteError, base), {"__module__": "student"})
    exc = _exception_classes[key](error["message"])
    tb = error.get("traceback")
    exc.remote_traceback = tb if isinstance(tb, str) else ""
    return exc


def reissue_warnings(reported) -> None:
    """Re-emit here the warnings the student's code raised during a call (tests may check them)."""
    if not isinstance(reported, list):
        return
    for item in reported[:50]:
        if not (isinstance(item, list) and len(item) == 4 and isinstance(item[0], list) and isinstance(item[1], str)):
            continue
        category = UserWarning
        for name in item[0]:
            module, _, short = str(name).rpartition(".")
            if module == "builtins" and short in _BUILTIN_WARNINGS:
                category = _BUILTIN_WARNINGS[short]
                break
        filename = item[2] if isinstance(item[2], str) else "<student>"
        lineno = item[3] if type(item[3]) is int else 0
        warnings.warn_explicit(item[1], category, filename, lineno, module="student")
