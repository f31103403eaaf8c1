"""The reports, made again from the records in OUT/results/ and the gradebook, without grading anyone.

``python -m autograder grade ... --reports-only`` runs this alone (no sandbox, no root needed
beyond reading OUT and the gradebook); a grading run runs it at its end. Each time:

- the grades and comments people entered in formgrader are read from the gradebook
  (gradebook.hand_grades, gradebook.comments);
- each submission's time goes into the gradebook and the late policy is applied (lateness.py);
- ids that are not on the roster are flagged ``not_on_roster`` (ids.py);
- ``grades.csv``, ``details.csv``, the feedback pages (report.py) and the class report
  (classreport.py: ``OUT/class/``) are written again;
- the feedback pages go to the course's feedback folder for nbgrader's ``release_feedback``, and
  into a zip per student for a learning platform (release.py); what root wrote in WORK and OUT is
  handed to their owner.
"""

from __future__ import annotations

from pathlib import Path

from autograder.grading import classreport, gradebook, lateness, records, release, report


def rebuild(out: Path, work: Path, assignment: str, roster: set[str] | None = None, due: str | None = None) -> list:
    """Write every report of ``assignment`` in ``out``; returns the records they were made from."""
    from autograder.grading.template import load_template

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    found = records.load_all(out, assignment)
    if roster is not None:
        known = {ids_safe(name) for name in roster}
        for record in found:
            flags = set(record["flags"]) - {"not_on_roster"}
            if record["student_id"] not in known:
                flags.add("not_on_roster")
            record["flags"] = sorted(flags)
    hand = gradebook.hand_grades(work, assignment)
    late = lateness.apply(work, assignment, found, due)
    report.write_csvs(out, found, hand, late)
    released = {gid: t.released for gid, t in load_template(assignment).tests.items() if not t.hidden}
    report.write_feedback(out, found, hand, released, late, gradebook.comments(work, assignment))
    classreport.write(out, assignment, found, hand)
    release.course_feedback(out, work, assignment, found)
    release.pack(out, assignment, found)
    release.hand_over(Path(work), out)
    return found


def ids_safe(name: str) -> str:
    from autograder.grading.collect import safe_student_id

    return safe_student_id(name)


def missing(found: list[dict], roster: set[str] | None) -> list[str]:
    """Students on the roster with no record."""
    if roster is None:
        return []
    have = {record["student_id"] for record in found}
    return sorted(name for name in (ids_safe(n) for n in roster) if name not in have)
