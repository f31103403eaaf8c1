"""The session: the grader's tests talk to the agent in the student's kernel (kernel/rpc.py, its partner).

The test cells (visible and hidden, restored from the instructor notebook) run in the grader's
own process. :meth:`Session.lookup` binds the names a test reads that the student defined:
plain data, or proxies (proxy.py). Calling a proxy makes a request: pickled here (codec.py),
delivered by the runner over a Jupyter comm on the kernel's shell channel, answered by the agent
(kernel/rpc.py) in JSON that codec.decode accepts only if it is plain data.

With each call travel:

- the random states of torch, numpy and ``random`` (both ways, only when they moved), so that
  seeding in a test seeds the student's code as in one process;
- the gradient mode (``torch.no_grad()`` in a test applies to the student's code it calls);
- the device answers a test simulates (devices.py);
- the handles and graphs the grader dropped since the last request (``release``): the agent
  frees them, so the student's process keeps only what the grader still holds.

Warnings are re-issued here, errors re-raised as the nearest built-in class, in-place changes to
arguments mirrored, results that carry a graph attached to the grader's (autograd.py).

While a test records (``attention_course.profiling.record_ops``), each request is recorded where it
runs, in the student's kernel, and its record joins the test's (recording.py); the problems that
record reports are kept in :attr:`Session.problems` for the runner's flags.
"""

from __future__ import annotations

import json
import sys
import weakref

from autograder.grading import recording
from autograder.grading.autograd import attach_graph
from autograder.grading.codec import (
    ProtocolError,
    decode,
    encode_request,
    mirror,
    reissue_warnings,
    remote_exception,
    set_rng_states,
)
from autograder.grading.devices import simulated_devices
from autograder.grading.kernel import protocol
from autograder.grading.proxy import Proxy, make_proxy

__all__ = ["Proxy", "ProtocolError", "Session", "parse_answer"]


def parse_answer(text):
    """The JSON text of an agent's answer, as a dict (or ProtocolError)."""
    if not isinstance(text, str):
        raise ProtocolError("no answer from the student's kernel")
    try:
        answer = json.loads(text)
    except ValueError as exc:
        raise ProtocolError("the student's kernel answered invalid JSON") from exc
    if not isinstance(answer, dict) or type(answer.get("ok")) is not bool:
        raise ProtocolError("the student's kernel answered an invalid message")
    return answer


class Session:
    """Sends requests to the agent in the student's kernel and decodes its answers.

    ``transport(text)`` delivers the request text and returns the answer's JSON text (the
    runner implements it over the sandbox's comm, which enforces the time limits).
    """

    def __init__(self, transport):
        self.transport = transport
        self.proxies = weakref.WeakValueDictionary()  # handle -> its proxy, while the grader holds it
        self.graphs = weakref.WeakValueDictionary()  # graph number -> token of the grader's node
        self.released: tuple[set, set] = (set(), set())  # handles, graphs the grader dropped
        self.synced: dict | None = None  # the random states both sides last agreed on
        self.problems: list[str] = []  # what the student's side's recordings reported, in order (recording.py)

    # ---- what the grader holds -------------------------------------------------------------------

    def proxy(self, hid, info):
        found = self.proxies.get(hid)
        if found is None:
            found = self.proxies[hid] = make_proxy(self, hid, info)
            self.released[0].discard(hid)  # the agent handed out the same number again
            weakref.finalize(found, self.released[0].add, hid).atexit = False
        return found

    def keep_graph(self, number, token) -> None:
        self.graphs[number] = token
        weakref.finalize(token, self.released[1].add, number).atexit = False

    def drop_graph(self, number) -> None:
        self.released[1].add(number)

    def _take_released(self):
        handles, graphs = self.released
        if not handles and not graphs:
            return None
        taken = (sorted(handles), sorted(graphs))
        handles.clear()
        graphs.clear()
        return taken

    # ---- requests ----------------------------------------------------------------------------------

    def request(self, op, *args, sync=False):
        active = recording.active()
        if active is None:
            return self._request(op, args, sync, None)
        with active.paused():  # the proxy's machinery is not the student's computation
            return self._request(op, args, sync, active)

    def _request(self, op, args, sync, active):
        payload = {"op": op, "args": list(args), "release": self._take_released()}
        if active is not None:
            payload["record"] = True
        torch = sys.modules.get("torch")
        if torch is not None:
            payload["grad"] = torch.is_grad_enabled()
        if sync:  # the random states go where the code runs, and come back if it used them
            payload["devices"] = simulated_devices()
            current = protocol.rng_states()
            payload["rng"] = current if current != self.synced else None
            payload["rng_known"] = [sorted(current), protocol.rng_fingerprint(current)]
            self.synced = current
        text, sent = encode_request(payload)
        answer = parse_answer(self.transport(text))
        if active is not None:
            ops, problems = recording.decode(answer.get("record"))
            active.add(ops, problems)
            self._note(problems)
        reissue_warnings(answer.get("warnings"))
        mirror(sent, answer.get("mutated", []), answer.get("grads", []))
        if sync and "rng" in answer:
            set_rng_states(answer["rng"])
            self.synced = protocol.rng_states()
        if answer["ok"]:
            value = decode(answer.get("value"), self)
            if "graph" in answer:
                value = attach_graph(self, value, answer["graph"], sent)
            if active is not None:  # what came back was made by operations recorded over there
                if op == "call":
                    self._note(recording.unexplained(ops, value, sent), active)
                active.adopt([*protocol.tensors(value), *sent.values()])
            return value
        raise remote_exception(answer.get("error"))

    def _note(self, problems, active=None) -> None:
        """Keep the problems of a record from the student's kernel (and add them to the test's recording)."""
        for problem in problems:
            if active is not None:
                active.add((), [problem])
            if len(self.problems) < 1000:
                self.problems.append(problem)

    def flush(self) -> None:
        """After a test cell: the student's process adopts the random states the test moved, and
        frees what the grader no longer holds."""
        moved = protocol.rng_states() != self.synced
        if moved or self.released[0] or self.released[1]:
            self.request("sync", sync=moved)

    def lookup(self, names) -> dict:
        """The values (data or proxies) of these names in the student's namespace, where defined."""
        found = self.request("lookup", sorted(names), sync=True)
        if not isinstance(found, dict) or not all(isinstance(k, str) for k in found):
            raise ProtocolError("invalid lookup answer")
        return found

    def devices(self) -> dict:
        """What the student's torch answers to the device queries."""
        found = self.request("devices")
        return found if isinstance(found, dict) else {}
