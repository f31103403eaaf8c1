"""The built book in headless Chromium, for tests/test_browser.py: a folder served on 127.0.0.1, a
page that records its console errors and refuses (and lists) every request to another host, MathJax
waited for, and the pages of the ToC or of a whole built edition.

Chromium is Debian's package (no browser is downloaded), started by Playwright with ``CHROMIUM_FLAGS``.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import threading
import urllib.parse
from pathlib import Path

import yaml

from autograder import course
from autograder.authoring import book

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def page_paths() -> list[str]:
    """The HTML page of every ToC entry, relative to the site root."""
    toc = yaml.safe_load((course.ROOT / "_toc.yml").read_text())
    return [f"{entry}.html" for entry in book.toc_entries(toc)]


@contextlib.contextmanager
def served(folder: Path):
    """``folder`` served on an ephemeral port of 127.0.0.1; yields the base URL."""
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output readable
        pass


def open_page(browser, url: str, viewport: dict, init_script: str | None = None):
    """A page whose console errors and outside requests are recorded (and the latter refused);
    ``init_script`` runs in every document the page loads, before the page's own scripts."""
    context = browser.new_context(viewport=viewport)
    # Playwright's waits default to 30 s; 120 s is a bound for a hang, not a speed target (a loaded 2-core CI,
    # the axe audits and the grader's sandboxes beside it, makes every page slower)
    context.set_default_timeout(120_000)
    if init_script is not None:
        context.add_init_script(script=init_script)
    page = context.new_page()
    problems = {"console": [], "outside": [], "failed": []}
    page.on("console", lambda m: problems["console"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems["console"].append(str(e)))
    page.on("requestfailed", lambda r: problems["failed"].append(r.url))

    def gate(route):
        host = urllib.parse.urlsplit(route.request.url).hostname
        if route.request.url.startswith("data:") or host == "127.0.0.1":
            route.continue_()
        else:
            problems["outside"].append(route.request.url)
            route.abort()

    page.route("**/*", gate)
    page.goto(url, wait_until="load")
    return context, page, problems


def wait_for_math(page) -> None:
    if page.evaluate("() => typeof window.MathJax !== 'undefined'"):
        page.wait_for_function("() => window.MathJax.startup && window.MathJax.startup.promise", timeout=15000)
        page.evaluate("() => window.MathJax.startup.promise")


def built_pages(folder: Path) -> list[str]:
    """Every HTML page of a built edition (the ToC's pages, search, the index), relative to its root;
    not the theme's files, the notebooks' sources, nor index.html, which only redirects."""
    pages = []
    for page in sorted(folder.rglob("*.html")):
        relative = page.relative_to(folder)
        if relative.parts[0] in ("_static", "_sources", "_images"):
            continue
        if 'http-equiv="Refresh"' in page.read_text(encoding="utf-8")[:1000]:
            continue
        pages.append(relative.as_posix())
    return pages
