"""The student book as readers see it: every page opened in headless Chromium (Debian's
package, driven by Playwright; no browser is downloaded), served from 127.0.0.1.

For every page: no console error; every math element typeset by the local MathJax; every
image loads; no request leaves the machine; exactly one visible h1; figures have alt text or
a caption; on the chapter pages, every schematic diagram (an SVG) renders with a nonzero size
and has alt text or a caption (six or more in all). Also: internal links resolve, the search
page finds chapter 03, the download button serves the student notebook, the launch buttons are
exactly the configured services (autograder/authoring/publishing.py). With ``COURSE_FULL_MATRIX=1``,
a screenshot of every page goes to ``_build/screenshots/`` for a person to look at, at desktop and at
phone width (the phone width a second load of every page; the keyboard tests below try the phone
layout on every run): a full-page screenshot checks nothing itself and costs more than the page's
checks (23 s of the 47 s the student pages took on a quiet 2-core machine, measured 2026-12-01).

Accessibility: axe-core (npm, installed by scripts/setup.sh into .venv/npm, injected from there)
audits every page of both editions, in light and dark mode once MathJax has typeset; any critical or serious
violation fails, with the rule, the page and the element; minor and moderate ones are
reported as a warning. With the keyboard alone: the skip link, a visible focus on every control of
the theme's chrome, the sidebar's menu button at desktop and phone widths.

The machinery is in tests/browser_pages.py (serving, opening a page, waiting for MathJax, listing the
pages) and tests/axe_audit.py (axe's rules and the scripts run in the page).
"""

from __future__ import annotations

import os
import re
import urllib.parse
import warnings
from pathlib import Path

import pytest
from axe_audit import (
    AXE_CONFIGURE,
    AXE_FAILING_IMPACTS,
    AXE_PASSES,
    AXE_SCRIPT,
    MARK_REPEATED_CODE_TOKENS,
    RUN_AXE,
    SETTLED,
)
from browser_pages import CHROMIUM, CHROMIUM_FLAGS, VIEWPORTS, built_pages, open_page, page_paths, served, wait_for_math
from bs4 import BeautifulSoup
from chapter_matrix import full_matrix
from test_publishing import _same_url, expected_launch_urls

from autograder import course
from autograder.authoring import book
from autograder.authoring.publishing import hub_url, repository_url

SCREENSHOTS = course.BUILD / "screenshots"


@pytest.fixture(scope="module")
def site(student_html):
    """The student book served on an ephemeral port of 127.0.0.1: (base URL, folder)."""
    with served(student_html) as base:
        yield base, student_html


@pytest.fixture(scope="module")
def instructor_site(instructor_html):
    """The instructor edition, served the same way: (base URL, folder)."""
    with served(instructor_html) as base:
        yield base, instructor_html


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


@pytest.mark.parametrize("path", page_paths())
def test_page_as_a_reader_sees_it(site, browser, path):
    base, folder = site
    widths = VIEWPORTS if full_matrix() else {"desktop": VIEWPORTS["desktop"]}
    for width, viewport in widths.items():
        context, page, problems = open_page(browser, base + path, viewport)
        try:
            wait_for_math(page)
            # every image loaded (or failed): what the checks below read. Not "networkidle", which Playwright
            # discourages for tests: twice on CI one stray connection kept a chapter from ever going idle
            page.wait_for_function("() => [...document.images].every(i => i.complete)")
            if full_matrix():
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
                _, not_drawn = _diagrams(page.evaluate(IMAGES_AND_DIAGRAMS), folder, path)
                assert not not_drawn, not_drawn
        finally:
            context.close()


DIAGRAM_ID = re.compile(r'<svg\b[^>]*\bid="diagram-([A-Za-z0-9_]+)"')
MIN_DIAGRAMS = 6  # issue 12: "six or more diagrams load in the browser tests"
# Every image and inline diagram of the article, each scrolled into view and decoded first.
IMAGES_AND_DIAGRAMS = """async () => {
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


def _diagram_name(src: str, folder: Path) -> str | None:
    """The diagram id of an image's SVG file on the site (scripts/diagrams/ names each), or None."""
    local = folder / urllib.parse.unquote(urllib.parse.urlsplit(src).path).lstrip("/")
    if local.suffix != ".svg" or not local.is_file():
        return None
    match = DIAGRAM_ID.search(local.read_text(encoding="utf-8", errors="replace"))
    return match.group(1) if match else None


def _diagrams(images: list[dict], folder: Path, path: str) -> tuple[set[str], list[str]]:
    """(the schematic diagrams among a page's images, the problems with them: not rendered, no alt text
    nor caption)."""
    found, problems = set(), []
    for image in images:
        name = image.get("inline") or _diagram_name(image.get("src", ""), folder)
        if name is None:
            continue
        found.add(name)
        if not (image["complete"] and min(image["natural"]) > 0 and min(image["shown"]) > 0):
            problems.append(
                f"{path}: diagram {name} did not render (natural {image['natural']}, shown {image['shown']})"
            )
        if (not image["alt"] or "_images/" in image["alt"]) and not image["caption"]:
            problems.append(f"{path}: diagram {name} has neither alt text nor a caption")
    return found, problems


def test_the_chapters_show_six_or_more_schematic_diagrams(student_html):
    """Counted in the built pages (test_page_as_a_reader_sees_it checks, page by page in the browser, that
    each renders and is labelled): inline SVGs and images whose SVG file carries a diagram id."""
    found = {}
    for path in (p for p in page_paths() if p.startswith("chapters/")):
        soup = BeautifulSoup((student_html / path).read_text(encoding="utf-8"), "html.parser")
        page_url = urllib.parse.urljoin("http://site/", path)
        names = {svg["id"].removeprefix("diagram-") for svg in soup.select('article svg[id^="diagram-"]')}
        for img in soup.select("article img[src]"):
            src = urllib.parse.urljoin(page_url, img["src"]).removeprefix("http://site")
            names.add(_diagram_name(src, student_html))
        for name in names - {None}:
            found.setdefault(name, []).append(path)
    assert len(found) >= MIN_DIAGRAMS, (
        f"{len(found)} schematic diagrams on the chapter pages, expected at least {MIN_DIAGRAMS}: {found}"
    )


def test_search_finds_chapter_03(site, browser):
    base, _ = site
    context, page, problems = open_page(browser, base + "search.html?q=softmax", VIEWPORTS["desktop"])
    try:
        page.wait_for_selector("#search-results ul.search li", timeout=15000)
        links = page.eval_on_selector_all("#search-results ul.search li a", "as => as.map(a => a.href)")
        assert any("03_attention_steps" in link for link in links), f"searching 'softmax' found {links}"
        assert not problems["console"] and not problems["outside"], problems
    finally:
        context.close()


def test_internal_links_resolve(student_html):
    """Every relative link points at a file of the site, and every #fragment at an id on that page."""
    parsed: dict[Path, tuple[list[str], set[str]]] = {}

    def links_and_ids(page: Path) -> tuple[list[str], set[str]]:
        """(the page's hrefs, its ids): each page parsed once (the chapter pages are large)."""
        if page not in parsed:
            soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
            parsed[page] = [a["href"] for a in soup.find_all("a", href=True)], {t["id"] for t in soup.find_all(id=True)}
        return parsed[page]

    broken = []
    for page in sorted(student_html.rglob("*.html")):
        if "_static" in page.parts:
            continue
        for href in links_and_ids(page)[0]:
            parts = urllib.parse.urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
                continue
            target = (page.parent / urllib.parse.unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{page.relative_to(student_html)} -> {href}")
            elif parts.fragment and target.suffix == ".html" and parts.fragment not in links_and_ids(target)[1]:
                broken.append(f"{page.relative_to(student_html)} -> {href} (no such id)")
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


SEARCH_RESULTS = "search.html?q=softmax"


@pytest.mark.parametrize("edition", book.EDITIONS)
def test_axe_finds_nothing_serious(edition, request, browser):
    """axe-core on every page of the edition, in light mode (every rule of AXE_TAGS) and then in dark
    mode (the colour rules), once MathJax has typeset: no critical or serious violation. One page in
    one browser does every page; dark mode is the reader's own (prefers-color-scheme, which the book's
    `default_mode: auto` follows), switched on the loaded page."""
    if not AXE_SCRIPT.is_file():
        pytest.fail(f"axe-core is missing at {AXE_SCRIPT}: run `bash scripts/setup.sh`")
    base, folder = request.getfixturevalue("site" if edition == "student" else "instructor_site")
    pages = built_pages(folder)
    assert len(pages) > len(page_paths()), f"{edition}: expected every ToC page and more, found {pages}"
    pages.append(SEARCH_RESULTS)  # the search page as it shows results, drawn by the page's script
    failures, reported = [], {}
    axe = AXE_SCRIPT.read_text(encoding="utf-8")
    context, page, problems = open_page(browser, base + pages[0], VIEWPORTS["desktop"], init_script=axe)
    try:
        for index, path in enumerate(pages):
            if index:
                page.emulate_media(color_scheme="light")
                page.goto(base + path, wait_until="load")
            wait_for_math(page)
            if path == SEARCH_RESULTS:
                page.wait_for_selector("#search-results ul.search li", timeout=15000)
            page.evaluate(MARK_REPEATED_CODE_TOKENS)
            page.evaluate(AXE_CONFIGURE)
            for mode, only in AXE_PASSES:
                page.emulate_media(color_scheme=mode)
                page.wait_for_function(f"() => document.documentElement.dataset.theme === '{mode}'", timeout=5000)
                page.wait_for_function(SETTLED, timeout=5000)
                for violation in page.evaluate(RUN_AXE, {"runOnly": only, "resultTypes": ["violations"]}):
                    for node in violation["nodes"]:
                        rule, impact = violation["rule"], violation["impact"]
                        where = f"{path} ({mode} mode): {rule} ({impact}: {violation['help']})"
                        if impact in AXE_FAILING_IMPACTS:
                            failures.append(f"{where} at {node['target']}: {node['html']}")
                        else:
                            reported.setdefault(f"{rule} ({impact})", []).append(f"{path} ({mode}) {node['target']}")
        assert not problems["outside"], f"{edition}: requests to other hosts {problems['outside']}"
    finally:
        context.close()
    if reported:
        summary = "; ".join(f"{rule}: {len(where)} elements, e.g. {where[0]}" for rule, where in reported.items())
        warnings.warn(f"axe-core, {edition} edition, minor or moderate: {summary}", stacklevel=1)
    assert not failures, f"axe-core, {edition} edition: {len(failures)} critical or serious violations:\n" + "\n".join(
        failures
    )


@pytest.mark.parametrize("edition", book.EDITIONS)
def test_sidebar_title_takes_at_most_two_lines(edition, request, browser):
    """The book's title at the top of the navigation (the instructor edition's is the longer) wraps to
    at most two lines at desktop width (autograder/authoring/book_theme/static/course.css)."""
    base, _ = request.getfixturevalue("site" if edition == "student" else "instructor_site")
    context, page, _ = open_page(browser, base + "intro.html", VIEWPORTS["desktop"])
    try:
        title, lines = page.evaluate(
            """() => {
                const title = document.querySelector('.bd-sidebar-primary .logo__title');
                const range = document.createRange();
                range.selectNodeContents(title);
                const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
                return [title.textContent.trim(), tops.size];
            }"""
        )
    finally:
        context.close()
    assert 1 <= lines <= 2, f"{edition}: the sidebar's title {title!r} takes {lines} lines, expected at most 2"


KEYBOARD_PAGE = "chapters/03_attention_steps/03_attention_steps.html"


def _focus_is_drawn(page) -> bool:
    """Whether the focused element looks different from the same element unfocused (its box and
    6 px around it, where an outline or a shadow would be drawn); focus is put back afterwards."""
    box = page.evaluate(
        "() => { const r = document.activeElement.getBoundingClientRect(); return [r.x, r.y, r.width, r.height] }"
    )
    clip = {"x": max(0, box[0] - 6), "y": max(0, box[1] - 6), "width": box[2] + 12, "height": box[3] + 12}
    page.wait_for_function(SETTLED, timeout=5000)
    focused = page.screenshot(clip=clip)
    page.evaluate("() => { window.focusedForTest = document.activeElement; document.activeElement.blur(); }")
    page.wait_for_function(SETTLED, timeout=5000)
    blurred = page.screenshot(clip=clip)
    page.evaluate("() => window.focusedForTest.focus()")
    return focused != blurred


def test_keyboard_focus_is_visible_and_the_skip_link_works(site, browser):
    """With the keyboard alone, on a chapter page at desktop width (the theme's chrome is the same on
    every page of both editions): the first Tab reaches the skip link, shown on screen; every later
    stop up to the article (sidebar, navigation, the article's header buttons) shows where the focus
    is; Enter on the skip link sends the next Tab into the page's main content."""
    base, _ = site
    context, page, _ = open_page(browser, base + KEYBOARD_PAGE, VIEWPORTS["desktop"])
    try:
        page.keyboard.press("Tab")
        page.wait_for_function(SETTLED, timeout=5000)
        skip = page.evaluate(
            """() => { const e = document.activeElement, r = e.getBoundingClientRect();
                       const shown = r.top >= 0 && r.bottom <= innerHeight && r.width > 0;
                       return [e.textContent.trim(), e.getAttribute('href'), shown] }"""
        )
        assert skip[:2] == ["Skip to main content", "#main-content"] and skip[2], f"first Tab: {skip}"
        unseen, stops = [], 0
        for _ in range(60):
            page.keyboard.press("Tab")
            where = page.evaluate(
                """() => { const e = document.activeElement;
                           return [e.closest('article') !== null, e.tagName + ' ' + (e.getAttribute('aria-label')
                                   || e.getAttribute('title') || e.textContent).trim().slice(0, 60)] }"""
            )
            if where[0]:
                break
            stops += 1
            if not _focus_is_drawn(page):
                unseen.append(where[1])
        else:
            pytest.fail("60 Tabs did not reach the article")
        assert stops >= 15, f"only {stops} stops before the article: the sidebar's links are missing"
        assert not unseen, f"no visible focus indicator on {unseen}"
        page.goto(base + KEYBOARD_PAGE, wait_until="load")
        page.keyboard.press("Tab")
        page.keyboard.press("Enter")
        page.keyboard.press("Tab")
        inside = page.evaluate("() => document.activeElement.closest('#main-content') !== null")
        assert inside, "after Enter on the skip link, Tab does not land in the main content"
    finally:
        context.close()


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_the_sidebar_toggle_works_from_the_keyboard(site, browser, width):
    """The article header's menu button (the one a reader sees) hides the chapter list at desktop width
    and opens it at phone width, where it is the only way to reach the other chapters."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    base, _ = site
    context, page, _ = open_page(browser, base + KEYBOARD_PAGE, VIEWPORTS[width])
    try:
        toggle = page.locator("button.primary-toggle:visible")
        assert toggle.count() == 1, f"{width}: {toggle.count()} visible sidebar toggles, expected one"
        toggle.focus()
        page.keyboard.press("Enter")
        if width == "desktop":
            done, outcome = (
                "() => document.querySelector('#pst-primary-sidebar').classList.contains('pst-sidebar-hidden')",
                "hide",
            )
        else:
            done, outcome = "() => document.querySelector('#pst-primary-sidebar-modal').open", "open"
        try:
            page.wait_for_function(done, timeout=5000)
        except PlaywrightTimeout:
            pytest.fail(f"{width}: Enter on the visible sidebar toggle did not {outcome} the chapter list")
        if width == "phone":
            shown = page.eval_on_selector_all(
                "#pst-primary-sidebar-modal nav.bd-links a",
                "links => links.filter(a => a.offsetParent).map(a => a.href)",
            )
            missing = [a for a in course.assignments() if not any(f"/chapters/{a}/{a}.html" in href for href in shown)]
            assert not missing, f"the opened chapter list does not show {missing}: {shown}"
    finally:
        context.close()
