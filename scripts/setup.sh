#!/usr/bin/env bash
# README's first command: set everything up on a fresh machine, then build the book.
#   .venv/            Python environment with the pinned requirements and the course package
#   _build/wheel/     the course package as a wheel (attention_course-<version>-py3-none-any.whl)
#   .venv/npm/        MathJax 3 from npm, served locally by the book (no CDN), and axe-core for the
#                     browser tests' accessibility audit
#   chromium          Debian's headless browser, for the browser tests (when run as root)
#   _build/student/   the student edition      _build/instructor/   the instructor edition
set -euo pipefail
cd "$(dirname "$0")/.."

MATHJAX_VERSION=3.2.2
AXE_CORE_VERSION=4.14.1

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
# The course package as a wheel, what a reader installs (`pip install` it anywhere): _build/wheel/
rm -rf _build/wheel
.venv/bin/python -m pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation \
    --wheel-dir _build/wheel .

if [ ! -f .venv/npm/node_modules/mathjax/es5/tex-chtml.js ] \
   || ! grep -q "\"version\": \"$MATHJAX_VERSION\"" .venv/npm/node_modules/mathjax/package.json; then
    mkdir -p .venv/npm
    npm install --silent --no-audit --no-fund --prefix .venv/npm "mathjax@$MATHJAX_VERSION"
fi
# axe-core, the accessibility engine the browser tests inject into every page (never loaded by the book)
if [ ! -f .venv/npm/node_modules/axe-core/axe.min.js ] \
   || ! grep -q "\"version\": \"$AXE_CORE_VERSION\"" .venv/npm/node_modules/axe-core/package.json; then
    mkdir -p .venv/npm
    npm install --silent --no-audit --no-fund --prefix .venv/npm "axe-core@$AXE_CORE_VERSION"
fi

# Headless Chromium for the browser tests (Debian's package; Playwright drives it, and never
# downloads a browser of its own).
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "note: chromium is not installed (apt-get install chromium); the browser tests will be skipped" >&2
    fi
fi

.venv/bin/python -m autograder book
