#!/usr/bin/env bash
# Do the exercises on your own computer: JupyterLab on your copies of the student notebooks,
# as a student sees it (run README's first command, scripts/setup.sh, once before).
#
# Your copies live in work/ (ignored by git; another folder with STUDENT_WORK=/some/folder):
# each chapter of chapters/ that it lacks is copied there (scripts/student_lab/copy_chapters.py);
# nothing in it is ever overwritten. JupyterLab opens that folder.
#
# The Jupyter configuration in scripts/student_lab/ comes first on JUPYTER_CONFIG_PATH: it
# keeps nbgrader's Validate button and switches off what needs an instructor or a course's
# exchange (formgrader, course list, assignment list, create assignment, nbgrader's menu),
# both the JupyterLab plugins (labconfig/page_config.json) and the server extensions
# (jupyter_server_config.py); Validate runs with the course's time limit per cell
# (nbgrader_config.py) and names unanswered written questions (student_validate.py). Extra
# arguments go to `jupyter lab` (for example --port=8899).
#
# JupyterLab refuses to run as root; in a container where root is the only user, pass
# --allow-root (this script says so instead of starting).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/jupyter ]; then
    echo "student_lab.sh: .venv is missing: run \`bash scripts/setup.sh\` first" >&2
    exit 1
fi
if [ "$(id -u)" = 0 ] && [[ " $* " != *" --allow-root "* ]]; then
    echo "student_lab.sh: you are root, and JupyterLab does not run as root unless told to." >&2
    echo "Run it as an ordinary user, or, if root is the only user (a container), run" >&2
    echo "    bash scripts/student_lab.sh --allow-root" >&2
    exit 1
fi
export JUPYTER_CONFIG_PATH="$PWD/scripts/student_lab${JUPYTER_CONFIG_PATH:+:$JUPYTER_CONFIG_PATH}"
export PATH="$PWD/.venv/bin:$PATH"
work="${STUDENT_WORK:-$PWD/work}"
.venv/bin/python scripts/student_lab/copy_chapters.py "$work"
exec .venv/bin/jupyter lab --ServerApp.root_dir="$work" "$@"
