"""The student's kernel, isolated: one sandbox per submission, started, talked to and killed.

:class:`Sandbox` starts the kernel (as root, forked by the worker's zygote, zygote.py, which has
imported ipykernel and the notebook's modules once, into the jail that jail.py builds: its own
namespaces, an unprivileged user of its own, read-only system, rlimits and cgroups; with ``unsafe``,
as a plain process) with a scratch folder of its own: a size-limited tmpfs in the sandbox's own
mount namespace (a folder on the host with ``unsafe``), owned by the sandbox user, that is the
kernel's ``/tmp``, working directory and ``HOME``, and also holds the kernel's connection file and
its IPC sockets, which the grader reaches through ``/proc/<pid 1 of the sandbox>/root/tmp`` (the
grader talks to the kernel over Unix sockets: the sandbox has no network at all, not even
loopback). Killing the sandbox's first process kills pid 1 of its namespaces, which makes the kernel
kill every process left in them; the cgroup, when there is one, is swept as well.

It exposes one primitive, :meth:`Sandbox.run`: send code to the kernel and collect what comes
back, within a deadline, with the output capped (and :meth:`Sandbox.call`, the same over the
grader's comm).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading import zygote
from autograder.grading.jail import UID_BASE, CGroups, Limits, sandbox_problem

CONNECTION_FILE = ".kernel.json"
IPC_PREFIX = ".k"
MAX_MESSAGE_BYTES = 512 << 20  # a larger message from the kernel makes ZMQ drop the connection
MAX_ANSWER_BYTES = 16 << 20  # an agent's answer larger than this is not even decoded
POLL_S = 0.05


class KernelDied(BaseException):
    """The kernel process is gone (a crash, os._exit, a signal, the memory limit)."""


class NotebookTimeout(BaseException):
    """The notebook's wall-clock budget is spent; the sandbox has been killed."""


class CallTimeout(BaseException):
    """One cell or call ran past its own limit and was interrupted; the kernel survived."""


class SandboxUnavailable(RuntimeError):
    """Sandboxing is impossible here (not root, no unshare); see ``--unsafe-no-sandbox``."""


@dataclass
class Output:
    """What one execution produced, in nbformat output dicts, capped."""

    outputs: list = field(default_factory=list)
    truncated: bool = False
    reply: dict | None = None  # the execute_reply content


class _OutputBudget:
    """Counts the bytes of output kept for a whole notebook."""

    def __init__(self, limit: int):
        self.left = limit
        self.truncated = False

    def take(self, size: int) -> bool:
        if size > self.left:
            self.truncated = True
            self.left = 0
            return False
        self.left -= size
        return True


class Sandbox:
    """One kernel in its sandbox. Use as a context manager; :meth:`close` always kills it."""

    def __init__(self, workdir: Path, slot: int = 0, limits: Limits | None = None, unsafe: bool = False,
                 name: str = "", preload: tuple[str, ...] = ()):  # fmt: skip
        self.workdir = Path(workdir)
        self.preload = preload  # modules the zygote imports before it forks this sandbox (zygote.py)
        self.slot = slot
        self.name = name or str(slot)  # names its folders, log and cgroups (a job may hold a spare too)
        self.limits = limits or Limits()
        self.unsafe = unsafe
        self.uid = UID_BASE + slot
        self.proc: subprocess.Popen | zygote.Forked | None = None
        self.client = None
        self.context = None
        self.scratch: Path | None = None
        self.cgroups: CGroups | None = None
        self.budget = _OutputBudget(self.limits.output_bytes)
        self._comm_id: str | None = None
        self.log_tail = ""  # the end of the kernel's own log (stderr), once closed

    # ---- life cycle -------------------------------------------------------------------------

    def start(self, deadline: float) -> None:
        """Start the kernel and wait until it answers; raises KernelDied or NotebookTimeout.

        On any failure everything already set up (scratch mount, cgroups, processes) is undone
        before the exception propagates, so a caller that never gets a started sandbox has
        nothing to clean up."""
        if not self.unsafe and (problem := sandbox_problem()):
            raise SandboxUnavailable(problem)
        try:
            self._start(deadline)
        except BaseException:
            self.close()
            raise

    def _start(self, deadline: float) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        key = secrets.token_hex(16)
        ports = dict(shell_port=1, iopub_port=2, stdin_port=3, control_port=4, hb_port=5)
        info = dict(transport="ipc", key=key, signature_scheme="hmac-sha256", kernel_name="python3", **ports)
        argv = ["-f", f"/tmp/{CONNECTION_FILE}", "--HistoryManager.hist_file=:memory:",
                "--IPKernelApp.log_level=CRITICAL"]  # fmt: skip
        log = self.workdir / f"kernel-{self.name}.log"
        if not self.unsafe:  # forked by the zygote, in namespaces, cgroups and a uid of its own (zygote.py)
            self.cgroups = CGroups(f"autograder-{self.name}", self.limits)
            connection = json.dumps(dict(info, ip=f"/tmp/{IPC_PREFIX}"))
            try:
                self.proc = zygote.zygote(self.preload).fork(self.uid, self.limits, argv, connection, log,
                                                              self.cgroups.dirs)  # fmt: skip
            except zygote.ZygoteFailed as exc:
                raise KernelDied(str(exc)) from None
            self._connect(dict(info, ip=f"/proc/{self.proc.init}/root/tmp/{IPC_PREFIX}"), deadline)
            return
        self.scratch = Path(tempfile.mkdtemp(prefix=f"s{self.slot}-", dir=self.workdir))
        for sub in (".mpl", ".shm", ".ipython", ".jupyter"):
            (self.scratch / sub).mkdir()
        if font_cache := zygote.font_cache():
            shutil.copy(font_cache, self.scratch / ".mpl" / font_cache.name)
        (self.scratch / CONNECTION_FILE).write_text(json.dumps(dict(info, ip=f"{self.scratch}/{IPC_PREFIX}")))
        argv[1] = f"{self.scratch}/{CONNECTION_FILE}"
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "HOME")}
        env.update(MPLCONFIGDIR=str(self.scratch / ".mpl"), IPYTHONDIR=str(self.scratch / ".ipython"),
                   OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")  # fmt: skip
        with open(log, "wb") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "ipykernel_launcher", *argv], cwd=self.scratch,
                                         env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                         start_new_session=True)  # fmt: skip
        self._connect(dict(info, ip=f"{self.scratch}/{IPC_PREFIX}"), deadline)

    def _connect(self, info: dict, deadline: float) -> None:
        import zmq
        from jupyter_client import BlockingKernelClient

        self.context = zmq.Context()
        self.context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
        self.client = BlockingKernelClient(context=self.context)
        self.client.load_connection_info(info)
        self.client.start_channels()
        # kernel_info until the shell answers AND iopub delivers (a subscription that is not
        # established yet silently drops messages)
        shell_ok = iopub_ok = False
        while not (shell_ok and iopub_ok):
            msg_id = self.client.kernel_info()
            until = min(deadline, time.monotonic() + 0.5)
            while time.monotonic() < until and not (shell_ok and iopub_ok):
                self._check(deadline)
                try:
                    msg = self.client.get_shell_msg(timeout=POLL_S)
                    shell_ok = shell_ok or msg["parent_header"].get("msg_id") == msg_id
                except Exception:
                    pass
                try:
                    self.client.get_iopub_msg(timeout=0.0 if not shell_ok else POLL_S)
                    iopub_ok = True
                except Exception:
                    pass
            self._check(deadline)
        self._drain_iopub(0.05)

    def _check(self, deadline: float) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise KernelDied(f"the kernel exited (status {self.proc.returncode})")
        if time.monotonic() >= deadline:
            self.kill()
            raise NotebookTimeout("the notebook ran past its time limit")

    def _drain_iopub(self, seconds: float) -> None:
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            try:
                self.client.get_iopub_msg(timeout=0.01)
            except Exception:
                return

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def oom_killed(self) -> bool:
        return bool(self.cgroups and self.cgroups.oom_killed())

    def kill(self) -> None:
        """Kill the kernel and everything it started (the whole pid namespace)."""
        if self.proc is None:
            if self.cgroups:  # created, but the kernel never started
                self.cgroups.kill_and_remove()
            return
        if self.proc.poll() is None:
            try:
                if self.unsafe:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                else:
                    self.proc.kill()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if self.unsafe:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
        if self.cgroups:
            self.cgroups.kill_and_remove()

    def close(self) -> None:
        self.kill()
        if self.client is not None:
            try:
                self.client.stop_channels()
            except Exception:
                pass
            self.client = None
        if self.context is not None:
            self.context.destroy(linger=0)
            self.context = None
        if self.scratch is not None:  # (a sandboxed kernel's scratch tmpfs went with its namespaces)
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None
        log = self.workdir / f"kernel-{self.name}.log"
        if log.exists():  # keep its end for error messages; the file goes
            self.log_tail = log.read_bytes()[-2000:].decode(errors="replace")
            log.unlink()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- execution --------------------------------------------------------------------------

    def interrupt(self) -> None:
        """Ask the kernel to interrupt what it runs (SIGINT through the control channel)."""
        try:
            msg = self.client.session.msg("interrupt_request", {})
            self.client.control_channel.send(msg)
        except Exception:
            pass

    def run(
        self,
        code: str,
        deadline: float,
        call_limit: float | None = None,
        *,
        silent: bool = False,
    ) -> Output:
        """Execute ``code`` in the kernel and collect its outputs and reply.

        ``deadline`` is the notebook's (monotonic clock): past it the sandbox is killed and
        NotebookTimeout raised. ``call_limit`` (seconds) bounds this one execution: past it
        the kernel is interrupted; CallTimeout if it recovers, else it is killed. KernelDied
        when the kernel disappears meanwhile.
        """
        if not self.alive:
            raise KernelDied("the kernel is not running")
        msg_id = self.client.execute(code, silent=silent, store_history=not silent, allow_stdin=False,
                                     stop_on_error=False)  # fmt: skip
        result = Output()
        self._wait(msg_id, result, deadline, call_limit)
        return result

    def call(self, data: dict, deadline: float, call_limit: float | None = None) -> tuple[dict | None, Output]:
        """Send ``data`` to the grader's agent over its comm; (the agent's answer or None, outputs)."""
        if not self.alive:
            raise KernelDied("the kernel is not running")
        if self._comm_id is None:
            self._comm_id = secrets.token_hex(16)
            opening = self.client.session.msg("comm_open", {"comm_id": self._comm_id, "target_name": "autograder",
                                                            "data": {}})  # fmt: skip
            self.client.shell_channel.send(opening)
        message = self.client.session.msg("comm_msg", {"comm_id": self._comm_id, "data": data})
        self.client.shell_channel.send(message)
        result = Output()
        self._wait(message["header"]["msg_id"], result, deadline, call_limit, comm=True)
        return result.reply, result

    def _wait(self, msg_id: str, result: Output, deadline: float, call_limit: float | None, comm=False) -> None:
        """Collect what the kernel sends about request ``msg_id`` until it is done (see run)."""
        import zmq

        shell, iopub = self.client.shell_channel, self.client.iopub_channel
        poller = zmq.Poller()
        poller.register(shell.socket, zmq.POLLIN)
        poller.register(iopub.socket, zmq.POLLIN)
        limit = time.monotonic() + call_limit if call_limit else None
        interrupted_at = None
        idle_at = answered_at = None
        while True:
            now = time.monotonic()
            if answered_at is not None and (idle_at is not None or now > answered_at + 1.0):
                break  # done; an idle status lost to a flooded iopub is not waited for long
            if comm and idle_at is not None and now > idle_at + 0.2:
                break  # the handler finished without answering (the agent is broken or gone)
            self._check(deadline)
            if limit is not None and now > limit and interrupted_at is None:
                self.interrupt()
                interrupted_at = now
            if interrupted_at is not None and now > interrupted_at + 3.0:
                self.kill()
                raise NotebookTimeout("a call ignored the interrupt after its time limit")
            ready = dict(poller.poll(int(POLL_S * 1000)))
            if shell.socket in ready:
                reply = shell.get_msg(timeout=0)
                if reply["parent_header"].get("msg_id") == msg_id and not comm:
                    result.reply, answered_at = reply["content"], time.monotonic()
            if iopub.socket in ready:
                msg = self._iopub_message(iopub.socket, msg_id)
                if msg is None:
                    continue
                kind, content = msg
                if kind == "status" and content.get("execution_state") == "idle":
                    idle_at = time.monotonic()
                elif kind == "comm_msg" and comm and answered_at is None:
                    result.reply, answered_at = content.get("data"), time.monotonic()
                elif kind in ("stream", "display_data", "execute_result", "error"):
                    self._keep(result, kind, content)
        result.truncated = self.budget.truncated
        if interrupted_at is not None:
            raise CallTimeout("interrupted after its time limit")

    def _iopub_message(self, socket, msg_id: str):
        """(type, content) of the next iopub message about ``msg_id``, else None. The content of
        output messages is not even decoded once the output budget is spent (a flood costs little)."""
        import zmq

        session = self.client.session
        try:
            _, frames = session.feed_identities(socket.recv_multipart(zmq.NOBLOCK), copy=True)
            msg = session.deserialize(frames, content=False, copy=True)
        except (zmq.ZMQError, ValueError, KeyError, TypeError):
            return None
        if msg["parent_header"].get("msg_id") != msg_id:
            return None
        kind, size = msg["msg_type"], len(msg["content"])
        output = kind in ("stream", "display_data", "execute_result", "error")
        if output and (self.budget.left == 0 or (size > self.budget.left and (kind != "stream" or size > 64 << 20))):
            self.budget.truncated = True  # a flood (ipykernel sends a big print as one message)
            return None
        if not output and size > MAX_ANSWER_BYTES:
            return None
        try:
            content = session.unpack(msg["content"])
        except ValueError:
            return None
        return (kind, content) if isinstance(content, dict) else None

    def _keep(self, result: Output, kind: str, content: dict) -> None:
        if kind == "stream":
            text = content.get("text", "")
            if not isinstance(text, str):
                return
            last = result.outputs[-1] if result.outputs else None
            if len(text) > self.budget.left:  # keep the beginning of a flood
                text = text[: self.budget.left] + "\n[output truncated by the grader]\n"
                self.budget.left, self.budget.truncated = len(text), True
            if not self.budget.take(len(text)):
                return
            if last is not None and last.get("output_type") == "stream" and last.get("name") == content.get("name"):
                last["text"] += text
            else:
                result.outputs.append({"output_type": "stream", "name": content.get("name", "stdout"), "text": text})
            return
        size = len(json.dumps(content, default=str))
        if not self.budget.take(size):
            return
        if kind == "error":
            result.outputs.append({"output_type": "error", "ename": str(content.get("ename", "")),
                                   "evalue": str(content.get("evalue", "")),
                                   "traceback": [str(t) for t in content.get("traceback", [])]})  # fmt: skip
        elif kind == "execute_result":
            result.outputs.append({"output_type": "execute_result", "data": content.get("data", {}),
                                   "metadata": content.get("metadata", {}),
                                   "execution_count": content.get("execution_count")})  # fmt: skip
        else:
            result.outputs.append({"output_type": "display_data", "data": content.get("data", {}),
                                   "metadata": content.get("metadata", {})})  # fmt: skip
