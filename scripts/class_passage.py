"""The passage of autograder/SPEED.md ("Measured at scale") that quotes a class benchmark's result file.

Written from the file, with the claims that bind each figure to it (the HTML comment that
autograder/authoring/document_claims.py checks, tests/test_benchmark_class.py): after a new run of
scripts/benchmark_class.py, paste the output over the passage (from its claims comment to the next heading).

    .venv/bin/python scripts/class_passage.py autograder/benchmarks/class_03.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.authoring.claims import FUNCTIONS  # noqa: E402

LABELS = {"jobs1": "`--jobs 1`", "jobs2": "`--jobs 2`", "distributed": "`--scheduler`, `{workers}` Dask workers"}
RUN_NAMES = {"jobs1": "one-job", "jobs2": "two-job", "distributed": "Dask"}


class Passage:
    """Markdown pieces, each a sentence or a table row, and the claims of the figures they quote."""

    def __init__(self, result: dict, name: str):
        self.result, self.name = result, name
        self.pieces: list[str] = []
        self.claims: list[dict] = []
        self.not_claims: list[str] = []

    def add(self, template: str, **values: tuple[str, str]) -> None:
        """A piece whose ``{field}``s are values of the result (an expression over its keys, and a format)."""
        shown = {k: format(eval(expr, {"__builtins__": {}, **FUNCTIONS, **self.result}), fmt)  # noqa: S307
                 for k, (expr, fmt) in values.items()}  # fmt: skip
        text = template.format(**shown)
        self.pieces.append(text)
        if values:
            self.claims.append({"text": text.strip(), "values": [list(pair) for pair in values.values()]})

    def plain(self, text: str, *not_claims: str) -> None:
        """A piece with no figure from the result (``not_claims``: its numbers that are not results)."""
        self.pieces.append(text)
        self.not_claims += list(not_claims)

    def markdown(self) -> str:
        """The claims comment (one text a line, with the values it quotes), then the pieces."""
        head = json.dumps({"result": self.name, "not_claims": self.not_claims})[:-1]
        claims = ",\n".join(json.dumps(claim) for claim in self.claims)
        return f'<!-- claims {head}, "claims": [\n{claims}\n]}} -->\n' + "".join(self.pieces)


def passage(result: dict, name: str) -> str:
    p = Passage(result, name)
    p.add("The shipped result, a class of {count} submissions ({h} honest, {w} with wrong answers, {b} broken, "
          "{x} hostile)\n", count=("count", ",d"), h=("mix['kind_counts']['honest']", "d"),
          w=("mix['kind_counts']['wrong']", "d"), b=("mix['kind_counts']['broken']", "d"),
          x=("mix['kind_counts']['hostile']", "d"))  # fmt: skip
    p.add("graded on {cores} cores on {date}, load {load} before, ", cores=("machine['cores']", "d"),
          date=("date[:10]", "s"), load=("machine['load_before'][0]", ".1f"))  # fmt: skip
    p.plain(f"with the same limits in every run (`--call-timeout {result['options']['call_timeout']:g}` "
            f"`--timeout {result['options']['timeout']:g}`):\n\n")  # fmt: skip
    p.plain("| run | wall time | grader CPU | machine busy | submissions per grader CPU-minute | peak RSS in MB: "
            "coordinator / worker / kernel / sandbox cgroup |\n| --- | --- | --- | --- | --- | --- |\n")  # fmt: skip
    for label, run in result["runs"].items():
        p.plain(f"| {LABELS[label].format(workers=run.get('workers'))} ")
        r = f"runs['{label}']"
        peaks = [k for k in ("coordinator", "worker", "kernel") if run.get(f"{k}_peak_rss_mb") is not None]
        memory = {k: (f"{r}['{k}_peak_rss_mb']", ".0f") for k in peaks}
        if run.get("sandbox_cgroup_peak_mb") is not None:
            memory["cgroup"] = (f"{r}['sandbox_cgroup_peak_mb']", ".0f")
        p.add("| {wall} s | {cpu} s | {busy} s | {rate} | "
              + " / ".join(f"{{{k}}}" for k in memory) + " |\n", wall=(f"{r}['wall_s']", ".1f"),
              cpu=(f"{r}['grader_cpu_s']", ".1f"), busy=(f"{r}['busy_cpu_s']", ".1f"),
              rate=(f"{r}['submissions_per_grader_cpu_minute']", ".1f"), **memory)  # fmt: skip
    p.plain("\nThe slowest submission of each run (the seconds its record gives):\n")
    timed = [label for label, run in result["runs"].items() if run.get("slowest")]
    for i, label in enumerate(timed):
        first = f"runs['{label}']['slowest'][0]"
        p.add("{seconds} s for {student} ({recipe}) ", seconds=(f"{first}['seconds']", ".1f"),
              student=(f"{first}['student']", "s"), recipe=(f"{first}['recipe']", "s"))  # fmt: skip
        p.plain(f"with {LABELS[label].format(workers=result['runs'][label].get('workers'))}"
                + (";\n" if i + 1 < len(timed) else ".\n"))  # fmt: skip
    if result["grades_identical"]:
        p.plain("\n`grades.csv` and `details.csv` were identical across the runs.\n")
    else:
        p.plain("\n`grades.csv` and `details.csv` were NOT identical across the runs (see the result file).\n")
    q = "projection"
    p.plain(f"Projected from the {RUN_NAMES[result['projection']['basis']]} run ")
    p.add("({w} CPU-s per submission on the workers, {c} on the coordinator ",
          w=(f"{q}['worker_cpu_s_per_submission']", ".2f"),
          c=(f"{q}['coordinator_cpu_s_per_submission']", ".3f"))  # fmt: skip
    p.add("besides its start, {start} CPU-s),\n", start=(f"{q}['coordinator_start_cpu_s']", ".1f"))
    rows = result["projection"]["by_workers"]
    p.add("{n} submissions take {h} h on {w} worker of {k} cores, ", n=(f"{q}['submissions']", ",d"),
          h=(f"{q}['by_workers'][0]['hours']", ".1f"), w=(f"{q}['by_workers'][0]['workers']", "d"),
          k=(f"{q}['cores_per_worker']", "d"))  # fmt: skip
    limited = next((i for i, row in enumerate(rows) if row["limit"] == "coordinator"), None)
    if limited is not None:
        hours, crossing = f"{q}['by_workers'][{limited}]['hours']", f"{q}['coordinator_limit_workers']"
        p.add("and no less than {h} h: past {x} workers the coordinator is the limit.\n", h=(hours, ".2f"),
              x=(crossing, ".0f"))  # fmt: skip
    else:
        p.add("and {h} h on {n}.\n", h=(f"{q}['by_workers'][-1]['hours']", ".2f"),
              n=(f"{q}['by_workers'][-1]['workers']", "d"))  # fmt: skip
    if "versus_nbgrader" in result:
        p.add("\nOn {n} honest submissions, plain `nbgrader autograde` kept the machine busy {a} CPU-s per submission "
              "and one job {b}:\n", n=("versus_nbgrader['count']", "d"),
              a=("versus_nbgrader['nbgrader_busy_cpu_s_per_submission']",
              ".1f"), b=("versus_nbgrader['jobs1_busy_cpu_s_per_submission']", ".1f"))  # fmt: skip
        p.add("{r} times nbgrader's ", r=("versus_nbgrader['cpu_ratio']", ".2f"))
        p.plain("(the target: at most 0.5), ", "the target: at most 0.5")
        p.add("the machine's load {load} before, other work included.\n",
              load=("versus_nbgrader['load_before'][0]", ".1f"))  # fmt: skip
    return p.markdown()


if __name__ == "__main__":
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "autograder" / "benchmarks" / "class_03.json"
    name = str(path.resolve().relative_to(ROOT))
    print(passage(json.loads(path.read_text()), name))
