"""The kernel's side of the autograd bridge (its partner in the grader: ../autograd.py): kept graphs.

Runs in the student's kernel (sent there as source by startup.py). When a call made with gradients
enabled returns tensors that require grad, :meth:`Graphs.keep` keeps them (with this side's copies
of the grader's tensors that went in) and describes the graph to the grader, whose autograd.py
makes it a node of the grader's graph. That node's backward becomes a ``backward`` request:
:meth:`Graphs.backward` backpropagates here (the student's parameters get their ``.grad``) and
returns the gradients of the grader's inputs. A graph lives until the grader drops its node.
"""

import sys

if __name__.startswith("autograder."):  # in the grader; in the kernel, startup.py provides the module
    from autograder.grading.kernel import protocol


class Graphs:
    """The kept graphs: number -> (output tensors, this side's copies of the grader's input tensors).

    ``numbers`` gives new numbers (shared with the handles, so no two are the same)."""

    def __init__(self, numbers):
        self.numbers = numbers
        self.kept = {}

    def keep(self, value, sent):
        """If the result carries an autograd graph, keep it: ``[number, outputs, the grader's inputs]`` or None.

        ``sent``: the request's arrays and tensors, number -> [object here, ...] (codec.py)."""
        torch = sys.modules.get("torch")
        if torch is None:
            return None
        outputs = [t for t in protocol.tensors(value) if t.requires_grad]
        if not outputs:
            return None
        inputs = [(n, v) for n, (v, *_) in sent.items() if isinstance(v, torch.Tensor) and v.requires_grad]
        number = next(self.numbers)
        self.kept[number] = (outputs, [v for _, v in inputs])
        return [number, len(outputs), [n for n, _ in inputs]]

    def backward(self, number, grads):
        """Backpropagate the grader's gradients through a kept graph; the gradients of its inputs."""
        import torch

        outputs, inputs = self.kept[number]
        for tensor in inputs:
            tensor.grad = None
        pairs = [(o, g) for o, g in zip(outputs, grads) if g is not None]
        torch.autograd.backward([o for o, _ in pairs], [g.to(o.dtype) for o, g in pairs], retain_graph=True)
        return [t.grad for t in inputs]

    def release(self, numbers):
        """Drop the graphs the grader no longer holds."""
        for number in numbers:
            self.kept.pop(number, None)
