"""Numbers quoted in the repository's Markdown guides (README.md, autograder/SPEED.md), bound to result files.

A passage of a guide that quotes measured figures starts with an HTML comment (which no Markdown viewer
shows) declaring them, as a chapter's markdown cell declares its figures in its metadata
(:mod:`autograder.authoring.claims`)::

    <!-- claims {"result": "autograder/benchmarks/class_03.json",
      "claims": [{"text": "30 submissions", "value": "count", "format": "d"}],
      "not_claims": ["chapter 03"]} -->

The passage runs from the comment to the next heading or the next such comment. Each claim is checked as
a chapter's is (:func:`claims.problems_with`), its ``result`` a path from the repository root (the
passage's ``result`` unless the claim names its own). A text that quotes several figures may list them
together, ``{"text": "...", "values": [["count", "d"], ["runs['jobs1']['wall_s']", ".1f"]]}``: one claim
per value and format. And every number of the passage outside code
(inline or fenced) and link targets lies in a claim's or a not-claim's text: a measured figure cannot
be typed in by hand beside the checked ones.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from autograder import course
from autograder.authoring import claims

COMMENT = re.compile(r"<!--\s*claims\s+(?P<body>.*?)-->", re.DOTALL)
HEADING = re.compile(r"(?m)^#{1,6} ")
LINK_TARGET = re.compile(r"\]\([^)]*\)")


@dataclass
class Passage:
    """A declared passage, shaped as :func:`claims.problems_with` reads a markdown cell."""

    id: str  # "FILE:LINE"
    source: str
    metadata: dict = field(default_factory=dict)

    def get(self, key: str, default=None):
        return getattr(self, key, default)


def passages(path: Path) -> tuple[list[Passage], list[str]]:
    """The declared passages of a Markdown file, and the problems found reading their declarations."""
    text = path.read_text(encoding="utf-8")
    name = path.relative_to(course.ROOT) if path.is_relative_to(course.ROOT) else path
    found, problems = [], []
    comments = list(COMMENT.finditer(text))
    for i, match in enumerate(comments):
        where = f"{name}:{text.count(chr(10), 0, match.start()) + 1}"
        ends = [m.start() + match.end() for m in HEADING.finditer(text[match.end() :])][:1]
        if i + 1 < len(comments):
            ends.append(comments[i + 1].start())
        source = text[match.end() : min(ends, default=len(text))]
        try:
            declared = json.loads(match.group("body"))
        except json.JSONDecodeError as error:
            problems.append(f"{where}: the claims comment is not JSON: {error}")
            continue
        if not isinstance(declared, dict) or not isinstance(declared.get("claims", []), list):
            problems.append(f"{where}: the claims comment is an object with a list 'claims'")
            continue
        listed = []
        for claim in declared.get("claims", []):
            claim = dict(claim, result=claim.get("result", declared.get("result")))
            pairs = claim.pop("values", None)
            listed += [dict(claim, value=value, format=spec) for value, spec in pairs] if pairs else [claim]
        metadata = {"claims": listed, "not_claims": declared.get("not_claims", [])}
        found.append(Passage(where, source, metadata))
    return found, problems


def unbound_numbers(passage: Passage) -> list[str]:
    """The numbers of a passage (outside code and link targets) in no claim's and no not-claim's text."""
    text = claims._blank(LINK_TARGET, claims._blank(claims.CODE, passage.source))
    declared = [c.get("text", "") for c in passage.metadata["claims"]] + list(passage.metadata["not_claims"])
    covered = claims.spans(passage.source, declared)
    return [
        f"{passage.id}: {n.literal!r} in '...{' '.join(passage.source[max(0, n.start - 40) : n.end + 25].split())}...'"
        for n in claims.numbers(text)
        if not any(a <= n.start and n.end <= b for a, b in covered)
    ]


def problems(path: Path) -> list[str]:
    """Everything wrong with the declared passages of a Markdown file (none when it declares none)."""
    found, problems = passages(path)
    for passage in found:
        problems += claims.problems_with(passage, {}, results=course.ROOT)
        problems += [f"unbound number {p}" for p in unbound_numbers(passage)]
    return problems
