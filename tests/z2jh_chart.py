"""Our own small emulation of how the Zero to JupyterHub chart 4.4.0 turns values into the hub's
configuration, for tests/test_z2jh.py. Not the chart's code: a re-statement, written here, of
the parts of its files/hub/jupyterhub_config.py and z2jh.py that deploy/z2jh-values.yaml
reaches, so that the values' hub configuration can run against JupyterHub's own objects
without a cluster:

- values are merged the way Helm merges them: the chart's defaults (the few that matter here,
  CHART_DEFAULTS), then each values file, then overrides; mappings merge key by key, anything
  else replaces, and null deletes the key;
- ``singleuser.*`` becomes KubeSpawner traits (user id, fsGroup, environment, image and pull
  secrets, resources, the home volume, extraFiles as one Secret volume with a mount per file,
  extra volumes and mounts, the cloud-metadata init container);
- ``cull`` adds the idle-culler service and its role, then ``hub.loadRoles`` are appended to
  ``JupyterHub.load_roles``;
- each ``hub.config`` section updates ``c[section]`` (section names must be class names);
- ``hub.extraFiles`` whose mountPath is in the hub's configuration folder become files in a
  folder on ``sys.path``, as the chart puts its configuration folder there;
- ``hub.extraConfig`` snippets run in sorted key order, with ``c`` in their namespace and a
  stand-in ``z2jh`` module whose ``get_config`` reads the merged values.

What it leaves out, because nothing checked here depends on it: everything that needs a cluster
(the proxy's and hub's addresses, KubeSpawner's namespace and labels, secrets the chart
generates, the database the chart configures) and scheduling. A key of our values that it
does not know is an error, so that the values cannot grow past what the tests run.

``hub_config`` runs in .venv/z2jh/ (JupyterHub, KubeSpawner and OAuthenticator of the chart's
hub image: the values' snippets import them); tests/test_z2jh.py also uses ``merged_values`` and
``hosts`` in the course's environment (PyYAML only).
"""

from __future__ import annotations

import copy
import re
import sys
import types
from pathlib import Path

import yaml

CHART_VERSION = "4.4.0"
HUB_CONFIG_DIR = "/usr/local/etc/jupyterhub"  # the chart's configuration folder in the hub pod

# The defaults of chart 4.4.0's values.yaml that the emulated code reads (everything else it
# reads defaults to nothing there too).
CHART_DEFAULTS = {
    "hub": {
        "config": {"JupyterHub": {"admin_access": True, "authenticator_class": "dummy"}},
        "loadRoles": {},
        "extraConfig": {},
        "extraFiles": {},
    },
    "singleuser": {
        "networkTools": {"image": {"name": "quay.io/jupyterhub/k8s-network-tools", "tag": CHART_VERSION}},
        "cloudMetadata": {"blockWithIptables": True, "ip": "169.254.169.254"},
        "extraLabels": {"hub.jupyter.org/network-access-hub": "true"},
        "extraFiles": {},
        "extraEnv": {},
        "allowPrivilegeEscalation": False,
        "uid": 1000,
        "fsGid": 100,
        "storage": {
            "type": "dynamic",
            "capacity": "10Gi",
            "homeMountPath": "/home/jovyan",
            "dynamic": {"volumeNameTemplate": "volume-{user_server}", "storageAccessModes": ["ReadWriteOnce"]},
        },
        "image": {"name": "quay.io/jupyterhub/k8s-singleuser-sample", "tag": CHART_VERSION, "pullSecrets": []},
        "startTimeout": 300,
        "memory": {"guarantee": "1G"},
        "cmd": "jupyterhub-singleuser",
    },
    "cull": {"enabled": True, "users": False, "adminUsers": True, "timeout": 3600, "every": 600, "concurrency": 10},
    "imagePullSecret": {"create": False, "automaticReferenceInjection": True},
    "imagePullSecrets": [],
}

# singleuser.<key> -> KubeSpawner trait, set when the value is not null (as the chart does).
SPAWNER_TRAITS = {
    "uid": "uid",
    "fsGid": "fs_gid",
    "startTimeout": "start_timeout",
    "extraLabels": "extra_labels",
    "extraEnv": "environment",
    "extraPodConfig": "extra_pod_config",
    "lifecycleHooks": "lifecycle_hooks",
    "initContainers": "init_containers",
    "nodeSelector": "node_selector",
}
# singleuser keys handled below, or that make Kubernetes objects other than the user pod's spec.
SINGLEUSER_HANDLED = set(SPAWNER_TRAITS) | {
    "image", "memory", "cpu", "storage", "extraFiles", "cloudMetadata", "networkTools",
    "allowPrivilegeEscalation", "cmd", "defaultUrl",
    "networkPolicy",  # a NetworkPolicy object, not the pod
}  # fmt: skip
HUB_HANDLED = {"config", "loadRoles", "extraConfig", "extraFiles"}
# top-level keys that change nothing in the hub's configuration checked here
NOT_HUB_CONFIG = {"proxy", "scheduling", "prePuller"}
TOP_HANDLED = {"hub", "singleuser", "cull", "custom", "imagePullSecret", "imagePullSecrets"} | NOT_HUB_CONFIG


def coalesce(base, override):
    """``override`` merged over ``base`` as Helm merges values: mappings key by key, anything
    else replaced, and a null in ``override`` deletes the key."""
    if not (isinstance(base, dict) and isinstance(override, dict)):
        return copy.deepcopy(override)
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if value is None:
            merged.pop(key, None)
        elif key in merged:
            merged[key] = coalesce(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def merged_values(paths, overrides=None) -> tuple[dict, dict]:
    """(what the chart's hub sees: defaults, the files in order, then overrides; what the
    files and overrides say by themselves)."""
    ours: dict = {}
    for path in paths:
        ours = coalesce(ours, yaml.safe_load(Path(path).read_text()) or {})
    ours = coalesce(ours, overrides or {})
    return coalesce(CHART_DEFAULTS, ours), ours


def lookup(values: dict, key: str, default=None):
    """The value at a dotted key, or ``default`` where any level is missing (z2jh.get_config's
    contract)."""
    value = values
    for level in key.split("."):
        if not isinstance(value, dict) or level not in value:
            return default
        value = value[level]
    return value


def _unknown_keys(ours: dict) -> list[str]:
    unknown = [key for key in ours if key not in TOP_HANDLED]
    unknown += [f"hub.{key}" for key in ours.get("hub", {}) if key not in HUB_HANDLED]
    unknown += [f"singleuser.{key}" for key in ours.get("singleuser", {}) if key not in SINGLEUSER_HANDLED]
    return unknown


def _singleuser(c, values: dict) -> None:
    su = values["singleuser"]
    c.JupyterHub.spawner_class = "kubespawner.KubeSpawner"
    for key, trait in SPAWNER_TRAITS.items():
        if su.get(key) is not None:
            setattr(c.KubeSpawner, trait, copy.deepcopy(su[key]))
    for key, trait in (("limit", "mem_limit"), ("guarantee", "mem_guarantee")):
        if lookup(su, f"memory.{key}") is not None:
            setattr(c.KubeSpawner, trait, su["memory"][key])
    for key, trait in (("limit", "cpu_limit"), ("guarantee", "cpu_guarantee")):
        if lookup(su, f"cpu.{key}") is not None:
            setattr(c.KubeSpawner, trait, float(su["cpu"][key]))
    c.KubeSpawner.image = (
        f"{su['image']['name']}:{su['image']['tag']}" if su["image"].get("tag") else su["image"]["name"]
    )
    c.KubeSpawner.allow_privilege_escalation = su.get("allowPrivilegeEscalation")
    secrets = []
    if lookup(values, "imagePullSecret.create") and lookup(values, "imagePullSecret.automaticReferenceInjection"):
        secrets.append("image-pull-secret")
    secrets += values.get("imagePullSecrets") or []
    secrets += su["image"].get("pullSecrets") or []
    if secrets:
        c.KubeSpawner.image_pull_secrets = secrets

    volumes, mounts = {}, {}
    storage = su["storage"]
    if storage["type"] == "dynamic":
        name = storage["dynamic"]["volumeNameTemplate"]
        c.KubeSpawner.storage_pvc_ensure = True
        c.KubeSpawner.storage_capacity = storage["capacity"]
        c.KubeSpawner.storage_access_modes = storage["dynamic"]["storageAccessModes"]
        volumes[name] = {"name": name, "persistentVolumeClaim": {"claimName": "{pvc_name}"}}
        mounts[name] = {"name": name, "mountPath": storage["homeMountPath"]}
    elif storage["type"] != "none":
        raise NotImplementedError(f"singleuser.storage.type {storage['type']!r} is not emulated")
    if su["extraFiles"]:
        items = [
            {"key": key, "path": key, **({"mode": f["mode"]} if "mode" in f else {})}
            for key, f in su["extraFiles"].items()
        ]
        volumes["files"] = {"name": "files", "secret": {"secretName": "singleuser", "items": items}}
        for index, (key, f) in enumerate(su["extraFiles"].items()):
            mounts[f"{index}-files"] = {"name": "files", "mountPath": f["mountPath"], "subPath": key}
    for volume in storage.get("extraVolumes") or []:
        volumes[volume["name"]] = volume
    for index, mount in enumerate(storage.get("extraVolumeMounts") or []):
        mounts[f"{index}-{mount['name']}"] = mount
    c.KubeSpawner.volumes = volumes
    c.KubeSpawner.volume_mounts = mounts

    if su.get("cmd") is not None:
        c.Spawner.cmd = su["cmd"]
    if su.get("defaultUrl") is not None:
        c.Spawner.default_url = su["defaultUrl"]
    if su["cloudMetadata"].get("blockWithIptables") is True:
        tools = su["networkTools"]["image"]
        init = list(c.KubeSpawner.init_containers) if "init_containers" in c.KubeSpawner else []
        init.append(
            {
                "name": "block-cloud-metadata",
                "image": f"{tools['name']}:{tools['tag']}",
                "command": ["iptables", "--append", "OUTPUT", "--protocol", "tcp", "--destination",
                            su["cloudMetadata"]["ip"], "--destination-port", "80", "--jump", "DROP"],
                "securityContext": {"privileged": True, "runAsUser": 0, "capabilities": {"add": ["NET_ADMIN"]}},
            }
        )  # fmt: skip
        c.KubeSpawner.init_containers = init


def _roles_and_services(c, values: dict) -> None:
    c.JupyterHub.services = []
    c.JupyterHub.load_roles = []
    cull = values["cull"]
    if cull.get("enabled"):
        role = {
            "name": "jupyterhub-idle-culler",
            "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
            "services": ["jupyterhub-idle-culler"],
        }
        command = ["python3", "-m", "jupyterhub_idle_culler", "--url=http://localhost:8081/hub/api"]
        command += [f"--timeout={cull['timeout']}", f"--cull-every={cull['every']}"]
        if cull.get("users"):
            command.append("--cull-users")
            role["scopes"].append("admin:users")
        c.JupyterHub.services.append({"name": "jupyterhub-idle-culler", "command": command})
        c.JupyterHub.load_roles.append(role)
    for key, role in values["hub"]["loadRoles"].items():
        c.JupyterHub.load_roles.append({"name": key, **copy.deepcopy(role)})


def hub_config(values: dict, ours: dict, config_dir: Path):
    """The traitlets Config the chart's hub would load for these (merged) values. Files of
    hub.extraFiles for the hub's configuration folder are written into ``config_dir``, which
    goes first on sys.path."""
    from traitlets.config import Config

    unknown = _unknown_keys(ours)
    if unknown:
        raise NotImplementedError(f"values the emulation does not know (add them to tests/z2jh_chart.py): {unknown}")
    c = Config()
    _singleuser(c, values)
    _roles_and_services(c, values)
    for section, settings in values["hub"]["config"].items():
        if not section[:1].isupper():
            raise ValueError(f"hub.config.{section}: sections are class names and start with an upper-case letter")
        c[section].update(copy.deepcopy(settings))
    for key, extra in values["hub"]["extraFiles"].items():
        mount = Path(extra["mountPath"])
        if str(mount.parent) != HUB_CONFIG_DIR or "stringData" not in extra:
            raise NotImplementedError(f"hub.extraFiles.{key}: only stringData files in {HUB_CONFIG_DIR} are emulated")
        (config_dir / mount.name).write_text(extra["stringData"])
    sys.path.insert(0, str(config_dir))
    z2jh = types.ModuleType("z2jh", "stand-in for the chart's z2jh module (tests/z2jh_chart.py)")
    z2jh.get_config = lambda key, default=None: copy.deepcopy(lookup(values, key, default))
    sys.modules["z2jh"] = z2jh
    for key, snippet in sorted(values["hub"]["extraConfig"].items()):
        exec(compile(snippet, f"hub.extraConfig.{key}", "exec"), {"c": c, "__name__": "jupyterhub_config"})
    return c


def hosts(values: dict) -> list[str]:
    """The host names the values serve the hub at: proxy.https.hosts, and the host of
    JupyterHub.subdomain_host when it is set."""
    found = list(lookup(values, "proxy.https.hosts", []) or [])
    subdomain_host = lookup(values, "hub.config.JupyterHub.subdomain_host")
    if subdomain_host:
        found.append(re.sub(r"^[a-z]+://", "", subdomain_host).rstrip("/"))
    return found
