"""The trusted side of the call protocol between the grader's tests and the student's kernel.

The test cells (visible and hidden, restored from the instructor notebook) run in the
grader's own process. The names a test uses that the student's cells defined are bound to
:class:`Proxy` objects; calling one sends a request to the agent in the sandboxed kernel
(``agent.py``) over the kernel's shell channel (an ``execute_request`` whose user
expression runs the agent; its answer comes back in the ``execute_reply``).

Trust boundary:

- Requests are pickled here (arrays and tensors as raw bytes, proxies as handle numbers).
  Unpickling happens in the sandbox, which only endangers the student's own process.
- Answers are JSON, decoded by :func:`decode`, which accepts only plain data: ``None``,
  booleans, numbers, strings, bytes, lists, tuples, dicts, sets, slices, numpy arrays and
  scalars of numeric dtypes, torch tensors (dtype, shape and raw bytes), ``torch.Size``,
  dtypes, devices, and handles (a number; the claimed type is only used to answer
  ``isinstance`` against torch and numpy classes). It never unpickles and never imports
  or instantiates anything the sandbox names. Message size is capped by the socket.
- Operations that only read a value the student's process holds as a tensor (comparisons,
  arithmetic, ``bool``, indexing, numpy or torch functions applied to it) fetch it as data
  and compute here. Comparing or testing the truth of any other remote object never asks
  the sandbox: a student object cannot claim to equal the expected answer.
- numpy, torch, the reference modules and the assertion helpers exist only here: a student
  who replaces ``numpy.testing`` or ``builtins`` does so in their own process only.
"""

from __future__ import annotations

import base64
import builtins
import io
import json
import math
import operator
import pickle
import sys
import warnings

# the same code on both sides: the random states' format, the tensors' raw bytes, and the order in which
# the tensors of a result are listed (the autograd bridge pairs them by position), the device queries
from autograder.grading.agent import DEVICE_QUERIES, _tensor_bytes, _tensors, device_query, rng_states

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
    if tag == "D" and len(rest) == 1 and isinstance(rest[0], list):
        result = {}
        for pair in rest[0]:
            if not isinstance(pair, list) or len(pair) != 2:
                raise ProtocolError("invalid dict item")
            key = decode(pair[0], session, depth + 1, budget)
            try:
                result[key] = decode(pair[1], session, depth + 1, budget)
            except TypeError as exc:
                raise ProtocolError("unhashable dict key") from exc
        return result
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


# ---- encoding requests ----------------------------------------------------------------------------


class _Pickler(pickle.Pickler):
    """Pickle a request; arrays, tensors and proxies become persistent ids (raw bytes, handles)."""

    def __init__(self, file):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.sent = {}  # number -> the trusted object (to mirror in-place changes onto)
        self.seen = {}  # id(object) -> number

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
        dtype, raw = _tensor_bytes(obj)
        grad = obj.grad if obj.is_leaf and obj.requires_grad else None  # (.grad of a non-leaf only warns)
        return (
            "tensor",
            number,
            dtype,
            list(obj.shape),
            raw,
            bool(obj.requires_grad),
            isinstance(obj, torch.nn.Parameter),
            _tensor_bytes(grad) if grad is not None and grad.shape == obj.shape else None,
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


def _mirror(sent: dict, mutated, grads=()) -> None:
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


# ---- random states ----------------------------------------------------------------------------------
# rng_states (imported from agent.py) is the same code on both sides, so the formats match;
# set_rng_states below is the grader's strict counterpart for states that come from the sandbox.


def rng_fingerprint(states: dict) -> str:
    import hashlib

    return hashlib.sha1(json.dumps(states, sort_keys=True).encode()).hexdigest()


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


# ---- devices a test simulates -----------------------------------------------------------------------


def simulated_devices() -> dict | None:
    """What the test made torch answer about devices, where it replaced torch's own functions.

    A test may stand in for a machine it does not run on by replacing ``torch.cuda.is_available``,
    ``torch.cuda.device_count`` or ``torch.backends.mps.is_available`` (with a lambda or a mock).
    The replacement lives in the grader's process; the answers it gives (plain values, never the
    test's code) travel with each call, and the agent makes the student's torch give the same
    answers for the length of the call. Functions torch defined itself are left alone, so a
    grader on a GPU machine does not tell the sandbox (which has no GPU) that CUDA is there.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    simulated = {}
    for name in DEVICE_QUERIES:
        try:
            owner, attribute = device_query(torch, name)
        except AttributeError:  # a torch without that backend
            continue
        function = getattr(owner, attribute, None)
        if function is None or str(getattr(function, "__module__", "") or "").startswith("torch"):
            continue
        value = function()
        simulated[name] = int(value) if attribute == "device_count" else bool(value)
    return simulated or None


# ---- exceptions and warnings from the student's process ---------------------------------------------

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


# ---- proxies ------------------------------------------------------------------------------------------


def _trusted_class(info):
    """The grader's own class for a remote object's claimed type, when it is a torch/numpy class.

    Only classes already imported here are considered (nothing is imported on the sandbox's
    word); the first match along the claimed MRO wins, so a student's subclass of
    ``nn.Module`` answers ``isinstance(obj, nn.Module)``.
    """
    for name in info.get("mro", [])[:64] if isinstance(info.get("mro"), list) else []:
        if not isinstance(name, str):
            continue
        module, _, qualname = name.rpartition(".")
        if module.split(".")[0] not in ("torch", "numpy", "matplotlib", "builtins") or module not in sys.modules:
            continue
        obj = sys.modules[module]
        for part in qualname.split("."):  # plain lookups: no module __getattr__ runs on the sandbox's word
            obj = vars(obj).get(part) if hasattr(obj, "__dict__") else None
        if isinstance(obj, type) and obj not in (object,):
            return obj
    return None


def _materialize_tree(value):
    if isinstance(value, Proxy):
        return object.__getattribute__(value, "_session").request("materialize", object.__getattribute__(value, "_hid"))
    if type(value) in (list, tuple):
        return type(value)(_materialize_tree(v) for v in value)
    if type(value) is dict:
        return {k: _materialize_tree(v) for k, v in value.items()}
    return value


class Proxy:
    """A handle on an object in the student's process.

    Attribute access, calls, item assignment and in-place operators go to the student's
    process. Reading a remote tensor (operators, comparisons, ``bool``, indexing, numpy or
    torch functions) fetches it as data and computes here. Equality and truth of any other
    remote object are identity and True: never the student's answer.
    """

    __slots__ = ("_session", "_hid", "_info", "__weakref__")

    def __init__(self, session, hid, info):
        object.__setattr__(self, "_session", session)
        object.__setattr__(self, "_hid", hid)
        object.__setattr__(self, "_info", info)

    def _rpc(self, op, *args, **kw):
        return object.__getattribute__(self, "_session").request(op, object.__getattribute__(self, "_hid"), *args, **kw)

    def _is_data(self):
        return bool(object.__getattribute__(self, "_info").get("tensor"))

    def _value(self):
        return self._rpc("materialize")

    @property
    def __class__(self):
        return _trusted_class(object.__getattribute__(self, "_info")) or Proxy

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__") or name.startswith(("_repr_", "_ipython_")):
            raise AttributeError(name)
        return self._rpc("getattr", name)

    def __setattr__(self, name, value):
        self._rpc("setattr", name, value)

    def __delattr__(self, name):
        self._rpc("delattr", name)

    def __call__(self, *args, **kwargs):
        return self._rpc("call", args, kwargs, sync=True)

    def __getitem__(self, key):
        return self._value()[key] if self._is_data() else self._rpc("getitem", key)

    def __setitem__(self, key, value):
        self._rpc("setitem", key, value)

    def __delitem__(self, key):
        self._rpc("delitem", key)

    def __len__(self):
        if self._is_data():
            return len(self._value())
        n = self._rpc("len")
        if type(n) is not int or n < 0:
            raise TypeError("len() of the student's object is not a non-negative int")
        return n

    def __iter__(self):
        if self._is_data():
            yield from self._value()
            return
        iterator = self._rpc("iter")
        while True:
            try:
                yield (
                    object.__getattribute__(iterator, "_rpc")("next") if isinstance(iterator, Proxy) else next(iterator)
                )
            except StopIteration:
                return

    def __contains__(self, item):
        return item in self._value() if self._is_data() else bool(self._rpc("contains", item) is True)

    def __repr__(self):
        value = self._value() if self._is_data() else self._rpc("repr")
        return repr(value) if self._is_data() else str(value)

    def __str__(self):
        return str(self._value()) if self._is_data() else str(self._rpc("str"))

    def __format__(self, spec):
        return format(self._value(), spec) if self._is_data() else str(self._rpc("format", spec))

    def __dir__(self):
        names = self._rpc("dir")
        return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []

    def __bool__(self):
        return bool(self._value()) if self._is_data() else True

    def __eq__(self, other):
        return self._value() == other if self._is_data() else self is other

    def __ne__(self, other):
        return self._value() != other if self._is_data() else self is not other

    def __hash__(self):
        return id(self)

    def __array__(self, dtype=None, copy=None):
        import numpy as np

        value = self._value()
        if isinstance(value, Proxy):
            raise TypeError("the student's object is not an array")
        array = value.detach().numpy() if hasattr(value, "detach") else np.asarray(value)
        return array.astype(dtype) if dtype is not None else array

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        args, kwargs = _materialize_tree(args), _materialize_tree(kwargs or {})
        if any(isinstance(v, Proxy) for v in (*args, *kwargs.values())):
            raise TypeError("the student's object is not a tensor")
        return func(*args, **kwargs)


def _add_operators() -> None:
    """Give Proxy the numeric and comparison operators (local on tensor data, else remote)."""

    def converter(name):
        convert = {"int": int, "float": float, "complex": complex, "index": operator.index}[name]
        return lambda self: convert(self._value() if self._is_data() else self._rpc("convert", name))

    def binary(op, compare):
        def method(self, other):
            if self._is_data():
                return op(self._value(), other)
            return NotImplemented if compare else self._rpc("operator", op.__name__, (other,))

        return method

    def reflected(op):
        return lambda self, other: op(other, self._value()) if self._is_data() else NotImplemented

    def in_place(op):
        return lambda self, other: self._rpc("operator", op.__name__, (other,))

    def unary(op):
        return lambda self: op(self._value()) if self._is_data() else self._rpc("operator", op.__name__, ())

    for name in ("int", "float", "complex", "index"):
        setattr(Proxy, f"__{name}__", converter(name))
    for name in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
                 "lshift", "rshift"):  # fmt: skip
        op = getattr(operator, name + "_" if name in ("and", "or") else name)
        setattr(Proxy, f"__{name}__", binary(op, False))
        setattr(Proxy, f"__r{name}__", reflected(op))
        setattr(Proxy, f"__i{name}__", in_place(getattr(operator, f"i{name}")))
    for name in ("lt", "le", "gt", "ge"):
        setattr(Proxy, f"__{name}__", binary(getattr(operator, name), True))
    for name in ("neg", "pos", "abs", "invert"):
        setattr(Proxy, f"__{name}__", unary(getattr(operator, name)))


_add_operators()


class RemoteClass(type):
    """The metaclass of proxies for classes the student defined: ``isinstance`` works."""

    def __call__(cls, *args, **kwargs):
        return cls._session.request("call", cls._hid, args, kwargs, sync=True)

    def __instancecheck__(cls, obj):
        if not isinstance(obj, Proxy) and type(obj) is not Proxy:
            return False
        return cls._session.request("instancecheck", object.__getattribute__(obj, "_hid"), cls._hid) is True

    def __subclasscheck__(cls, other):
        if type(other) is RemoteClass:
            return cls._session.request("subclasscheck", other._hid, cls._hid) is True
        return False

    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return cls._session.request("getattr", cls._hid, name)

    def __repr__(cls):
        return f"<student class {cls.__name__}>"


def make_proxy(session, hid, info):
    """A proxy for a remote object: a class-like proxy for classes, else a Proxy."""
    if isinstance(info.get("mro"), list) and "builtins.type" in info["mro"][:1]:
        name = str(info.get("name", "StudentClass"))
        cls = RemoteClass(name if name.isidentifier() else "StudentClass", (), {"__module__": "student"})
        type.__setattr__(cls, "_session", session)
        type.__setattr__(cls, "_hid", hid)
        return cls
    return Proxy(session, hid, info)


def parse_answer(text):
    """The JSON text of an agent's answer, as a dict (or ProtocolError)."""
    if not isinstance(text, str):
        raise ProtocolError("no answer from the student's kernel")
    try:
        answer = json.loads(text)
    except ValueError as exc:
        raise ProtocolError("the student's kernel answered invalid JSON") from exc
    if not isinstance(answer, dict) or type(answer.get("ok")) is not bool:
        raise ProtocolError("the student's kernel answered an invalid message")
    return answer


# ---- autograd across the boundary -----------------------------------------------------------------


def _replace_tensors(value, new: list, depth=0):
    import torch

    if isinstance(value, torch.Tensor):
        return new.pop(0) if value.requires_grad else value
    if depth < 10 and isinstance(value, (tuple, list)):
        return type(value)(_replace_tensors(item, new, depth + 1) for item in value)
    if depth < 10 and isinstance(value, dict):
        return {k: _replace_tensors(v, new, depth + 1) for k, v in value.items()}
    return value


def _remote_function():
    import torch

    class RemoteGraph(torch.autograd.Function):
        """A node of the grader's autograd graph standing for a computation in the student's process.

        Its outputs are the call's results; its backward sends their gradients to the agent, which
        backpropagates through the graph it kept (so the student's parameters get their ``.grad``)
        and answers with the gradients of the grader's tensors that went into the call.
        """

        @staticmethod
        def forward(ctx, meta, anchor, *tensors):
            ctx.meta = meta
            return tuple(t.clone() for t in tensors[meta[2] :])

        @staticmethod
        def backward(ctx, *grads):
            session, number, n_inputs = ctx.meta
            got = session.request("backward", number, list(grads))
            if not isinstance(got, list) or len(got) != n_inputs:
                raise ProtocolError("invalid gradients from the student's process")
            if not all(g is None or isinstance(g, torch.Tensor) for g in got):
                raise ProtocolError("invalid gradients from the student's process")
            return (None, None, *got, *(None for _ in grads))

    return RemoteGraph


def _attach_graph(session, value, graph, sent):
    """Route the result's tensors that require grad through a RemoteGraph node."""
    import torch

    if not (isinstance(graph, list) and len(graph) == 3 and type(graph[0]) is int and type(graph[1]) is int):
        raise ProtocolError("invalid graph description")
    number, count, inputs = graph
    outputs = [t for t in _tensors(value) if t.requires_grad]
    if len(outputs) != count or not isinstance(inputs, list) or not all(type(n) is int and n in sent for n in inputs):
        raise ProtocolError("invalid graph description")
    trusted = [sent[n] for n in inputs]
    if not all(isinstance(t, torch.Tensor) and t.requires_grad for t in trusted) or not torch.is_grad_enabled():
        return value
    anchor = torch.zeros((), requires_grad=True)  # makes the node part of the graph even without grader inputs
    function = _remote_function()
    new = list(function.apply((session, number, len(trusted)), anchor, *trusted, *(o.detach() for o in outputs)))
    return _replace_tensors(value, new)


class Session:
    """Sends requests to the agent in the student's kernel and decodes its answers.

    ``transport(text)`` delivers the request text and returns the answer's JSON text (the
    runner implements it with :meth:`Sandbox.run`, which enforces the time limits).
    """

    def __init__(self, transport):
        self.transport = transport
        self.proxies: dict = {}
        self.synced: dict | None = None  # the random states both sides last agreed on

    def proxy(self, hid, info):
        if hid not in self.proxies:
            self.proxies[hid] = make_proxy(self, hid, info)
        return self.proxies[hid]

    def request(self, op, *args, sync=False):
        payload = {"op": op, "args": list(args)}
        torch = sys.modules.get("torch")
        if torch is not None:
            payload["grad"] = torch.is_grad_enabled()
        if sync:  # the random states go where the code runs, and come back if it used them
            payload["devices"] = simulated_devices()
            current = rng_states()
            payload["rng"] = current if current != self.synced else None
            payload["rng_known"] = [sorted(current), rng_fingerprint(current)]
            self.synced = current
        text, sent = encode_request(payload)
        answer = parse_answer(self.transport(text))
        reissue_warnings(answer.get("warnings"))
        _mirror(sent, answer.get("mutated", []), answer.get("grads", []))
        if sync and "rng" in answer:
            set_rng_states(answer["rng"])
            self.synced = rng_states()
        if answer["ok"]:
            value = decode(answer.get("value"), self)
            if "graph" in answer:
                value = _attach_graph(self, value, answer["graph"], sent)
            return value
        raise remote_exception(answer.get("error"))

    def push_rng(self) -> None:
        """After a test cell: if the test moved the random states, the student's process adopts them."""
        if rng_states() != self.synced:
            self.request("sync", sync=True)

    def lookup(self, names) -> dict:
        """The values (data or proxies) of these names in the student's namespace, where defined."""
        found = self.request("lookup", sorted(names), sync=True)
        if not isinstance(found, dict) or not all(isinstance(k, str) for k in found):
            raise ProtocolError("invalid lookup answer")
        return found
