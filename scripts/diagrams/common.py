"""The diagrams' shared drawing kit: the style, :class:`Box`, :class:`Canvas` and the SVG's accessible head.

Every diagram module of this package draws on a :class:`Canvas` (a figure whose data units are
inches) with its primitives (boxes, cells, circles, badges, arrows, lines, titles) and the course's
colours (:data:`ROLES`: the Okabe-Ito colour-blind-safe palette, light fills with dark edges, black
text). :data:`STYLE` makes the SVG deterministic: a fixed ``svg.hashsalt``, and text drawn as paths
from the DejaVu fonts that ship with matplotlib (so every browser renders the same shapes, with no
font installed). :func:`accessible` adds ``role="img"``, a ``<title>`` and a ``<desc>``.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Rectangle  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
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

    def box(
        self,
        x,
        y,
        w,
        h,
        text="",
        role="neutral",
        size=FONT_SIZE,
        lw=1.2,
        dashed=False,
        weight="normal",
        rounding=0.06,
        color=None,
        z=2,
    ):
        edge, fill = ROLES[role]
        patch = FancyBboxPatch(
            (x - w / 2, y - h / 2),
            w,
            h,
            boxstyle=f"round,pad=0,rounding_size={rounding}",
            linewidth=lw,
            edgecolor=edge,
            facecolor=fill,
            linestyle=(0, (4, 2)) if dashed else "solid",
            zorder=z,
        )
        self.ax.add_patch(patch)
        if text:
            self.text(x, y, text, size=size, weight=weight, color=color or INK, z=z + 1)
        return Box(x, y, w, h)

    def frame(self, x0, y0, x1, y1, role="plain", lw=1.0, dashed=True, z=0):
        """A light group frame from (x0, y0) to (x1, y1)."""
        edge, fill = ROLES[role]
        self.ax.add_patch(
            FancyBboxPatch(
                (x0, y0),
                x1 - x0,
                y1 - y0,
                boxstyle="round,pad=0,rounding_size=0.1",
                linewidth=lw,
                edgecolor=edge,
                facecolor=fill,
                linestyle=(0, (4, 3)) if dashed else "solid",
                zorder=z,
            )
        )

    def cell(self, x, y, w, h, fill, edge="#4D4D4D", text="", size=FONT_SIZE - 1, color=INK, lw=0.8, z=2):
        """A square-cornered cell (matrices, token grids)."""
        self.ax.add_patch(
            Rectangle((x - w / 2, y - h / 2), w, h, facecolor=fill, edgecolor=edge, linewidth=lw, zorder=z)
        )
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

    def text(
        self,
        x,
        y,
        text,
        size=FONT_SIZE,
        ha="center",
        va="center",
        color=INK,
        weight="normal",
        style="normal",
        z=4,
        rotation=0,
    ):
        self.ax.text(
            x,
            y,
            text,
            fontsize=size,
            ha=ha,
            va=va,
            color=color,
            fontweight=weight,
            fontstyle=style,
            zorder=z,
            rotation=rotation,
        )

    def arrow(self, start, end, color=INK, lw=1.1, rad=0.0, dashed=False, head=True, z=3, both=False):
        style = "<|-|>" if both else ("-|>" if head else "-")
        self.ax.add_patch(
            FancyArrowPatch(
                start,
                end,
                arrowstyle=style,
                mutation_scale=9,
                linewidth=lw,
                color=color,
                shrinkA=0,
                shrinkB=0,
                connectionstyle=f"arc3,rad={rad}",
                linestyle=(0, (3, 2)) if dashed else "solid",
                zorder=z,
            )
        )

    def line(self, points, color=INK, lw=1.1, dashed=False, z=3):
        xs, ys = zip(*points)
        self.ax.plot(
            xs,
            ys,
            color=color,
            linewidth=lw,
            linestyle=(0, (3, 2)) if dashed else "solid",
            zorder=z,
            solid_capstyle="butt",
        )

    def elbow(self, points, color=INK, lw=1.1, dashed=False, z=3):
        """A polyline through ``points`` whose last segment ends in an arrow head."""
        if len(points) > 2:
            self.line(points[:-1], color=color, lw=lw, dashed=dashed, z=z)
        self.arrow(points[-2], points[-1], color=color, lw=lw, dashed=dashed, z=z)

    def title(self, x, y, text, ha="left", size=FONT_SIZE + 1):
        self.text(x, y, text, size=size, ha=ha, weight="bold")


def accessible(svg: str, name: str, caption: str, alt: str) -> str:
    """Add ``role="img"``, a ``<title>`` and a ``<desc>`` right after the opening ``<svg>`` tag."""
    opening = svg.index("<svg")
    end = svg.index(">", opening)
    title_id, desc_id = f"diagram-{name}-title", f"diagram-{name}-desc"
    attributes = f' role="img" aria-labelledby="{title_id} {desc_id}"'
    head = (
        f'\n <title id="{title_id}">{html.escape(caption, quote=False)}</title>'
        f'\n <desc id="{desc_id}">{html.escape(alt, quote=False)}</desc>'
    )
    return svg[:end] + attributes + ">" + head + svg[end + 1 :]
