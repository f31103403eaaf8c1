"""The course's JupyterHub, started as root for tests/test_hub_end_to_end.py, and the HTTP calls that
drive it: :class:`Hub` (its configuration from deploy/ with a local override, the process, its REST API
as a driver service, stopping everything it started) and :class:`UserServer` (one user's Jupyter server
behind the hub: the contents, nbgrader and terminal endpoints, with that user's own token).

Everything here binds to 127.0.0.1 only, waits with a deadline, and kills by pid what it started
(tests/hub_harness.py finds the processes).
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import signal
import subprocess
import time
from pathlib import Path

import requests
from hub_harness import DEPLOY, _alive, descendants, free_port, kill_pids, processes_mentioning


# --- the hub ------------------------------------------------------------------------------------
class Hub:
    """The course's JupyterHub as deploy/ ships it, installed into ``work`` with a local
    override (loopback ports, a shared password, a driver service) and started as root."""

    def __init__(self, prefix: Path, work: Path, instructors: list[str], students: list[str]):
        self.prefix, self.work = prefix, work
        self.etc, self.state, self.exchange = work / "etc", work / "state", work / "exchange"
        self.instructors, self.students = instructors, students
        self.password = secrets.token_urlsafe(18)
        self.token = secrets.token_hex(32)
        self.port, self.hub_port, self.proxy_api_port = free_port(), free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = work / "hub.log"
        self.proc: subprocess.Popen | None = None
        self.http = requests.Session()
        self.http.trust_env = False  # no proxy from the environment: loopback only

    def install_config(self) -> None:
        done = subprocess.run(
            [
                "bash", str(DEPLOY / "install.sh"), "--config-only",
                "--etc", str(self.etc), "--exchange", str(self.exchange), "--state", str(self.state),
            ],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"deploy/install.sh --config-only failed:\n{done.stdout}\n{done.stderr}")
        (self.etc / "instructors.txt").write_text("".join(f"{name}\n" for name in self.instructors))
        (self.etc / "students.txt").write_text("".join(f"{name}\n" for name in self.students))
        (self.etc / "jupyterhub_config_local.py").write_text(
            "# Written by tests/hub_harness.py: loopback ports, a shared password, a driver service.\n"
            "c = get_config()\n"
            f"c.JupyterHub.bind_url = 'http://127.0.0.1:{self.port}'\n"
            f"c.JupyterHub.hub_bind_url = 'http://127.0.0.1:{self.hub_port}'\n"
            f"c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:{self.proxy_api_port}'\n"
            "c.JupyterHub.authenticator_class = 'shared-password'\n"
            f"c.SharedPasswordAuthenticator.user_password = {self.password!r}\n"
            f"c.JupyterHub.services.append({{'name': 'e2e-driver', 'api_token': {self.token!r}}})\n"
            "c.JupyterHub.load_roles.append({'name': 'e2e-driver', 'services': ['e2e-driver'], 'scopes': [\n"
            "    'admin:users', 'admin:servers', 'tokens', 'list:users', 'read:users', 'read:groups']})\n"
            "# Lets the screenshot script open nbgrader's panels with JupyterLab's commands.\n"
            "c.Spawner.args = ['--LabApp.expose_app_in_browser=True']\n"
        )

    def start(self, timeout: float = 90) -> float:
        """Start the hub; return the seconds until its API answered."""
        env = {
            "PATH": f"{self.prefix / 'venv' / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "ATTENTION_HUB_PREFIX": str(self.prefix),
            "ATTENTION_HUB_ETC": str(self.etc),
            "ATTENTION_HUB_STATE": str(self.state),
            "NBGRADER_EXCHANGE_ROOT": str(self.exchange),
            "CONFIGPROXY_AUTH_TOKEN": secrets.token_hex(32),
        }
        started = time.monotonic()
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [str(self.prefix / "venv" / "bin" / "jupyterhub"), "-f", str(self.etc / "jupyterhub_config.py")],
                cwd=self.state,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = started + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the hub exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if self.http.get(f"{self.url}/hub/api/", timeout=5).status_code == 200:
                    return time.monotonic() - started
            except requests.RequestException:
                pass
            time.sleep(0.5)
        raise TimeoutError(f"the hub did not answer within {timeout:.0f} s:\n{self.log_tail()}")

    def log_tail(self, chars: int = 6000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except FileNotFoundError:
            return "(no hub log)"

    # REST API of the hub, as the driver service
    def api(self, method: str, path: str, expect=(200,), **kwargs):
        kwargs.setdefault("timeout", 60)
        response = self.http.request(
            method, f"{self.url}/hub/api{path}", headers={"Authorization": f"token {self.token}"}, **kwargs
        )
        if response.status_code not in expect:
            raise AssertionError(
                f"{method} /hub/api{path}: {response.status_code} {response.text[:2000]}\n{self.log_tail()}"
            )
        return response.json() if response.content else None

    def start_server(self, user: str) -> None:
        self.api("POST", f"/users/{user}/server", expect=(201, 202))

    def wait_ready(self, user: str, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            server = self.api("GET", f"/users/{user}")["servers"].get("")
            if server and server.get("ready"):
                return
            time.sleep(0.5)
        raise TimeoutError(f"{user}'s server was not ready within {timeout:.0f} s:\n{self.log_tail()}")

    def user_token(self, user: str) -> str:
        return self.api("POST", f"/users/{user}/tokens", expect=(200, 201), json={"note": "e2e", "expires_in": 3600})[
            "token"
        ]

    def stop(self) -> None:
        """Stop every server, the hub, its proxy and services; kill by pid what is left."""
        if self.proc is None:
            return
        tree = descendants(self.proc.pid)
        if self.proc.poll() is None:
            try:
                for user in self.api("GET", "/users", timeout=10):
                    if user.get("servers"):
                        self.api("DELETE", f"/users/{user['name']}/server", expect=(202, 204), timeout=30)
            except (requests.RequestException, AssertionError):
                pass
            tree |= descendants(self.proc.pid)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        pid_file = self.state / "jupyterhub-proxy.pid"
        if pid_file.exists() and pid_file.read_text().strip().isdigit():
            proxy = int(pid_file.read_text().strip())
            if proxy in processes_mentioning("configurable-http-proxy"):
                tree.add(proxy)
        kill_pids({pid for pid in tree if _alive(pid)})
        kill_pids(processes_mentioning(str(self.work)))


class UserServer:
    """One user's Jupyter server behind the hub, called with that user's own token."""

    def __init__(self, hub: Hub, user: str, token: str):
        self.hub, self.user, self.token = hub, user, token
        self.base = f"{hub.url}/user/{user}"

    def request(self, method: str, path: str, expect=(200,), timeout: float = 120, **kwargs):
        response = self.hub.http.request(
            method, f"{self.base}{path}", headers={"Authorization": f"token {self.token}"}, timeout=timeout, **kwargs
        )
        if expect is not None and response.status_code not in expect:
            raise AssertionError(f"{method} {self.base}{path}: {response.status_code} {response.text[:3000]}")
        return response

    def json(self, method: str, path: str, **kwargs):
        return self.request(method, path, **kwargs).json()

    def nbgrader(self, method: str, path: str, **kwargs) -> dict:
        """An nbgrader endpoint answering {"success": ..., "value"/"error"...}; must succeed."""
        result = self.json(method, path, **kwargs)
        if isinstance(result, dict) and result.get("success") is False:
            raise AssertionError(f"{path} failed: {json.dumps(result)[:4000]}")
        return result

    def get_file(self, path: str) -> dict:
        return self.json("GET", f"/api/contents/{path}", params={"content": "1"})

    def put_notebook(self, path: str, notebook: dict) -> None:
        self.request("PUT", f"/api/contents/{path}", expect=(200, 201), json={"type": "notebook", "content": notebook})

    def terminal(self, command: str, sentinel: str, timeout: float = 180) -> str:
        """Type ``command`` into a new JupyterLab terminal; return its output up to ``sentinel``
        (a regular expression that the command prints when done)."""
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        name = self.json("POST", "/api/terminals")["name"]
        url = f"{self.base}/terminals/websocket/{name}".replace("http://", "ws://", 1)

        async def drive() -> str:
            socket_ = await asyncio.wait_for(
                websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {self.token}"})), 30
            )
            output = ""
            socket_.write_message(json.dumps(["stdin", command + "\r"]))
            deadline = time.monotonic() + timeout
            while not re.search(sentinel, output):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no {sentinel!r} in the terminal after {timeout:.0f} s:\n{output[-3000:]}")
                message = await asyncio.wait_for(socket_.read_message(), left)
                if message is None:
                    break
                kind, *payload = json.loads(message)
                if kind == "stdout":
                    output += payload[0]
            socket_.close()
            return output

        try:
            return asyncio.run(drive())
        finally:
            self.request("DELETE", f"/api/terminals/{name}", expect=(204, 404))
