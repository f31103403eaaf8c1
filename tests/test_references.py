"""The chapters' reference lists and references.bib (the bibliography page) agree.

- Every entry of a chapter's "References" list is one entry of references.bib (same first
  author, same main title, same year when the list gives one).
- Every work a chapter or a page cites in its text ("Elman (1990)", "(Cho et al., 2014)",
  "Bahdanau, Cho & Bengio (2015)") is in references.bib, and in the chapter's own list when it
  has one.
- Every entry of references.bib is cited by some chapter or page: the bibliography page
  (``:all:``) lists nothing that the course does not use.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache

import nbformat
import pytest
from pybtex.database import parse_file
from pybtex.richtext import Text

from autograder import course

BIB = course.ROOT / "references.bib"
PAGES = [
    "intro.md",
    "glossary.md",
    "bibliography.md",
    *sorted(p.relative_to(course.ROOT).as_posix() for p in (course.ROOT / "guides").glob("*.md")),
]
HEADING = re.compile(r"^#+\s*References\s*$", re.MULTILINE)
NAME = r"[A-Z][A-Za-zÀ-ÿ'\-]+"
# Author (and co-authors or "et al."), then the year after a comma or an opening parenthesis.
CITATION = re.compile(rf"({NAME})(?:(?:,? {NAME})*,? (?:&|and) {NAME}| et al\.?)?(?:,\s*|\s+\()((?:19|20)\d\d)\b")


def normalise(text: str) -> str:
    """Lower-case letters and digits only, accents removed: for comparing titles and names."""
    text = unicodedata.normalize("NFKD", text)
    return re.sub(r"[^a-z0-9]", "", text.encode("ascii", "ignore").decode().lower())


def _latex(text: str) -> str:
    return Text.from_latex(text).render_as("text")


@dataclass(frozen=True)
class Entry:
    key: str
    year: str
    last_names: tuple[str, ...]  # normalised
    main_title: str  # normalised, the part before a colon

    def listed_in(self, item: str) -> bool:
        norm = normalise(item)
        years = re.findall(r"\((?:19|20)\d\d\)", item)
        return self.main_title in norm and self.last_names[0] in norm and (not years or f"({self.year})" in years)


@cache
def entries() -> list[Entry]:
    found = []
    for key, entry in parse_file(BIB).entries.items():
        names = tuple(normalise(_latex(" ".join(p.last_names))) for p in entry.persons.get("author", []))
        title = _latex(entry.fields["title"])
        found.append(Entry(key, entry.fields.get("year", ""), names, normalise(title.split(":")[0])))
    return found


def _markdown(assignment: str) -> str:
    nb = nbformat.read(course.solution_notebook(assignment), as_version=4)
    return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def split_references(text: str) -> tuple[str, list[str]]:
    """(the text without its References section, the items of that section's list)."""
    match = HEADING.search(text)
    if not match:
        return text, []
    section = text[match.end() :]
    following = re.search(r"^#+ ", section, re.MULTILINE)
    if following:
        section = section[: following.start()]
    items = [" ".join(item.split()) for item in re.split(r"^- ", section, flags=re.MULTILINE)[1:]]
    return text[: match.start()] + (text[match.end() + following.start() :] if following else ""), items


def citations(text: str) -> set[tuple[str, str]]:
    """(surname, year) of the author-year citations in a text."""
    return {(normalise(name), year) for name, year in CITATION.findall(text)}


def cited_entries(surname: str, year: str) -> list[Entry]:
    return [e for e in entries() if e.year == year and surname in e.last_names]


SOURCES = [*course.assignments(), *PAGES]


def _text(source: str) -> str:
    return (course.ROOT / source).read_text() if source.endswith(".md") else _markdown(source)


@pytest.mark.parametrize("source", SOURCES)
def test_listed_references_are_in_the_bibliography(source):
    _, items = split_references(_text(source))
    for item in items:
        matches = [e.key for e in entries() if e.listed_in(item)]
        assert len(matches) == 1, (
            f"{source}: the reference {item!r} matches {matches or 'no entry'} of references.bib "
            "(one entry each: same first author, main title and year)"
        )


@pytest.mark.parametrize("source", SOURCES)
def test_cited_works_are_listed(source):
    body, items = split_references(_text(source))
    for surname, year in sorted(citations(body)):
        assert cited_entries(surname, year), f"{source} cites {surname} ({year}), which references.bib lacks"
        if items:
            assert any(surname in normalise(item) and f"({year})" in item for item in items), (
                f"{source} cites {surname} ({year}) but its References list does not hold it"
            )


def test_every_bibliography_entry_is_cited():
    used = set()
    for source in SOURCES:
        body, items = split_references(_text(source))
        used.update(e.key for item in items for e in entries() if e.listed_in(item))
        used.update(e.key for surname, year in citations(body) for e in cited_entries(surname, year))
    unused = sorted({e.key for e in entries()} - used)
    assert not unused, f"references.bib holds works that no chapter or page cites: {unused}"


def test_the_matcher_tells_close_works_apart():
    """Positive control: two papers of Cho et al. (2014), and 'Attention is (not) not Explanation'."""
    gru = "Cho, K., ... & Bengio, Y. (2014). Learning phrase representations using RNN encoder-decoder"
    properties = "Cho, K., ... & Bengio, Y. (2014). On the properties of neural machine translation"
    for item, key in [
        (properties, "cho2014"),
        ("Jain, S., & Wallace, B. C. (2019). Attention is not explanation.", "jain2019"),
    ]:
        assert [e.key for e in entries() if e.listed_in(item)] == [key]
    assert "cho2014" not in [e.key for e in entries() if e.listed_in(gru)]
    assert citations("as Bahdanau, Cho & Bengio (2015) and (Elman, 1990) showed; NeurIPS 2017") == {
        ("bahdanau", "2015"),
        ("elman", "1990"),
    }
