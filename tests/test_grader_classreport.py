"""What the class got wrong (classreport.py), from records written by hand: shares, grouped failures,
the figure's text alternative, and a page a screen reader can read with nothing loaded from elsewhere."""

from __future__ import annotations

import csv
from html.parser import HTMLParser

from autograder.grading import classreport


def _record(student, status, softmax, scores_reason, written=0.0):
    cells = [
        dict(grade_id="softmax", kind="test", score=softmax, max_score=2.0,
             reason="passed" if softmax == 2 else "AssertionError: got 0.3, expected 0.5", hidden=False),
        dict(grade_id="scores", kind="test", score=1.0 if scores_reason == "passed" else 0.0, max_score=1.0,
             reason=scores_reason, hidden=True),
        dict(grade_id="written", kind="written", score=written, max_score=1.0, reason="needs_manual_grade"),
    ]  # fmt: skip
    return dict(student_id=student, assignment="03_attention_steps", status=status, flags=[], cells=cells)


RECORDS = [
    _record("ada", "graded", 2.0, "passed"),
    _record("bo", "graded", 0.0, "AssertionError: got 0.7, expected 0.5"),  # the same failure as cy's, other numbers
    _record("cy", "graded", 0.0, "AssertionError: got 0.9, expected 0.5"),
    _record("dee", "graded", 2.0, "NotImplementedError"),
    _record("eve", "empty_file", 0.0, "empty_file"),  # not graded: in no share
]


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.append((tag, dict(attrs)))


def test_shares_and_grouped_failures(tmp_path):
    hand = {"ada": {"written": (1.0, None)}}  # a written answer graded in formgrader
    classreport.write(tmp_path, "03_attention_steps", RECORDS, hand)
    with open(tmp_path / "class" / "report.csv", newline="") as handle:
        rows = {r["grade_id"]: r for r in csv.DictReader(handle)}
    assert (rows["softmax"]["submissions"], rows["softmax"]["passed"], rows["softmax"]["share_passed"]) == (
        "4", "2", "0.500")  # fmt: skip
    assert rows["softmax"]["common_failures"] == "2x AssertionError: got #, expected #"
    assert rows["scores"]["passed"] == "1" and rows["scores"]["mean_score"] == "0.250"
    assert rows["scores"]["common_failures"] == "2x AssertionError: got #, expected # | 1x NotImplementedError"
    assert (rows["written"]["passed"], rows["written"]["common_failures"]) == ("1", "")  # waiting is no failure


def test_the_page_is_accessible_and_self_contained(tmp_path):
    page = classreport.write(tmp_path, "03_attention_steps", RECORDS, {}).read_text()
    parser = _Page()
    parser.feed(page)
    assert {"h1", "h2", "table", "caption", "figure", "figcaption", "img"} <= set(parser.tags)
    assert not {"script", "link", "iframe", "object"} & set(parser.tags)
    assert all(a.get("scope") in ("col", "row") for tag, a in parser.attrs if tag == "th")
    (img,) = [a for tag, a in parser.attrs if tag == "img"]
    assert img["src"].startswith("data:image/png;base64,") and "http" not in page.replace("http-equiv", "")
    # the text alternative says what the figure shows: totals 3, 0, 0, 2 out of 4
    assert img["alt"] == ("Histogram of the scores of 4 graded submissions, out of 4: lowest 0, median 1, "
                          "highest 3; 0 with full marks, 2 with 0.")  # fmt: skip
    assert (tmp_path / "class" / "scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
