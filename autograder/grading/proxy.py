"""Proxies: the grader's handles on objects that stay in the student's process.

A name a test reads that the student defined is bound to a :class:`Proxy` (or, for a class,
a :class:`RemoteClass`) when its value is not plain data. Attribute access, calls, item
assignment and in-place operators go to the student's process through the session. Reading a
remote tensor (operators, comparisons, ``bool``, indexing, numpy or torch functions) fetches
it as data and computes here. Equality and truth of any other remote object are identity and
True: a student object cannot claim to be the expected answer.
"""

from __future__ import annotations

import operator
import sys


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
        rebuilt = getattr(type(obj), "__student_class__", None)  # a dataclass decoded as data
        if rebuilt is not None:
            return rebuilt == cls._qualname
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
        type.__setattr__(cls, "_qualname", str(info.get("qualname", "")))
        return cls
    return Proxy(session, hid, info)
