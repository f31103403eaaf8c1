"""What the class got wrong: a report made from the records, for the instructor.

``OUT/class/report.html`` and ``OUT/class/report.csv``, written with the other reports
(rebuild.py). For each graded cell, in notebook order: how many submissions were graded, the share
that earned its full points, the mean score, and the most common failure messages, grouped (numbers
and quoted values stand for any, so "got 3, expected 4" and "got 5, expected 4" are one message);
and the distribution of the scores (the grades people entered included) as a figure
(``OUT/class/scores.png``, in the page too, with a text alternative that says what it shows).

The page stands alone: headings, a table with a caption and ``th scope``, the figure inline as
data with its alt text, inline CSS, no script and nothing loaded from elsewhere.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import re
import statistics
from collections import Counter
from pathlib import Path

FAILURES_SHOWN = 3
STYLE = """
body { font-family: system-ui, sans-serif; max-width: 70rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; } caption { text-align: left; font-weight: bold; }
td, th { padding: .3rem .6rem; border-bottom: 1px solid #ccc; text-align: left; vertical-align: top; }
td.n { text-align: right; } ul { margin: 0; padding-left: 1.1rem; } img { max-width: 100%; }
"""


def _group(reason: str) -> str:
    """A failure message with its particulars (numbers, quoted values) replaced, to group alike ones."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", reason)
    text = re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "#", text)
    return text[:160]


def cell_rows(records: list[dict], hand: dict[str, dict]) -> list[dict]:
    """One row per graded cell, over the submissions that were graded."""
    from autograder.grading.report import _with_manual

    rows: dict[str, dict] = {}
    for record in records:
        if record["status"] != "graded":
            continue
        for cell in _with_manual(record, hand.get(record["student_id"], {})):
            empty = dict(grade_id=cell["grade_id"], kind=cell["kind"], points=cell["max_score"], scores=[])
            row = rows.setdefault(cell["grade_id"], {**empty, "failures": Counter()})
            row["scores"].append(cell["score"])
            if cell["score"] < cell["max_score"] and cell["reason"] not in ("passed", "needs_manual_grade"):
                row["failures"][_group(cell["reason"])] += 1
    for row in rows.values():
        scores = row.pop("scores")
        row["submissions"] = len(scores)
        row["passed"] = sum(score >= row["points"] for score in scores)
        row["share_passed"] = row["passed"] / len(scores) if scores else 0.0
        row["mean_score"] = statistics.fmean(scores) if scores else 0.0
    return list(rows.values())


def totals(records: list[dict], hand: dict[str, dict]) -> list[float]:
    from autograder.grading.report import _with_manual

    return [sum(c["score"] for c in _with_manual(r, hand.get(r["student_id"], {})))
            for r in records if r["status"] == "graded"]  # fmt: skip


def figure(scores: list[float], maximum: float) -> tuple[bytes, str]:
    """The score distribution as a PNG, and its text alternative."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(7, 3.2), dpi=100)
    ax = fig.add_subplot()
    bins = max(1, min(20, int(maximum) or 1))
    ax.hist(scores, bins=bins, range=(0, maximum or 1), color="#3a6ea5", edgecolor="white")
    ax.set_xlabel(f"score (out of {maximum:g})")
    ax.set_ylabel("submissions")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Scores of the graded submissions")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    if scores:
        full, zero = sum(s >= maximum for s in scores), sum(s == 0 for s in scores)
        alt = (f"Histogram of the scores of {len(scores)} graded submissions, out of {maximum:g}: lowest "
               f"{min(scores):g}, median {statistics.median(scores):g}, highest {max(scores):g}; "
               f"{full} with full marks, {zero} with 0.")  # fmt: skip
    else:
        alt = "No submission was graded: the histogram is empty."
    return buffer.getvalue(), alt


def write(out: Path, assignment: str, records: list[dict], hand: dict[str, dict]) -> Path:
    """Write OUT/class/report.html, report.csv and scores.png; returns the page."""
    folder = Path(out) / "class"
    folder.mkdir(parents=True, exist_ok=True)
    rows = cell_rows(records, hand)
    maximum = sum(c["max_score"] for c in records[0]["cells"]) if records else 0.0
    scores = totals(records, hand)
    png, alt = figure(scores, maximum)
    (folder / "scores.png").write_bytes(png)
    with open(folder / "report.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["grade_id", "kind", "points", "submissions", "passed", "share_passed", "mean_score",
                         "common_failures"])  # fmt: skip
        for row in rows:
            common = " | ".join(f"{n}x {text}" for text, n in row["failures"].most_common(FAILURES_SHOWN))
            writer.writerow([row["grade_id"], row["kind"], f"{row['points']:g}", row["submissions"], row["passed"],
                             f"{row['share_passed']:.3f}", f"{row['mean_score']:.3f}", common])  # fmt: skip
    statuses = Counter(r["status"] for r in records)
    page = _page(assignment, rows, statuses, png, alt, len(records))
    (folder / "report.html").write_text(page, encoding="utf-8")
    return folder / "report.html"


def _page(assignment: str, rows: list[dict], statuses: Counter, png: bytes, alt: str, count: int) -> str:
    e = html.escape
    title = f"{assignment}: what the class got right and wrong"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        'img-src data:">',
        f"<title>{e(title)}</title><style>{STYLE}</style></head><body><main>",
        f"<h1>{e(title)}</h1>",
        f"<p>{count} submission(s): " + ", ".join(f"{n} {e(s)}" for s, n in sorted(statuses.items())) + ".</p>",
        "<h2>Scores</h2>",
        f'<figure><img src="data:image/png;base64,{base64.b64encode(png).decode()}" alt="{e(alt)}">',
        f"<figcaption>{e(alt)}</figcaption></figure>",
        "<h2>Each graded cell</h2>",
        "<table><caption>Per graded cell, over the graded submissions: the share with full points, the mean "
        "score and the most common failures (numbers and quoted values shown as # and '…')</caption>",
        '<thead><tr><th scope="col">cell</th><th scope="col">kind</th><th scope="col">points</th>'
        '<th scope="col">full points</th><th scope="col">mean score</th><th scope="col">most common failures</th>'
        "</tr></thead><tbody>",
    ]
    for row in rows:
        failures = "".join(f"<li>{n} × <code>{e(text)}</code></li>"
                           for text, n in row["failures"].most_common(FAILURES_SHOWN))  # fmt: skip
        failures = f"<ul>{failures}</ul>" if failures else "none"
        parts.append(
            f'<tr><th scope="row">{e(row["grade_id"])}</th><td>{e(row["kind"])}</td>'
            f'<td class="n">{row["points"]:g}</td>'
            f'<td class="n">{row["passed"]} of {row["submissions"]} ({row["share_passed"]:.0%})</td>'
            f'<td class="n">{row["mean_score"]:.2f}</td><td>{failures}</td></tr>'
        )
    parts.append("</tbody></table></main></body></html>")
    return "\n".join(parts)
