#!/usr/bin/env bash
# Install the course's JupyterHub on one machine (run as root, from a clone of the repository).
#
#   bash deploy/install.sh [--prefix DIR] [--etc DIR] [--exchange DIR] [--state DIR]
#                          [--software-only | --config-only]
#
# software (into --prefix, default /opt/attention-hub; everything readable by all users,
# because the user servers run as the students and instructors themselves):
#   venv/   Debian's /usr/bin/python3 (not one under /root: users could not run it) with
#           deploy/requirements-hub.txt and the course package attention_course
#   npm/    configurable-http-proxy, exactly as pinned in deploy/package-lock.json
# configuration (into --etc, default /etc/attention-hub):
#   jupyterhub_config.py and course_roles.py (the role logic it imports), jupyter/common/
#   (with nbgrader_config.py), jupyter/students/, jupyter/instructors/, and empty rosters
#   instructors.txt and students.txt (kept if present)
# directories: the exchange (--exchange, default /srv/nbgrader/exchange, mode 1777) and the
#   hub's state (--state, default /srv/jupyterhub, mode 700)
#
# Only package registries are used (PyPI through pip, npm). Rerunning is safe: the venv is
# rebuilt only when requirements-hub.txt changed, the course package reinstalled only when
# its sources changed, and the proxy only when package-lock.json changed.
set -euo pipefail

DEPLOY="$(cd "$(dirname "$0")" && pwd)"
REPO="$(dirname "$DEPLOY")"
PREFIX=/opt/attention-hub
ETC=/etc/attention-hub
EXCHANGE=/srv/nbgrader/exchange
STATE=/srv/jupyterhub
DO_SOFTWARE=1
DO_CONFIG=1
PYTHON="${PYTHON:-/usr/bin/python3}"

while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) PREFIX="$2"; shift 2 ;;
        --etc) ETC="$2"; shift 2 ;;
        --exchange) EXCHANGE="$2"; shift 2 ;;
        --state) STATE="$2"; shift 2 ;;
        --software-only) DO_CONFIG=0; shift ;;
        --config-only) DO_SOFTWARE=0; shift ;;
        -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
        *) echo "install.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

umask 022

venv_stamp() {
    # What the venv is made from: the pins and the interpreter.
    { cat "$DEPLOY/requirements-hub.txt"; "$PYTHON" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1
}

course_stamp() {
    # Every file of the package, its subpackages (checks/) and shipped data (assets/) included, by name
    # and content: a file added to a subpackage must reinstall the package too.
    (cd "$REPO" && find pyproject.toml attention_course -type f ! -path '*/__pycache__/*' -print0 | LC_ALL=C sort -z \
        | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}

if [ "$DO_SOFTWARE" = 1 ]; then
    if ! "$PYTHON" -m venv --help >/dev/null 2>&1 || ! "$PYTHON" -c 'import ensurepip' 2>/dev/null; then
        echo "install.sh: $PYTHON cannot create a venv; on Debian: apt-get install python3-venv" >&2
        exit 1
    fi
    mkdir -p "$PREFIX"
    chmod 755 "$PREFIX"
    stamp="$(venv_stamp)"
    if [ "$(cat "$PREFIX/venv/.installed" 2>/dev/null)" != "$stamp" ]; then
        rm -rf "$PREFIX/venv"
        "$PYTHON" -m venv "$PREFIX/venv"
        "$PREFIX/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
            -r "$DEPLOY/requirements-hub.txt"
        chmod -R a+rX "$PREFIX/venv"
        echo "$stamp" > "$PREFIX/venv/.installed"
    fi
    # The course package (attention_course), built from a copy so that the clone stays clean.
    stamp="$(course_stamp)"
    if [ "$(cat "$PREFIX/venv/.course" 2>/dev/null)" != "$stamp" ]; then
        build="$(mktemp -d)"
        cp -r "$REPO/pyproject.toml" "$REPO/attention_course" "$build/"
        "$PREFIX/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
            --no-deps --no-build-isolation --force-reinstall "$build"
        rm -rf "$build"
        echo "$stamp" > "$PREFIX/venv/.course"
    fi
    if ! cmp -s "$DEPLOY/package-lock.json" "$PREFIX/npm/package-lock.json" \
        || [ ! -x "$PREFIX/npm/node_modules/.bin/configurable-http-proxy" ]; then
        rm -rf "$PREFIX/npm"
        mkdir -p "$PREFIX/npm"
        cp "$DEPLOY/package.json" "$DEPLOY/package-lock.json" "$PREFIX/npm/"
        npm ci --prefix "$PREFIX/npm" --silent --no-audit --no-fund --omit=dev
        chmod -R a+rX "$PREFIX/npm"
    fi
fi

if [ "$DO_CONFIG" = 1 ]; then
    install -d -m 755 "$ETC" "$ETC/jupyter" "$ETC/jupyter/common" "$ETC/jupyter/common/labconfig" \
        "$ETC/jupyter/students" "$ETC/jupyter/students/labconfig" "$ETC/jupyter/instructors"
    install -m 644 "$DEPLOY/jupyterhub_config.py" "$ETC/jupyterhub_config.py"
    install -m 644 "$DEPLOY/course_roles.py" "$ETC/course_roles.py"
    install -m 644 "$DEPLOY/nbgrader_config.py" "$ETC/jupyter/common/nbgrader_config.py"
    install -m 644 "$DEPLOY/jupyter/common/jupyter_server_config.json" "$ETC/jupyter/common/"
    install -m 644 "$DEPLOY/jupyter/common/labconfig/page_config.json" "$ETC/jupyter/common/labconfig/"
    install -m 644 "$DEPLOY/jupyter/students/jupyter_server_config.json" "$ETC/jupyter/students/"
    install -m 644 "$DEPLOY/jupyter/students/labconfig/page_config.json" "$ETC/jupyter/students/labconfig/"
    install -m 644 "$DEPLOY/jupyter/instructors/jupyter_server_config.py" "$ETC/jupyter/instructors/"
    for roster in instructors.txt students.txt; do
        [ -e "$ETC/$roster" ] || printf '# one user name a line\n' > "$ETC/$roster"
    done
    # The exchange: everyone creates entries, only owners remove them (sticky bit).
    # (An existing parent folder is left as it is.)
    [ -d "$(dirname "$EXCHANGE")" ] || mkdir -p -m 755 "$(dirname "$EXCHANGE")"
    install -d -m 1777 "$EXCHANGE"
    install -d -m 700 "$STATE"
fi
