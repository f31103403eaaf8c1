"""The course's schematic diagrams: ``scripts/diagrams/`` -> ``attention_course/assets/diagrams/*.svg``.

The package draws each diagram ``NN_name`` in its own module ``scripts/diagrams/dNN_name.py``
(``common.py`` is the shared drawing kit). The committed SVGs must equal a fresh run of the package
(they are generated, never edited by hand; the output depends on the pinned matplotlib), each must
be well-formed XML that a screen reader can name (``role="img"``, a ``<title>`` and a ``<desc>``),
self-contained (no external reference, no raster image), and ``attention_course.plotting.show_diagram`` must show them.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import PurePosixPath

import pytest
import tomllib

from autograder import course

SVG_NS = "{http://www.w3.org/2000/svg}"
FOLDER = course.ROOT / "attention_course" / "assets" / "diagrams"
# The names every chapter refers to (COMMON brief, "Diagrams"): fixed, independent of the script.
REQUIRED = [
    "01_unrolled_rnn_tagger",
    "02_encoder_decoder",
    "03_attention_unit",
    "04_qkv_multihead",
    "04_variants",
    "05_training_pipeline",
    "06_reading_a_map",
    "07_transformer_block",
    "08_attention_at_scale",
    "09_attention_beyond_sequences",
]


PACKAGE = course.ROOT / "scripts" / "diagrams"
COMMAND = ".venv/bin/python -m scripts.diagrams"


@pytest.fixture(scope="module")
def script():
    """The package ``scripts.diagrams`` (scripts/ is not on the tests' path: loaded from its folder)."""
    spec = importlib.util.spec_from_file_location(
        "scripts.diagrams", PACKAGE / "__init__.py", submodule_search_locations=[str(PACKAGE)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its diagram modules are imported as its submodules, and dataclasses look there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        for name in [name for name in sys.modules if name == spec.name or name.startswith(spec.name + ".")]:
            sys.modules.pop(name)


def test_every_module_of_the_package_is_a_diagram_or_the_kit():
    """A diagram module misnamed (``d9_x.py``, ``09_x.py``) would be skipped silently: refuse it."""
    kit = {"__init__", "__main__", "common"}
    stray = [p.name for p in PACKAGE.glob("*.py") if p.stem not in kit and not re.fullmatch(r"d\d\d_\w+", p.stem)]
    assert not stray, f"scripts/diagrams/ modules must be named dNN_<name>.py (the diagram NN_<name>): {stray}"


def test_every_required_diagram_is_drawn_and_shipped(script):
    assert set(REQUIRED) <= set(script.DIAGRAMS), f"the script does not draw {set(REQUIRED) - set(script.DIAGRAMS)}"
    assert set(script.CAPTIONS) == set(script.DIAGRAMS), "every diagram needs a caption and alt text in CAPTIONS"
    shipped = {p.stem for p in FOLDER.glob("*.svg")}
    assert shipped == set(script.DIAGRAMS), (
        f"diagrams folder out of step with scripts/diagrams/: missing {set(script.DIAGRAMS) - shipped}, "
        f"stale {shipped - set(script.DIAGRAMS)}; run {COMMAND}"
    )


@pytest.mark.parametrize("name", REQUIRED)
def test_committed_svg_equals_a_fresh_run(script, name):
    committed = (FOLDER / f"{name}.svg").read_text(encoding="utf-8")
    fresh = script.render(name)
    assert fresh == committed, (
        f"{name}.svg differs from what scripts/diagrams/d{name}.py draws now "
        f"({len(committed)} vs {len(fresh)} characters); run {COMMAND} {name} and commit"
    )


@pytest.mark.parametrize("name", REQUIRED)
def test_svg_is_accessible_and_self_contained(script, name):
    text = (FOLDER / f"{name}.svg").read_text(encoding="utf-8")
    root = ET.fromstring(text.encode("utf-8"))  # raises on malformed XML
    assert root.tag == f"{SVG_NS}svg", f"root element is {root.tag}"
    assert root.get("role") == "img" and root.get("id") == f"diagram-{name}"
    width, height = (float(v) for v in root.get("viewBox").split()[2:])
    assert width > 100 and height > 100, f"viewBox {root.get('viewBox')}"

    title, desc = root.find(f"{SVG_NS}title"), root.find(f"{SVG_NS}desc")
    assert title is not None and desc is not None, "needs <title> and <desc> for screen readers"
    caption, alt = script.CAPTIONS[name]
    assert title.text == caption and desc.text == alt
    assert len(alt.split()) >= 25, f"alt text of {name} is too short to describe the diagram: {alt!r}"
    labelled_by = root.get("aria-labelledby").split()
    assert labelled_by == [title.get("id"), desc.get("id")], labelled_by
    assert list(root)[:2] == [title, desc], "<title> and <desc> must be the first children of <svg>"

    assert root.find(f".//{SVG_NS}image") is None, "diagrams are vector drawings, no embedded raster image"
    assert not re.search(r"(href|src)=\"(https?:|//)", text), "an SVG must not load anything from another host"
    assert "<dc:date>" not in text, "no date in the metadata (regeneration must be byte-identical)"
    assert not root.findall(f".//{SVG_NS}text"), "text is drawn as paths (svg.fonttype = path): no font needed"


def test_show_diagram_returns_the_shipped_svg():
    from IPython.display import SVG

    from attention_course.plotting import show_diagram

    shown = show_diagram("03_attention_unit")
    assert isinstance(shown, SVG)
    assert 'id="diagram-03_attention_unit"' in shown.data
    assert shown._repr_svg_().startswith("<svg"), "Jupyter displays it as inline SVG"


def test_show_diagram_names_the_known_diagrams_on_a_typo():
    from attention_course.plotting import show_diagram

    with pytest.raises(FileNotFoundError) as error:
        show_diagram("03_attention_units")
    message = str(error.value)
    assert "03_attention_units" in message
    for name in REQUIRED:
        assert name in message, f"the error should list {name}: {message}"


def test_diagrams_are_package_data():
    """pyproject's package-data for attention_course.assets covers diagrams/*.svg (wheel installs get them)."""
    config = tomllib.loads((course.ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["attention_course.assets"]
    assert any(PurePosixPath("diagrams/03_attention_unit.svg").match(p) for p in patterns), patterns
