"""Screenshots of the hub for a person to look at, taken by tests/test_hub_end_to_end.py.

Headless Chromium logs into the hub as the instructor (the formgrader inside JupyterLab, its
manual-grading view of a submission) and as a student (the assignment list with its feedback). On the
way it checks what a screenshot would show wrong: the formgrader framed and offered to the instructor
only, and no request leaving the machine (every request but loopback is blocked and listed in
``blocked-requests.txt``; only nbgrader's MathJax from a CDN is expected there).
"""

from __future__ import annotations

import re
from pathlib import Path

from hub_harness import CHROMIUM
from hub_server import Hub

from autograder import conventions

NBGRADER_MATHJAX_CDN = "https://cdnjs.cloudflare.com/ajax/libs/mathjax/"


def take(hub: Hub, instructor: str, student: str, submission_id: str, assignment: str, folder: Path) -> None:
    """Log into the hub in headless Chromium as the instructor and as a student; screenshot
    the formgrader inside JupyterLab, its manual-grading view of the student's notebook (in a
    tab of its own, as without framing), and the student's assignment list, into ``folder``."""
    from playwright.sync_api import sync_playwright

    outside: list[str] = []

    def loopback_only(route):
        host = re.match(r"[a-z]+://([^/:]+)", route.request.url)
        if route.request.url.startswith(("data:", "blob:")) or (host and host.group(1) == "127.0.0.1"):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    def login(browser, name: str):
        context = browser.new_context(viewport={"width": 1600, "height": 900})
        context.route("**/*", loopback_only)
        page = context.new_page()
        page.goto(f"{hub.url}/hub/login", timeout=60_000)
        page.fill("input[name=username]", name)
        page.fill("input[name=password]", hub.password)
        page.click("[type=submit]")
        page.wait_for_url(re.compile(r".*/hub/(home|spawn|spawn-pending).*|.*/user/.*"), timeout=60_000)
        page.goto(f"{hub.url}/user/{name}/lab", timeout=90_000)
        page.wait_for_function("window.jupyterapp && window.jupyterapp.commands", timeout=90_000)
        page.wait_for_selector(".jp-LabShell", timeout=90_000)
        return context, page

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run",
            ],
        )  # fmt: skip
        try:
            context, page = login(browser, instructor)
            page.wait_for_function("window.jupyterapp.commands.hasCommand('nbgrader:open-formgrader')", timeout=60_000)
            page.evaluate("window.jupyterapp.commands.execute('nbgrader:open-formgrader')")
            frame = page.frame_locator("iframe").first
            frame.get_by_text(assignment).first.wait_for(timeout=90_000)  # blank if framing were refused
            page.wait_for_timeout(1500)
            page.screenshot(path=str(folder / "formgrader.png"))
            page.goto(f"{hub.url}/user/{instructor}/formgrader/submissions/{submission_id}/", timeout=90_000)
            page.locator("input.score").first.wait_for(timeout=90_000)
            written = next(iter(conventions.instructor(assignment).written))  # the first written question's score box
            page.locator(f'input.score[id="{written}"]').scroll_into_view_if_needed(timeout=30_000)
            page.mouse.wheel(0, -250)
            page.wait_for_timeout(1000)
            page.screenshot(path=str(folder / "formgrader-manual-grading.png"))
            context.close()

            context, page = login(browser, student)
            page.wait_for_function(
                "window.jupyterapp.commands.hasCommand('nbgrader:open-assignment-list')", timeout=60_000
            )
            assert not page.evaluate("window.jupyterapp.commands.hasCommand('nbgrader:open-formgrader')"), (
                "the formgrader is offered to a student"
            )
            page.evaluate("window.jupyterapp.commands.execute('nbgrader:open-assignment-list')")
            page.get_by_text("view feedback").first.wait_for(timeout=90_000)  # the panel, with feedback
            page.wait_for_timeout(1500)
            page.screenshot(path=str(folder / "assignment-list.png"))
            context.close()
        finally:
            browser.close()
    # Blocked, never sent. nbgrader's grading view (like its feedback pages) asks a CDN for
    # MathJax 2.7.7, so math there shows as TeX source on a hub without Internet access;
    # anything else would be new.
    (folder / "blocked-requests.txt").write_text("".join(f"{url}\n" for url in outside))
    unexpected = [url for url in outside if not url.startswith(NBGRADER_MATHJAX_CDN)]
    assert not unexpected, f"the browser tried to leave the machine: {unexpected[:5]}"
