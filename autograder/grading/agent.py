"""The grader's agent INSIDE the student's kernel (sent there as source, with protocol.py).

When a test, running in the grader, calls a function the student wrote, the grader sends a
request over a Jupyter comm; the agent runs it against the student's namespace and answers
with the result encoded as plain data (numbers, strings, containers, raw array bytes) or, for
anything else (a module the student built, a bound method), as a numbered handle that later
requests can name. The student's code can replace or break this agent: nothing it answers is
trusted (codec.py decodes every answer strictly; every comparison happens in the grader).

A request is a pickle made by the grader (unpickling here only endangers this process, which
is the student's anyway). After a call the agent reports the arguments the student's code
changed in place (values, and the ``.grad`` of leaf tensors), keeps the autograd graph of a
result that needs one (until the grader says it dropped it), and returns the random states if
the call moved them. The handles and graphs the grader no longer holds are listed in the next
request's ``release`` and dropped here.
"""

import base64
import contextlib
import io
import json
import math
import pickle
import sys
import traceback
import warnings

if "protocol" not in globals():  # imported in the grader; in the kernel the runner provides it
    from autograder.grading import protocol

MAX_STRING = 1 << 20
MAX_DEPTH = 40


class _Unpickler(pickle.Unpickler):
    """The grader's pickle, with arrays, tensors and handles as persistent ids."""

    def __init__(self, data, agent):
        super().__init__(io.BytesIO(data))
        self.agent = agent
        self.sent = {}  # number -> [object, bytes as sent]

    def persistent_load(self, pid):
        kind = pid[0]
        if kind == "handle":
            return self.agent.objects[pid[1]]
        if kind == "ref":
            return self.sent[pid[1]][0]
        grad_raw = None  # the bytes of a tensor's .grad as the grader sent it
        if kind == "array":
            import numpy as np

            _, number, dtype, shape, raw = pid
            value = np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape).copy()
        elif kind == "tensor":
            import numpy as np
            import torch

            _, number, dtype, shape, raw, requires_grad, is_param, grad = pid
            value = _tensor_from_bytes(np, torch, dtype, shape, raw)
            if is_param:
                value = torch.nn.Parameter(value, requires_grad=requires_grad)
            elif requires_grad:
                value.requires_grad_(True)
            if grad is not None and value.requires_grad:
                grad_dtype, grad_raw = grad
                value.grad = _tensor_from_bytes(np, torch, grad_dtype, shape, grad_raw)
        else:
            raise pickle.UnpicklingError(f"unknown persistent id {kind!r}")
        self.sent[number] = [value, raw, grad_raw]
        return value


def _tensor_from_bytes(np, torch, dtype, shape, raw):
    if dtype == "bfloat16":
        return torch.from_numpy(np.frombuffer(raw, dtype=np.int16).reshape(shape).copy()).view(torch.bfloat16)
    return torch.from_numpy(np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape).copy())


def _plain_dataclass(cls) -> bool:
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


class Agent:
    """Executes the grader's requests against the student's namespace."""

    def __init__(self, namespace):
        self.namespace = namespace
        self.objects = {}  # handle -> object
        self.handles = {}  # id(object) -> handle
        self.next_handle = 1
        self.graphs = {}  # graph id -> (output tensors, the sandbox copies of the grader's inputs)

    # ---- the entry point ---------------------------------------------------------------------

    def rpc(self, request_b64):
        caught, rng_changed = [], None
        try:
            unpickler = _Unpickler(base64.b64decode(request_b64), self)
            request = unpickler.load()
            self._release(request.get("release"))
            op, args = request["op"], request["args"]
            known = request.get("rng_known")
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self._set_rng(request.get("rng"))
                try:
                    with self._grad_mode(request.get("grad")), self._devices(request.get("devices")):
                        value = getattr(self, "op_" + op)(*args)
                finally:
                    if known:  # the random states, if they are not what the grader believes
                        rng = self._get_rng(known[0])
                        if protocol.rng_fingerprint(rng) != known[1]:
                            rng_changed = rng
            answer = {"ok": True, "value": self.encode(value, data=(op == "materialize"))}
            answer["mutated"] = self._mutated(unpickler)
            answer["grads"] = self._grads_changed(unpickler)
            if op in ("call", "operator") and request.get("grad"):
                graph = self._graph(value, unpickler)
                if graph is not None:
                    answer["graph"] = graph
        except BaseException as exc:  # noqa: B036 - everything goes back to the grader
            answer = {"ok": False, "error": self._error(exc)}
        if rng_changed is not None:
            answer["rng"] = rng_changed
        answer["warnings"] = [
            [[protocol.type_name(c) for c in w.category.__mro__], str(w.message)[:2000], str(w.filename),
             int(w.lineno or 0)]
            for w in caught[:50]
        ]  # fmt: skip
        return json.dumps(answer)

    def _release(self, released):
        """Drop the handles and kept graphs the grader no longer holds."""
        handles, graphs = released or ((), ())
        for number in handles:
            obj = self.objects.pop(number, None)
            if obj is not None and self.handles.get(id(obj)) == number:
                del self.handles[id(obj)]
        for number in graphs:
            self.graphs.pop(number, None)

    def open(self, comm, message):
        """The comm target: every message on the grader's comm is a request; answer on it."""

        @comm.on_msg
        def _answer(msg):
            data = msg["content"]["data"]
            comm.send({"autograder": self.rpc(data.get("request", ""))})

    def _error(self, exc):
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        # drop the agent's own frames: the student sees their code, not the machinery
        kept = [line for line in lines if '"autograder-' not in line]
        return {"mro": [protocol.type_name(c) for c in type(exc).__mro__], "message": str(exc)[:4000],
                "traceback": "".join(kept)[-8000:]}  # fmt: skip

    def _mutated(self, unpickler):
        changed = []
        for number, (value, raw, _) in unpickler.sent.items():
            try:
                now = protocol.tensor_bytes(value)[1] if type(value).__module__.startswith("torch") else value.tobytes()
            except Exception:
                continue
            if now != raw:
                changed.append([number, self.encode(value, data=True)])
        return changed

    def _grads_changed(self, unpickler):
        """The ``.grad`` of the grader's leaf tensors, where the student's code set, changed or cleared it."""
        changed = []
        for number, (value, _, grad_sent) in unpickler.sent.items():
            try:
                if not (getattr(value, "is_leaf", False) and value.requires_grad):
                    continue
                grad = value.grad
                now = protocol.tensor_bytes(grad)[1] if grad is not None else None
            except Exception:
                continue
            if now != grad_sent:
                changed.append([number, self.encode(grad, data=True) if grad is not None else None])
        return changed

    # ---- autograd across the boundary ----------------------------------------------------------

    def _graph(self, value, unpickler):
        """If the result carries an autograd graph, keep it for a later backward request."""
        torch = sys.modules.get("torch")
        if torch is None:
            return None
        outputs = [t for t in protocol.tensors(value) if t.requires_grad]
        if not outputs:
            return None
        inputs = [(n, v) for n, (v, *_) in unpickler.sent.items() if isinstance(v, torch.Tensor) and v.requires_grad]
        number = self.next_handle
        self.next_handle += 1
        self.graphs[number] = (outputs, [v for _, v in inputs])
        return [number, len(outputs), [n for n, _ in inputs]]

    def op_backward(self, number, grads):
        """Backpropagate the grader's gradients through a kept graph; the gradients of its inputs."""
        import torch

        outputs, inputs = self.graphs[number]
        for tensor in inputs:
            tensor.grad = None
        pairs = [(o, g) for o, g in zip(outputs, grads) if g is not None]
        torch.autograd.backward([o for o, _ in pairs], [g.to(o.dtype) for o, g in pairs], retain_graph=True)
        return [t.grad for t in inputs]

    def op_imports(self, statement):
        """Run one of the instructor's import statements here (pyplot: its state lives with the figures)."""
        namespace = {}
        exec(statement, namespace)
        namespace.pop("__builtins__", None)
        return namespace

    # ---- context: gradient mode, random states -----------------------------------------------

    def _grad_mode(self, enabled):
        torch = sys.modules.get("torch")
        if torch is None or enabled is None:
            return contextlib.nullcontext()
        return torch.set_grad_enabled(bool(enabled))

    @contextlib.contextmanager
    def _devices(self, simulated):
        """For one call, torch's device queries give the answers the test simulated in the grader."""
        torch = sys.modules.get("torch")
        if torch is None or not simulated:
            yield
            return
        replaced = []
        try:
            for name, value in simulated.items():
                if name not in protocol.DEVICE_QUERIES:
                    continue
                owner, attribute = protocol.device_query(torch, name)
                replaced.append((owner, attribute, getattr(owner, attribute)))
                setattr(owner, attribute, lambda value=value: value)
            yield
        finally:
            for owner, attribute, original in reversed(replaced):
                setattr(owner, attribute, original)

    def _set_rng(self, states):
        if not states:
            return
        torch, np = sys.modules.get("torch"), sys.modules.get("numpy")
        if "torch" in states and torch is not None:
            torch.set_rng_state(torch.frombuffer(bytearray(base64.b64decode(states["torch"])), dtype=torch.uint8))
        if "numpy" in states and np is not None:
            raw, pos, has_gauss, gauss = states["numpy"]
            np.random.set_state(("MT19937", np.frombuffer(base64.b64decode(raw), dtype="<u4").copy(), pos, has_gauss,
                                 gauss))  # fmt: skip
        if "random" in states and "random" in sys.modules:
            import array

            raw, pos, gauss = states["random"]
            sys.modules["random"].setstate((3, tuple(array.array("I", base64.b64decode(raw))) + (pos,), gauss))

    def _get_rng(self, keys):
        return protocol.rng_states(keys)

    # ---- encoding: plain data where possible, else a handle ----------------------------------

    def handle(self, obj):
        key = id(obj)
        number = self.handles.get(key)
        if number is None or self.objects.get(number) is not obj:
            number = self.next_handle
            self.next_handle += 1
            self.objects[number] = obj
            self.handles[key] = number
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

    def encode(self, obj, data=False, depth=0):
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
            return ["c", self.encode(obj.real), self.encode(obj.imag)]
        if kind is bytes:
            return ["B", protocol.b64(obj)]
        if isinstance(obj, list):  # list subclasses too: they compare as lists
            return ["L", [self.encode(x, data, depth + 1) for x in obj]]
        if isinstance(obj, tuple):
            items = [self.encode(x, data, depth + 1) for x in obj]
            fields = getattr(kind, "_fields", None)
            if isinstance(fields, tuple) and len(fields) == len(obj) and all(type(f) is str for f in fields):
                return ["NT", str(kind.__name__), list(fields), items]  # a namedtuple keeps its fields
            return ["T", items]
        if isinstance(obj, dict):
            pairs = [[self.encode(k, data, depth + 1), self.encode(v, data, depth + 1)] for k, v in obj.items()]
            name = protocol.type_name(kind)
            if name == "collections.defaultdict":
                factory = obj.default_factory
                builtin = isinstance(factory, type) and factory.__module__ == "builtins"
                name = factory.__name__ if builtin and factory.__name__ in protocol.DEFAULT_FACTORIES else None
                return ["D", pairs, "defaultdict", name]
            if name in ("collections.OrderedDict", "collections.Counter"):
                return ["D", pairs, name.rpartition(".")[2]]
            return ["D", pairs]
        if _plain_dataclass(kind):
            import dataclasses

            params = kind.__dataclass_params__
            fields = [[f.name, self.encode(getattr(obj, f.name), data, depth + 1)] for f in dataclasses.fields(obj)]
            return ["DC", protocol.type_name(kind), str(kind.__name__), fields,
                    [bool(params.eq), bool(params.frozen), bool(params.order)]]  # fmt: skip
        if kind in (set, frozenset):
            return ["set", [self.encode(x, data, depth + 1) for x in obj]]
        if kind is slice:
            return ["sl", self.encode(obj.start), self.encode(obj.stop), self.encode(obj.step)]
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
        return self.handle(obj)

    # ---- operations --------------------------------------------------------------------------

    def op_lookup(self, names):
        found = {}
        for name in names:
            if name in self.namespace:
                found[name] = self.namespace[name]
        return found

    def op_getattr(self, handle, name):
        return getattr(self.objects[handle], name)

    def op_setattr(self, handle, name, value):
        setattr(self.objects[handle], name, value)

    def op_delattr(self, handle, name):
        delattr(self.objects[handle], name)

    def op_call(self, handle, args, kwargs):
        return self.objects[handle](*args, **kwargs)

    def op_getitem(self, handle, key):
        return self.objects[handle][key]

    def op_setitem(self, handle, key, value):
        self.objects[handle][key] = value

    def op_delitem(self, handle, key):
        del self.objects[handle][key]

    def op_len(self, handle):
        return len(self.objects[handle])

    def op_iter(self, handle):
        return iter(self.objects[handle])

    def op_next(self, handle):
        return next(self.objects[handle])

    def op_contains(self, handle, item):
        return item in self.objects[handle]

    def op_repr(self, handle):
        return repr(self.objects[handle])[:MAX_STRING]

    def op_str(self, handle):
        return str(self.objects[handle])[:MAX_STRING]

    def op_format(self, handle, spec):
        return format(self.objects[handle], spec)[:MAX_STRING]

    def op_dir(self, handle):
        return [str(name) for name in dir(self.objects[handle])]

    def op_operator(self, handle, name, args):
        import operator

        return getattr(operator, name)(self.objects[handle], *args)

    def op_convert(self, handle, name):
        return {"int": int, "float": float, "complex": complex, "index": __import__("operator").index}[name](
            self.objects[handle]
        )

    def op_instancecheck(self, handle, cls_handle):
        return isinstance(self.objects[handle], self.objects[cls_handle])

    def op_subclasscheck(self, handle, cls_handle):
        return issubclass(self.objects[handle], self.objects[cls_handle])

    def op_devices(self):
        """What torch answers here to the device queries (torch is imported if need be)."""
        import torch

        answers = {}
        for name in protocol.DEVICE_QUERIES:
            try:
                owner, attribute = protocol.device_query(torch, name)
                answers[name] = getattr(owner, attribute)()
            except Exception:
                continue
        return answers

    def op_sync(self):
        return None

    def op_materialize(self, handle):
        return self.objects[handle]
