"""The grader's agent INSIDE the student's kernel (sent there as source; see rpc.py).

The trusted tests run in the grader. When a test calls a function the student wrote, the
grader sends a request to this agent, which runs the call in the student's kernel and
answers with the result encoded as plain data (numbers, strings, containers, raw array
bytes) or, for anything else (a module the student built, a bound method), as a numbered
handle that later requests can name. The student's code can replace or break this agent:
that is fine, because nothing it answers is trusted. The grader decodes every answer with
a strict decoder and does every comparison itself.

Requests come in as a pickle made by the grader (unpickling here only endangers this
process, which is the student's anyway). Tensors and arrays travel as raw bytes; after a
call the agent reports which of them the student's code modified in place (their values, and
the ``.grad`` of leaf tensors, which travels with them), so that the grader can mirror the
change on its own copies (tests check that inputs are left alone; an optimiser step updates
the test's model). The global random states of torch, numpy and ``random`` travel with every
call in both directions, so seeding in a test affects the student's code as it would in one
process; so does the answer a test simulated for torch's device queries (``simulated_devices``
in rpc.py), for the length of the call.

Only the standard library is imported eagerly; numpy and torch are used when the student's
kernel has them loaded.
"""

import base64
import contextlib
import hashlib
import io
import json
import math
import pickle
import sys
import traceback
import warnings

MAX_STRING = 1 << 20
MAX_DEPTH = 40


def _b64(raw):
    return base64.b64encode(raw).decode("ascii")


def rng_states(keys=("torch", "numpy", "random")):
    """The global random states of torch, numpy and ``random`` (those imported), as JSON-able text.

    The grader imports this same function (rpc.rng_states), so both sides use one format."""
    states = {}
    torch, np = sys.modules.get("torch"), sys.modules.get("numpy")
    if "torch" in keys and torch is not None:
        states["torch"] = _b64(torch.get_rng_state().numpy().tobytes())
    if "numpy" in keys and np is not None:
        name, state, pos, has_gauss, gauss = np.random.get_state()
        states["numpy"] = [_b64(np.asarray(state, dtype="<u4").tobytes()), int(pos), int(has_gauss), float(gauss)]
    if "random" in keys and "random" in sys.modules:
        import array

        version, internal, gauss = sys.modules["random"].getstate()
        states["random"] = [_b64(array.array("I", internal[:-1]).tobytes()), internal[-1], gauss]
    return states


def _type_name(cls):
    return f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', '?')}"


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


def _tensor_bytes(tensor):
    import torch

    t = tensor.detach().cpu().resolve_conj().resolve_neg().contiguous()
    if t.dtype == torch.bfloat16:
        return "bfloat16", t.view(torch.int16).numpy().tobytes()
    return str(t.dtype).replace("torch.", ""), t.numpy().tobytes()


# torch's device queries a test may simulate (rpc.simulated_devices), as paths below the torch module
DEVICE_QUERIES = ("cuda.is_available", "cuda.device_count", "backends.mps.is_available")


def device_query(torch, name):
    """``(owner, attribute)`` of one of ``DEVICE_QUERIES``, e.g. ``(torch.cuda, "is_available")``."""
    owner_path, _, attribute = name.rpartition(".")
    owner = torch
    for part in owner_path.split("."):
        owner = getattr(owner, part)
    return owner, attribute


def _tensors(value, depth=0):
    """The tensors in a result (inside tuples, lists and dict values), in a fixed order."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return [value]
    if depth < 10 and isinstance(value, (tuple, list)):
        return [t for item in value for t in _tensors(item, depth + 1)]
    if depth < 10 and isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(item, depth + 1)]
    return []


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
                        if hashlib.sha1(json.dumps(rng, sort_keys=True).encode()).hexdigest() != known[1]:
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
            [[_type_name(c) for c in w.category.__mro__], str(w.message)[:2000], str(w.filename), int(w.lineno or 0)]
            for w in caught[:50]
        ]
        return json.dumps(answer)

    def open(self, comm, message):
        """The comm target: every message on the grader's comm is a request; answer on it."""

        @comm.on_msg
        def _answer(msg):
            data = msg["content"]["data"]
            comm.send({"autograder": self.rpc(data.get("request", ""))})

    def _error(self, exc):
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        # drop the agent's own frames: the student sees their code, not the machinery
        kept = [line for line in lines if "autograder-agent" not in line]
        return {"mro": [_type_name(c) for c in type(exc).__mro__], "message": str(exc)[:4000],
                "traceback": "".join(kept)[-8000:]}  # fmt: skip

    def _mutated(self, unpickler):
        changed = []
        for number, (value, raw, _) in unpickler.sent.items():
            try:
                now = _tensor_bytes(value)[1] if type(value).__module__.startswith("torch") else value.tobytes()
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
                now = _tensor_bytes(grad)[1] if grad is not None else None
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
        outputs = [t for t in _tensors(value) if t.requires_grad]
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
                if name not in DEVICE_QUERIES:
                    continue
                owner, attribute = device_query(torch, name)
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
        return rng_states(keys)

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
            "type": _type_name(type(obj)),
            "mro": [_type_name(c) for c in type(obj).__mro__],
            "callable": callable(obj),
            "name": str(getattr(obj, "__name__", "")) if isinstance(obj, type) else "",
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
            return ["B", _b64(obj)]
        if kind is list:
            return ["L", [self.encode(x, data, depth + 1) for x in obj]]
        if kind is tuple or (isinstance(obj, tuple) and hasattr(obj, "_fields")):
            return ["T", [self.encode(x, data, depth + 1) for x in obj]]
        if kind is dict or (isinstance(obj, dict) and type(obj).__name__ == "OrderedDict"):
            return ["D", [[self.encode(k, data, depth + 1), self.encode(v, data, depth + 1)] for k, v in obj.items()]]
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
                return ["A", array.dtype.str, list(array.shape), _b64(array.tobytes())]
            if isinstance(obj, np.generic) and obj.dtype.kind in "biufc":
                return ["a", obj.dtype.str, _b64(obj.tobytes())]
            if isinstance(obj, np.dtype):
                return ["nd", obj.str]
        if torch is not None:
            if isinstance(obj, torch.Tensor) and (data or type(obj) is torch.Tensor):
                if obj.layout == torch.strided and not obj.is_quantized:
                    dtype, raw = _tensor_bytes(obj)
                    return ["X", dtype, list(obj.shape), _b64(raw), bool(obj.requires_grad)]
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

    def op_sync(self):
        return None

    def op_materialize(self, handle):
        return self.objects[handle]

    def op_release(self, handles):
        for number in handles:
            obj = self.objects.pop(number, None)
            if obj is not None and self.handles.get(id(obj)) == number:
                del self.handles[id(obj)]
