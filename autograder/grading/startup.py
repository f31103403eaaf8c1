"""A ready sandbox for one submission: its kernel started, the grader's agent installed, the
instructor notebook's modules imported (runner.py grades in it; spares.py keeps some ready ahead).

The agent is the code of ``kernel/``, sent into the student's kernel as source
(:data:`INSTALL_AGENT`), where ``autograder`` cannot be imported. Nothing of any submission runs
before a sandbox is ready: a failure here is the grader's (:class:`SandboxFailed`).
"""

from __future__ import annotations

import ast
import time
from pathlib import Path

from autograder.grading import kernel, recording
from autograder.grading.sandbox import CallTimeout, KernelDied, NotebookTimeout, Sandbox
from autograder.grading.template import Template

_KERNEL = Path(kernel.__file__).parent


def _install_agent() -> str:
    """Code that installs the agent in the student's kernel, from the source of kernel.MODULES.

    Each module is made from its file's source, with the modules before it among its globals (the
    files import them from ``autograder.grading.kernel`` only when they are imported in the grader). The
    file names ``autograder-<name>`` mark the agent's frames, which tracebacks leave out. The course's
    recording module (``attention_course/profiling.py``) comes along compiled, not yet run: the agent
    runs it privately once the sandbox's imports are done (:func:`preimports`)."""
    lines = ["import types as _autograder_types", "_autograder_modules = {}"]
    for name in kernel.MODULES:
        source = (_KERNEL / f"{name}.py").read_text()
        lines += [
            f"_autograder_module = _autograder_types.ModuleType('_autograder_{name}')",
            "_autograder_module.__dict__.update(_autograder_modules)",
            f"exec(compile({source!r}, 'autograder-{name}', 'exec'), _autograder_module.__dict__)",
            f"_autograder_modules[{name!r}] = _autograder_module",
        ]
    lines += [
        f"_autograder_recording = compile({recording.source()!r}, 'autograder-profiling', 'exec')",
        "__autograder__ = _autograder_modules['rpc'].Agent(get_ipython().user_ns, _autograder_recording)",
        "get_ipython().kernel.comm_manager.register_target('autograder', __autograder__.open)",
        "_autograder_modules['forks'].install(get_ipython())",
        "del _autograder_types, _autograder_modules, _autograder_module, _autograder_recording",
    ]
    return "\n".join(lines) + "\n"


INSTALL_AGENT = _install_agent()


class SandboxFailed(RuntimeError):
    """The sandbox could not be started: the grader's problem, not the student's."""


def notebook_modules(template: Template) -> tuple[str, ...]:
    """The modules the instructor notebook imports (``numpy``, ``torch``, ``matplotlib.pyplot``...)."""
    modules = []
    for statement, _ in template.imports:
        node = ast.parse(statement).body[0]
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        modules += [name for name in names if name and name not in modules]
    return tuple(modules)


def preimports(template: Template) -> str:
    """Code that imports (without binding any name) the modules the instructor notebook imports, then
    runs the agent's recording module if torch is among them (before any student cell, so that what
    a submission does to torch's Python-level functions later does not reach it). In a sandbox forked
    by the zygote they are imported already (zygote.py): only the recording module runs."""
    modules = list(notebook_modules(template))
    return (
        "def _autograder_preimport():\n    import importlib\n"
        f"    for name in {modules!r}:\n"
        "        try:\n            importlib.import_module(name)\n"
        "        except Exception:\n            pass\n"
        "_autograder_preimport()\ndel _autograder_preimport\n"
        "try:\n    __autograder__.bind_recording()\nexcept Exception:\n    pass\n"
    )


def ready_sandbox(template: Template, options, slot: int, deadline: float, name: str = "") -> Sandbox:
    """A started sandbox with the agent installed and the notebook's modules imported (SandboxFailed if not);
    ``options``: the grading's (runner.Options: workdir, limits, unsafe, call_timeout).

    A kernel that fails to start is tried once more (a start can fail for reasons of the moment on a
    loaded machine). Importing the modules is the grader's own work: it gets the notebook's time, and
    if it fails, the student's cells import them as usual."""
    for attempt in (1, 2):
        sandbox = Sandbox(options.workdir, slot, options.limits, options.unsafe, name=name,
                          preload=notebook_modules(template))  # fmt: skip
        try:
            try:  # nothing of the student's runs here: a failure is the grader's
                sandbox.start(deadline)
                limit = max(0.1, min(options.call_timeout, deadline - time.monotonic()))
                installed = sandbox.run(INSTALL_AGENT, deadline, limit, silent=True)
            except (KernelDied, NotebookTimeout, CallTimeout) as exc:
                raise SandboxFailed(f"the sandbox did not start: {exc}") from None
            if (installed.reply or {}).get("status") != "ok":
                raise SandboxFailed(f"could not install the grader's agent: {installed.outputs}")
            try:
                sandbox.run(preimports(template), deadline, max(0.1, deadline - time.monotonic()), silent=True)
            except CallTimeout:
                pass
            except (KernelDied, NotebookTimeout) as exc:
                raise SandboxFailed(f"the sandbox did not start: {exc}") from None
            sandbox.budget = type(sandbox.budget)(options.limits.output_bytes)  # the student's output starts at 0
            return sandbox
        except SandboxFailed as exc:
            sandbox.close()
            if attempt == 2 or time.monotonic() >= deadline:
                raise SandboxFailed(f"{exc}\n{sandbox.log_tail}") from None
        except BaseException:
            sandbox.close()
            raise
    raise AssertionError("unreachable")
