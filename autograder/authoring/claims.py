"""Numbers quoted in a chapter's prose, bound to the results they come from ("claims").

A markdown cell of an instructor notebook that quotes a figure from a shipped result or from a
notebook's own output declares it in its cell metadata (invisible in JupyterLab and in the
book), under ``claims``, a list of objects:

- **from a shipped result** (a JSON file under ``attention_course/assets/``)::

    {"text": "54 %", "result": "transformer_results.json",
     "value": "100 * models['rnn_attention']['by_length']['21-25']['exact_match']", "format": ".0f"}

  ``text`` occurs exactly once in the cell's source; ``value`` is a Python expression over the JSON object's
  top-level keys (and :data:`FUNCTIONS`: min, max, sum, len, round, abs, sorted,
  float, int, zip, enumerate, all, any); ``format(value, format)`` occurs in ``text``. A text
  that quotes several numbers ("51 to 65 times") carries one claim per number, with the same
  text: every number in a claim's text must be one of its claims' formatted values.

  A number that the prose states as a **bound** ("differs by at most 2.1 points", "stays above
  90", "gets none right (0 %)") carries ``"bound": "max"`` (the text's number is an upper bound
  of the value) or ``"bound": "min"`` (a lower bound). The value is then rounded towards the
  bound, up for ``max`` and down for ``min``, at the precision of ``format`` (whose type must be
  ``d``, ``f`` or ``%``), and that is what must occur in the text: 2.07 gives "2.1" for
  ``max`` (2.07 <= 2.1) while 2.14 gives "2.2", so "at most 2.1" no longer passes once the value
  is 2.14; 90.2 gives "90" for ``min`` and 89.6 gives "89". The check is the inequality at
  the text's precision, and a tight one: a looser bound ("at most 3" for 2.07) is refused too.

- **from a cell's printed output** (the instructor notebook's one graded run)::

    {"text": "0.51", "cell": "c22-code", "output": "rho = 0.9: norm after 10 steps (\\\\S+)"}

  ``cell`` is the nbformat id of the code cell; ``output`` is a regular expression with one
  group per number of ``text``, in order, searched in that cell's printed text, or ``true``:
  each number of ``text`` occurs somewhere in that output. Numbers compare at the precision the
  text writes them: "0.51" matches a printed 5.10e-01 or 0.5098, "1.6 \\times 10^{-5}" a printed
  1.60e-05, "94%" a printed 94 or 93.7 (the regular expression picks which printed number);
  ``"scale": 100`` multiplies the printed numbers first ("98%" for a printed 0.98). With a
  regular expression, ``"bound": "max"`` or ``"min"`` reads each number of the text as a bound of
  the printed one, as above: the printed number rounded up (``max``) or down (``min``) at the
  text's precision.

A figure that is not a result (a definition, a target, chance, a quotation from a paper) is
listed under ``not_claims``, a list of texts of the cell. :func:`figures` finds the figures
every chapter must bind (percentages, ratios, rates per second, BLEU scores, decimals in nats or bits, decimals in
tables); tests/test_claims.py checks that each one lies in a claim's or a not-claim's text.

The student notebooks do not carry this metadata (:class:`ClearClaims` removes it in
``generate_assignment``): a written answer's claims would otherwise quote its model answer.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from nbgrader.preprocessors import NbGraderPreprocessor

from autograder import course

KEYS = ("claims", "not_claims")
ASSETS = course.ROOT / "attention_course" / "assets"
FUNCTIONS = {f.__name__: f for f in (min, max, sum, len, round, abs, sorted, float, int, zip, enumerate, all, any)}

# A number as prose writes it: 94, 0.51, 1.6e-05, 1.6 \times 10^{-5} (sign ignored).
NUMBER = re.compile(
    r"(?<![\w.])(?P<mantissa>\d+(?:\.\d+)?)"
    r"(?:\s*\\times\s*10\^\{?(?P<latex>[-−]?\d+)\}?|[eE](?P<exp>[-+]?\d+))?(?![\w])"
)
_NUM = r"(?<![\w.])(\d+(?:\.\d+)?)"
# Figures a chapter must bind to a result or list as not one (group 1: the number).
PERCENTAGE = re.compile(rf"{_NUM}\s?(?:\\?%|percent\b|per cent\b)")
FIGURES_OUTSIDE_MATH = {
    "ratio": re.compile(rf"{_NUM}\s?(?:×|x\b|times\b|-fold\b)(?!\s*\d)"),
    "rate": re.compile(rf"{_NUM}\s?k?(?:\s+[A-Za-z-]+){{0,2}}\s*(?:/\s?s\b|per second\b|a second\b)"),
    "BLEU": re.compile(
        r"\bBLEU(?:\s+(?:score|scores|of|is|was|were|between|from|about|around|near|only|just|falls|fell|"
        rf"drops|dropped|rises|rose|stays|stayed|reaches|reached|at)){{0,3}}[\s(]+{_NUM}"
    ),
    "measurement": re.compile(r"(?<![\w.])(\d+\.\d+)\s?(?:nats?|bits?)\b"),  # a decimal with a unit: "0.26 nats"
}
TABLE_ROW = re.compile(r"(?m)^\|.*$")
DECIMAL = re.compile(r"(?<![\w.])(\d+\.\d+)(?![\w.])")
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$", re.DOTALL)


@dataclass(frozen=True)
class Number:
    value: float
    quantum: float  # the step of the last digit written: 0.01 for "0.51", 1e-06 for "1.6e-05"
    literal: str
    start: int
    end: int

    def matches(self, printed: float, bound: str | None = None) -> bool:
        """Whether ``printed`` rounds to this number at the precision it is written with; with ``bound``
        ("max" or "min"), whether this number is ``printed`` rounded up (max) or down (min) at that precision:
        a tight upper or lower bound of it."""
        printed, slack = abs(printed), 1e-9 * self.quantum + 1e-12 * self.value
        if bound == "max":
            return printed <= self.value + slack and self.value - self.quantum < printed - slack
        if bound == "min":
            return self.value - slack <= printed and printed < self.value + self.quantum - slack
        return abs(printed - self.value) <= self.quantum / 2 * (1 + 1e-9) + 1e-12 * self.value


def numbers(text: str) -> list[Number]:
    found = []
    for match in NUMBER.finditer(text):
        mantissa = match.group("mantissa")
        exponent = match.group("latex") or match.group("exp") or "0"
        exponent = int(exponent.replace("−", "-"))
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        value = float(mantissa) * 10.0**exponent
        found.append(Number(value, 10.0 ** (exponent - decimals), match.group(), match.start(), match.end()))
    return found


def _blank(pattern: re.Pattern, text: str) -> str:
    return pattern.sub(lambda m: " " * len(m.group()), text)


def figures(source: str) -> list[tuple[str, int, int]]:
    """(kind, start, end) of each figure in a markdown source that must be a claim or a not-claim:
    percentages (also in math), and outside math and code: ratios ("3x", "51 to 65 times"),
    rates ("580 target tokens per second"), BLEU scores ("BLEU 92"), decimals with a unit of information
    ("0.2 nats", "1.5 bits"), decimals in table rows."""
    text = _blank(CODE, source)
    found = [("percentage", m.start(1), m.end(1)) for m in PERCENTAGE.finditer(text)]
    prose = _blank(MATH, text)
    for kind, pattern in FIGURES_OUTSIDE_MATH.items():
        found += [(kind, m.start(1), m.end(1)) for m in pattern.finditer(prose)]
    for row in TABLE_ROW.finditer(prose):
        found += [("table", row.start() + m.start(1), row.start() + m.end(1)) for m in DECIMAL.finditer(row.group())]
    return sorted(set(found), key=lambda f: f[1])


def spans(source: str, texts) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for t in texts if t for m in re.finditer(re.escape(t), source)]


def uncovered(cell) -> list[str]:
    """The figures of a markdown cell that lie in no claim's and no not-claim's text."""
    declared = [c.get("text", "") for c in cell.metadata.get("claims", [])] + list(cell.metadata.get("not_claims", []))
    covered = spans(cell.source, declared)
    missing = []
    for kind, start, end in figures(cell.source):
        if not any(a <= start and end <= b for a, b in covered):
            context = " ".join(cell.source[max(0, start - 40) : end + 25].split())
            missing.append(f"{kind} {cell.source[start:end]!r} in '...{context}...'")
    return missing


# ---- checking the declarations ---------------------------------------------------------------------------


def load_result(name: str, results=ASSETS):
    """The JSON result file ``name`` under ``results`` (the shipped assets; the repository for its guides)."""
    path = (results / name).resolve()
    if not path.is_relative_to(results.resolve()) or not path.is_file():
        raise ValueError(f"no result file {(results / name).relative_to(course.ROOT)}")
    return json.loads(path.read_text())


def evaluate(claim: dict, results=ASSETS):
    data = load_result(claim["result"], results)
    names = dict(data) if isinstance(data, dict) else {"result": data}
    # globals, not locals, so that comprehensions in the expression see the names too
    return eval(claim["value"], {"__builtins__": {}, **FUNCTIONS, **names})  # an author's expression


BOUNDS = ("max", "min")
_SPEC = re.compile(r"^(?P<head>.*?)(?:\.(?P<precision>\d+))?(?P<type>[dfF%])$")


def directed_format(value, spec: str, bound: str) -> str:
    """``format(value, spec)`` with the value rounded towards the bound at the precision of ``spec``: up for
    "max" (the text's number must be at least the value), down for "min". ``spec``'s type is d, f, F or %."""
    match = _SPEC.match(spec)
    if bound not in BOUNDS or not match:
        raise ValueError(f"a bound is 'max' or 'min', with a format of type d, f or % (got {bound!r}, {spec!r})")
    kind, precision = match["type"], int(match["precision"] or (0 if match["type"] == "d" else 6))
    scale = (100 if kind == "%" else 1) * 10**precision
    scaled = float(value) * scale
    slack = 1e-9 * max(1.0, abs(scaled))  # 2.0 * 10 is 20.000000000000004: not a reason to round up to 21
    steps = math.ceil(scaled - slack) if bound == "max" else math.floor(scaled + slack)
    return format(steps, spec) if kind == "d" else format(steps / scale, spec)


def problems_with(cell, code_cells: dict[str, object], results=ASSETS) -> list[str]:
    """Everything wrong with a markdown cell's claims and not-claims, except output values (those need the
    executed notebook: :func:`output_problems`). ``code_cells``: the notebook's code cells by id; ``results``:
    the folder the claims' result files are named from."""
    where = f"cell {cell.get('id')!r}"
    claims, not_claims = cell.metadata.get("claims", []), cell.metadata.get("not_claims", [])
    if not isinstance(claims, list) or not isinstance(not_claims, list):
        return [f"{where}: 'claims' and 'not_claims' must be lists"]
    problems = [
        f"{where}: not_claims text {t!r} does not occur in the cell" for t in not_claims if t not in cell.source
    ]
    by_text: dict[str, list[str]] = {}
    for claim in claims:
        text = claim.get("text") if isinstance(claim, dict) else None
        if not text or text not in cell.source:
            problems.append(f"{where}: claim text {text!r} does not occur in the cell")
            continue
        if cell.source.count(text) > 1:
            problems.append(f"{where}: claim text {text!r} occurs {cell.source.count(text)} times: make it unique")
        if "bound" in claim and claim["bound"] not in BOUNDS:
            problems.append(f"{where}: claim {text!r}: 'bound' is 'max' or 'min', not {claim['bound']!r}")
            continue
        if "output" in claim:
            problems += _output_claim_problems(where, claim, code_cells)
        elif {"result", "value", "format"} <= set(claim):
            bound = claim.get("bound")
            try:
                value = evaluate(claim, results)
                shown = directed_format(value, claim["format"], bound) if bound else format(value, claim["format"])
            except Exception as error:  # the author's expression or file
                problems.append(f"{where}: claim {text!r}: {claim['value']!r} on {claim['result']}: {error!r}")
                continue
            if shown not in text:
                rounded = f" ({value!r}, rounded {'up' if bound == 'max' else 'down'} for a bound)" if bound else ""
                problems.append(
                    f"{where}: claim {text!r}: {claim['result']} gives {claim['value']} = {shown}{rounded}, "
                    "not in the text"
                )
            by_text.setdefault(text, []).append(shown)
        else:
            problems.append(f"{where}: claim {text!r} needs result, value and format, or output and cell")
    for text, shown in by_text.items():
        rest = text
        for value in sorted(shown, key=len, reverse=True):
            rest = rest.replace(value, " ")
        rest = re.sub(r"\\times\s*10\^\{?[-−]?\d+\}?", " ", rest)
        if re.search(r"\d", rest):
            problems.append(
                f"{where}: claim text {text!r} holds numbers that none of its claims checks ({', '.join(shown)} are "
                "checked): narrow the text to the quoted figures, or add a claim for each number"
            )
    return problems


def _output_claim_problems(where: str, claim: dict, code_cells: dict) -> list[str]:
    text, pattern = claim["text"], claim["output"]
    if claim.get("cell") not in code_cells:
        return [f"{where}: output claim {text!r} names {claim.get('cell')!r}, which is not a code cell's id"]
    if not isinstance(claim.get("scale", 1), (int, float)):
        return [f"{where}: output claim {text!r}: 'scale' must be a number"]
    if pattern is True:
        if "bound" in claim:
            return [f"{where}: output claim {text!r}: a bound needs a regular expression that picks the printed number"]
        return []
    if not isinstance(pattern, str):
        return [f"{where}: output claim {text!r}: 'output' is true or a regular expression"]
    try:
        groups = re.compile(pattern).groups
    except re.error as error:
        return [f"{where}: output claim {text!r}: {pattern!r} is not a regular expression ({error})"]
    if groups != len(numbers(text)):
        return [f"{where}: output claim {text!r} has {len(numbers(text))} numbers but {pattern!r} {groups} groups"]
    return []


def output_text(cell) -> str:
    """What a code cell printed: its streams and the plain text of its results and displays."""
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        elif "data" in output:
            parts.append(output["data"].get("text/plain", ""))
        elif output.get("output_type") == "error":
            parts.append(f"{output.get('ename')}: {output.get('evalue')}")
    return "".join(part if isinstance(part, str) else "".join(part) for part in parts)


def _printed_numbers(text: str) -> list[float]:
    return [n.value for n in numbers(text.replace("−", "-"))]


def output_problems(cell, executed_cells: dict[str, object]) -> list[str]:
    """Output claims of a markdown cell whose numbers the named cell's output does not show."""
    problems = []
    for claim in cell.metadata.get("claims", []):
        if "output" not in claim or claim.get("cell") not in executed_cells:
            continue
        printed = output_text(executed_cells[claim["cell"]])
        quoted = numbers(claim["text"])
        where = f"cell {cell.get('id')!r}, claim {claim['text']!r}"
        if claim["output"] is True:
            values = [v * claim.get("scale", 1) for v in _printed_numbers(printed)]
            missing = [n.literal for n in quoted if not any(n.matches(v) for v in values)]
            if missing:
                problems.append(f"{where}: {missing} not in the output of {claim['cell']!r}:\n{printed[-1500:]}")
            continue
        match = re.search(claim["output"], printed)
        if not match:
            problems.append(
                f"{where}: {claim['output']!r} not found in the output of {claim['cell']!r}:\n{printed[-1500:]}"
            )
            continue
        bound = claim.get("bound")
        for n, group in zip(quoted, match.groups()):
            try:
                value = float(group.replace("−", "-").rstrip("%")) * claim.get("scale", 1)
            except (TypeError, ValueError):
                value = math.nan
            if not n.matches(value, bound):
                side = "upper" if bound == "max" else "lower"
                as_bound = f" (the text's number as the {side} bound)" if bound else ""
                problems.append(f"{where}: the text says {n.literal}, {claim['cell']!r} printed {group}{as_bound}")
    return problems


class ClearClaims(NbGraderPreprocessor):
    """nbgrader preprocessor (in ``generate_assignment``): drop the claims metadata from the student notebook."""

    def preprocess_cell(self, cell, resources, index):
        for key in KEYS:
            cell.metadata.pop(key, None)
        return cell, resources
