"""The devices the student's torch reports during a call (its partner in the grader: ../devices.py).

Runs in the student's kernel (sent there as source by startup.py). A test may stand in for another
machine by replacing torch's device queries; the grader's devices.py finds the answers it simulated,
and they come with the request: :func:`simulated_devices` makes the student's torch give them for the
length of the call. :func:`device_answers` is what torch here really says (the grader asks once per
submission, so that its own torch gives the sandbox's answers while a test runs).
"""

import contextlib
import sys

if __name__.startswith("autograder."):  # in the grader; in the kernel, startup.py provides the module
    from autograder.grading.kernel import protocol


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
