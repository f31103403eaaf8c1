"""The student book as readers see it: every page opened in headless Chromium (Debian's
package, driven by Playwright; no browser is downloaded), served from 127.0.0.1.

For every page: no console error; every math element typeset by the local MathJax; every
image loads; no request leaves the machine; exactly one visible h1; figures have alt text or
a caption. Also: the schematic diagrams (SVG, six or more) load with a nonzero size and
have alt text or a caption; internal links resolve, the search page finds chapter 03, the
download button serves the student notebook, the launch buttons are exactly the configured
services (autograder/authoring/publishing.py). Screenshots at desktop and phone widths go to
``_build/screenshots/`` for a person to look at.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import threading
import urllib.parse
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup
from test_publishing import _same_url, expected_launch_urls

from autograder import course
from autograder.authoring import book
from autograder.authoring.publishing import hub_url, repository_url

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOTS = course.BUILD / "screenshots"
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


def _page_paths() -> list[str]:
    """The HTML page of every ToC entry, relative to the site root."""
    toc = yaml.safe_load((course.ROOT / "_toc.yml").read_text())
    return [f"{entry}.html" for entry in book.toc_entries(toc)]


@pytest.fixture(scope="module")
def site(student_html):
    """The student book served on an ephemeral port of 127.0.0.1: (base URL, folder)."""
    handler = functools.partial(QuietHandler, directory=str(student_html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", student_html
    server.shutdown()
    server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output readable
        pass


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        message = "Debian's chromium is not installed (scripts/setup.sh installs it when run as root)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


def _open(browser, url: str, viewport: dict):
    """A page whose console errors and outside requests are recorded (and the latter refused)."""
    context = browser.new_context(viewport=viewport)
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


def _wait_for_math(page) -> None:
    if page.evaluate("() => typeof window.MathJax !== 'undefined'"):
        page.wait_for_function("() => window.MathJax.startup && window.MathJax.startup.promise", timeout=15000)
        page.evaluate("() => window.MathJax.startup.promise")


@pytest.mark.parametrize("path", _page_paths())
def test_page_as_a_reader_sees_it(site, browser, path):
    base, folder = site
    for width, viewport in VIEWPORTS.items():
        context, page, problems = _open(browser, base + path, viewport)
        try:
            _wait_for_math(page)
            page.wait_for_load_state("networkidle")
            shot = SCREENSHOTS / "student" / f"{path.removesuffix('.html').replace('/', '__')}-{width}.png"
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot), full_page=True)
            if width != "desktop":
                continue

            assert not problems["console"], f"{path}: console errors {problems['console']}"
            assert not problems["outside"], f"{path}: requests to other hosts {problems['outside']}"
            assert not problems["failed"], f"{path}: requests that failed {problems['failed']}"

            math_in_source = page.locator("article .math").count()
            typeset = page.locator("article .math mjx-container").count()
            assert typeset == math_in_source, f"{path}: {typeset} of {math_in_source} math elements were typeset"
            assert page.locator("mjx-merror").count() == 0, f"{path}: MathJax reports errors"

            broken = page.evaluate(
                "() => [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)"
            )
            assert not broken, f"{path}: images that did not load {broken}"
            visible_h1 = page.evaluate("() => [...document.querySelectorAll('h1')].filter(h => h.offsetParent).length")
            assert visible_h1 == 1, f"{path}: {visible_h1} visible h1 elements, expected exactly one"
            unlabelled = page.evaluate(
                """() => [...document.querySelectorAll('article img')].filter(i => {
                    const alt = (i.getAttribute('alt') || '').trim();
                    const caption = i.closest('figure') && i.closest('figure').querySelector('figcaption');
                    return (!alt || alt.includes('_images/')) && !caption;
                }).map(i => i.src)"""
            )
            assert not unlabelled, f"{path}: figures without alt text or caption {unlabelled}"
            if path.startswith("chapters/"):
                assert page.locator("button.copybtn").count() > 0, f"{path}: code cells have no copy button"
        finally:
            context.close()


DIAGRAM_ID = re.compile(r'<svg\b[^>]*\bid="diagram-([A-Za-z0-9_]+)"')
MIN_DIAGRAMS = 6  # issue 12: "six or more diagrams load in the browser tests"


def test_schematic_diagrams_load(site, browser):
    """Every schematic diagram (an SVG from scripts/draw_diagrams.py, shown with show_diagram) on the
    chapter pages loads with a nonzero size and has alt text or a caption; six or more appear in all."""
    base, folder = site
    found, problems = {}, []
    for path in (p for p in _page_paths() if p.startswith("chapters/")):
        context, page, _ = _open(browser, base + path, VIEWPORTS["desktop"])  # returns after the load event
        try:
            images = page.evaluate(
                """async () => {
                    const out = [];
                    for (const i of document.querySelectorAll('article img')) {
                        i.scrollIntoView();
                        await i.decode().catch(() => null);
                        const figure = i.closest('figure');
                        const caption = figure && figure.querySelector('figcaption');
                        out.push({src: i.src, complete: i.complete, natural: [i.naturalWidth, i.naturalHeight],
                                  shown: [i.getBoundingClientRect().width, i.getBoundingClientRect().height],
                                  alt: (i.getAttribute('alt') || '').trim(),
                                  caption: caption ? caption.textContent.trim() : ''});
                    }
                    for (const s of document.querySelectorAll('article svg[id^="diagram-"]')) {
                        const r = s.getBoundingClientRect();
                        const figure = s.closest('figure');
                        const caption = figure && figure.querySelector('figcaption');
                        const title = s.querySelector('title');
                        out.push({inline: s.id.slice('diagram-'.length), complete: true, natural: [r.width, r.height],
                                  shown: [r.width, r.height], alt: title ? title.textContent.trim() : '',
                                  caption: caption ? caption.textContent.trim() : ''});
                    }
                    return out;
                }"""
            )
        finally:
            context.close()
        for image in images:
            name = image.get("inline")
            if name is None:
                parts = urllib.parse.urlsplit(image["src"])
                local = folder / urllib.parse.unquote(parts.path).lstrip("/")
                if local.suffix != ".svg" or not local.is_file():
                    continue
                match = DIAGRAM_ID.search(local.read_text(encoding="utf-8", errors="replace"))
                if not match:
                    continue
                name = match.group(1)
            found.setdefault(name, []).append(path)
            if not (image["complete"] and min(image["natural"]) > 0 and min(image["shown"]) > 0):
                problems.append(
                    f"{path}: diagram {name} did not render (natural {image['natural']}, shown {image['shown']})"
                )
            if (not image["alt"] or "_images/" in image["alt"]) and not image["caption"]:
                problems.append(f"{path}: diagram {name} has neither alt text nor a caption")
    assert not problems, problems
    assert len(found) >= MIN_DIAGRAMS, (
        f"{len(found)} schematic diagrams on the chapter pages, expected at least {MIN_DIAGRAMS}: {found}"
    )


def test_search_finds_chapter_03(site, browser):
    base, _ = site
    context, page, problems = _open(browser, base + "search.html?q=softmax", VIEWPORTS["desktop"])
    try:
        page.wait_for_selector("#search-results ul.search li", timeout=15000)
        links = page.eval_on_selector_all("#search-results ul.search li a", "as => as.map(a => a.href)")
        assert any("03_attention_steps" in link for link in links), f"searching 'softmax' found {links}"
        assert not problems["console"] and not problems["outside"], problems
    finally:
        context.close()


def test_internal_links_resolve(student_html):
    """Every relative link points at a file of the site, and every #fragment at an id on that page."""
    ids: dict[Path, set[str]] = {}

    def ids_of(page: Path) -> set[str]:
        if page not in ids:
            soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
            ids[page] = {tag["id"] for tag in soup.find_all(id=True)}
        return ids[page]

    broken = []
    for page in sorted(student_html.rglob("*.html")):
        if "_static" in page.parts:
            continue
        for anchor in BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").find_all("a", href=True):
            parts = urllib.parse.urlsplit(anchor["href"])
            if parts.scheme or parts.netloc or anchor["href"].startswith(("mailto:", "javascript:")):
                continue
            target = (page.parent / urllib.parse.unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{page.relative_to(student_html)} -> {anchor['href']}")
            elif parts.fragment and target.suffix == ".html" and parts.fragment not in ids_of(target):
                broken.append(f"{page.relative_to(student_html)} -> {anchor['href']} (no such id)")
    assert not broken, f"broken internal links: {broken[:20]}"


def test_download_button_serves_the_student_notebook(student_html, assignment):
    page = student_html / "chapters" / assignment / f"{assignment}.html"
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    downloads = [
        a["href"]
        for a in soup.find_all("a", href=True)
        if a["href"].endswith(f"{assignment}.ipynb") and not urllib.parse.urlsplit(a["href"]).scheme
    ]
    assert downloads, f"{page.name} has no .ipynb download link"
    served = (page.parent / downloads[0]).resolve()
    assert served.read_bytes() == course.student_notebook(assignment).read_bytes(), (
        "the download button must serve exactly the student notebook of chapters/"
    )


def test_launch_buttons_are_the_configured_services(student_html, assignment):
    """Each chapter page launches its student notebook, in the repository _config.yml names, on
    exactly the services _config.yml configures (no hub address: no JupyterHub button), and its
    repository button leads to that repository."""
    html = (student_html / "chapters" / assignment / f"{assignment}.html").read_text(encoding="utf-8")
    soup = BeautifulSoup(html, "html.parser")
    launch = {
        a["title"].removeprefix("Launch on ").strip(): a["href"]
        for a in soup.find_all("a", href=True, title=True)
        if a["title"].startswith("Launch on ")
    }
    expected = expected_launch_urls(f"chapters/{assignment}/{assignment}.ipynb", hub_url())
    assert set(launch) == set(expected), f"launch buttons {sorted(launch)}, _config.yml configures {sorted(expected)}"
    wrong = {name: href for name, href in launch.items() if not _same_url(href, expected[name])}
    assert not wrong, f"launch buttons that do not open the student notebook in {repository_url()}: {wrong}"
    repository_links = [
        a["href"] for a in soup.find_all("a", href=True, title=True) if a["title"] == "Source repository"
    ]
    assert repository_links == [repository_url()], f"repository button: {repository_links}"
