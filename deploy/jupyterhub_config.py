"""JupyterHub for the course "Attention, Step by Step" on one machine.

Local Unix users log in (PAM), each gets a JupyterLab server running as themselves
(LocalProcessSpawner), configurable-http-proxy from npm sits in front, and nbgrader's
exchange is a shared directory. Two groups carry the course roles:

    formgrade-attention-step-by-step   instructors: formgrader, course folder, grading kernel
    nbgrader-attention-step-by-step    students: assignment list, validate, submit

(these are the group names nbgrader's JupyterHubAuthPlugin expects, should the hub ever
carry several courses). Membership comes from two roster files, one user name a line:
``instructors.txt`` and ``students.txt`` in ATTENTION_HUB_ETC. The role logic (rosters, groups,
the instructors' hub role, each role's Jupyter configuration) is ``course_roles.py`` beside this
file, which the Kubernetes deployment (z2jh-values.yaml) uses too.

``deploy/install.sh`` installs everything this file refers to; deploy/README.md explains
each piece. Site-specific settings (TLS, another authenticator, ports) belong in
``jupyterhub_config_local.py`` beside this file, loaded last, so this file stays as shipped.

Paths, from the environment (the systemd unit sets them):
    ATTENTION_HUB_PREFIX    software: venv/ (hub and user servers) and npm/ (the proxy)
                            default /opt/attention-hub
    ATTENTION_HUB_ETC       this configuration, the per-role Jupyter config, the rosters
                            default: the folder holding this file
    ATTENTION_HUB_STATE     the hub's database, cookie secret and proxy pid file (root only)
                            default /srv/jupyterhub
    NBGRADER_EXCHANGE_ROOT  nbgrader's exchange, writable by everyone (mode 1777)
                            default /srv/nbgrader/exchange
"""

import os
import pwd
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # course_roles.py, installed beside this file
import course_roles  # noqa: E402

c = get_config()  # noqa: F821  (injected by traitlets when JupyterHub loads this file)

PREFIX = Path(os.environ.get("ATTENTION_HUB_PREFIX", "/opt/attention-hub"))
ETC = Path(os.environ.get("ATTENTION_HUB_ETC", Path(__file__).resolve().parent))
STATE = Path(os.environ.get("ATTENTION_HUB_STATE", "/srv/jupyterhub"))
EXCHANGE_ROOT = os.environ.get("NBGRADER_EXCHANGE_ROOT", "/srv/nbgrader/exchange")

VENV_BIN = PREFIX / "venv" / "bin"
JUPYTER_ETC = ETC / "jupyter"  # common/, students/, instructors/ (copied there by install.sh)

INSTRUCTORS = course_roles.read_roster(ETC / "instructors.txt")
STUDENTS = course_roles.read_roster(ETC / "students.txt")
ADMINS = course_roles.read_roster(ETC / "admins.txt")  # hub administrators (optional; instructors need not be admins)

# --- the hub and its proxy -------------------------------------------------------------------
# Public address: loopback by default, behind a TLS reverse proxy (see deploy/README.md).
# Put another bind_url (and ssl_cert/ssl_key) in jupyterhub_config_local.py to serve directly.
c.JupyterHub.bind_url = "http://127.0.0.1:8000"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:8081"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:8001"
c.ConfigurableHTTPProxy.command = [str(PREFIX / "npm" / "node_modules" / ".bin" / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "jupyterhub-proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")

# --- who may log in ---------------------------------------------------------------------------
# Local Unix accounts and their passwords (PAM). Accounts are created by the administrator
# (useradd), never by the hub, and only users on a roster are let in.
c.JupyterHub.authenticator_class = "pam"
c.LocalAuthenticator.create_system_users = False
# The rosters' people may log in; the two course groups are filled from the rosters.
course_roles.configure_logins(c, instructors=INSTRUCTORS, students=STUDENTS, admins=ADMINS)
c.JupyterHub.load_roles = [
    # Instructors see who is enrolled and when students were last active.
    course_roles.instructor_role(),
    {
        "name": "idle-culler",
        "description": "Stop servers idle for an hour",
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        "services": ["idle-culler"],
    },
]

# Servers idle for an hour are stopped (their files stay): hundreds of idle JupyterLabs with
# torch kernels would otherwise fill the machine's memory.
c.JupyterHub.services = [
    {
        "name": "idle-culler",
        "command": [str(VENV_BIN / "python"), "-m", "jupyterhub_idle_culler", "--timeout=3600"],
    }
]

# --- the user servers -------------------------------------------------------------------------
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(VENV_BIN / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 90
c.Spawner.environment = {
    # The venv first: kernels, `nbgrader` in a terminal, and `alembic` (which nbgrader runs
    # when it creates a gradebook) all come from it.
    "PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin",
    "NBGRADER_EXCHANGE_ROOT": EXCHANGE_ROOT,
}


def pre_spawn_hook(spawner):
    """Give each server the Jupyter configuration of its role (course_roles.role_environment);
    an instructor's course folder is in their home (the account's home directory)."""
    course = None
    if course_roles.is_instructor(spawner.user):
        course = Path(pwd.getpwnam(spawner.user.name).pw_dir) / course_roles.COURSE_FOLDER
    spawner.environment = {**spawner.environment, **course_roles.role_environment(JUPYTER_ETC, course)}


c.Spawner.pre_spawn_hook = pre_spawn_hook

# --- site-specific settings, kept out of this file -------------------------------------------
_local = ETC / "jupyterhub_config_local.py"
if _local.exists():
    load_subconfig(str(_local))  # noqa: F821  (injected by traitlets)
