#!/usr/bin/env bash
# README's first command: set everything up on a fresh machine, then build the book.
#   .venv/            Python environment with the pinned requirements and the course package
#   _build/wheel/     the course package as a wheel (attention_course-<version>-py3-none-any.whl)
#   .venv/npm/        MathJax 3 from npm, served locally by the book (no CDN), and axe-core for the
#                     browser tests' accessibility audit
#   .venv/z2jh/       the Zero to JupyterHub chart's hub software, for tests/test_z2jh.py
#   chromium          Debian's headless browser, for the browser tests (when run as root)
#   _build/student/   the student edition      _build/instructor/   the instructor edition
# The installs that do not need the course's environment run in the background while pip installs
# it (each into a log under _build/setup-logs/, shown when it fails); the book waits for them.
set -euo pipefail
cd "$(dirname "$0")/.."

MATHJAX_VERSION=3.2.2
AXE_CORE_VERSION=4.14.1

# The Kubernetes hub's packages (JupyterHub, KubeSpawner, OAuthenticator as in the chart's hub
# image: deploy/requirements-z2jh-hub.txt) in a venv of their own inside .venv/: they pin older
# SQLAlchemy, tornado and traitlets than the course's environment, which must stay as it is.
# tests/test_z2jh.py runs the cluster's hub configuration with them. Rebuilt when the pins change.
install_z2jh_hub() {
    if ! cmp -s deploy/requirements-z2jh-hub.txt .venv/z2jh/requirements-z2jh-hub.txt; then
        rm -rf .venv/z2jh
        python3 -m venv .venv/z2jh
        .venv/z2jh/bin/python -m pip install --quiet --disable-pip-version-check -r deploy/requirements-z2jh-hub.txt
        cp deploy/requirements-z2jh-hub.txt .venv/z2jh/requirements-z2jh-hub.txt
    fi
}

# MathJax, which the book serves itself, and axe-core, the accessibility engine the browser tests
# inject into every page (never loaded by the book)
install_npm_packages() {
    if [ ! -f .venv/npm/node_modules/mathjax/es5/tex-chtml.js ] \
       || ! grep -q "\"version\": \"$MATHJAX_VERSION\"" .venv/npm/node_modules/mathjax/package.json; then
        mkdir -p .venv/npm
        npm install --silent --no-audit --no-fund --prefix .venv/npm "mathjax@$MATHJAX_VERSION"
    fi
    if [ ! -f .venv/npm/node_modules/axe-core/axe.min.js ] \
       || ! grep -q "\"version\": \"$AXE_CORE_VERSION\"" .venv/npm/node_modules/axe-core/package.json; then
        mkdir -p .venv/npm
        npm install --silent --no-audit --no-fund --prefix .venv/npm "axe-core@$AXE_CORE_VERSION"
    fi
}

# Headless Chromium for the browser tests (Debian's package; Playwright drives it, and never
# downloads a browser of its own).
install_chromium() {
    if ! command -v chromium >/dev/null 2>&1; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
        else
            echo "note: chromium is not installed (apt-get install chromium); the browser tests will be skipped"
        fi
    fi
}

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
mkdir -p _build/setup-logs
background=()
for job in install_z2jh_hub install_npm_packages install_chromium; do
    "$job" > "_build/setup-logs/$job.log" 2>&1 &
    background+=("$job:$!")
done

.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
# The course package as a wheel, what a reader installs (`pip install` it anywhere): _build/wheel/
rm -rf _build/wheel
.venv/bin/python -m pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation \
    --wheel-dir _build/wheel .

for entry in "${background[@]}"; do
    job=${entry%%:*}
    if ! wait "${entry##*:}"; then
        echo "setup: $job failed:" >&2
        cat "_build/setup-logs/$job.log" >&2
        exit 1
    fi
    cat "_build/setup-logs/$job.log" >&2  # notes, if any
done

.venv/bin/python -m autograder book
