"""Where the course is published, and everything derived from it.

Each setting is written in one place, and everything else is derived from it here:

- the repository, ``repository.url`` (``https://github.com/OWNER/NAME``) and ``repository.branch``
  in ``_config.yml``: the book's repository button and its Binder and Colab launch buttons
  (Jupyter Book builds those from the same two keys), the release that publishes the course
  package, and so the URL every student notebook's setup cell installs from in Colab;
- the class's JupyterHub, ``launch_buttons.jupyterhub_url`` in ``_config.yml``: empty (``""``)
  unless a course runs one; the theme shows a JupyterHub button only when it is set;
- the version, ``attention_course.__version__`` (``attention_course/__init__.py``): the package's
  version (pyproject.toml reads it), the release tag ``v<version>`` and its wheel.

The release of version X is the GitHub release ``vX`` of the repository, with the wheel
``attention_course-X-py3-none-any.whl`` attached; .github/workflows/course.yml creates it when
the tag ``vX`` is pushed. README and the book's introduction quote the install command; tests
(tests/test_publishing.py) check that every copy agrees.

``python -m autograder.authoring.publishing --ref REF --repository OWNER/NAME`` prints what a
push of REF to OWNER/NAME publishes (the workflow reads it; see :func:`plan`).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from autograder import course

CONFIG = course.ROOT / "_config.yml"
PACKAGE = "attention_course"  # the import name; the distribution is "attention-course"
GITHUB_REPOSITORY = re.compile(r"https://github\.com/(?P<owner>[A-Za-z0-9-]+)/(?P<name>[A-Za-z0-9._-]+)")


def _config() -> dict:
    return yaml.safe_load(CONFIG.read_text(encoding="utf-8"))


def course_version() -> str:
    """``attention_course.__version__``, read from the source (without importing the package)."""
    text = (course.ROOT / PACKAGE / "__init__.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE)
    if not match:
        raise ValueError(f"{PACKAGE}/__init__.py defines no __version__")
    return match.group(1)


def repository_url() -> str:
    """``repository.url`` of ``_config.yml``, checked to be a GitHub repository's address."""
    url = (_config().get("repository") or {}).get("url") or ""
    if not GITHUB_REPOSITORY.fullmatch(url) or url.endswith(".git"):
        raise ValueError(f"_config.yml: repository.url must be https://github.com/OWNER/NAME, got {url!r}")
    return url


def repository() -> str:
    """``OWNER/NAME`` of the course's repository, as GitHub writes ``github.repository``."""
    match = GITHUB_REPOSITORY.fullmatch(repository_url())
    return f"{match['owner']}/{match['name']}"


def branch() -> str:
    """``repository.branch``: the branch the book's launch buttons open and the book is published from."""
    name = (_config().get("repository") or {}).get("branch")
    if not name:  # unset, the theme's buttons would open "master"
        raise ValueError("_config.yml: repository.branch must name the branch the book is published from")
    return name


def hub_url() -> str:
    """``launch_buttons.jupyterhub_url`` of ``_config.yml``: a hub's https address, or ``""`` when unset."""
    url = (_config().get("launch_buttons") or {}).get("jupyterhub_url", "")
    if url is None or not isinstance(url, str):
        # The theme calls .strip("/") on it: `jupyterhub_url:` with no value would break the build.
        raise ValueError('_config.yml: launch_buttons.jupyterhub_url must be a hub\'s address or "" (no hub)')
    if url and not re.fullmatch(r"https://[^\s/]+(/[^\s]*)?", url):
        raise ValueError(f"_config.yml: launch_buttons.jupyterhub_url must start with https://, got {url!r}")
    return url


def release_tag(version: str | None = None) -> str:
    return f"v{version or course_version()}"


def wheel_name(version: str | None = None) -> str:
    """The file name ``pip wheel`` gives the course package (its name normalised, pure Python)."""
    return f"{PACKAGE}-{version or course_version()}-py3-none-any.whl"


def wheel_url(version: str | None = None, repository: str | None = None) -> str:
    """Where the release ``v<version>`` publishes the wheel: GitHub's download address of a
    release asset. ``repository`` (tests only) replaces ``https://github.com/OWNER/NAME``."""
    base = (repository or repository_url()).rstrip("/")
    return f"{base}/releases/download/{release_tag(version)}/{wheel_name(version)}"


def install_command() -> str:
    """What a reader runs to install the course package (the setup cell says the same)."""
    return f'pip install "{wheel_url()}"'


@dataclass
class Plan:
    """What one push publishes: the book (``pages``), a release (``release``), or neither."""

    pages: bool
    release: bool
    notes: list[str]
    errors: list[str]


def plan(ref: str, github_repository: str) -> Plan:
    """What a push of ``ref`` (``refs/heads/...``, ``refs/tags/...``, ``refs/pull/...``) to the
    GitHub repository ``github_repository`` (``OWNER/NAME``) publishes.

    The book goes to GitHub Pages from the configured branch, and a tag ``v*`` makes a release,
    only when the configured repository is the one pushed to: a copy (a fork) that has not set
    its own address in ``_config.yml`` would otherwise publish buttons and install commands that
    lead to another repository. A version tag that cannot be released is an error; a branch push
    of an unconfigured fork only skips the book, with a note.
    """
    ours = repository()
    same = ours.lower() == github_repository.lower()  # GitHub's names are case-insensitive
    elsewhere = (
        f"_config.yml's repository.url names {ours}, not {github_repository}: set it to "
        f"https://github.com/{github_repository} and run `python -m autograder generate` (README, 'Publish the course')"
    )
    notes: list[str] = []
    errors: list[str] = []
    pages = release = False
    if ref.startswith("refs/tags/v"):
        tag = ref.removeprefix("refs/tags/")
        if tag != release_tag():
            errors.append(
                f"the tag {tag} is not v + attention_course.__version__ ({release_tag()}): "
                f"set __version__ in attention_course/__init__.py, regenerate, and tag that commit"
            )
        if not same:
            errors.append(elsewhere)
        release = not errors
    elif ref == f"refs/heads/{branch()}":
        pages = same
        if not same:
            notes.append(f"the book is not published: {elsewhere}")
    return Plan(pages=pages, release=release, notes=notes, errors=errors)


def outputs(result: Plan) -> dict[str, str]:
    """The values the workflow's later jobs read (``key=value`` lines for ``$GITHUB_OUTPUT``)."""
    return {
        "pages": str(result.pages).lower(),
        "release": str(result.release).lower(),
        "version": course_version(),
        "tag": release_tag(),
        "wheel": wheel_name(),
        "wheel_url": wheel_url(),
    }


def main(argv: list[str] | None = None) -> int:
    """Print what a push publishes (key=value lines); exit 1 when a version tag cannot be released."""
    parser = argparse.ArgumentParser(prog="python -m autograder.authoring.publishing", description=main.__doc__)
    parser.add_argument("--ref", required=True, help="the pushed ref, as $GITHUB_REF gives it")
    parser.add_argument("--repository", required=True, help="OWNER/NAME pushed to, as $GITHUB_REPOSITORY gives it")
    parser.add_argument("--github-output", type=Path, help="append key=value lines to this file ($GITHUB_OUTPUT)")
    args = parser.parse_args(argv)
    result = plan(args.ref, args.repository)
    lines = [f"{key}={value}" for key, value in outputs(result).items()]
    for note in result.notes:
        print(f"::warning::{note}")
    for error in result.errors:
        print(f"::error::{error}")
    if args.github_output:
        with args.github_output.open("a", encoding="utf-8") as out:
            out.write("".join(f"{line}\n" for line in lines))
    print("\n".join(lines))
    return 1 if result.errors else 0


if __name__ == "__main__":
    sys.exit(main())
