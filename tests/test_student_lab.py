"""The student's own JupyterLab (README: "Do the exercises on your own computer"), in a browser.

``bash scripts/student_lab.sh`` is started as README says (plus a port, a token, and
STUDENT_WORK pointing at a scratch folder, so that nothing is written into the repository), on
127.0.0.1, and headless Chromium (Debian's package, driven by Playwright, as in
test_browser.py) opens a chapter in it from the file browser. A student must see nbgrader's
Validate button and nothing of an instructor's (no formgrader, course list, assignment
creator, nbgrader menu), no error dialog or notification, no exchange error in the server's
log, and the notebook must not be marked modified once its kernel has started. Validate then
runs the untouched notebook and reports its failing visible tests; with every code exercise
answered and the written questions empty, it names the unanswered questions and says that the
code passes. Validate runs with the course's time limit per cell (not nbgrader's 30 s), and the
script, started as root without ``--allow-root``, says how instead of failing obscurely.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from autograder import course
from autograder.conventions import is_answer_cell, nbgrader, without_markers

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
SCRIPT = course.ROOT / "scripts" / "student_lab.sh"
SCREENSHOTS = course.BUILD / "screenshots" / "student_lab"
INSTRUCTOR_COMMANDS = (
    "nbgrader:open-formgrader",
    "nbgrader:open-formgrader-local",
    "nbgrader:open-course-list",
    "nbgrader:open-create-assignment",
    "nbgrader:open-assignment-list",
)
EXCHANGE_ERRORS = ("Error fetching courses", "exchange directory does not exist", "Traceback")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def student_lab(tmp_path_factory):
    """(base URL, token, server log, work folder) of the student JupyterLab."""
    if not Path(CHROMIUM).exists():
        message = "Debian's chromium is not installed (scripts/setup.sh installs it when run as root)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    scratch = tmp_path_factory.mktemp("student-lab")
    root = scratch / "work"
    port, token = _free_port(), "student-lab-test"
    env = {
        **os.environ,
        # The student's own Jupyter folders, empty: nothing from this machine's ~/.jupyter.
        "JUPYTER_CONFIG_DIR": str(scratch / "config"),
        "JUPYTER_DATA_DIR": str(scratch / "data"),
        "JUPYTER_RUNTIME_DIR": str(scratch / "runtime"),
        "STUDENT_WORK": str(root),
        "OMP_NUM_THREADS": "1",
    }
    env.pop("JUPYTER_CONFIG_PATH", None)
    log = scratch / "server.log"
    command = [
        "bash",
        str(SCRIPT),
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        "--LabApp.expose_app_in_browser=True",  # lets the test ask JupyterLab what it shows
        *(["--allow-root"] if os.geteuid() == 0 else []),
    ]
    with log.open("w") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}api/status?token={token}", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the student JupyterLab did not start:\n{log.read_text()[-4000:]}")
                time.sleep(0.5)
        yield base, token, log, root
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


def test_script_puts_the_student_configuration_first():
    """README's command: the student configuration in scripts/student_lab/ on JUPYTER_CONFIG_PATH."""
    text = SCRIPT.read_text()
    assert 'JUPYTER_CONFIG_PATH="$PWD/scripts/student_lab' in text
    assert (course.ROOT / "scripts" / "student_lab" / "labconfig" / "page_config.json").is_file()
    assert (course.ROOT / "scripts" / "student_lab" / "jupyter_server_config.py").is_file()


def test_copies_are_the_chapters_and_are_never_overwritten(tmp_path):
    import importlib.util

    import nbformat

    spec = importlib.util.spec_from_file_location("copy_chapters", SCRIPT.parent / "student_lab" / "copy_chapters.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written = module.copy_chapters(course.CHAPTERS, tmp_path)
    assert sorted(p.parent.name for p in written) == course.assignments()
    for path in written:
        copy, original = (nbformat.read(p, as_version=4) for p in (path, course.CHAPTERS / path.relative_to(tmp_path)))
        assert [c.source for c in copy.cells] == [c.source for c in original.cells]
        assert copy.metadata.language_info["name"] == "python" and copy.metadata.kernelspec["name"] == "python3"
    path = written[0]
    path.write_text("my answers")
    assert module.copy_chapters(course.CHAPTERS, tmp_path) == []
    assert path.read_text() == "my answers"


def _answered_code(assignment: str) -> nbformat.NotebookNode:
    """The student notebook with every code exercise answered (the reference's code) and no written answer."""
    answers = {
        nbgrader(c)["grade_id"]: without_markers(c.source)
        for c in nbformat.read(course.solution_notebook(assignment), as_version=4).cells
        if is_answer_cell(c)
    }
    nb = nbformat.read(course.student_notebook(assignment), as_version=4)
    for cell in nb.cells:
        if nbgrader(cell).get("grade_id") in answers:
            cell.source = answers[nbgrader(cell)["grade_id"]]
    return nb


def test_validate_uses_the_course_time_limit(tmp_path):
    """nbgrader's Validate handler loads its configuration this way; with the student lab's
    JUPYTER_CONFIG_PATH it finds the course's limit per cell (the grader's), not nbgrader's 30 s."""
    probe = (
        "import os\n"
        "from jupyter_core.paths import jupyter_config_path\n"
        "from nbgrader.apps import NbGrader\n"
        "paths = jupyter_config_path(); paths.insert(0, os.getcwd())\n"
        "app = NbGrader(); app.config_file_paths.append(paths); app.load_config_file()\n"
        "print(app.config.Execute.timeout)\n"
    )
    env = {**os.environ, "JUPYTER_CONFIG_PATH": str(SCRIPT.parent / "student_lab"), "JUPYTER_CONFIG_DIR": str(tmp_path)}
    completed = subprocess.run(
        [str(course.ROOT / ".venv" / "bin" / "python"), "-c", probe],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split()[-1] == str(course.CELL_TIMEOUT), completed.stdout


def test_validate_names_unanswered_written_questions(tmp_path):
    """Every code exercise answered, the written questions empty: Validate names each question and says that
    the code passes (scripts/student_lab/student_validate.py, nbgrader's Validator with better messages)."""
    import importlib.util

    from traitlets.config import Config

    spec = importlib.util.spec_from_file_location(
        "student_validate", SCRIPT.parent / "student_lab" / "student_validate.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assignment = "03_attention_steps"
    path = tmp_path / f"{assignment}.ipynb"
    nbformat.write(_answered_code(assignment), path)
    config = Config()
    config.Execute.timeout = course.CELL_TIMEOUT
    results = module.StudentValidator(config=config).validate(str(path))
    failed = results.get("failed", [])
    errors = [entry["raw_error"] for entry in failed]
    assert len(failed) == 2 and all("has no answer yet" in e for e in errors), results
    assert "Written question 3.1" in errors[0] + errors[1] and "Written question 3.2" in errors[0] + errors[1], errors
    assert errors[0].startswith("Your code passes every visible test"), errors[0]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root is refused")
def test_the_script_tells_root_how():
    completed = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert completed.returncode != 0 and "--allow-root" in completed.stderr, completed.stderr


@pytest.mark.parametrize("chapter", ["03_attention_steps"])
def test_student_sees_validate_and_no_instructor_tools(student_lab, browser, chapter):
    assignment = chapter
    base, token, log, root = student_lab
    before = (root / assignment / f"{assignment}.ipynb").read_bytes()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors, outside = [], []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

    def gate(route):
        if route.request.url.startswith((base, "data:", "blob:")):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", gate)
    try:
        page.goto(f"{base}lab?token={token}", wait_until="load")
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell", timeout=60000)
        # As a student does: double-click the chapter's folder, then its notebook.
        page.locator(".jp-DirListing-item", has_text=assignment).first.dblclick(timeout=60000)
        page.locator(".jp-DirListing-item", has_text=f"{assignment}.ipynb").first.dblclick(timeout=30000)
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60000)
        page.wait_for_function(
            """() => {
                const w = window.jupyterapp.shell.currentWidget;
                const kernel = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
                return kernel && kernel.status === 'idle' && w.context.isReady;
            }""",
            timeout=90000,
        )
        page.wait_for_timeout(3000)  # let late metadata updates (kernel info, plugins) arrive
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{assignment}.png"))

        state = page.evaluate(
            """(commands) => {
                const app = window.jupyterapp;
                const w = app.shell.currentWidget;
                return {
                    dirty: w.context.model.dirty,
                    dirtyTabs: document.querySelectorAll('.lm-TabBar-tab.jp-mod-dirty').length,
                    instructorCommands: commands.filter(c => app.commands.hasCommand(c)),
                    menus: [...document.querySelectorAll('.lm-MenuBar-itemLabel')].map(e => e.textContent),
                    rightPanels: [...document.querySelectorAll('.jp-SideBar.jp-mod-right .lm-TabBar-tab')]
                        .map(e => e.getAttribute('title') || e.textContent),
                    dialogs: [...document.querySelectorAll('.jp-Dialog')].map(e => e.textContent),
                    toasts: [...document.querySelectorAll('.jp-Notification-Toast, .Toastify__toast')]
                        .map(e => e.textContent),
                    validate: [...document.querySelectorAll('.jp-Toolbar .jp-ToolbarButtonComponent')]
                        .map(e => e.textContent).filter(t => t.includes('Validate')).length,
                };
            }""",
            list(INSTRUCTOR_COMMANDS),
        )
        assert state["validate"] == 1, f"no Validate button in the notebook's toolbar: {state}"
        assert not state["instructorCommands"], f"instructor tools are available: {state['instructorCommands']}"
        assert "Nbgrader" not in state["menus"], f"nbgrader's menu is shown: {state['menus']}"
        assert not any("Assignment" in p for p in state["rightPanels"]), f"Create Assignment shown: {state}"
        assert not state["dialogs"], f"dialogs opened: {state['dialogs']}"
        assert not state["toasts"], f"notifications shown: {state['toasts']}"
        assert not state["dirty"] and not state["dirtyTabs"], "the notebook opened marked as modified"
        assert not outside, f"JupyterLab asked other hosts for {outside}"
        assert not errors, f"console errors: {errors}"
        server_log = log.read_text()
        assert not [e for e in EXCHANGE_ERRORS if e in server_log], f"errors in the server log:\n{server_log[-3000:]}"
        assert (root / assignment / f"{assignment}.ipynb").read_bytes() == before, "opening wrote the notebook"

        # Validate works here: it runs the untouched notebook and reports its failing visible tests.
        page.locator(".jp-Toolbar .jp-ToolbarButtonComponent", has_text="Validate").first.click()
        page.wait_for_selector(".jp-Dialog .validation-failed, .jp-Dialog .validation-success", timeout=300000)
        result = page.locator(".jp-Dialog").inner_text()
        assert "There was an error running the validate command" not in result, result[:2000]
        assert page.locator(".jp-Dialog .validation-failed").count() == 1, f"the stub passed validation: {result[:500]}"
        page.screenshot(path=str(SCREENSHOTS / f"{assignment}-validate.png"))
    finally:
        context.close()


def test_validate_in_the_browser_names_the_written_questions(student_lab, browser):
    """As a student would: every code exercise done, the written questions empty, then Validate."""
    assignment = "03_attention_steps"
    base, token, log, root = student_lab
    nbformat.write(_answered_code(assignment), root / assignment / f"{assignment}.ipynb")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{base}lab/tree/{assignment}/{assignment}.ipynb?token={token}", wait_until="load")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90000)
        page.locator(".jp-Toolbar .jp-ToolbarButtonComponent", has_text="Validate").first.click(timeout=60000)
        page.wait_for_selector(".jp-Dialog .validation-failed, .jp-Dialog .validation-success", timeout=300000)
        text = page.locator(".jp-Dialog").inner_text()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{assignment}-written-questions.png"))
        assert "Your code passes every visible test" in text, text[:2000]
        assert "Written question 3.1" in text and "Written question 3.2" in text, text[:2000]
    finally:
        context.close()
