"""The grader's agent INSIDE the student's kernel (its partner in the grader: ../rpc.py, the session).

Runs in the student's kernel, sent there as source by startup.py after the modules it uses (this
package: protocol.py, what both sides agree on; forks.py, a forked copy of the kernel ends; codec.py,
requests in and answers out; devices.py, the devices a test simulates; autograd.py, graphs kept for
the grader's backward; recording.py, the course's recording run privately here).

When a test, running in the grader, calls a function the student wrote, the grader's session sends
a request over a Jupyter comm; :meth:`Agent.rpc` runs its operation (``op_<name>``) against the
student's namespace and the objects it handed out, in the context the request carries (gradient
mode, simulated devices, random states: :func:`grad_mode`, :func:`set_rng_states`), and answers in
JSON. The student's code can replace or break this agent: nothing it answers is trusted (the
grader's codec.py decodes every answer strictly; every comparison happens in the grader).

A request made while a test records (``record``, recording.py in the grader) runs under the
agent's own recording (recording.py here, bound by :meth:`Agent.bind_recording` before any
student cell); the answer then carries the operations it saw and its problems.
"""

import base64
import contextlib
import itertools
import json
import sys
import warnings

if __name__.startswith("autograder."):  # in the grader; in the kernel, startup.py provides the modules
    from autograder.grading.kernel import autograd, codec, devices, forks, protocol, recording


class Agent:
    """Executes the grader's requests against the student's namespace."""

    def __init__(self, namespace, recording_code=None):
        self.namespace = namespace
        self.recording_code = recording_code  # the course's profiling.py, compiled (startup.py sends it)
        self.recording = None  # that module, run privately here (bind_recording)
        numbers = itertools.count(1)  # handles and graphs
        self.handles = codec.Handles(numbers)
        self.graphs = autograd.Graphs(numbers)
        self.objects = self.handles.objects  # handle -> object

    def open(self, comm, message):
        """The comm target: every message on the grader's comm is a request; answer on it."""

        @comm.on_msg
        def _answer(msg):
            data = msg["content"]["data"]
            answer = self.rpc(data.get("request", ""))
            if forks.is_copy():  # a copy the student's code forked during the call: the kernel answers, not it
                forks.end_copy()
            comm.send({"autograder": answer})

    def encode(self, obj, data=False):
        return codec.encode(obj, self.handles.handle, data)

    def bind_recording(self, now=False):
        """Run the recording's module privately, once: if torch is imported here (or ``now``)."""
        if self.recording is None and (now or "torch" in sys.modules):
            code = self.recording_code
            if code is None:  # in the grader's own tests: the course's file, compiled here
                from autograder.grading import recording as grader_recording

                code = compile(grader_recording.source(), "autograder-profiling", "exec")
            self.recording = recording.load(code)
        return self.recording

    @staticmethod
    def record_answer(recorder):
        """A recording as plain data: its operations and its problems (the grader's recording.py decodes it)."""
        return recording.answer(recorder)

    def rpc(self, request_b64):
        """One request (base64 of the grader's pickle) -> the answer's JSON text."""
        caught, rng_changed, recorder = [], None, None
        try:
            unpickler = codec.RequestUnpickler(base64.b64decode(request_b64), self.objects)
            request = unpickler.load()
            handles, graphs = request.get("release") or ((), ())
            self.handles.release(handles)
            self.graphs.release(graphs)
            op, args = request["op"], request["args"]
            known = request.get("rng_known")
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                set_rng_states(request.get("rng"))
                try:
                    grad, simulated = request.get("grad"), request.get("devices")
                    with grad_mode(grad), devices.simulated_devices(simulated):
                        if request.get("record"):  # the test records this call: record it where it runs
                            recorder = self.bind_recording(now=True).Recording()
                            with recorder:
                                value = getattr(self, "op_" + op)(*args)
                            if op == "call":
                                recorder.check_result(value, args[1:])
                        else:
                            value = getattr(self, "op_" + op)(*args)
                finally:
                    if known:  # the random states, if they are not what the grader believes
                        rng = protocol.rng_states(known[0])
                        if protocol.rng_fingerprint(rng) != known[1]:
                            rng_changed = rng
            answer = {"ok": True, "value": self.encode(value, data=(op == "materialize"))}
            answer["mutated"] = codec.mutated(unpickler.sent, self.encode)
            answer["grads"] = codec.grads_changed(unpickler.sent, self.encode)
            if op in ("call", "operator") and request.get("grad"):
                graph = self.graphs.keep(value, unpickler.sent)
                if graph is not None:
                    answer["graph"] = graph
        except BaseException as exc:  # noqa: B036 - everything goes back to the grader
            answer = {"ok": False, "error": codec.encode_error(exc)}
        if recorder is not None:
            answer["record"] = self.record_answer(recorder)
        if rng_changed is not None:
            answer["rng"] = rng_changed
        answer["warnings"] = codec.encode_warnings(caught)
        return json.dumps(answer)

    # ---- operations: what a proxy, the session or the autograd bridge asks ---------------------

    def op_lookup(self, names):
        return {name: self.namespace[name] for name in names if name in self.namespace}

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
        return repr(self.objects[handle])[: codec.MAX_STRING]

    def op_str(self, handle):
        return str(self.objects[handle])[: codec.MAX_STRING]

    def op_format(self, handle, spec):
        return format(self.objects[handle], spec)[: codec.MAX_STRING]

    def op_dir(self, handle):
        return [str(name) for name in dir(self.objects[handle])]

    def op_operator(self, handle, name, args):
        import operator

        return getattr(operator, name)(self.objects[handle], *args)

    def op_convert(self, handle, name):
        import operator

        return {"int": int, "float": float, "complex": complex, "index": operator.index}[name](self.objects[handle])

    def op_instancecheck(self, handle, cls_handle):
        return isinstance(self.objects[handle], self.objects[cls_handle])

    def op_subclasscheck(self, handle, cls_handle):
        return issubclass(self.objects[handle], self.objects[cls_handle])

    def op_materialize(self, handle):
        return self.objects[handle]

    def op_sync(self):
        return None

    def op_devices(self):
        return devices.device_answers()

    def op_imports(self, statement):
        """Run one of the instructor's import statements here (pyplot: its state lives with the figures)."""
        namespace = {}
        exec(statement, namespace)
        namespace.pop("__builtins__", None)
        return namespace

    def op_backward(self, number, grads):
        return self.graphs.backward(number, grads)


# ---- the context of one call: gradient mode, random states ---------------------------------------


def grad_mode(enabled):
    """torch's gradient mode as the grader's, for one call (nothing if torch is not imported here)."""
    torch = sys.modules.get("torch")
    if torch is None or enabled is None:
        return contextlib.nullcontext()
    return torch.set_grad_enabled(bool(enabled))


def set_rng_states(states):
    """Set the random states of torch, numpy and ``random`` (those imported here) from protocol.rng_states's form."""
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
