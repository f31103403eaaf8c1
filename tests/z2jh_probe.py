"""Run the hub configuration of deploy/z2jh-values.yaml with the chart's own JupyterHub,
OAuthenticator and KubeSpawner (in .venv/z2jh/), and report what happened, for tests/test_z2jh.py.

    .venv/z2jh/bin/python tests/z2jh_probe.py < scenarios.json > reports.json

Scenarios by name; each (JSON) gives: ``values`` (values files, in order), ``overrides`` (merged over them, as
``--set`` would), ``existing`` (users already in the hub's database, as from an earlier
semester), ``logins`` (``[name, groups]``: someone logs in through the OAuth provider, which
sends these groups), ``spawn`` (users whose server is prepared: pre-spawn hook, then the pod
manifest), ``collide`` (also prepare servers for two users whose names give the same uid).

The report: the authenticator's class and settings, each login's outcome, the hub's groups and
role assignments after ``JupyterHub.initialize`` (in-memory database, no proxy started), each
prepared server's environment and pod manifest, or the error that stopped the configuration.
Nothing here talks to a network or a cluster: the provider's answers are given (the
OAuthenticator's own code turns them into a login), and KubeSpawner runs in its ``_mock`` mode.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import sys
import tempfile
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import z2jh_chart  # noqa: E402


async def _login(app, name: str, groups: list[str]) -> dict:
    """Log ``name`` in the way GenericOAuthenticator does after the provider's redirect, with
    the provider's answers given: the user info holds the user name claim and the groups."""
    authenticator = app.authenticator
    claim = authenticator.username_claim
    user_info = {claim if isinstance(claim, str) else "preferred_username": name, "groups": groups}

    async def token_to_user(token_info):
        return user_info

    async def authenticate(handler, data=None):
        # What OAuthenticator.authenticate does once it holds a token (17.4's own method).
        return await authenticator._token_to_auth_model({"access_token": "probe", "token_type": "Bearer"})

    authenticator.token_to_user = token_to_user
    authenticator.authenticate = authenticate
    model = await authenticator.get_authenticated_user(None, None)
    if model is None:
        return {"allowed": False}
    # What the hub does with an allowed login (BaseHandler.auth_to_user): the user, their
    # admin flag, and with manage_groups their groups.
    user = app.users[_orm_user(app, model["name"])]
    if model.get("admin") is not None:
        user.admin = model["admin"]
    if authenticator.manage_groups and model.get("groups") is not None:
        await _maybe_await(user.sync_groups(model["groups"]))
    app.db.commit()
    return {"allowed": True, "name": model["name"], "admin": bool(user.admin)}


def _orm_user(app, name: str):
    """The user ``name`` in the hub's database, added when missing."""
    from jupyterhub import orm

    orm_user = orm.User.find(app.db, name)
    if orm_user is None:
        orm_user = orm.User(name=name)
        app.db.add(orm_user)
        app.db.commit()
    return orm_user


async def _maybe_await(value):
    if asyncio.iscoroutine(value):
        return await value
    return value


async def _prepare_server(app, name: str) -> dict:
    """The pre-spawn hook, then the pod manifest KubeSpawner would create, for ``name``."""
    from kubernetes_asyncio.client import ApiClient
    from kubespawner import KubeSpawner

    user = app.users[_orm_user(app, name)]
    spawner = KubeSpawner(_mock=True, user=user, hub=app.hub, config=app.config, db=app.db)
    try:
        await _maybe_await(spawner.run_pre_spawn_hook())
    except Exception as error:  # the hook refused: report why
        return {"error": f"{type(error).__name__}: {error}"}
    pod = await spawner.get_pod_manifest()
    async with ApiClient() as client:
        manifest = client.sanitize_for_serialization(pod)
    return {"environment": dict(spawner.environment), "pod": manifest}


def _colliding_names(unix_uid) -> tuple[str, str]:
    """Two user names that the values' own uid function maps to the same uid."""
    seen = {}
    for index in range(10**6):
        name = f"student{index}"
        uid = unix_uid(name)
        if uid in seen:
            return seen[uid], name
        seen[uid] = name
    raise RuntimeError("no two names with the same uid among a million")


# KubeSpawner reads a client configuration even in _mock mode: one that names a cluster at an
# address nothing listens on (the probe never calls the Kubernetes API).
KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none, namespace: attention}}]
current-context: none
"""


async def run(scenario: dict, workdir: Path) -> dict:
    from jupyterhub.app import JupyterHub

    (workdir / "kubeconfig").write_text(KUBECONFIG)
    os.environ["KUBECONFIG"] = str(workdir / "kubeconfig")

    values, ours = z2jh_chart.merged_values(scenario["values"], scenario.get("overrides"))
    config_dir = workdir / "hub-config"
    config_dir.mkdir()
    try:
        c = z2jh_chart.hub_config(values, ours, config_dir)
    except Exception as error:
        return {"config_error": f"{type(error).__name__}: {error}"}
    # What the chart sets from its generated Secret and its database, here for one process.
    c.JupyterHub.db_url = "sqlite://"
    c.JupyterHub.cookie_secret = secrets.token_bytes(32)
    c.ConfigurableHTTPProxy.should_start = False
    c.ConfigurableHTTPProxy.auth_token = secrets.token_hex(16)
    app = JupyterHub(config=c)
    os.chdir(workdir)
    try:
        await app.initialize([])
    except Exception as error:
        return {"init_error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc()}

    from jupyterhub import orm

    authenticator = app.authenticator
    report = {
        "authenticator": type(authenticator).__module__ + "." + type(authenticator).__name__,
        "manage_groups": bool(authenticator.manage_groups),
        "allowed_users": sorted(authenticator.allowed_users),
        "admin_users": sorted(authenticator.admin_users),
        "allow_all": bool(authenticator.allow_all),
        "allow_existing_users": bool(authenticator.allow_existing_users),
        "load_groups": {name: dict(spec) for name, spec in app.load_groups.items()},
        "subdomain_host": app.subdomain_host,
    }
    for name in scenario.get("existing", []):
        _orm_user(app, name)
    report["logins"] = {name: await _login(app, name, groups) for name, groups in scenario.get("logins", [])}
    report["groups"] = {group.name: sorted(u.name for u in group.users) for group in app.db.query(orm.Group)}
    report["roles"] = {
        role.name: {
            "scopes": sorted(role.scopes),
            "users": sorted(u.name for u in role.users),
            "groups": sorted(g.name for g in role.groups),
            "services": sorted(s.name for s in role.services),
        }
        for role in app.db.query(orm.Role)
    }
    report["admins"] = sorted(u.name for u in app.db.query(orm.User) if u.admin)
    report["user_hosts"] = {u.name: app.users[u].host for u in app.db.query(orm.User)}
    report["servers"] = {name: await _prepare_server(app, name) for name in scenario.get("spawn", [])}
    if scenario.get("collide"):
        first, second = _colliding_names(app.config.KubeSpawner.pre_spawn_hook.__globals__["unix_uid"])
        report["collision"] = {
            "names": [first, second],
            "first": await _prepare_server(app, first),
            "second": await _prepare_server(app, second),
            "first_again": await _prepare_server(app, first),
        }
    return report


def main() -> None:
    """Scenarios by name on stdin, their reports by name on stdout; one process for all of
    them (importing JupyterHub and KubeSpawner is most of the cost)."""
    scenarios = json.load(sys.stdin)
    reports = {}
    home = os.getcwd()
    for name, scenario in scenarios.items():
        with tempfile.TemporaryDirectory(prefix="z2jh-probe-") as workdir:
            try:
                reports[name] = asyncio.run(run(scenario, Path(workdir)))
            finally:
                # each scenario imports its own copy of the values' course_roles.py
                os.chdir(home)
                sys.path[:] = [path for path in sys.path if not path.startswith(workdir)]
                sys.modules.pop("course_roles", None)
    json.dump(reports, sys.stdout, default=str)


if __name__ == "__main__":
    main()
