"""The devices torch reports, in the grader's tests and in the student's code alike.

The tests run in the grader, the student's code in the sandbox, which has no GPU. On a grading
machine with CUDA, torch in the grader would say ``cuda.is_available() == True`` while the
student's torch says False: a test's expected device (``ref.pick_device()``, ``torch.device("cuda"
if torch.cuda.is_available() else "cpu")``) would then disagree with every answer, the
reference's included. So while a test cell runs, :func:`sandbox_devices` makes the grader's torch
give the sandbox's answers to the device queries (asked once per submission).

A test may still stand in for another machine by replacing a query itself (a lambda, a mock):
:func:`simulated_devices` finds such replacements (functions that are neither torch's nor the
stand-ins installed here), and the session sends their answers, as plain values, with each call;
the agent makes the student's torch give them for the length of the call (kernel/devices.py, this
module's partner in the kernel).
"""

from __future__ import annotations

import contextlib
import sys

from autograder.grading.kernel.protocol import DEVICE_QUERIES, device_query

_STAND_INS: dict = {}  # answer -> the function sandbox_devices installs to give it


def _replaced_by_test(function) -> bool:
    if any(function is f for f in _STAND_INS.values()):
        return False
    return not str(getattr(function, "__module__", "") or "").startswith("torch")


def simulated_devices() -> dict | None:
    """What the test made torch answer about devices, where it replaced torch's own functions."""
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
        if function is None or not _replaced_by_test(function):
            continue
        value = function()
        simulated[name] = int(value) if attribute == "device_count" else bool(value)
    return simulated or None


def _stand_in(value):
    if (type(value), value) not in _STAND_INS:

        def query(*args, **kwargs):
            return value

        query.__module__ = __name__
        _STAND_INS[type(value), value] = query
    return _STAND_INS[type(value), value]


@contextlib.contextmanager
def sandbox_devices(answers: dict | None):
    """While the block runs, torch here answers the device queries as the sandbox's torch does."""
    torch = sys.modules.get("torch")
    replaced = []
    try:
        for name, value in (answers or {}).items():
            if name not in DEVICE_QUERIES or type(value) not in (bool, int) or torch is None:
                continue
            try:
                owner, attribute = device_query(torch, name)
            except AttributeError:
                continue
            replaced.append((owner, attribute, getattr(owner, attribute)))
            setattr(owner, attribute, _stand_in(int(value) if attribute == "device_count" else bool(value)))
        yield
    finally:
        for owner, attribute, original in reversed(replaced):
            setattr(owner, attribute, original)
