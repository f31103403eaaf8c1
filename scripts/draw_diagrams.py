"""Draw the course's schematic diagrams as SVG (one visual style for all of them).

What it produces: ``attention_course/assets/diagrams/<name>.svg`` for every name in
:data:`DIAGRAMS`. A notebook shows one with ``show_diagram("<name>")`` from
``attention_course.plotting``; :data:`CAPTIONS` holds the caption and alt text each demo cell
puts in its metadata ``{"mystnb": {"figure": {"caption": ..., "name": ...}, "image": {"alt": ...}}}``.

Only matplotlib patches, arrows and text are used. The output is deterministic: a fixed
``svg.hashsalt``, no date in the metadata, and text drawn as paths from the DejaVu fonts that
ship with matplotlib (so every browser renders the same shapes, with no font installed).
Each SVG carries ``role="img"``, a ``<title>`` (the caption) and a ``<desc>`` (the alt text).
``tests/test_diagrams.py`` checks that the committed files equal a fresh run of this script.

How to run it, from the repository root (about 5 seconds)::

    .venv/bin/python scripts/draw_diagrams.py            # rewrite every diagram
    .venv/bin/python scripts/draw_diagrams.py --png /tmp/d  # also write PNG previews there

The notation is the course's (see the glossary): ``h_i`` encoder states (``T_enc`` of them),
``s_t`` decoder states, ``e_t,i`` scores, ``alpha_t,i`` weights, ``a_t`` the attention vector,
``W_c`` and ``W_o`` the output layers, ``Q``, ``K``, ``V`` and ``W_Q``, ``W_K``, ``W_V``, ``n_heads``, ``d_model``.
"""

from __future__ import annotations

import argparse
import html
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Rectangle  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "attention_course" / "assets" / "diagrams"

# ---------------------------------------------------------------------------------------------
# The style: the Okabe-Ito colour-blind-safe palette, light fills with dark edges, black text.
# ---------------------------------------------------------------------------------------------
ROLES = {
    # role: (edge colour, fill colour)
    "encoder": ("#0072B2", "#DCEAF5"),
    "decoder": ("#D55E00", "#FBE2D2"),
    "attention": ("#009E73", "#D4EFE5"),
    "output": ("#CC79A7", "#F6E3EE"),
    "neutral": ("#4D4D4D", "#F2F2F2"),
    "warning": ("#E69F00", "#FDF0D5"),
    "plain": ("#4D4D4D", "#FFFFFF"),
}
INK = "#222222"
MUTED = "#666666"
FONT_SIZE = 10.0
STYLE = {
    "font.family": "DejaVu Sans",
    "mathtext.fontset": "dejavusans",
    "font.size": FONT_SIZE,
    "svg.fonttype": "path",
    "svg.hashsalt": "attention-step-by-step",
    "text.color": INK,
    "figure.dpi": 100,
}
WIDTH = 7.2  # inches: about 700 px on screen


@dataclass
class Box:
    """A drawn box: centre (x, y), width w, height h (inches)."""

    x: float
    y: float
    w: float
    h: float

    @property
    def top(self):
        return (self.x, self.y + self.h / 2)

    @property
    def bottom(self):
        return (self.x, self.y - self.h / 2)

    @property
    def left(self):
        return (self.x - self.w / 2, self.y)

    @property
    def right(self):
        return (self.x + self.w / 2, self.y)

    def at(self, fx: float, fy: float):
        """The point at fractions (fx, fy) of the box, (0, 0) = lower left, (1, 1) = upper right."""
        return (self.x - self.w / 2 + fx * self.w, self.y - self.h / 2 + fy * self.h)


class Canvas:
    """A figure whose data units are inches, with the course's drawing primitives."""

    def __init__(self, height: float, width: float = WIDTH):
        self.figure = plt.figure(figsize=(width, height))
        self.ax = self.figure.add_axes((0, 0, 1, 1))
        self.ax.set_xlim(0, width)
        self.ax.set_ylim(0, height)
        self.ax.set_aspect("equal")
        self.ax.axis("off")
        self.width, self.height = width, height

    def box(self, x, y, w, h, text="", role="neutral", size=FONT_SIZE, lw=1.2, dashed=False, weight="normal",
            rounding=0.06, color=None, z=2):
        edge, fill = ROLES[role]
        patch = FancyBboxPatch(
            (x - w / 2, y - h / 2), w, h, boxstyle=f"round,pad=0,rounding_size={rounding}",
            linewidth=lw, edgecolor=edge, facecolor=fill, linestyle=(0, (4, 2)) if dashed else "solid", zorder=z,
        )
        self.ax.add_patch(patch)
        if text:
            self.text(x, y, text, size=size, weight=weight, color=color or INK, z=z + 1)
        return Box(x, y, w, h)

    def frame(self, x0, y0, x1, y1, role="plain", lw=1.0, dashed=True, z=0):
        """A light group frame from (x0, y0) to (x1, y1)."""
        edge, fill = ROLES[role]
        self.ax.add_patch(FancyBboxPatch(
            (x0, y0), x1 - x0, y1 - y0, boxstyle="round,pad=0,rounding_size=0.1", linewidth=lw,
            edgecolor=edge, facecolor=fill, linestyle=(0, (4, 3)) if dashed else "solid", zorder=z,
        ))

    def cell(self, x, y, w, h, fill, edge="#4D4D4D", text="", size=FONT_SIZE - 1, color=INK, lw=0.8, z=2):
        """A square-cornered cell (matrices, token grids)."""
        self.ax.add_patch(Rectangle((x - w / 2, y - h / 2), w, h, facecolor=fill, edgecolor=edge, linewidth=lw,
                                    zorder=z))
        if text:
            self.text(x, y, text, size=size, color=color, z=z + 1)

    def circle(self, x, y, r, text="", role="neutral", size=FONT_SIZE, lw=1.2, z=2):
        edge, fill = ROLES[role]
        self.ax.add_patch(Circle((x, y), r, linewidth=lw, edgecolor=edge, facecolor=fill, zorder=z))
        if text:
            self.text(x, y, text, size=size, z=z + 1)
        return Box(x, y, 2 * r, 2 * r)

    def badge(self, x, y, number, r=0.13):
        """A step number: a dark disc with a white digit."""
        self.ax.add_patch(Circle((x, y), r, linewidth=0, facecolor=INK, zorder=5))
        self.text(x, y - 0.005, str(number), size=FONT_SIZE - 1, color="white", weight="bold", z=6)

    def text(self, x, y, text, size=FONT_SIZE, ha="center", va="center", color=INK, weight="normal",
             style="normal", z=4, rotation=0):
        self.ax.text(x, y, text, fontsize=size, ha=ha, va=va, color=color, fontweight=weight, fontstyle=style,
                     zorder=z, rotation=rotation)

    def arrow(self, start, end, color=INK, lw=1.1, rad=0.0, dashed=False, head=True, z=3, both=False):
        style = "<|-|>" if both else ("-|>" if head else "-")
        self.ax.add_patch(FancyArrowPatch(
            start, end, arrowstyle=style, mutation_scale=9, linewidth=lw, color=color, shrinkA=0, shrinkB=0,
            connectionstyle=f"arc3,rad={rad}", linestyle=(0, (3, 2)) if dashed else "solid", zorder=z,
        ))

    def line(self, points, color=INK, lw=1.1, dashed=False, z=3):
        xs, ys = zip(*points)
        self.ax.plot(xs, ys, color=color, linewidth=lw, linestyle=(0, (3, 2)) if dashed else "solid", zorder=z,
                     solid_capstyle="butt")

    def elbow(self, points, color=INK, lw=1.1, dashed=False, z=3):
        """A polyline through ``points`` whose last segment ends in an arrow head."""
        if len(points) > 2:
            self.line(points[:-1], color=color, lw=lw, dashed=dashed, z=z)
        self.arrow(points[-2], points[-1], color=color, lw=lw, dashed=dashed, z=z)

    def title(self, x, y, text, ha="left", size=FONT_SIZE + 1):
        self.text(x, y, text, size=size, ha=ha, weight="bold")


# ---------------------------------------------------------------------------------------------
# The diagrams
# ---------------------------------------------------------------------------------------------
def attention_unit() -> Canvas:
    """03: one decoder step t of dot-product attention, its five steps numbered."""
    c = Canvas(5.3)
    xs = [2.05, 2.8, 3.55, 4.7]  # columns of h_1, h_2, h_3, h_T_enc
    names = ["1", "2", "3", r"T_{\mathrm{enc}}"]
    y_state, y_score, y_soft, y_alpha, y_sum = 0.55, 1.5, 2.3, 3.05, 4.05
    xd = 6.27  # the decoder's column

    # step headers on the left
    headers = [
        (y_state, "states", r"$h_i,\ s_t$"),
        (y_score, "scores", r"$e_{t,i} = s_t^{\top} h_i$"),
        (y_soft + 0.37, "weights", r"$\alpha_{t,i} = \mathrm{softmax}_i(e_{t,i})$"),
        (y_sum, "attention", r"$a_t = \Sigma_i\, \alpha_{t,i}\, h_i$"),
    ]
    for number, (y, word, formula) in enumerate(headers, start=1):
        c.badge(0.22, y + 0.12, number)
        c.text(0.42, y + 0.12, word, ha="left", weight="bold")
        c.text(0.1, y - 0.17, formula, ha="left", size=FONT_SIZE - 0.5)

    # (1) encoder states and the decoder state
    states = []
    for x, n in zip(xs, names):
        states.append(c.box(x, y_state, 0.62, 0.4, rf"$h_{{{n}}}$", role="encoder"))
    c.text((xs[2] + xs[3]) / 2, y_state, r"$\cdots$")
    c.text((xs[0] + xs[-1]) / 2, 0.13, r"encoder states ($T_{\mathrm{enc}}$ of them)", size=FONT_SIZE - 1,
           color=MUTED)
    s_t = c.box(xd, y_state, 0.62, 0.4, r"$s_t$", role="decoder")
    c.text(xd, 0.13, "decoder state", size=FONT_SIZE - 1, color=MUTED)

    # (2) one score per encoder state
    c.frame(xs[0] - 0.45, y_score - 0.3, xs[-1] + 0.45, y_score + 0.3, role="plain")
    scores = []
    for x, n, h in zip(xs, names, states):
        scores.append(c.circle(x, y_score, 0.24, rf"$e_{{t,{n}}}$", role="attention", size=FONT_SIZE - 1))
        c.arrow(h.top, (x, y_score - 0.24))
    c.text((xs[2] + xs[3]) / 2, y_score, r"$\cdots$")
    c.elbow([s_t.top, (xd, y_score), (xs[-1] + 0.45, y_score)], color=ROLES["decoder"][0])
    c.text(xd - 0.7, y_score + 0.15, r"$s_t^{\top} h_i$", size=FONT_SIZE - 1, color=ROLES["decoder"][0])

    # (3) softmax over i, giving the weights
    soft = c.box((xs[0] + xs[-1]) / 2, y_soft, xs[-1] - xs[0] + 0.8, 0.34, r"softmax over $i$", role="output")
    for x in xs:
        c.arrow((x, y_score + 0.3), (x, y_soft - 0.17))
    alphas = []
    for x, n in zip(xs, names):
        c.arrow((x, y_soft + 0.17), (x, y_alpha - 0.2))
        alphas.append(c.box(x, y_alpha, 0.62, 0.4, rf"$\alpha_{{t,{n}}}$", role="attention", size=FONT_SIZE - 0.5))
    c.text((xs[2] + xs[3]) / 2, y_alpha, r"$\cdots$")
    c.text(xs[-1] + 0.42, y_alpha, r"sum to 1", ha="left", size=FONT_SIZE - 1, color=MUTED)
    del soft

    # (4) the weighted sum of the encoder states
    total = c.circle((xs[0] + xs[-1]) / 2, y_sum, 0.26, r"$\Sigma$", role="attention", size=FONT_SIZE + 2)
    for x, n in zip(xs, names):
        c.arrow((x, y_alpha + 0.2), total.at(0.5 + (x - total.x) / 1.9 * 0.35, 0.0 if x == total.x else 0.25),
                rad=0.0)
        c.text(x + (0.0 if x < total.x else 0.0), y_alpha + 0.42, rf"$\times h_{{{n}}}$", size=FONT_SIZE - 1.5,
               color=ROLES["encoder"][0], ha="right" if x < total.x else "left")
    a_t = c.box(total.x + 1.45, y_sum, 0.62, 0.4, r"$a_t$", role="attention")
    c.arrow(total.right, a_t.left)

    # (5) the decoder's output layers
    top = c.box(xd, y_sum, 1.75, 0.62, r"$\tilde{s}_t = \tanh(W_c\,[a_t; s_t])$", role="decoder",
                size=FONT_SIZE - 0.5)
    del top
    c.arrow(a_t.right, (xd - 0.875, y_sum))
    c.line([(xd, y_score), (xd, y_sum - 0.31)], color=ROLES["decoder"][0])
    c.arrow((xd, y_sum - 0.5), (xd, y_sum - 0.31), color=ROLES["decoder"][0])
    out = c.box(xd, 4.95, 1.75, 0.42, r"$p_t = \mathrm{softmax}(W_o\,\tilde{s}_t)$", role="output",
                size=FONT_SIZE - 0.5)
    c.arrow((xd, y_sum + 0.31), out.bottom)
    c.badge(4.4, 4.62, 5)
    c.text(4.6, 4.62, "output", ha="left", weight="bold")
    return c


# ---------------------------------------------------------------------------------------------
# name -> drawing function, caption and alt text
# ---------------------------------------------------------------------------------------------
DIAGRAMS: dict[str, Callable[[], Canvas]] = {
    "03_attention_unit": attention_unit,
}

CAPTIONS: dict[str, tuple[str, str]] = {
    "03_attention_unit": (
        "The attention unit for one decoder step t, in five steps: (1) the encoder states h_i and the decoder "
        "state s_t; (2) one score e_t,i = s_t^T h_i per encoder state; (3) a softmax over i turns the scores into "
        "weights alpha_t,i that sum to 1; (4) the attention vector a_t = sum_i alpha_t,i h_i; (5) the output "
        "layers s~_t = tanh(W_c [a_t; s_t]) and p_t = softmax(W_o s~_t).",
        "Diagram: encoder states h_1 to h_T_enc in a row and the decoder state s_t on the right. Each h_i and s_t "
        "give a score e_t,i; a softmax over the scores gives weights alpha_t,i; the weighted sum of the h_i gives "
        "a_t; a_t and s_t are concatenated, passed through tanh(W_c ...) to give s~_t, and softmax(W_o s~_t) gives "
        "the output distribution p_t.",
    ),
}


def render(name: str) -> str:
    """The SVG text of diagram ``name`` (deterministic)."""
    caption, alt = CAPTIONS[name]
    with plt.rc_context({**STYLE, "svg.id": f"diagram-{name}"}):
        canvas = DIAGRAMS[name]()
        buffer = io.StringIO()
        canvas.figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
        plt.close(canvas.figure)
    svg = buffer.getvalue()
    return _accessible(svg, name, caption, alt)


def render_png(name: str, path: Path) -> None:
    """A PNG preview of diagram ``name`` (for looking at it, not shipped)."""
    with plt.rc_context(STYLE):
        canvas = DIAGRAMS[name]()
        canvas.figure.savefig(path, format="png", dpi=100)
        plt.close(canvas.figure)


def _accessible(svg: str, name: str, caption: str, alt: str) -> str:
    """Add ``role="img"``, a ``<title>`` and a ``<desc>`` right after the opening ``<svg>`` tag."""
    opening = svg.index("<svg")
    end = svg.index(">", opening)
    title_id, desc_id = f"diagram-{name}-title", f"diagram-{name}-desc"
    attributes = f' role="img" aria-labelledby="{title_id} {desc_id}"'
    head = (
        f'\n <title id="{title_id}">{html.escape(caption, quote=False)}</title>'
        f'\n <desc id="{desc_id}">{html.escape(alt, quote=False)}</desc>'
    )
    return svg[:end] + attributes + ">" + head + svg[end + 1:]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="diagrams to draw (default: all)")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="folder for the SVG files")
    parser.add_argument("--png", type=Path, help="also write PNG previews into this folder")
    args = parser.parse_args(argv)
    names = args.names or list(DIAGRAMS)
    args.output.mkdir(parents=True, exist_ok=True)
    for name in names:
        (args.output / f"{name}.svg").write_text(render(name), encoding="utf-8")
        if args.png:
            args.png.mkdir(parents=True, exist_ok=True)
            render_png(name, args.png / f"{name}.png")
        print(f"wrote {args.output / (name + '.svg')}")


if __name__ == "__main__":
    main()
