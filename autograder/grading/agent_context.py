"""The context of one call in the student's kernel: gradient mode, simulated devices, random states.

Runs in the student's kernel (sent there as source by runner.py). With each request come the
grader's gradient mode (``torch.no_grad()`` in a test applies to the student's code it calls), the
device answers a test simulates (devices.py in the grader finds them), and the random states of
torch, numpy and ``random`` when they moved, so that seeding in a test seeds the student's code.
"""

import base64
import contextlib
import sys

if __name__.startswith("autograder."):  # in the grader; in the kernel, runner.py provides the module
    from autograder.grading import protocol


def grad_mode(enabled):
    """torch's gradient mode as the grader's, for one call (nothing if torch is not imported here)."""
    torch = sys.modules.get("torch")
    if torch is None or enabled is None:
        return contextlib.nullcontext()
    return torch.set_grad_enabled(bool(enabled))


@contextlib.contextmanager
def simulated_devices(simulated):
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


def device_answers():
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
