"""The grader's request, unpickled in the student's kernel; what the call changed in its arguments.

Runs in the student's kernel (sent there as source by runner.py). A request is a pickle made by
the grader (codec.encode_request): arrays and tensors travel as persistent ids carrying their raw
bytes (and a tensor's ``.grad``), proxies as handle numbers. Unpickling here only endangers this
process, which is the student's anyway.

After the call, :func:`mutated` and :func:`grads_changed` list the arguments whose values, or
whose ``.grad``, the student's code changed, so that the grader mirrors them onto its originals.
"""

import io
import pickle

if __name__.startswith("autograder."):  # in the grader; in the kernel, runner.py provides the module
    from autograder.grading import protocol


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


def mutated(sent, encode):
    """``[number, encoded value]`` of each array or tensor the grader sent whose values changed here."""
    changed = []
    for number, (value, raw, _) in sent.items():
        try:
            now = protocol.tensor_bytes(value)[1] if type(value).__module__.startswith("torch") else value.tobytes()
        except Exception:
            continue
        if now != raw:
            changed.append([number, encode(value, data=True)])
    return changed


def grads_changed(sent, encode):
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
            changed.append([number, encode(grad, data=True) if grad is not None else None])
    return changed
