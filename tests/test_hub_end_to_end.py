"""The semester cycle on a real JupyterHub, as deploy/ ships it (see guides/instructor.md).

As root, on loopback ports only: an instructor and two students become local users, the hub
starts with deploy/jupyterhub_config.py (local-process spawner, configurable-http-proxy from
npm, nbgrader's exchange in a shared folder), and the cycle runs through JupyterHub's REST
API and the user servers' own endpoints, each user with their own token:

    instructor: generate + release chapter 03          (formgrader API)
    students:   fetch; one fills in the reference answers, the other leaves the stub; validate;
                submit                                  (assignment-list API, contents API)
    instructor: collect                                 (formgrader API)
    root:       the class grader, sandboxed, into the instructor's gradebook
                                                        (`python -m autograder grade`)
    instructor: manual grading with a comment per student, a test cell overridden
                                                        (formgrader API)
    root:       the reports again, nobody regraded      (`--reports-only`)
    instructor: the grader's feedback released          (formgrader API)
    students:   fetch their feedback                    (assignment-list API)
    instructor: export the grades                       (`nbgrader export` in a JupyterLab terminal)

then checks the scores, that each student got only their own feedback, who can read what, and
takes screenshots of the formgrader and of a student's assignment list for a person to look
at (_build/screenshots/hub/, tests/hub_screenshots.py). Every user, process and folder it made is removed at the end,
even when it fails. The hub's software is installed once by deploy/install.sh into
/var/cache/attention-step-by-step/ (keyed by a hash of the pins) and reused.

Needs root (skipped otherwise). Under CI=true a machine that cannot run it fails the test.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import hub_harness as harness
import hub_screenshots
import hub_server
import pytest

from autograder import course
from autograder.conventions import SOLUTION, without_markers

ASSIGNMENT = "03_attention_steps"
NOTEBOOK = f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
COURSE_FOLDER = "attention-step-by-step"  # in the instructor's home (deploy/jupyterhub_config.py)
SCREENSHOTS = course.BUILD / "screenshots" / "hub"
DUE = "2020-01-01 00:00:00 UTC"  # long past: every submission is late (the course's policy takes nothing off)


def _pins(path: Path) -> dict[str, str]:
    return course.pins(path.read_text().splitlines())


def test_hub_pins_agree_with_the_course():
    """The hub's kernels run the versions the book and the course's grader are built with."""
    hub = _pins(course.ROOT / "deploy" / "requirements-hub.txt")
    ours = _pins(course.ROOT / "requirements.txt")
    shared = sorted(set(hub) & set(ours))
    assert {"nbgrader", "numpy", "torch", "matplotlib"} <= set(shared)
    assert {name: hub[name] for name in shared} == {name: ours[name] for name in shared}
    lock = json.loads((course.ROOT / "deploy" / "package-lock.json").read_text())
    wanted = json.loads((course.ROOT / "deploy" / "package.json").read_text())["dependencies"]
    assert lock["packages"]["node_modules/configurable-http-proxy"]["version"] == wanted["configurable-http-proxy"]


def test_deploy_files_parse():
    """The shipped configuration is well-formed (the hub itself is exercised below)."""
    import yaml
    from traitlets.config.loader import PyFileConfigLoader

    deploy = course.ROOT / "deploy"
    values = yaml.safe_load((deploy / "z2jh-values.yaml").read_text())
    assert {"hub", "singleuser", "proxy"} <= set(values)
    for path in deploy.rglob("*.json"):
        json.loads(path.read_text())
    nbgrader = PyFileConfigLoader("nbgrader_config.py", path=str(deploy)).load_config()
    assert nbgrader.CourseDirectory.course_id == "attention-step-by-step"
    instructors = PyFileConfigLoader("jupyter_server_config.py", path=str(deploy / "jupyter" / "instructors"))
    headers = instructors.load_config().ServerApp.tornado_settings["headers"]
    assert headers["Content-Security-Policy"] == "frame-ancestors 'self'"


def _unable(reason: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI cannot run the hub end-to-end test: {reason}")
    pytest.skip(reason)


def _points(notebook: dict) -> tuple[float, float]:
    """(autograded points, manually graded points) from the notebook's nbgrader metadata."""
    auto = manual = 0.0
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade"):
            if cell["cell_type"] == "code":
                auto += meta.get("points", 0)
            else:
                manual += meta.get("points", 0)
    return auto, manual


def _cells(notebook: dict) -> list[tuple[str, str, dict]]:
    """Each cell's type, source and nbgrader metadata (sources joined: the contents API sends
    strings where the file may hold lists of lines)."""
    return [
        (cell["cell_type"], "".join(cell["source"]), cell.get("metadata", {}).get("nbgrader", {}))
        for cell in notebook["cells"]
    ]


def _answered(fetched: dict, solution: dict) -> dict:
    """The fetched student notebook with each answer cell holding the reference answer (without
    the solution markers), every cell's nbgrader metadata kept as the student received it."""
    answers = {
        cell["metadata"]["nbgrader"]["grade_id"]: cell["source"]
        for cell in solution["cells"]
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution")
    }
    notebook = json.loads(json.dumps(fetched))
    filled = 0
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution"):
            source = answers[meta["grade_id"]]
            source = "".join(source) if isinstance(source, list) else source
            cell["source"] = without_markers(source, SOLUTION).rstrip("\n")
            filled += 1
    assert filled == len(answers) > 0
    return notebook


def _copy_course(destination: Path, owner) -> None:
    """The instructor's clone of the course: what a `git clone` gives (without .git), plus the
    ignored _grading/ where the gradebook goes."""
    ignore = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints", "work")
    destination.mkdir()
    for name in ("solutions", "chapters", "autograder", "attention_course"):
        shutil.copytree(course.ROOT / name, destination / name, ignore=ignore)
    for name in ("pyproject.toml", "_config.yml", "requirements.txt"):  # the setup cell reads the last two
        shutil.copy(course.ROOT / name, destination)
    (destination / "_grading").mkdir()
    for path in [destination, *destination.rglob("*")]:
        os.chown(path, owner.pw_uid, owner.pw_gid, follow_symlinks=False)


@pytest.fixture
def machine():
    """Skips unless root; reports (or, under CI, fails on) whatever else is missing."""
    if os.geteuid() != 0:
        pytest.skip("the hub end-to-end test needs root (it creates local users and runs the local-process spawner)")
    try:
        harness.check_machine()
    except harness.NotRunnable as reason:
        _unable(str(reason))
    harness.sweep_leftovers()


def test_semester_cycle_on_jupyterhub(machine):
    timings: dict[str, float] = {}
    started = clock = time.monotonic()
    with harness.hub_software() as (prefix, cached):
        timings["install (cached)" if cached else "install (cold)"] = time.monotonic() - clock
        _semester_cycle(prefix, timings)
    timings["whole test"] = time.monotonic() - started
    (SCREENSHOTS / "timings.json").write_text(json.dumps({k: round(v, 1) for k, v in timings.items()}, indent=2))
    print("hub cycle timings (s):", json.dumps({k: round(v, 1) for k, v in timings.items()}))


def _semester_cycle(prefix: Path, timings: dict[str, float]) -> None:
    tag = secrets.token_hex(2)
    instructor, ada, bo = f"ash{tag}-instructor", f"ash{tag}-ada", f"ash{tag}-bo"
    students = [ada, bo]  # ada submits the reference answers, bo the untouched stub
    users: list[str] = []
    work = harness.work_folder()
    hub = hub_server.Hub(prefix, work, [instructor], students)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    try:
        clock = time.monotonic()
        accounts = {}
        for name in (instructor, *students):
            accounts[name] = harness.create_user(name)
            users.append(name)
        home = {name: Path(entry.pw_dir) for name, entry in accounts.items()}
        course_dir = home[instructor] / COURSE_FOLDER
        _copy_course(course_dir, accounts[instructor])
        hub.install_config()
        timings["hub answered"] = hub.start()
        for name in users:  # start all three servers, then wait for each
            hub.start_server(name)
        for name in users:
            hub.wait_ready(name)
        timings["hub + 3 servers up"] = time.monotonic() - clock
        server = {name: hub_server.UserServer(hub, name, hub.user_token(name)) for name in users}
        teacher = server[instructor]

        solution = json.loads(course.solution_notebook(ASSIGNMENT).read_text())
        auto_points, manual_points = _points(solution)
        total = auto_points + manual_points
        assert auto_points > 0 and manual_points > 0

        # --- the cycle ----------------------------------------------------------------------
        cycle = time.monotonic()
        fg = f"/formgrader/api/assignment/{ASSIGNMENT}"
        teacher.nbgrader("POST", f"{fg}/assign")
        teacher.nbgrader("POST", f"{fg}/release")
        course_query = {"course_id": harness.COURSE_ID}
        action = {"assignment_id": ASSIGNMENT, **course_query}

        for name in students:
            listed = server[name].nbgrader("GET", "/assignments", params=course_query)["value"]
            assert [(a["assignment_id"], a["status"]) for a in listed] == [(ASSIGNMENT, "released")]
            server[name].nbgrader("POST", "/assignments/fetch", data=action)
        fetched = server[ada].get_file(NOTEBOOK)["content"]
        assert fetched == server[bo].get_file(NOTEBOOK)["content"]
        assert _cells(fetched) == _cells(json.loads(course.student_notebook(ASSIGNMENT).read_text()))
        server[ada].put_notebook(NOTEBOOK, _answered(fetched, solution))

        validated = {
            name: server[name].nbgrader("POST", "/assignments/validate", data={"path": NOTEBOOK}, timeout=300)["value"]
            for name in students
        }
        assert validated[ada] == {}, f"the reference answers fail validation: {json.dumps(validated[ada])[:3000]}"
        assert validated[bo].get("failed"), "the untouched stub passed validation"
        for name in students:
            server[name].nbgrader("POST", "/assignments/submit", data=action)

        teacher.nbgrader("POST", f"{fg}/collect")
        # The class grader, as root beside the hub (guides/instructor.md): every submission that
        # collect put in _grading/submitted graded in a sandbox, into the instructor's gradebook.
        clock = time.monotonic()
        first = _class_grader(course_dir, hub.etc / "students.txt", "--due", DUE)
        timings["class grader (2 submissions)"] = time.monotonic() - clock
        assert "graded 2 submission(s)" in first.stdout, first.stdout
        results = course_dir / "_grading" / "grades-03" / "results"
        assert {path.stem for path in results.glob("*.json")} == set(students)
        assert harness.run_as(instructor, "test", "-w", str(course_dir / "_grading" / "gradebook.db")).returncode == 0
        autograded = {name: teacher.json("GET", f"/formgrader/api/submission/{ASSIGNMENT}/{name}") for name in students}
        assert autograded[ada]["max_code_score"] == auto_points
        assert autograded[ada]["code_score"] == auto_points, autograded[ada]
        assert autograded[bo]["code_score"] == 0, autograded[bo]

        # Manual grading, as in the formgrader's grading view: ada's written answers earn
        # their points, bo's unanswered ones none, and one of bo's test cells is overridden to
        # full points; one comment per student carries a marker that only that student's
        # feedback may contain.
        notebooks = teacher.json("GET", f"/formgrader/api/submitted_notebooks/{ASSIGNMENT}/{ASSIGNMENT}")
        marker = {name: f"comment-for-{name}-{secrets.token_hex(4)}" for name in students}
        overridden = 0.0
        for submitted in notebooks:
            name = submitted["student"]
            grades = teacher.json("GET", "/formgrader/api/grades", params={"submission_id": submitted["id"]})
            for grade in grades:
                # (0-point rubric tasks too: nbgrader counts them as needing a grade until given one)
                if grade["auto_score"] is None or grade["needs_manual_grade"]:
                    score = grade["max_score"] if name == ada else 0
                    teacher.json("PUT", f"/formgrader/api/grade/{grade['id']}", json={"manual_score": score})
            if name == bo:
                test = next(
                    g for g in grades if g["auto_score"] == 0 and g["max_score"] > 0 and g["cell_type"] == "code"
                )
                teacher.json("PUT", f"/formgrader/api/grade/{test['id']}", json={"manual_score": test["max_score"]})
                overridden = test["max_score"]
            comments = teacher.json("GET", "/formgrader/api/comments", params={"submission_id": submitted["id"]})
            teacher.json("PUT", f"/formgrader/api/comment/{comments[0]['id']}", json={"manual_comment": marker[name]})
        graded = {name: teacher.json("GET", f"/formgrader/api/submission/{ASSIGNMENT}/{name}") for name in students}
        assert (graded[ada]["score"], graded[ada]["max_score"]) == (total, total), graded[ada]
        assert graded[bo]["score"] == overridden > 0, graded[bo]
        assert not any(graded[name]["needs_manual_grade"] for name in students)

        # The reports again, from the records and the gradebook: nobody is graded again.
        before = {path.name: path.stat().st_mtime_ns for path in results.glob("*.json")}
        _class_grader(course_dir, hub.etc / "students.txt", "--reports-only")
        assert {path.name: path.stat().st_mtime_ns for path in results.glob("*.json")} == before
        ours = {row["student_id"]: row for row in csv.DictReader(io.StringIO(
            (course_dir / "_grading" / "grades-03" / "grades.csv").read_text()))}  # fmt: skip
        assert {name: float(ours[name]["score"]) for name in students} == {ada: total, bo: overridden}

        # The grader's feedback pages, released through nbgrader's exchange (formgrader's button).
        teacher.nbgrader("POST", f"{fg}/release_feedback")
        feedback = {}
        for name in students:
            server[name].nbgrader("POST", "/assignments/fetch_feedback", data=action)
            runs = server[name].get_file(f"{ASSIGNMENT}/feedback")["content"]
            assert len(runs) == 1, f"{name} has {len(runs)} feedback folders"
            page = server[name].get_file(f"{runs[0]['path']}/{ASSIGNMENT}.html")
            feedback[name] = page["content"]

        exported = teacher.terminal(
            f"cd ~/{COURSE_FOLDER} && nbgrader export --to _grading/grades.csv; echo EXPORT-RC=$?",
            r"EXPORT-RC=\d+",
            timeout=300,
        )
        assert re.search(r"EXPORT-RC=0", exported), exported[-3000:]
        grades_csv = teacher.get_file(f"{COURSE_FOLDER}/_grading/grades.csv")["content"]
        timings["cycle: release to export"] = time.monotonic() - cycle

        # --- what came out ------------------------------------------------------------------
        rows = {row["student_id"]: row for row in csv.DictReader(io.StringIO(grades_csv))}
        assert {name: float(rows[name]["raw_score"]) for name in students} == {ada: total, bo: overridden}
        assert all(float(rows[name]["max_score"]) == total for name in students)
        assert all(float(rows[name]["score"]) == float(ours[name]["score"]) for name in students)  # export agrees
        for name in students:  # the exchange's submission time reached the gradebook: both say how late
            assert rows[name]["timestamp"] and rows[name]["timestamp"] == ours[name]["timestamp"].replace("T", " ")
            assert (ours[name]["late"], float(ours[name]["seconds_late"]) > 0) == ("yes", True), ours[name]
            assert float(rows[name]["late_submission_penalty"]) == 0 == float(ours[name]["late_penalty"])  # "none"

        for name, other in ((ada, bo), (bo, ada)):
            assert f"feedback for {name}" in feedback[name], "the student did not get the class grader's page"
            assert marker[name] in feedback[name], f"{name}'s feedback lacks the instructor's comment to them"
            assert marker[other] not in feedback[name], f"{name} received {other}'s feedback"
        assert f"{total:g} / {total:g}" in feedback[ada] or f"{total:.1f} / {total:.1f}" in feedback[ada]

        # --- who can read what --------------------------------------------------------------
        private = {
            "solutions": course_dir / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
            "reference module": course_dir / "autograder" / "reference" / f"ch{ASSIGNMENT}.py",
            "gradebook": course_dir / "_grading" / "gradebook.db",
            "grades export": course_dir / "_grading" / "grades.csv",
            "a collected submission": course_dir / "_grading" / "submitted" / ada / NOTEBOOK,
            "feedback": course_dir / "_grading" / "feedback" / ada / ASSIGNMENT / f"{ASSIGNMENT}.html",
        }
        for label, path in private.items():
            assert harness.run_as(instructor, "cat", str(path)).returncode == 0, f"control: instructor reads {label}"
            for name in students:
                assert harness.run_as(name, "cat", str(path)).returncode != 0, f"{name} can read the {label}"
        exchange = hub.exchange / harness.COURSE_ID
        for name, other in ((ada, bo), (bo, ada)):
            assert harness.run_as(name, "cat", str(home[name] / NOTEBOOK)).returncode == 0, "control: own notebook"
            assert harness.run_as(name, "ls", str(home[other])).returncode != 0, f"{name} can list {other}'s home"
            assert harness.run_as(name, "cat", str(home[other] / NOTEBOOK)).returncode != 0
            assert harness.run_as(name, "ls", str(home[instructor])).returncode != 0
            for folder in ("inbound", "feedback"):
                assert harness.run_as(name, "ls", str(exchange / folder)).returncode != 0, f"{name} lists {folder}/"
            # Over HTTP: a student's token opens no other server, and no formgrader is served.
            stranger = hub_server.UserServer(hub, other, server[name].token)
            assert stranger.request("GET", "/api/status", expect=None).status_code == 403
            assert server[name].request("GET", "/formgrader/api/assignments", expect=None).status_code == 404
        csp = {name: server[name].request("GET", "/api/status").headers["Content-Security-Policy"] for name in users}
        assert "frame-ancestors 'self'" in csp[instructor]
        assert all("frame-ancestors 'none'" in csp[name] for name in students)

        clock = time.monotonic()
        ada_notebook = next(entry["id"] for entry in notebooks if entry["student"] == ada)
        hub_screenshots.take(hub, instructor, ada, ada_notebook, ASSIGNMENT, SCREENSHOTS)
        timings["screenshots"] = time.monotonic() - clock
    finally:
        try:
            if hub.log_path.exists():
                shutil.copy(hub.log_path, SCREENSHOTS / "hub.log")
            hub.stop()
        finally:
            for name in users:
                harness.delete_user(name)
            shutil.rmtree(work, ignore_errors=True)
    leftovers = [name for name in users if _user_exists(name)]
    assert not leftovers, f"users left behind: {leftovers}"


def _class_grader(course_dir: Path, roster: Path, *options: str) -> subprocess.CompletedProcess:
    """``python -m autograder grade`` as root in the instructor's clone of the course (its own
    autograder/ and solutions/: the working directory comes first on sys.path)."""
    command = [sys.executable, "-m", "autograder", "grade", ASSIGNMENT, "_grading/submitted", "--out",
               "_grading/grades-03", "--work", "_grading", "--roster", str(roster), *options]  # fmt: skip
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(command, cwd=course_dir, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def _user_exists(name: str) -> bool:
    return subprocess.run(["id", name], capture_output=True).returncode == 0
