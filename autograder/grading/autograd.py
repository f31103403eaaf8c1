"""Autograd across the boundary: a result computed in the student's process joins the grader's graph.

The grader's side; its partner in the kernel is kernel/autograd.py. When a call answers with
tensors that require grad, the agent keeps the graph that made them and says so (``graph``: its
number, how many outputs, which of the grader's tensors went in). :func:`attach_graph` routes those
outputs through one :class:`RemoteGraph` node; its backward sends the output gradients to the
agent, which backpropagates through the kept graph (so the student's parameters get their
``.grad``) and answers with the gradients of the grader's inputs. When the grader's graph is
freed, the node's token dies and the session tells the agent to drop its graph too.
"""

from __future__ import annotations

from autograder.grading.codec import ProtocolError
from autograder.grading.kernel import protocol


class _Token:
    """Lives exactly as long as the grader's node of one remote graph."""

    __slots__ = ("__weakref__",)


def _replace_tensors(value, new: list, depth=0):
    import torch

    if isinstance(value, torch.Tensor):
        return new.pop(0) if value.requires_grad else value
    if depth < 10 and isinstance(value, (tuple, list)):
        items = [_replace_tensors(item, new, depth + 1) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if depth < 10 and isinstance(value, dict):
        result = value.copy()  # keeps an OrderedDict, a defaultdict, a Counter
        for key, item in value.items():
            result[key] = _replace_tensors(item, new, depth + 1)
        return result
    return value


_FUNCTION = None


def _remote_function():
    global _FUNCTION
    if _FUNCTION is not None:
        return _FUNCTION
    import torch

    class RemoteGraph(torch.autograd.Function):
        """A node of the grader's autograd graph standing for a computation in the student's process.

        Its outputs are the call's results; its backward sends their gradients to the agent, which
        backpropagates through the graph it kept (so the student's parameters get their ``.grad``)
        and answers with the gradients of the grader's tensors that went into the call.
        """

        @staticmethod
        def forward(ctx, meta, anchor, *tensors):
            ctx.meta = meta  # (session, graph number, number of grader inputs, token)
            return tuple(t.clone() for t in tensors[meta[2] :])

        @staticmethod
        def backward(ctx, *grads):
            session, number, n_inputs, _ = ctx.meta
            got = session.request("backward", number, list(grads))
            if not isinstance(got, list) or len(got) != n_inputs:
                raise ProtocolError("invalid gradients from the student's process")
            if not all(g is None or isinstance(g, torch.Tensor) for g in got):
                raise ProtocolError("invalid gradients from the student's process")
            return (None, None, *got, *(None for _ in grads))

    _FUNCTION = RemoteGraph
    return RemoteGraph


def attach_graph(session, value, graph, sent):
    """Route the result's tensors that require grad through a RemoteGraph node."""
    import torch

    if not (isinstance(graph, list) and len(graph) == 3 and type(graph[0]) is int and type(graph[1]) is int):
        raise ProtocolError("invalid graph description")
    number, count, inputs = graph
    outputs = [t for t in protocol.tensors(value) if t.requires_grad]
    if len(outputs) != count or not isinstance(inputs, list) or not all(type(n) is int and n in sent for n in inputs):
        raise ProtocolError("invalid graph description")
    trusted = [sent[n] for n in inputs]
    if not all(isinstance(t, torch.Tensor) and t.requires_grad for t in trusted) or not torch.is_grad_enabled():
        session.drop_graph(number)
        return value
    anchor = torch.zeros((), requires_grad=True)  # makes the node part of the graph even without grader inputs
    token = _Token()
    session.keep_graph(number, token)
    meta = (session, number, len(trusted), token)
    new = list(_remote_function().apply(meta, anchor, *trusted, *(o.detach() for o in outputs)))
    return _replace_tensors(value, new)
