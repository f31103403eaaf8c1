"""The course's schematic diagrams, drawn as SVG in one visual style: one module per diagram.

What it produces: ``attention_course/assets/diagrams/<name>.svg`` for every name in
:data:`DIAGRAMS`. A notebook shows one with ``show_diagram("<name>")`` from
``attention_course.plotting``; :data:`CAPTIONS` holds the caption and alt text each demo cell
puts in its metadata ``{"mystnb": {"figure": {"caption": ..., "name": ...}, "image": {"alt": ...}}}``.

The package: :mod:`.common` is the drawing kit (the style, ``Canvas`` and its primitives: only
matplotlib patches, arrows and text); each module ``dNN_<name>.py`` draws the diagram ``NN_<name>``
(``d03_attention_unit.py`` draws ``03_attention_unit``, chapter 03's). The output is deterministic:
a fixed ``svg.hashsalt``, no date in the metadata, text drawn as paths. Each SVG carries
``role="img"``, a ``<title>`` (the caption) and a ``<desc>`` (the alt text).
``tests/test_diagrams.py`` checks that the committed files equal a fresh run of this package.

How to run it, from the repository root (about 5 seconds for all)::

    .venv/bin/python -m scripts.diagrams                        # redraw every diagram
    .venv/bin/python -m scripts.diagrams 03_attention_unit      # redraw one (or several: name them)
    .venv/bin/python -m scripts.diagrams --png /tmp/d           # also write PNG previews there

How to add a diagram for a new chapter (say chapter 09's ``09_my_diagram``):

1. Write ``scripts/diagrams/d09_my_diagram.py`` (copy a short one, e.g. ``d02_encoder_decoder.py``):
   a module docstring saying what it shows; ``CAPTION`` (the figure's caption) and ``ALT`` (alt
   text that describes the drawing to someone who cannot see it, at least 25 words); and
   ``draw() -> Canvas``, which builds a ``Canvas(height)`` (inches; the width is 7.2) from
   :mod:`.common` and returns it. The module is found by its name: nothing to register.
2. Run ``.venv/bin/python -m scripts.diagrams 09_my_diagram --png /tmp/d`` and look at the PNG.
3. Add the name to ``REQUIRED`` in ``tests/test_diagrams.py``, show it in the chapter with
   ``show_diagram("09_my_diagram")`` (the cell's metadata takes ``CAPTION`` and ``ALT``), and commit
   the SVG with the module.

The notation is the course's (see the glossary): ``h_i`` encoder states (``T_enc`` of them),
``s_t`` decoder states, ``e_t,i`` scores, ``alpha_t,i`` weights, ``a_t`` the attention vector,
``W_c`` and ``W_o`` the output layers, ``Q``, ``K``, ``V`` and ``W_Q``, ``W_K``, ``W_V``, ``n_heads``, ``d_model``.
"""

from __future__ import annotations

import argparse
import importlib
import io
import pkgutil
import re
from collections.abc import Callable
from pathlib import Path

from .common import OUTPUT, STYLE, Canvas, accessible, plt


def _modules() -> dict:
    """Diagram name -> its module: every ``dNN_<name>`` module of this package, in name order."""
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        match = re.fullmatch(r"d(\d\d_\w+)", info.name)
        if match:
            found[match.group(1)] = importlib.import_module(f"{__name__}.{info.name}")
    return found


_MODULES = _modules()
DIAGRAMS: dict[str, Callable[[], Canvas]] = {name: module.draw for name, module in _MODULES.items()}
CAPTIONS: dict[str, tuple[str, str]] = {name: (module.CAPTION, module.ALT) for name, module in _MODULES.items()}


def render(name: str) -> str:
    """The SVG text of diagram ``name`` (deterministic)."""
    caption, alt = CAPTIONS[name]
    with plt.rc_context({**STYLE, "svg.id": f"diagram-{name}"}):
        canvas = DIAGRAMS[name]()
        buffer = io.StringIO()
        canvas.figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
        plt.close(canvas.figure)
    return accessible(buffer.getvalue(), name, caption, alt)


def render_png(name: str, path: Path) -> None:
    """A PNG preview of diagram ``name`` (for looking at it, not shipped)."""
    with plt.rc_context(STYLE):
        canvas = DIAGRAMS[name]()
        canvas.figure.savefig(path, format="png", dpi=100)
        plt.close(canvas.figure)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.diagrams", description="Draw the course's schematic diagrams as SVG."
    )
    parser.add_argument("names", nargs="*", help=f"diagrams to draw (default: all): {', '.join(DIAGRAMS)}")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="folder for the SVG files")
    parser.add_argument("--png", type=Path, help="also write PNG previews into this folder")
    args = parser.parse_args(argv)
    unknown = [name for name in args.names if name not in DIAGRAMS]
    if unknown:
        parser.error(f"no diagram {', '.join(unknown)}; the diagrams are: {', '.join(DIAGRAMS)}")
    names = args.names or list(DIAGRAMS)
    args.output.mkdir(parents=True, exist_ok=True)
    for name in names:
        (args.output / f"{name}.svg").write_text(render(name), encoding="utf-8")
        if args.png:
            args.png.mkdir(parents=True, exist_ok=True)
            render_png(name, args.png / f"{name}.png")
        print(f"wrote {args.output / (name + '.svg')}")
