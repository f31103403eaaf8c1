"""The Kubernetes deployment (deploy/z2jh-values.yaml, Zero to JupyterHub chart 4.4.0), without a
cluster: would it let a class in?

The values' hub configuration runs against the chart's own JupyterHub, OAuthenticator and
KubeSpawner (their versions in the chart's hub image, installed by scripts/setup.sh into
.venv/z2jh/ from deploy/requirements-z2jh-hub.txt), through our small emulation of how the
chart applies values (tests/z2jh_chart.py) and a probe run in that environment
(tests/z2jh_probe.py), once for every scenario below: JupyterHub initialises with it (in-memory
database, no proxy), logins go through GenericOAuthenticator's own code with the provider's
answers given, the pre-spawn hook runs and KubeSpawner renders each user's pod (its _mock mode).
The rest compares files: the pins of the user image, the copies inside the values, the hub's
address. The exchange's permissions are tests/test_z2jh_exchange.py (root).

What only a cluster can show (the chart's templates, the image's start script, the volumes,
TLS) is in deploy/README.md, "Kubernetes": `helm lint` / `helm template` and a first login.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml
from traitlets.config.loader import PyFileConfigLoader

from autograder import course

sys.path.insert(0, str(Path(__file__).resolve().parent))
import z2jh_chart  # noqa: E402
from pod_security import pod_security_violations  # noqa: E402

DEPLOY = course.ROOT / "deploy"
VALUES = DEPLOY / "z2jh-values.yaml"
SUBDOMAINS = DEPLOY / "z2jh-subdomains.yaml"
Z2JH_PYTHON = course.ROOT / ".venv" / "z2jh" / "bin" / "python"
INSTRUCTORS = "formgrade-attention-step-by-step"
STUDENTS = "nbgrader-attention-step-by-step"
JUPYTER_ETC = "/etc/attention-hub/jupyter"
EXCHANGE = "/srv/nbgrader/exchange"

# A class: one instructor, two students, an administrator; and people who must stay out.
ROSTERS = {"instructors": ["lovelace"], "students": ["ada", "grace"], "admins": ["hopper"]}
SCENARIOS = {
    # Rosters in the values (as an attention-site.yaml would add them).
    "rosters": {
        "values": [str(VALUES)],
        "overrides": {"custom": {"course": ROSTERS}},
        "existing": ["dropped"],  # in the hub's database from an earlier semester, on no roster now
        "logins": [[name, []] for name in ("lovelace", "ada", "grace", "hopper", "mallory", "dropped")],
        "spawn": ["ada", "lovelace"],
        "collide": True,
    },
    # The identity provider sends the groups (README: "Rosters or the provider's groups").
    "authenticator": {
        "values": [str(VALUES)],
        "overrides": {
            "custom": {"course": {"groupsFrom": "authenticator", "admins": ["hopper"]}},
            "hub": {"config": {"GenericOAuthenticator": {"auth_state_groups_key": "oauth_user.groups"}}},
        },
        "logins": [
            ["lovelace", [INSTRUCTORS, "staff"]],
            ["ada", [STUDENTS]],
            ["hopper", []],
            ["mallory", []],
            ["eve", ["staff"]],
        ],
        "spawn": ["ada", "lovelace"],
    },
    "subdomains": {
        "values": [str(VALUES), str(SUBDOMAINS)],
        "overrides": {"custom": {"course": ROSTERS}},
        "spawn": ["ada"],
    },
    # Misconfigurations, which must fail with a reason (and show that the probe would notice):
    # the authenticator manages groups but the course still says rosters;
    "manage_groups_with_rosters": {
        "values": [str(VALUES)],
        "overrides": {"hub": {"config": {"GenericOAuthenticator": {"manage_groups": True}}}},
    },
    # groups from the provider, but GenericOAuthenticator is not told where they are;
    "groups_key_missing": {
        "values": [str(VALUES)],
        "overrides": {"custom": {"course": {"groupsFrom": "authenticator"}}},
    },
    # groups from the provider and load_groups too, as the values used to have (JupyterHub refuses);
    "load_groups_with_managed_groups": {
        "values": [str(VALUES)],
        "overrides": {
            "custom": {"course": {"groupsFrom": "authenticator"}},
            "hub": {
                "config": {
                    "JupyterHub": {"load_groups": {STUDENTS: {"users": ["ada"]}}},
                    "GenericOAuthenticator": {"auth_state_groups_key": "oauth_user.groups"},
                }
            },
        },
    },
    # the chart's defaults where the values now decide: its authenticator and its privileged
    # cloud-metadata init container.
    "chart_defaults": {
        "values": [str(VALUES)],
        "overrides": {
            "custom": {"course": ROSTERS},
            "hub": {"config": {"JupyterHub": {"authenticator_class": None}}},
            "singleuser": {"cloudMetadata": {"blockWithIptables": True}},
        },
        "spawn": ["ada"],
    },
}


def _pins(path: Path) -> dict[str, str]:
    return course.pins(path.read_text().splitlines())


def _values() -> dict:
    return yaml.safe_load(VALUES.read_text())


@pytest.fixture(scope="module")
def probe() -> dict:
    """Every scenario's report (tests/z2jh_probe.py, one process in .venv/z2jh/)."""
    if not Z2JH_PYTHON.exists():
        reason = (
            f"{Z2JH_PYTHON} is missing: rerun `bash scripts/setup.sh` (it installs deploy/requirements-z2jh-hub.txt)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    done = subprocess.run(
        [str(Z2JH_PYTHON), str(Path(__file__).with_name("z2jh_probe.py"))],
        input=json.dumps(SCENARIOS),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=course.ROOT,
    )
    assert done.returncode == 0, f"the probe failed:\n{done.stderr[-4000:]}"
    return json.loads(done.stdout)


def _hub(report: dict) -> dict:
    """A scenario's report, after checking that the hub initialised."""
    assert "config_error" not in report and "init_error" not in report, report.get("traceback") or report
    return report


# --- the values target one chart version, and the images match it -----------------------------
def test_one_chart_version_everywhere():
    """The values, the subdomain overlay, the guides and the hub's pins name one chart version,
    the one whose hub tests/z2jh_chart.py emulates."""
    version = z2jh_chart.CHART_VERSION
    for path in (VALUES, SUBDOMAINS, DEPLOY / "README.md", course.ROOT / "guides" / "instructor.md"):
        named = set(re.findall(r"--version (\S+)", path.read_text()))
        assert named == {version}, f"{path.name}: helm's --version {sorted(named)}, the values target chart {version}"
    header = (DEPLOY / "requirements-z2jh-hub.txt").read_text().split("\n\n")[0]
    assert f"chart {version}" in header, "deploy/requirements-z2jh-hub.txt must say which chart's hub it pins"


def test_user_image_matches_the_hub_and_the_course():
    """The user image's single-user server is the chart's JupyterHub; its kernels run the
    course's numpy, torch, matplotlib and nbgrader; its JupyterLab is the one-machine hub's."""
    image = _pins(DEPLOY / "requirements-singleuser.txt")
    hub = _pins(DEPLOY / "requirements-z2jh-hub.txt")
    ours = _pins(course.ROOT / "requirements.txt")
    one_machine = _pins(DEPLOY / "requirements-hub.txt")
    assert image["jupyterhub"] == hub["jupyterhub"], (
        f"the user image runs JupyterHub {image['jupyterhub']}, the chart's hub {hub['jupyterhub']}"
    )
    for name in ("numpy", "torch", "matplotlib", "nbgrader"):
        assert image.get(name) == ours[name], f"{name}: user image {image.get(name)}, course {ours[name]}"
    for name in ("jupyterlab", "notebook", "jupyter-server"):
        assert image.get(name) == one_machine[name], (
            f"{name}: user image {image.get(name)}, one machine {one_machine[name]}"
        )
    assert {"jupyterhub-kubespawner", "oauthenticator"} <= set(hub)
    dockerfile = (DEPLOY / "singleuser.Dockerfile").read_text()
    assert "pip install --no-cache-dir -r /tmp/requirements-singleuser.txt" in dockerfile
    assert "COPY deploy/exchange-permissions.sh " in dockerfile
    assert not re.search(r"COPY\s+(solutions|autograder)\b", dockerfile), "the image must not hold solutions"


# --- copies inside the values ------------------------------------------------------------------
def test_hub_role_logic_is_the_one_machine_module():
    """hub.extraFiles carries deploy/course_roles.py unchanged: one role logic for both hubs."""
    copy = _values()["hub"]["extraFiles"]["course-roles"]
    assert copy["mountPath"] == f"{z2jh_chart.HUB_CONFIG_DIR}/course_roles.py"
    assert copy["stringData"] == (DEPLOY / "course_roles.py").read_text(), (
        "hub.extraFiles.course-roles.stringData differs from deploy/course_roles.py: paste the file in again"
    )


def _settings(path: Path) -> dict:
    """A Jupyter configuration file's settings: JSON as parsed, Python as traitlets loads it."""
    if path.suffix == ".json":
        return json.loads(path.read_text())
    return json.loads(json.dumps(PyFileConfigLoader(path.name, path=str(path.parent)).load_config()))


def test_extra_files_carry_every_file_of_deploy_jupyter(tmp_path):
    """Every file of deploy/jupyter/ (and deploy/nbgrader_config.py, which install.sh puts in
    common/) is mounted at the same place under /etc/attention-hub/jupyter with the same
    settings, and nothing else is."""
    wanted = {
        f"{JUPYTER_ETC}/{p.relative_to(DEPLOY / 'jupyter')}": p for p in (DEPLOY / "jupyter").rglob("*") if p.is_file()
    }
    wanted[f"{JUPYTER_ETC}/common/nbgrader_config.py"] = DEPLOY / "nbgrader_config.py"
    extra = {f["mountPath"]: (key, f) for key, f in _values()["singleuser"]["extraFiles"].items()}
    assert sorted(extra) == sorted(wanted)
    for mount, source in wanted.items():
        key, entry = extra[mount]
        if "data" in entry:
            mounted = entry["data"]
        else:
            copy = tmp_path / key / Path(mount).name
            copy.parent.mkdir()
            copy.write_text(entry["stringData"])
            mounted = _settings(copy)
        assert mounted == _settings(source), (
            f"singleuser.extraFiles.{key} differs from {source.relative_to(course.ROOT)}"
        )


# --- the hub's address: one place --------------------------------------------------------------
def host_problems(values: dict, jupyterhub_url: str) -> list[str]:
    """Where the values' host names disagree with the book's hub address (``""``: the book
    links to no hub, and the values keep their CHANGE ME host)."""
    if not jupyterhub_url:
        return []
    host = urlparse(jupyterhub_url).hostname
    return [
        f"the values serve {found}, _config.yml's hub is {host}" for found in z2jh_chart.hosts(values) if found != host
    ]


def test_hub_address_agrees_with_the_book():
    """_config.yml's launch_buttons.jupyterhub_url is the one place for the hub's address; the
    values (and the subdomain overlay) serve that host."""
    url = yaml.safe_load((course.ROOT / "_config.yml").read_text())["launch_buttons"].get("jupyterhub_url") or ""
    both, _ = z2jh_chart.merged_values([VALUES, SUBDOMAINS])
    assert host_problems(both, url) == []
    callback = urlparse(both["hub"]["config"]["GenericOAuthenticator"]["oauth_callback_url"])
    assert callback.hostname == both["proxy"]["https"]["hosts"][0] and callback.path == "/hub/oauth_callback"
    # and a disagreement is reported
    assert host_problems(both, "https://hub.other.example/") != []


# --- the hub, run ------------------------------------------------------------------------------
def test_rosters_let_the_class_in_and_nobody_else(probe):
    """With rosters: a real authenticator (never the chart's "dummy"), the rosters' people can
    log in, others and last semester's users cannot, admins are admins, the groups hold the
    rosters, and the instructors' role sees the students and nothing more."""
    hub = _hub(probe["rosters"])
    assert hub["authenticator"] == "oauthenticator.generic.GenericOAuthenticator"
    assert hub["allow_all"] is False and hub["allow_existing_users"] is False
    logins = hub["logins"]
    assert {name for name, login in logins.items() if login["allowed"]} == {"lovelace", "ada", "grace", "hopper"}
    assert {name for name, login in logins.items() if login.get("admin")} == {"hopper"}
    assert hub["groups"][INSTRUCTORS] == ["lovelace"]
    assert hub["groups"][STUDENTS] == ["ada", "grace"]
    role = hub["roles"]["course-instructor"]
    assert role["groups"] == [INSTRUCTORS] and role["users"] == []
    assert all(scope == "list:users" or scope.endswith(f"!group={STUDENTS}") for scope in role["scopes"]), role
    assert hub["roles"]["jupyterhub-idle-culler"]["services"] == ["jupyterhub-idle-culler"]


def test_one_machine_configuration_agrees(probe, tmp_path, monkeypatch):
    """deploy/jupyterhub_config.py, given the same rosters, lets in the same people with the
    same groups and instructors' role as the cluster (both use deploy/course_roles.py)."""
    for name in ("instructors", "students", "admins"):
        (tmp_path / f"{name}.txt").write_text("".join(f"{user}  # a comment\n" for user in ROSTERS[name]))
    monkeypatch.setenv("ATTENTION_HUB_ETC", str(tmp_path))
    monkeypatch.setattr(sys, "path", list(sys.path))
    one_machine = PyFileConfigLoader("jupyterhub_config.py", path=str(DEPLOY)).load_config()
    hub = _hub(probe["rosters"])
    assert sorted(one_machine.Authenticator.allowed_users) == hub["allowed_users"]
    assert sorted(one_machine.Authenticator.admin_users) == hub["admin_users"]
    assert one_machine.JupyterHub.load_groups == hub["load_groups"]
    role = next(r for r in one_machine.JupyterHub.load_roles if r["name"] == "course-instructor")
    assert sorted(role["scopes"]) == hub["roles"]["course-instructor"]["scopes"]


def test_groups_from_the_identity_provider(probe):
    """With groups from the provider: JupyterHub starts (no load_groups), members of the
    course's groups can log in and land in them, an admin can log in, others cannot."""
    hub = _hub(probe["authenticator"])
    assert hub["manage_groups"] is True and hub["load_groups"] == {}
    allowed = {name for name, login in hub["logins"].items() if login["allowed"]}
    assert allowed == {"lovelace", "ada", "hopper"}
    assert hub["groups"][INSTRUCTORS] == ["lovelace"] and hub["groups"][STUDENTS] == ["ada"]
    assert hub["admins"] == ["hopper"]
    assert hub["roles"]["course-instructor"]["groups"] == [INSTRUCTORS]


@pytest.mark.parametrize("scenario", ["rosters", "authenticator"])
def test_each_server_gets_its_role(probe, scenario):
    """Students get the students' settings; instructors theirs, their course folder on the home
    volume and on PYTHONPATH; every folder on JUPYTER_CONFIG_PATH outside the home is where
    extraFiles mounted the files; each user their own uid, the same in every hub."""
    servers = _hub(probe[scenario])["servers"]
    student, instructor = servers["ada"]["environment"], servers["lovelace"]["environment"]
    course_folder = "/home/jovyan/attention-step-by-step"
    assert student["JUPYTER_CONFIG_PATH"] == f"{JUPYTER_ETC}/students:{JUPYTER_ETC}/common"
    assert "PYTHONPATH" not in student
    assert (
        instructor["JUPYTER_CONFIG_PATH"]
        == f"{course_folder}/autograder:{JUPYTER_ETC}/instructors:{JUPYTER_ETC}/common"
    )
    assert instructor["PYTHONPATH"] == course_folder
    mounts = [f["mountPath"] for f in _values()["singleuser"]["extraFiles"].values()]
    for folder in {*student["JUPYTER_CONFIG_PATH"].split(":"), *instructor["JUPYTER_CONFIG_PATH"].split(":")}:
        if not folder.startswith("/home/jovyan/"):
            assert any(m.startswith(folder + "/") for m in mounts), f"nothing is mounted in {folder}"
    uids = {name: int(server["environment"]["NB_UID"]) for name, server in servers.items()}
    assert len(set(uids.values())) == len(uids) and all(20000 <= uid < 2**31 for uid in uids.values()), uids
    assert uids == {name: int(server["environment"]["NB_UID"]) for name, server in probe["rosters"]["servers"].items()}
    assert {server["environment"]["NB_GID"] for server in servers.values()} == {"100"}


def test_users_sharing_a_uid_do_not_start(probe):
    """Two user names that give the same uid: the second's server, and from then on the first's,
    is refused with the reason, instead of sharing files in the exchange."""
    collision = _hub(probe["rosters"])["collision"]
    first, second = collision["names"]
    assert "environment" in collision["first"]
    for refused in (collision["second"], collision["first_again"]):
        assert "share the Unix uid" in refused.get("error", ""), refused
        assert first in refused["error"] and second in refused["error"]


# --- the user pod ------------------------------------------------------------------------------
def test_user_pod(probe):
    """The pod KubeSpawner makes for a student: our image and pull secret, root only for the
    start script (which the "baseline" Pod Security level allows, "restricted" does not), no
    privilege escalation, the home volume, the exchange at nbgrader's root, every extraFiles
    file mounted from the chart's Secret."""
    pod = _hub(probe["rosters"])["servers"]["ada"]["pod"]
    spec = pod["spec"]
    values = _values()["singleuser"]
    (container,) = spec["containers"]
    assert container["image"] == f"{values['image']['name']}:{values['image']['tag']}"
    assert [secret["name"] for secret in spec["imagePullSecrets"]] == values["image"]["pullSecrets"]
    assert container["securityContext"] == {"runAsUser": 0, "allowPrivilegeEscalation": False}
    assert "fsGroup" not in (spec.get("securityContext") or {}), "Kubernetes must not re-own the exchange"
    assert not spec.get("initContainers")
    assert pod_security_violations(pod, "baseline") == set()
    assert "runAsUser" in pod_security_violations(pod, "restricted")

    env = {item["name"]: item.get("value") for item in container["env"]}
    assert env["NBGRADER_EXCHANGE_ROOT"] == EXCHANGE and env["CHOWN_HOME"] == "yes"
    volumes = {volume["name"]: volume for volume in spec["volumes"]}
    mounts = {mount["mountPath"]: mount for mount in container["volumeMounts"]}
    assert volumes[mounts[EXCHANGE]["name"]]["persistentVolumeClaim"]["claimName"] == "nbgrader-exchange"
    assert volumes[mounts["/home/jovyan"]["name"]]["persistentVolumeClaim"]["claimName"] == "claim-ada"
    for key, extra in values["extraFiles"].items():
        mount = mounts[extra["mountPath"]]
        assert mount["subPath"] == key and "secret" in volumes[mount["name"]], mount


def test_the_chart_defaults_the_values_replace(probe):
    """Without the values' choices the chart lets anyone in (its "dummy" authenticator) and adds
    a privileged init container that the "baseline" level rejects. (Also shows that the
    emulation applies the chart's defaults.)"""
    hub = _hub(probe["chart_defaults"])
    assert hub["authenticator"] == "jupyterhub.auth.DummyAuthenticator"
    pod = hub["servers"]["ada"]["pod"]
    assert [c["name"] for c in pod["spec"]["initContainers"]] == ["block-cloud-metadata"]
    assert "privileged containers" in pod_security_violations(pod, "baseline")


def test_misconfigurations_stop_the_hub_with_a_reason(probe):
    """manage_groups with rosters, or groups from the provider without saying where they are,
    stop at the values' own checks, naming the setting to change; load_groups with groups from
    the provider is what JupyterHub itself refuses."""
    assert "set custom.course.groupsFrom to authenticator" in probe["manage_groups_with_rosters"]["config_error"]
    assert "auth_state_groups_key" in probe["groups_key_missing"]["config_error"]
    assert "Group management has been offloaded" in probe["load_groups_with_managed_groups"]["init_error"]


def test_subdomains(probe):
    """With deploy/z2jh-subdomains.yaml each user's server has its own host under the hub's,
    served with the certificate of a Secret (a wildcard one: Let's Encrypt's HTTP-01 cannot)."""
    hub = _hub(probe["subdomains"])
    host = _values()["proxy"]["https"]["hosts"][0]
    assert hub["subdomain_host"] == f"https://{host}"
    assert hub["user_hosts"]["ada"] == f"https://ada.{host}"
    both, _ = z2jh_chart.merged_values([VALUES, SUBDOMAINS])
    assert both["proxy"]["https"]["type"] == "secret" and both["proxy"]["https"]["secret"]["name"]
    assert (
        _values()["proxy"]["https"]["type"] == "letsencrypt"
        and "subdomain_host" not in _values()["hub"]["config"]["JupyterHub"]
    )
