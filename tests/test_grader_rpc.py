"""The call protocol between the trusted tests and the student's kernel (rpc.py, codec.py, proxy.py, kernel/).

The agent that normally runs in the sandboxed kernel runs here in-process (same requests,
same JSON answers), so these tests need neither root nor a kernel: they pin down the strict
decoder and what proxies do and do not ask the student's side.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
from torch import nn

from autograder.grading import codec, devices, rpc, startup
from autograder.grading.kernel import protocol
from autograder.grading.kernel.rpc import Agent


def loopback(namespace: dict) -> rpc.Session:
    """A session whose 'sandbox' is an agent in this process."""
    agent = Agent(namespace)
    return rpc.Session(agent.rpc)


class Comm:
    """The agent's comm in a kernel: it sends each answer (here: keeps it, and notes which process sent it)."""

    def __init__(self, log):
        self.log, self.answer = log, None

    def on_msg(self, handler):
        self.handler = handler

    def send(self, data):
        with open(self.log, "a") as f:
            f.write(f"{os.getpid()}\n")
        self.answer = data["autograder"]


def test_a_copy_of_the_kernel_forked_during_a_call_does_not_answer_it(tmp_path):
    """A student function that forks returns in two processes; only the kernel answers the grader's request,
    the copy ends (kernel/forks.py) instead of sending a second answer on the kernel's channel."""
    kernel, log = os.getpid(), tmp_path / "senders"

    def forks():
        child = os.fork()
        if child:
            os.waitpid(child, 0)
        return "forked"

    agent, comm = Agent({"forks": forks}), Comm(log)
    agent.open(comm, None)

    def transport(text):
        comm.handler({"content": {"data": {"request": text}}})
        if os.getpid() != kernel:  # a copy that came back here would go on running the test suite
            os._exit(3)
        return comm.answer

    assert rpc.Session(transport).lookup({"forks"})["forks"]() == "forked"
    senders = log.read_text().split()
    assert senders == [str(kernel)] * 2, f"answers sent by {senders}, expected only the kernel ({kernel}), twice"


def roundtrip(value):
    agent = Agent({})
    return codec.decode(json.loads(json.dumps(agent.encode(value))), rpc.Session(agent.rpc))


@pytest.mark.parametrize(
    "value",
    [None, True, 3, -2.5, "text", b"bytes", [1, (2, 3)], {"a": [1.5], 2: None}, {1, 2}, slice(1, None, 2),
     range(3), 1 + 2j],
)  # fmt: skip
def test_plain_python_values_cross_unchanged(value):
    back = roundtrip(value)
    assert back == value and type(back) is type(value)


def test_special_floats_cross():
    back = roundtrip([float("nan"), float("inf"), float("-inf")])
    assert np.isnan(back[0]) and back[1] == float("inf") and back[2] == float("-inf")


def test_arrays_and_tensors_cross_with_dtype_shape_and_grad():
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    back = roundtrip(array)
    assert back.dtype == np.float32 and back.shape == (3, 4) and np.array_equal(back, array) and back.flags.writeable
    for dtype in (torch.float64, torch.float32, torch.bfloat16, torch.int64, torch.bool):
        tensor = torch.arange(6).reshape(2, 3).to(dtype)
        back = roundtrip(tensor)
        assert back.dtype == dtype and back.shape == (2, 3) and torch.equal(back, tensor)
    leaf = torch.ones(2, requires_grad=True)
    assert roundtrip(leaf * 2).requires_grad
    assert roundtrip(torch.Size([2, 3])) == torch.Size([2, 3]) and roundtrip(torch.float16) is torch.float16
    assert roundtrip(np.float32(1.5)) == np.float32(1.5) and roundtrip(np.dtype("int16")) == np.dtype("int16")


@pytest.mark.parametrize(
    "bad",
    [
        ["A", "|O", [1], ""],  # object arrays never cross
        ["A", "<f8", [2], "AAAA"],  # bytes that do not match the shape
        ["A", "<f8", [-1], ""],
        ["X", "float32", [1], "AAAA", True, "extra"],
        ["X", "object", [1], "AAAA", False],
        ["pickle", "gASVAAAAAAAAAAB9lC4="],  # no tag unpickles anything
        ["H", 3, {"type": "x"}],  # a handle is only valid within a session
        ["dev", "not a device"],
        ["dt", "Tensor"],
        {"__class__": "os.system"},
        ["L", "not a list"],
        ["D", [[["L", []], 1]]],  # an unhashable key
    ],
)
def test_the_decoder_rejects_anything_but_plain_data(bad):
    with pytest.raises(codec.ProtocolError):
        codec.decode(bad)


def test_the_decoder_bounds_depth_and_size():
    deep = 1
    for _ in range(200):
        deep = ["L", [deep]]
    with pytest.raises(codec.ProtocolError):
        codec.decode(deep)
    with pytest.raises(codec.ProtocolError):
        codec.decode(["L", [1] * (codec.MAX_NODES + 1)])


def test_calls_return_data_and_errors_keep_their_builtin_class():
    namespace = {}
    exec("import numpy as np\ndef f(x):\n    return x * 2\ndef g():\n    raise NotImplementedError('later')", namespace)
    session = loopback(namespace)
    names = session.lookup({"f", "g", "missing"})
    assert set(names) == {"f", "g"}
    assert np.array_equal(names["f"](np.arange(3)), [0, 2, 4])
    with pytest.raises(NotImplementedError, match="later"):
        names["g"]()


def test_in_place_changes_to_arguments_are_mirrored():
    namespace = {}
    exec("def clobber(x, t):\n    x[0] = 99\n    t.zero_()", namespace)
    clobber = loopback(namespace).lookup({"clobber"})["clobber"]
    x, t = np.arange(3.0), torch.ones(2)
    clobber(x, t)
    assert x[0] == 99 and torch.equal(t, torch.zeros(2))


def test_warnings_from_the_students_code_are_reissued_not_printed():
    namespace = {}
    exec("import warnings\ndef noisy():\n    warnings.warn('careful', RuntimeWarning)\n    return 1", namespace)
    noisy = loopback(namespace).lookup({"noisy"})["noisy"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert noisy() == 1
    assert [w.category for w in caught] == [RuntimeWarning]


def test_random_states_travel_with_calls():
    namespace = {}
    exec("import torch\ndef draw():\n    return torch.rand(3)", namespace)
    draw = loopback(namespace).lookup({"draw"})["draw"]
    torch.manual_seed(5)
    first = draw()
    after = torch.rand(1)
    torch.manual_seed(5)
    assert torch.equal(torch.rand(3), first) and torch.equal(torch.rand(1), after)


def test_a_remote_module_behaves_like_one():
    namespace = {}
    exec(
        "import torch\nfrom torch import nn\n"
        "class Layer(nn.Module):\n"
        "    def __init__(self, d):\n        super().__init__()\n        self.proj = nn.Linear(d, d, bias=False)\n"
        "    def forward(self, x):\n        return self.proj(x)",
        namespace,
    )
    session = loopback(namespace)
    Layer = session.lookup({"Layer"})["Layer"]
    layer = Layer(3).to(torch.float64)
    assert isinstance(layer, Layer) and isinstance(layer, nn.Module) and isinstance(layer.proj, nn.Linear)
    assert tuple(layer.proj.weight.shape) == (3, 3) and layer.proj.bias is None
    with torch.no_grad():
        layer.proj.weight.copy_(torch.eye(3, dtype=torch.float64))
    x = torch.randn(2, 3, dtype=torch.float64)
    assert torch.allclose(layer(x), x)  # the copy happened in the student's process
    reference = nn.Linear(3, 3, bias=False).to(torch.float64)
    layer.load_state_dict({"proj.weight": reference.weight.detach().clone()})
    assert torch.allclose(layer(x), reference(x))
    assert torch.allclose(layer.proj.weight, reference.weight)  # a remote parameter is read as data
    assert getattr(layer, "missing", "default") == "default"


def test_a_remote_object_cannot_claim_to_be_the_answer():
    namespace = {}
    exec(
        "class Anything:\n    def __eq__(self, other): return True\n    def __bool__(self): return False\n"
        "    def __len__(self): return 3\n"
        "def answer():\n    return Anything()",
        namespace,
    )
    got = loopback(namespace).lookup({"answer"})["answer"]()
    assert isinstance(got, rpc.Proxy)
    assert (got == 42) is False and got != 42 and bool(got) is True  # identity and truth are decided here
    with pytest.raises(TypeError):
        np.testing.assert_allclose(got, [1, 2, 3])


def test_gradients_flow_through_the_students_code():
    namespace = {}
    exec(
        "import torch\nfrom torch import nn\n"
        "def loss(x):\n    return (x ** 2).sum()\n"
        "class Scale(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.w = nn.Parameter(torch.ones(3))\n"
        "    def forward(self, x):\n        return (self.w * x).sum(), self.w * 2",
        namespace,
    )
    session = loopback(namespace)
    x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (grad,) = torch.autograd.grad(session.lookup({"loss"})["loss"](x), x)  # into the grader's tensor
    assert torch.equal(grad, 2 * x.detach())
    scale = session.lookup({"Scale"})["Scale"]()
    total, doubled = scale(torch.tensor([1.0, 2.0, 3.0]))
    (total + doubled.sum()).backward()  # into the student's parameters, over there
    assert torch.equal(scale.w.grad, torch.tensor([3.0, 4.0, 5.0]))
    with torch.no_grad():
        assert not scale(torch.ones(3))[0].requires_grad


def test_pyplot_state_can_live_in_the_students_process():
    namespace = {}
    exec("import numpy as np\ndef draw(ax, w):\n    ax.imshow(w)\n    return ax", namespace)
    session = loopback(namespace)
    plt = session.request("imports", "import matplotlib.pyplot as plt")["plt"]
    fig, ax = plt.subplots()
    out = session.lookup({"draw"})["draw"](ax, np.eye(2))
    assert out is ax and len(ax.get_images()) == 1
    np.testing.assert_allclose(np.asarray(ax.get_images()[0].get_array()), np.eye(2))
    plt.close(fig)


def test_a_remote_object_that_is_not_data_fails_cleanly_in_torch():
    namespace = {}
    exec("class Thing:\n    pass\ndef make():\n    return Thing()", namespace)
    thing = loopback(namespace).lookup({"make"})["make"]()
    with pytest.raises(TypeError):
        torch.allclose(torch.ones(1), thing)


def test_an_optimiser_step_in_the_students_code_updates_the_tests_model_and_its_gradients():
    """A model and its optimiser cross in one request (the optimiser keeps pointing at the model's
    parameters), gradients travel with the parameters both ways, and the step is mirrored back."""
    namespace = {}
    exec(
        "def step(model, optimizer, x, clear):\n"
        "    if clear:\n        optimizer.zero_grad()\n"
        "    model(x).sum().backward()\n    optimizer.step()",
        namespace,
    )
    step = loopback(namespace).lookup({"step"})["step"]
    torch.manual_seed(0)
    for clear in (True, False):
        model = nn.Linear(3, 2)
        twin = nn.Linear(3, 2)
        twin.load_state_dict(model.state_dict())
        for p in (*model.parameters(), *twin.parameters()):
            p.grad = torch.full_like(p, 10.0)  # stale gradients from an earlier step
        x = torch.randn(4, 3)
        step(model, torch.optim.SGD(model.parameters(), lr=0.1), x, clear)
        if clear:
            twin.zero_grad()
        twin(x).sum().backward()
        torch.optim.SGD(twin.parameters(), lr=0.1).step()
        for mine, expected in zip(model.parameters(), twin.parameters()):
            assert torch.allclose(mine, expected) and torch.allclose(mine.grad, expected.grad), clear


def test_devices_a_test_simulates_are_what_the_students_code_sees(monkeypatch):
    """Replacing torch's device queries in the test is detected (torch's own functions never are), and the
    answers travel with each call: the agent makes the student's torch give them during the call only."""
    namespace = {}
    exec(
        "import torch\n"
        "def seen():\n"
        "    return torch.cuda.is_available(), torch.cuda.device_count(), torch.backends.mps.is_available()",
        namespace,
    )
    real = torch.cuda.is_available, torch.cuda.device_count, torch.backends.mps.is_available
    seen = loopback(namespace).lookup({"seen"})["seen"]
    assert devices.simulated_devices() is None
    assert seen() == (real[0](), real[1](), real[2]())
    with monkeypatch.context() as patch:
        patch.setattr(torch.cuda, "is_available", lambda: True)
        patch.setattr(torch.cuda, "device_count", lambda: 2)
        assert devices.simulated_devices() == {"cuda.is_available": True, "cuda.device_count": 2}
        patch.setattr(torch.backends.mps, "is_available", lambda: True)
        assert set(devices.simulated_devices()) == set(protocol.DEVICE_QUERIES)
    # The agent runs in this process here, so let only the request carry the simulation: torch stays untouched.
    monkeypatch.setattr(
        rpc,
        "simulated_devices",
        lambda: {"cuda.is_available": True, "cuda.device_count": 3, "backends.mps.is_available": True},
    )
    assert seen() == (True, 3, True)
    assert (torch.cuda.is_available, torch.cuda.device_count, torch.backends.mps.is_available) == real


def test_the_agent_runs_from_its_source_where_autograder_cannot_be_imported():
    """In the kernel, startup.INSTALL_AGENT builds the agent's modules from their source, and ``autograder``
    cannot be imported there: the agent installs itself and answers a request as it does in this process."""
    text, _ = codec.encode_request({"op": "lookup", "args": [["x", "missing"]], "release": None})
    fake_shell = (
        "import sys, types\n"
        "sys.modules['autograder'] = None  # importing autograder fails, as in the sandbox\n"
        "targets = {}\n"
        "shell = types.SimpleNamespace(user_ns={'x': [1, 2.5]}, kernel=types.SimpleNamespace(\n"
        "    comm_manager=types.SimpleNamespace(register_target=targets.__setitem__)))\n"
        "get_ipython = lambda: shell\n"
    )
    code = fake_shell + startup.INSTALL_AGENT + f"print(__autograder__.rpc({text!r}))\nprint(sorted(targets))\n"
    done = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    answer, targets = done.stdout.splitlines()
    answer = rpc.parse_answer(answer)
    assert answer["ok"], answer
    assert codec.decode(answer["value"]) == {"x": [1, 2.5]} and targets == "['autograder']"
