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
    c.text((xs[0] + xs[-1]) / 2, 0.13, r"encoder states ($T_{\mathrm{enc}}$ of them)", size=FONT_SIZE - 1, color=MUTED)
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
        c.arrow((x, y_alpha + 0.2), total.at(0.5 + (x - total.x) / 1.9 * 0.35, 0.0 if x == total.x else 0.25), rad=0.0)
        c.text(
            x + (0.0 if x < total.x else 0.0),
            y_alpha + 0.42,
            rf"$\times h_{{{n}}}$",
            size=FONT_SIZE - 1.5,
            color=ROLES["encoder"][0],
            ha="right" if x < total.x else "left",
        )
    a_t = c.box(total.x + 1.45, y_sum, 0.62, 0.4, r"$a_t$", role="attention")
    c.arrow(total.right, a_t.left)

    # (5) the decoder's output layers
    top = c.box(xd, y_sum, 1.75, 0.62, r"$\tilde{s}_t = \tanh(W_c\,[a_t; s_t])$", role="decoder", size=FONT_SIZE - 0.5)
    del top
    c.arrow(a_t.right, (xd - 0.875, y_sum))
    c.line([(xd, y_score), (xd, y_sum - 0.31)], color=ROLES["decoder"][0])
    c.arrow((xd, y_sum - 0.5), (xd, y_sum - 0.31), color=ROLES["decoder"][0])
    out = c.box(
        xd, 4.95, 1.75, 0.42, r"$p_t = \mathrm{softmax}(W_o\,\tilde{s}_t)$", role="output", size=FONT_SIZE - 0.5
    )
    c.arrow((xd, y_sum + 0.31), out.bottom)
    c.badge(4.4, 4.62, 5)
    c.text(4.6, 4.62, "output", ha="left", weight="bold")
    return c


def unrolled_rnn_tagger() -> Canvas:
    """01: an RNN unrolled over time, used as a 1:1 tagger, and why translation does not fit 1:1."""
    c = Canvas(4.1)
    xs = [1.1, 2.05, 3.0]
    words, tags = ["i", "love", "you"], ["PRON", "VERB", "PRON"]
    y_word, y_x, y_h, y_soft, y_out = 0.25, 0.75, 1.7, 2.5, 3.15
    c.title(0.1, 3.92, "(a) an RNN unrolled, as a 1:1 tagger")
    c.text(0.1, 3.6, r"$h_t = \tanh(W_{xh}\, x_t + W_{hh}\, h_{t-1})$", ha="left", size=FONT_SIZE - 0.5)
    h0 = c.box(0.3, y_h, 0.4, 0.4, r"$h_0$", role="plain")
    previous = h0
    for t, (x, word, tag) in enumerate(zip(xs, words, tags), start=1):
        c.text(x, y_word, f"\u201c{word}\u201d", color=MUTED, size=FONT_SIZE - 1)
        xt = c.box(x, y_x, 0.52, 0.4, rf"$x_{t}$", role="neutral")
        ht = c.box(x, y_h, 0.52, 0.4, rf"$h_{t}$", role="encoder")
        c.arrow(xt.top, ht.bottom)
        c.text(x + 0.06, (y_x + y_h) / 2, r"$W_{xh}$", ha="left", size=FONT_SIZE - 1.5, color=MUTED)
        c.arrow(previous.right, ht.left)
        c.text(
            (previous.right[0] + ht.left[0]) / 2,
            y_h + 0.06,
            r"$W_{hh}$",
            size=FONT_SIZE - 1.5,
            color=MUTED,
            va="bottom",
        )
        soft = c.box(x, y_soft, 0.76, 0.34, "softmax", role="output", size=FONT_SIZE - 1.5)
        c.arrow(ht.top, soft.bottom)
        c.box(x, y_out, 0.76, 0.36, tag, role="plain", size=FONT_SIZE - 1.5)
        c.arrow(soft.top, (x, y_out - 0.18))
        previous = ht

    # (b) translation needs a word the tagger has not read yet
    x0 = 3.7
    c.line([(x0 - 0.2, 0.15), (x0 - 0.2, 3.75)], color="#BBBBBB", lw=0.8)
    c.title(x0, 3.92, "(b) translation is not 1:1")
    c.text(x0, 3.6, "word order differs (and lengths may differ)", ha="left", size=FONT_SIZE - 0.5)
    cols = [x0 + 0.3, x0 + 0.95, x0 + 1.6]
    targets = ["je", "t\u2019", "aime"]
    source_of = [0, 2, 1]  # je <- i, t' <- you, aime <- love
    y_src, y_tgt = 0.95, 2.55
    for t, (x, word, target) in enumerate(zip(cols, words, targets), start=1):
        c.text(x, y_src - 0.4, f"step {t}", size=FONT_SIZE - 1.5, color=MUTED)
        c.box(x, y_src, 0.56, 0.36, word, role="neutral", size=FONT_SIZE - 1)
        c.box(x, y_tgt, 0.56, 0.36, target, role="decoder", size=FONT_SIZE - 1)
    for t, i in enumerate(source_of):
        future = i > t
        c.line(
            [(cols[t], y_tgt - 0.18), (cols[i], y_src + 0.18)],
            color=ROLES["decoder"][0] if future else MUTED,
            lw=1.6 if future else 1.0,
            dashed=future,
        )
    c.text(x0, y_tgt + 0.36, "wanted output at steps 1, 2, 3", ha="left", size=FONT_SIZE - 1, color=MUTED)
    c.text(x0, 0.2, "input read at steps 1, 2, 3", ha="left", size=FONT_SIZE - 1, color=MUTED)
    note = "step 2 must emit t\u2019\n(\u201cyou\u201d), but the\ntagger reads \u201cyou\u201d\nonly at step 3"
    c.text(cols[-1] + 0.38, (y_src + y_tgt) / 2, note, ha="left", size=FONT_SIZE - 1.5, color="#A04400", va="center")
    return c


def encoder_decoder() -> Canvas:
    """02: the encoder-decoder whose only link is the encoder's final state (the bottleneck)."""
    c = Canvas(3.75)
    enc_x = [0.75, 1.55, 2.35]
    dec_x = [4.3, 5.05, 5.8, 6.55]
    y_in, y_state, y_soft, y_out = 0.7, 1.8, 2.75, 3.45
    for xs, role in ((enc_x, "encoder"), (dec_x, "decoder")):  # a labelled frame around each half
        c.frame(xs[0] - 0.5, y_state - 0.42, xs[-1] + 0.45, y_state + 0.55, role=role, dashed=False, lw=0.8)
        c.text(xs[0] - 0.42, y_state + 0.38, role, ha="left", size=FONT_SIZE - 1, weight="bold", color=ROLES[role][0])
    previous = None
    for i, (x, word) in enumerate(zip(enc_x, ["i", "love", "you"]), start=1):
        token = c.box(x, y_in, 0.62, 0.36, word, role="neutral", size=FONT_SIZE - 1)
        name = r"T_{\mathrm{enc}}" if i == len(enc_x) else str(i)
        state = c.box(x, y_state, 0.62, 0.4, rf"$h_{{{name}}}$", role="encoder")
        c.arrow(token.top, state.bottom)
        if previous is not None:
            c.arrow(previous.right, state.left)
        previous = state
    context = c.box(3.3, y_state, 0.62, 0.62, "", role="warning", lw=1.6)
    c.text(3.3, y_state, r"$h_{T_{\mathrm{enc}}}$", size=FONT_SIZE)
    c.arrow(previous.right, context.left, lw=1.4)
    c.text(
        3.3, y_state - 0.55, "context vector:\none vector of size $d$", size=FONT_SIZE - 1.5, color="#8A5A00", va="top"
    )
    c.text(3.3, y_state + 0.6, "the bottleneck", size=FONT_SIZE - 1, weight="bold", color="#8A5A00", va="bottom")
    outputs = ["je", "t\u2019", "aime", "<eos>"]
    inputs = ["<bos>", "je", "t\u2019", "aime"]
    previous = context
    for t, (x, given, out) in enumerate(zip(dec_x, inputs, outputs), start=1):
        token = c.box(x, y_in, 0.62, 0.36, given, role="neutral", size=FONT_SIZE - 1.5)
        name = r"T_{\mathrm{dec}}" if t == len(dec_x) else str(t)
        state = c.box(x, y_state, 0.62, 0.4, rf"$s_{{{name}}}$", role="decoder")
        c.arrow(token.top, state.bottom)
        c.arrow(previous.right, state.left, lw=1.4 if previous is context else 1.1)
        soft = c.box(x, y_soft, 0.68, 0.34, "softmax", role="output", size=FONT_SIZE - 1.5)
        c.arrow(state.top, soft.bottom)
        c.box(x, y_out, 0.62, 0.36, out, role="plain", size=FONT_SIZE - 1.5)
        c.arrow(soft.top, (x, y_out - 0.18))
        previous = state
    c.text(dec_x[0] - 0.55, y_out, "output", ha="right", size=FONT_SIZE - 1, color=MUTED)
    c.text(dec_x[0] - 0.55, y_soft, "softmax", ha="right", size=FONT_SIZE - 1, color=MUTED)
    c.text(0.3, 3.3, "The decoder sees the source only", ha="left", size=FONT_SIZE - 0.5)
    c.text(0.3, 3.05, "through the encoder's final state.", ha="left", size=FONT_SIZE - 0.5)
    c.text(enc_x[1], y_in - 0.3, "input: the source sentence", size=FONT_SIZE - 1.5, color=MUTED, va="top")
    c.text(
        (dec_x[0] + dec_x[-1]) / 2,
        y_in - 0.3,
        "decoder input: the previous output word (<bos> first)",
        size=FONT_SIZE - 1.5,
        color=MUTED,
        va="top",
    )
    return c


def qkv_multihead() -> Canvas:
    """04: attention as a soft lookup (query, keys, values), and multi-head attention."""
    c = Canvas(4.6)
    # (a) a soft lookup in a memory of (key, value) pairs
    c.title(0.1, 4.42, "(a) attention as a soft lookup")
    weights = [0.10, 0.62, 0.20, 0.08]  # illustrative
    rows = [3.0, 2.35, 1.7, 1.05]
    x_key, x_bar0, x_bar1, x_value, x_sum = 0.45, 1.05, 2.0, 2.5, 3.12
    c.frame(x_bar0 - 0.12, rows[-1] - 0.32, x_bar1 + 0.12, rows[0] + 0.32, role="plain")
    query = c.box((x_bar0 + x_bar1) / 2, 3.92, 0.56, 0.38, r"$q$", role="decoder")
    c.text(query.x + 0.38, 3.92, "query", ha="left", size=FONT_SIZE - 1, color=MUTED)
    c.arrow(query.bottom, (query.x, rows[0] + 0.32))
    c.text(x_key, rows[0] + 0.42, "keys", size=FONT_SIZE - 1, color=MUTED)
    c.text(x_value, rows[0] + 0.42, "values", size=FONT_SIZE - 1, color=MUTED)
    total = c.circle(x_sum, (rows[1] + rows[2]) / 2, 0.22, r"$\Sigma$", role="attention", size=FONT_SIZE + 1)
    for j, (y, w) in enumerate(zip(rows, weights), start=1):
        key = c.box(x_key, y, 0.56, 0.38, rf"$k_{j}$", role="encoder")
        c.arrow(key.right, (x_bar0, y))
        length = (x_bar1 - x_bar0) * w / max(weights)
        c.ax.add_patch(
            Rectangle((x_bar0, y - 0.12), length, 0.24, facecolor=ROLES["attention"][0], edgecolor="none", zorder=2)
        )
        c.text(
            x_bar0 + length + 0.05, y, f"{w:.2f}", ha="left", size=FONT_SIZE - 2, color=MUTED
        ) if w < 0.5 else c.text(x_bar0 + length - 0.05, y, f"{w:.2f}", ha="right", size=FONT_SIZE - 2, color="white")
        value = c.box(x_value, y, 0.56, 0.38, rf"$v_{j}$", role="attention")
        c.arrow((x_bar1 + 0.12, y), value.left)
        start = value.right
        c.arrow(
            start,
            total.at(0.0 if y in rows[1:3] else 0.15, 0.5 if y in rows[1:3] else (0.85 if j == 1 else 0.15)),
            rad=0.0,
        )
    c.text(
        (x_bar0 + x_bar1) / 2 - 0.1,
        rows[-1] - 0.45,
        r"weights $\alpha_j = \mathrm{softmax}_j(q^{\top} k_j)$",
        size=FONT_SIZE - 1,
        va="top",
    )
    out = c.box(x_sum, 0.28, 0.5, 0.38, r"$o$", role="output")
    c.arrow(total.bottom, out.top)
    c.text(x_sum - 0.32, 0.28, r"output $o = \Sigma_j\, \alpha_j v_j$", ha="right", size=FONT_SIZE - 1)

    # (b) multi-head attention
    x0 = 3.75
    c.line([(x0 - 0.2, 0.15), (x0 - 0.2, 4.25)], color="#BBBBBB", lw=0.8)
    c.title(x0, 4.42, "(b) multi-head attention")
    cols = [x0 + 0.55, x0 + 1.5, x0 + 2.45]
    y_in, y_proj, y_att, y_cat, y_wo, y_out = 0.3, 1.1, 2.0, 2.95, 3.5, 4.02
    inputs = [("queries", r"$W_Q$", "decoder"), ("keys", r"$W_K$", "encoder"), ("values", r"$W_V$", "attention")]
    depth, offset = 2, 0.07
    for x, (word, weight, role) in zip(cols, inputs):
        c.text(x, y_in, word, size=FONT_SIZE - 1, color=MUTED)
        for k in range(depth, 0, -1):
            c.box(x + k * offset, y_proj + k * offset, 0.74, 0.38, "", role=role, lw=0.8, z=1)
        c.box(x, y_proj, 0.74, 0.38, weight, role=role)
        c.arrow((x, y_in + 0.14), (x, y_proj - 0.19))
        c.arrow(
            (x, y_proj + 0.19),
            (x if x == cols[1] else (x + cols[1]) / 2 * 0 + cols[1] + (x - cols[1]) * 0.45, y_att - 0.25),
        )
    att_w = cols[-1] - cols[0] + 0.6
    for k in range(depth, 0, -1):
        c.box(cols[1] + k * offset, y_att + k * offset, att_w, 0.5, "", role="neutral", lw=0.8, z=1)
    c.box(
        cols[1],
        y_att,
        att_w,
        0.5,
        r"$\mathrm{softmax}\left(Q K^{\top} / \sqrt{d_k}\right) V$",
        role="neutral",
        size=FONT_SIZE - 0.5,
    )
    c.text(
        cols[1] + 0.12,
        y_att + 0.42,
        r"$n_{\mathrm{heads}}$ heads in parallel",
        ha="left",
        size=FONT_SIZE - 1.5,
        color=MUTED,
        va="bottom",
    )
    c.text(
        cols[1] + 0.5,
        y_wo + 0.1,
        "each head has its own\n$W_Q$, $W_K$, $W_V$;\n"
        r"$d_k = d_{\mathrm{model}} / n_{\mathrm{heads}}$",
        ha="left",
        size=FONT_SIZE - 1.5,
        color=MUTED,
        va="center",
    )
    cat = c.box(
        cols[1],
        y_cat,
        att_w,
        0.34,
        r"concat: $n_{\mathrm{heads}} \times d_v \to d_{\mathrm{model}}$",
        role="plain",
        size=FONT_SIZE - 1,
    )
    c.arrow((cols[1], y_att + 0.25), cat.bottom)
    wo = c.box(cols[1], y_wo, 0.74, 0.34, r"$W_O$", role="output")
    c.arrow(cat.top, wo.bottom)
    c.arrow(wo.top, (cols[1], y_out - 0.1))
    c.text(cols[1], y_out, r"output $(T_q, d_{\mathrm{model}})$", size=FONT_SIZE - 1, va="bottom")
    return c


def variants() -> Canvas:
    """04: the five variants of the chapter's table, side by side: who is query, key and value."""
    c = Canvas(4.0)
    panel = WIDTH / 5
    specs = [
        ("(1) encoder-decoder", "dot product", "encdec", False, [r"$s_t$", r"$h_i$", r"$h_i$", r"$s_t^{\top} h_i$"]),
        (
            "(2) encoder-decoder",
            "QKV",
            "encdec",
            True,
            [r"$W_Q\, s_t$", r"$W_K\, h_i$", r"$W_V\, h_i$", r"$q_t^{\top} k_i / \sqrt{d_k}$"],
        ),
        ("(3) encoder-only", "dot product", "self", False, [r"$x_t$", r"$x_i$", r"$x_i$", r"$x_t^{\top} x_i$"]),
        (
            "(4) encoder-only",
            "QKV",
            "self",
            True,
            [r"$W_Q\, x_t$", r"$W_K\, x_i$", r"$W_V\, x_i$", r"$q_t^{\top} k_i / \sqrt{d_k}$"],
        ),
        (
            "(5) PyTorch tutorial",
            "(original)",
            "tutorial",
            True,
            [
                r"$[\mathrm{emb}(y_{t-1}); s_{t-1}]$",
                "none",
                r"$h_i$",
                r"$(W_{\mathrm{attn}}[\ldots] + b_{\mathrm{attn}})_i$",
            ],
        ),
    ]
    y_src, y_query = 1.6, 2.85
    for n, (title, subtitle, kind, _learnt, roles) in enumerate(specs):
        x0 = n * panel
        mid = x0 + panel / 2
        if n:
            c.line([(x0, 0.1), (x0, 3.9)], color="#CCCCCC", lw=0.8)
        c.text(mid, 3.78, title, size=FONT_SIZE - 1.5, weight="bold")
        c.text(mid, 3.55, subtitle, size=FONT_SIZE - 1.5, weight="bold")
        xs = [mid - 0.42, mid, mid + 0.42]
        if kind == "self":
            sources = [
                c.box(x, y_src, 0.36, 0.32, rf"$x_{k}$", role="neutral", size=FONT_SIZE - 1)
                for k, x in enumerate(xs, start=1)
            ]
            query = c.box(mid, y_query, 0.5, 0.34, r"$x_t$", role="neutral", size=FONT_SIZE - 1)
            c.text(mid, y_query + 0.3, "one of the same $x$", size=FONT_SIZE - 2, color=MUTED)
        else:
            sources = [
                c.box(x, y_src, 0.36, 0.32, rf"$h_{k}$", role="encoder", size=FONT_SIZE - 1)
                for k, x in enumerate(xs, start=1)
            ]
            label = r"$[\mathrm{emb}(y_{t-1}); s_{t-1}]$" if kind == "tutorial" else r"$s_t$"
            query = c.box(
                mid, y_query, 1.05 if kind == "tutorial" else 0.5, 0.34, label, role="decoder", size=FONT_SIZE - 1
            )
            c.text(mid, y_query + 0.3, "decoder", size=FONT_SIZE - 2, color=MUTED)
        c.text(mid, y_src - 0.3, "encoder" if kind != "self" else "one sequence", size=FONT_SIZE - 2, color=MUTED)
        if kind == "tutorial":
            slots = c.box(mid, 2.25, 1.0, 0.3, r"$W_{\mathrm{attn}}$: $L$ slots", role="warning", size=FONT_SIZE - 2)
            c.arrow(query.bottom, slots.top)
            for x in xs:
                c.arrow((x, slots.bottom[1]), (x, y_src + 0.16), color=ROLES["warning"][0], dashed=True)
        else:
            for source in sources:
                c.arrow(query.bottom, source.top, color=INK, lw=0.9)
        # the roles, as a small table
        for k, (key, value) in enumerate(zip(["Q", "K", "V"], roles)):
            y = 1.06 - k * 0.22
            c.text(
                x0 + 0.14,
                y,
                key,
                ha="left",
                size=FONT_SIZE - 2,
                weight="bold",
                color=[ROLES["decoder"][0], ROLES["encoder"][0], ROLES["attention"][0]][k],
            )
            c.text(x0 + 0.36, y, value, ha="left", size=FONT_SIZE - 2)
        c.text(x0 + 0.14, 0.4, "score", ha="left", size=FONT_SIZE - 2, weight="bold", color=MUTED)
        c.text(mid, 0.18, roles[3], size=FONT_SIZE - 2)
    return c


SRC_CELL, TGT_CELL, PAD_CELL, TRUE_CELL = "#9CC5E6", "#F2B48A", "#D0D0D0", "#5FBF9F"


def _tokens(c: Canvas, x_left: float, y_top: float, rows, cell: float = 0.15, gap: float = 0.035):
    """Rows of token cells, top row first; each row is a list of fill colours (or (fill, text))."""
    for r, row in enumerate(rows):
        y = y_top - r * (cell + gap) - cell / 2
        for k, fill in enumerate(row):
            text = ""
            if isinstance(fill, tuple):
                fill, text = fill
            c.cell(
                x_left + k * cell + cell / 2,
                y,
                cell,
                cell,
                fill,
                edge="#777777",
                lw=0.5,
                text=text,
                size=FONT_SIZE - 3.5,
            )
    return y_top - len(rows) * (cell + gap) + gap


def training_pipeline() -> Canvas:
    """05: from sentence pairs to the masked loss, as chapter 05's training loop does it."""
    c = Canvas(4.15)
    cell = 0.15
    pairs = [(3, 3), (6, 5), (4, 4), (5, 6), (3, 4), (6, 6)]
    y_top_row, y_bottom_row = 3.98, 1.95

    def stage(x, y, number, title):
        c.badge(x + 0.13, y, number)
        c.text(x + 0.32, y, title, ha="left", weight="bold", size=FONT_SIZE - 0.5)

    # (1) sentence pairs of different lengths
    stage(0.05, y_top_row, 1, "sentence pairs")
    y = 3.6
    for k, (ls, lt) in enumerate(pairs):
        yy = y - k * 0.2
        _tokens(c, 0.2, yy, [[SRC_CELL] * ls], cell=cell)
        c.text(0.2 + 6 * cell + 0.1, yy - cell / 2, "\u2192", size=FONT_SIZE - 2, color=MUTED)
        _tokens(c, 0.2 + 6 * cell + 0.22, yy, [[TGT_CELL] * lt], cell=cell)
    c.text(0.2, y - 6 * 0.2 - 0.05, "source", ha="left", size=FONT_SIZE - 2, color=ROLES["encoder"][0], va="top")
    c.text(
        0.2 + 6 * cell + 0.22,
        y - 6 * 0.2 - 0.05,
        "target",
        ha="left",
        size=FONT_SIZE - 2,
        color=ROLES["decoder"][0],
        va="top",
    )
    c.arrow((2.3, 3.05), (2.6, 3.05))

    # (2) length buckets: similar source lengths together
    stage(2.65, y_top_row, 2, "length buckets")
    buckets = [[3, 4, 3], [6, 5, 6]]
    for b, lengths in enumerate(buckets):
        yb = 3.6 - b * 0.78
        c.frame(2.75, yb - 3 * 0.185 - 0.05, 2.8 + 6 * cell + 0.1, yb + 0.07, role="plain", dashed=False, lw=0.8)
        _tokens(c, 2.85, yb, [[SRC_CELL] * n for n in lengths], cell=cell)
        c.text(
            2.8 + 6 * cell + 0.17,
            yb - 0.27,
            f"lengths\n{min(lengths)}\u2013{max(lengths)}",
            ha="left",
            size=FONT_SIZE - 2,
            color=MUTED,
        )
    c.arrow((4.45, 3.05), (4.75, 3.05))

    # (3) one bucket becomes a padded batch
    stage(4.8, y_top_row, 3, "padded batch")
    src = [[SRC_CELL] * 3 + [PAD_CELL], [SRC_CELL] * 4, [SRC_CELL] * 3 + [PAD_CELL]]
    tgt = [[TGT_CELL] * 3 + [PAD_CELL], [TGT_CELL] * 4, [TGT_CELL] * 4]
    _tokens(c, 4.95, 3.55, src, cell=cell)
    c.text(4.95 + 2 * cell, 3.62, r"src $(B, T_{\mathrm{enc}})$", size=FONT_SIZE - 2, va="bottom")
    _tokens(c, 6.05, 3.55, tgt, cell=cell)
    c.text(6.05 + 2 * cell, 3.62, r"tgt $(B, T_{\mathrm{dec}})$", size=FONT_SIZE - 2, va="bottom")
    c.cell(5.03, 2.82, cell, cell, PAD_CELL, edge="#777777", lw=0.5)
    c.text(5.16, 2.82, "PAD: filler up to the longest", ha="left", size=FONT_SIZE - 2, color=MUTED)
    c.text(
        4.95,
        2.55,
        "little padding, because the\nbucket's lengths are close",
        ha="left",
        size=FONT_SIZE - 2,
        color=MUTED,
        va="center",
    )

    # down and back to the start of the second row
    c.elbow([(6.0, 2.3), (6.0, 2.2), (1.0, 2.2), (1.0, 2.1)], color=MUTED, lw=0.9)

    # (4) masks
    stage(0.05, y_bottom_row, 4, "masks")
    true_src = [[TRUE_CELL] * 3 + ["#FFFFFF"], [TRUE_CELL] * 4, [TRUE_CELL] * 3 + ["#FFFFFF"]]
    true_tgt = [[TRUE_CELL] * 3 + ["#FFFFFF"], [TRUE_CELL] * 4, [TRUE_CELL] * 4]
    _tokens(c, 0.2, 1.55, true_src, cell=cell)
    c.text(
        0.2 + 4 * cell + 0.1,
        1.32,
        "source padding mask\n" r"$M$ $(B, T_{\mathrm{enc}})$, for attention",
        ha="left",
        size=FONT_SIZE - 2,
    )
    _tokens(c, 0.2, 0.78, true_tgt, cell=cell)
    c.text(
        0.2 + 4 * cell + 0.1,
        0.55,
        "target mask\n" r"$(B, T_{\mathrm{dec}})$, for the loss",
        ha="left",
        size=FONT_SIZE - 2,
    )
    c.cell(0.28, 0.14, cell, cell, TRUE_CELL, edge="#777777", lw=0.5)
    c.text(0.4, 0.14, "True = real token", ha="left", size=FONT_SIZE - 2, color=MUTED)
    c.cell(1.62, 0.14, cell, cell, "#FFFFFF", edge="#777777", lw=0.5)
    c.text(1.74, 0.14, "False = PAD", ha="left", size=FONT_SIZE - 2, color=MUTED)

    # (5) the model
    stage(2.65, y_bottom_row, 5, "model")
    model = c.box(3.55, 1.32, 1.3, 0.6, "encoder-decoder\nwith attention", role="attention", size=FONT_SIZE - 1.5)
    c.arrow((2.5, 1.32), model.left)
    c.text(3.55, 0.82, r"logits $(B, T_{\mathrm{dec}}, n_{\mathrm{vocab}})$", size=FONT_SIZE - 2)

    # (6) the masked loss
    stage(4.8, y_bottom_row, 6, "masked cross-entropy")
    c.arrow(model.right, (5.0, 1.32))
    losses = [[(TGT_CELL, "")] * 3 + [("#FFFFFF", "\u00d7")], [(TGT_CELL, "")] * 4, [(TGT_CELL, "")] * 4]
    _tokens(c, 5.05, 1.55, losses, cell=cell)
    c.text(5.05 + 4 * cell + 0.1, 1.32, "loss per target token;\npads (\u00d7) ignored", ha="left", size=FONT_SIZE - 2)
    c.elbow([(2.05, 0.55), (4.75, 0.55), (4.75, 1.15), (5.0, 1.15)], color=MUTED, lw=0.9)
    c.text(5.05, 0.55, "loss = mean over the\nreal target tokens only", ha="left", size=FONT_SIZE - 1.5, weight="bold")
    return c


def reading_a_map() -> Canvas:
    """06: how to read an attention map (an illustrative map, not a trained model's)."""
    c = Canvas(4.3)
    source = ["the", "black", "cat", "sleeps", "."]
    target = ["le", "chat", "noir", "dort", "."]
    weights = [  # illustrative: each row sums to 1
        [0.80, 0.06, 0.08, 0.03, 0.03],
        [0.05, 0.12, 0.75, 0.05, 0.03],
        [0.04, 0.78, 0.12, 0.03, 0.03],
        [0.02, 0.03, 0.08, 0.84, 0.03],
        [0.02, 0.02, 0.03, 0.08, 0.85],
    ]
    cmap = matplotlib.colormaps["viridis"]
    size, x0, y_top = 0.46, 1.05, 3.45  # cell size, left edge, top edge of the map

    def centre(t, i):
        return (x0 + (i + 0.5) * size, y_top - (t + 0.5) * size)

    for t, row in enumerate(weights):
        for i, w in enumerate(row):
            x, y = centre(t, i)
            c.cell(
                x,
                y,
                size,
                size,
                matplotlib.colors.to_hex(cmap(w)),
                edge="white",
                lw=1.0,
                text=f"{w:.2f}",
                size=FONT_SIZE - 2,
                color=INK if w > 0.5 else "white",
            )
        c.text(x0 - 0.08, centre(t, 0)[1], target[t], ha="right", size=FONT_SIZE - 1)
    for i, word in enumerate(source):
        c.text(centre(0, i)[0], y_top + 0.1, word, size=FONT_SIZE - 1, va="bottom")
    right = x0 + 5 * size
    bottom = y_top - 5 * size
    c.text(x0 + 2.5 * size, y_top + 0.42, r"columns: source tokens $i$ (keys)", size=FONT_SIZE - 1, weight="bold")
    c.text(
        0.3,
        y_top - 2.5 * size,
        r"rows: target tokens $t$, top to bottom",
        size=FONT_SIZE - 1,
        weight="bold",
        rotation=90,
    )
    # the colour scale
    for k in range(20):
        w = (k + 0.5) / 20
        c.cell(
            x0 + (k + 0.5) * 5 * size / 20,
            bottom - 0.32,
            5 * size / 20,
            0.12,
            matplotlib.colors.to_hex(cmap(w)),
            edge="none",
            lw=0,
        )
    c.text(x0, bottom - 0.46, "0", size=FONT_SIZE - 2, va="top")
    c.text(right, bottom - 0.46, "1", size=FONT_SIZE - 2, va="top")
    c.text(x0 + 2.5 * size, bottom - 0.46, r"weight $\alpha_{t,i}$ (viridis)", size=FONT_SIZE - 2, va="top")

    # the reordered block
    bx0, bx1 = x0 + 1 * size, x0 + 3 * size
    by0, by1 = y_top - 3 * size, y_top - 1 * size
    c.ax.add_patch(
        Rectangle(
            (bx0, by0),
            bx1 - bx0,
            by1 - by0,
            facecolor="none",
            edgecolor="#E69F00",
            lw=2.0,
            linestyle=(0, (3, 2)),
            zorder=6,
        )
    )

    # the outlined row
    c.ax.add_patch(Rectangle((x0, y_top - size), 5 * size, size, facecolor="none", edgecolor=INK, lw=1.6, zorder=6))

    notes_x = 4.0
    markers = [
        (
            (right + 0.16, centre(0, 4)[1]),
            3.2,
            "a row = one target step $t$: its weights\n"
            r"$\alpha_{t,i}$ over the source, summing to 1",
        ),
        ((x0, y_top), 2.45, "a bright cell = a large $\\alpha_{t,i}$:\n\u201cle\u201d attends to \u201cthe\u201d"),
        ((bx1, by1), 1.7, "an off-diagonal block = reordering:\n\u201cblack cat\u201d \u2192 \u201cchat noir\u201d"),
        (
            (x0 + 4 * size, y_top - 4 * size),
            0.95,
            "a diagonal = monotonic alignment: the\nsame word order (\u201csleeps\u201d \u2192 \u201cdort\u201d)",
        ),
    ]
    for number, (point, y, text) in enumerate(markers, start=1):
        c.badge(*point, number, r=0.1)
        c.badge(notes_x + 0.1, y, number, r=0.1)
        c.text(notes_x + 0.28, y, text, ha="left", size=FONT_SIZE - 1.5, va="center")
    c.text(
        notes_x + 0.28,
        0.3,
        "illustrative numbers, not from a trained model",
        ha="left",
        size=FONT_SIZE - 2,
        style="italic",
        color=MUTED,
    )
    return c


def transformer_block() -> Canvas:
    """07: a pre-norm Transformer encoder layer and decoder layer, with sinusoidal positions, and the final layer
    norm after each stack."""
    c = Canvas(6.4)
    width, tall, pitch = 2.1, 0.32, 1.3
    enc_x, dec_x = 1.75, 5.0
    base = 1.45  # where the first sublayer's LayerNorm sits

    def sublayer(x, y, label, role, skip_side):
        """LayerNorm -> block -> residual add, with the skip around them; returns the add node's top point."""
        norm = c.box(x, y + 0.04, width * 0.62, 0.26, "LayerNorm", role="plain", size=FONT_SIZE - 2)
        block = c.box(x, y + 0.47, width, tall, label, role=role, size=FONT_SIZE - 1.5)
        add = c.circle(x, y + 0.88, 0.11, "+", role="plain", size=FONT_SIZE - 1)
        c.arrow((x, y - 0.31), norm.bottom)
        c.arrow(norm.top, block.bottom)
        c.arrow(block.top, add.bottom)
        side = x + skip_side * (width / 2 + 0.2)
        c.line([(x, y - 0.24), (side, y - 0.24), (side, y + 0.88)], color=MUTED, lw=1.0)
        c.arrow((side, y + 0.88), (x + skip_side * 0.11, y + 0.88), color=MUTED, lw=1.0)
        c.ax.add_patch(Circle((x, y - 0.24), 0.03, color=MUTED, zorder=4))
        return add.top

    def embed(x, label, positions_side):
        emb = c.box(x, 0.3, 1.7, 0.32, label, role="neutral", size=FONT_SIZE - 1.5)
        add = c.circle(x, 0.8, 0.11, "+", role="plain", size=FONT_SIZE - 1)
        c.arrow(emb.top, add.bottom)
        px = x + positions_side * 1.05
        pos = c.box(px, 0.8, 0.95, 0.36, "sinusoidal\npositions", role="warning", size=FONT_SIZE - 2)
        c.arrow(pos.left if positions_side > 0 else pos.right, (x + positions_side * 0.11, 0.8))
        c.line([(x, 0.91), (x, base - 0.31)], color=INK, lw=1.1)

    # the encoder layer
    embed(enc_x, r"source embeddings $(B, T_{\mathrm{enc}}, d_{\mathrm{model}})$", +1)
    c.frame(
        enc_x - width / 2 - 0.4,
        base - 0.42,
        enc_x + width / 2 + 0.15,
        base + pitch + 1.2,
        role="encoder",
        lw=0.9,
        dashed=False,
    )
    c.text(
        enc_x - width / 2 - 0.32,
        base + pitch + 1.08,
        r"encoder layer ($\times N$)",
        ha="left",
        size=FONT_SIZE - 1,
        weight="bold",
        color=ROLES["encoder"][0],
    )
    sublayer(enc_x, base, "multi-head self-attention", "attention", -1)
    top = sublayer(enc_x, base + pitch, r"feed-forward ($d_{\mathrm{ff}}$)", "output", -1)
    final = c.box(enc_x, base + pitch + 1.5, width * 0.8, 0.26, "final LayerNorm", role="plain", size=FONT_SIZE - 2)
    c.arrow(top, final.bottom)
    memory = c.box(enc_x, base + pitch + 2.0, 1.3, 0.32, "memory", role="encoder", size=FONT_SIZE - 1.5)
    c.arrow(final.top, memory.bottom)

    # the decoder layer
    embed(dec_x, r"target embeddings $(B, T_{\mathrm{dec}}, d_{\mathrm{model}})$", -1)
    c.frame(
        dec_x - width / 2 - 0.15,
        base - 0.42,
        dec_x + width / 2 + 0.4,
        base + 2 * pitch + 1.2,
        role="decoder",
        lw=0.9,
        dashed=False,
    )
    c.text(
        dec_x - width / 2 - 0.07,
        base + 2 * pitch + 1.08,
        r"decoder layer ($\times N$)",
        ha="left",
        size=FONT_SIZE - 1,
        weight="bold",
        color=ROLES["decoder"][0],
    )
    sublayer(dec_x, base, "causal multi-head self-attention", "attention", +1)
    sublayer(dec_x, base + pitch, "cross-attention", "attention", +1)
    top = sublayer(dec_x, base + 2 * pitch, r"feed-forward ($d_{\mathrm{ff}}$)", "output", +1)
    final = c.box(dec_x, base + 2 * pitch + 1.5, width * 0.8, 0.26, "final LayerNorm", role="plain", size=FONT_SIZE - 2)
    c.arrow(top, final.bottom)
    out = c.box(
        dec_x, base + 2 * pitch + 2.0, 1.9, 0.32, r"linear, softmax $\to p_t$", role="output", size=FONT_SIZE - 1.5
    )
    c.arrow(final.top, out.bottom)

    # memory -> the keys and values of cross-attention
    mid = (enc_x + width / 2 + dec_x - width / 2) / 2 + 0.05
    cross_y = base + pitch + 0.47
    c.line([memory.right, (mid, memory.y), (mid, cross_y)], color=ROLES["encoder"][0], lw=1.4)
    c.arrow((mid, cross_y), (dec_x - width / 2, cross_y), color=ROLES["encoder"][0], lw=1.4)
    c.text(
        mid - 0.08,
        cross_y + 0.1,
        "keys,\nvalues",
        ha="right",
        size=FONT_SIZE - 2,
        color=ROLES["encoder"][0],
        va="bottom",
    )
    c.text(dec_x + width / 2 + 0.48, cross_y, "queries\nfrom the\ndecoder", ha="left", size=FONT_SIZE - 2, color=MUTED)
    c.text(0.12, 6.15, "pre-norm sublayers:", ha="left", size=FONT_SIZE - 1, weight="bold")
    c.text(0.12, 5.89, r"$x \leftarrow x + \mathrm{sublayer}(\mathrm{LayerNorm}(x))$", ha="left", size=FONT_SIZE - 1)
    c.text(
        0.12,
        5.61,
        r"every width $d_{\mathrm{model}}$; attention with $n_{\mathrm{heads}}$ heads",
        ha="left",
        size=FONT_SIZE - 1.5,
        color=MUTED,
    )
    return c


# ---------------------------------------------------------------------------------------------
# name -> drawing function, caption and alt text
# ---------------------------------------------------------------------------------------------
DIAGRAMS: dict[str, Callable[[], Canvas]] = {
    "01_unrolled_rnn_tagger": unrolled_rnn_tagger,
    "02_encoder_decoder": encoder_decoder,
    "03_attention_unit": attention_unit,
    "04_qkv_multihead": qkv_multihead,
    "04_variants": variants,
    "05_training_pipeline": training_pipeline,
    "06_reading_a_map": reading_a_map,
    "07_transformer_block": transformer_block,
}

CAPTIONS: dict[str, tuple[str, str]] = {
    "07_transformer_block": (
        "A pre-norm Transformer encoder layer (left) and decoder layer (right). Sinusoidal positions are added "
        "to the embeddings. Every sublayer computes x + sublayer(LayerNorm(x)): the encoder layer has multi-head "
        "self-attention and a feed-forward block; the decoder layer has causal multi-head self-attention, "
        "cross-attention whose keys and values are the encoder's output (the memory) and whose queries come from "
        "the decoder, and a feed-forward block. Every width is d_model; attention has n_heads heads; N layers "
        "are stacked, and a final LayerNorm closes each stack (encoder_norm gives the memory, decoder_norm feeds "
        "the output layer).",
        "Diagram of two columns. Left: source embeddings of shape (B, T_enc, d_model) plus sinusoidal positions "
        "enter the encoder layer: LayerNorm, multi-head self-attention, a residual add, then LayerNorm, "
        "feed-forward (d_ff), a residual add; after the stack a final LayerNorm gives the memory. Right: target "
        "embeddings of shape (B, T_dec, d_model) plus positions enter the decoder layer: LayerNorm, causal "
        "multi-head self-attention, add; LayerNorm, cross-attention, add, where an arrow brings the memory as "
        "keys and values; LayerNorm, feed-forward, add; after the stack a final LayerNorm, then linear and "
        "softmax give p_t. Each residual path is a line that skips around its sublayer.",
    ),
    "06_reading_a_map": (
        "How to read an attention map (illustrative numbers, not from a trained model). Rows are target tokens "
        "t, top to bottom; columns are source tokens i. (1) Each row holds the weights alpha_t,i of one target "
        "step and sums to 1. (2) A bright cell is a large weight: 'le' attends to 'the'. (3) An off-diagonal "
        "block is a reordering: 'black cat' becomes 'chat noir'. (4) A diagonal is a monotonic alignment, the "
        "same word order.",
        "A 5 by 5 grid of weights in the viridis colour map, source words the, black, cat, sleeps, . across the "
        "top and target words le, chat, noir, dort, . down the side, each cell printed with its weight. The "
        "bright cells lie on the diagonal (le-the 0.80, dort-sleeps 0.84, .-. 0.85) except for a 2 by 2 block, "
        "outlined, where chat-cat 0.75 and noir-black 0.78 cross. Numbered notes explain rows, bright cells, "
        "the reordered block and the diagonal.",
    ),
    "05_training_pipeline": (
        "The training pipeline: (1) sentence pairs of different lengths; (2) length buckets group pairs whose "
        "source lengths are close; (3) one bucket becomes a padded batch, src of shape (B, T_enc) and tgt of "
        "shape (B, T_dec), with PAD filling each row up to the longest; (4) masks mark the real tokens: the "
        "source padding mask M for attention, the target mask for the loss; (5) the model gives logits "
        "(B, T_dec, n_vocab); (6) the masked cross-entropy averages over the real target tokens only.",
        "Diagram in six numbered stages. Six sentence pairs drawn as rows of blue source cells and orange target "
        "cells of different lengths; two buckets, lengths 3 to 4 and 5 to 6; a padded batch of three rows where "
        "grey PAD cells fill the short rows; two boolean masks of the same shape, green for real tokens and "
        "white for PAD; a model box that outputs logits; and a grid of per-token losses in which the PAD "
        "position is crossed out, with the note: loss = mean over the real target tokens only.",
    ),
    "04_variants": (
        "The five variants of the chapter's table, side by side: which vectors are the queries (Q), keys (K) "
        "and values (V), and the score. (1) and (2) are encoder-decoder attention, the decoder state s_t asking "
        "the encoder states h_i, with a dot product or with learnt projections W_Q, W_K, W_V and the scaled "
        "score; (3) and (4) are encoder-only self-attention, one sequence x asking itself; (5), the original "
        "PyTorch tutorial's attention, has no keys: its weights come from [emb(y_(t-1)); s_(t-1)] alone (the "
        "embedding of the previous output word and the decoder state before step t), one per fixed slot.",
        "Diagram of five panels. In panels 1 and 2 a decoder state s_t points at encoder states h_1, h_2, h_3; "
        "in panels 3 and 4 a token x_t points at the tokens x_1, x_2, x_3 of its own sequence; in panel 5 the "
        "vector [emb(y_(t-1)); s_(t-1)] goes through W_attn to L slots whose weights land on h_1, h_2, h_3 without "
        "comparing with them. Under each panel: Q, K, V and the score, for example Q = W_Q s_t, K = W_K h_i, "
        "V = W_V h_i, score q_t^T k_i / sqrt(d_k) in panel 2, and K = none in panel 5.",
    ),
    "04_qkv_multihead": (
        "(a) Attention as a soft lookup: a query q is compared with every key k_j, a softmax turns the scores "
        "into weights alpha_j (illustrative numbers), and the output is the weighted sum of the values v_j. "
        "(b) Multi-head attention: n_heads heads in parallel, each with its own projections W_Q, W_K, W_V and "
        "scaled dot-product attention; their outputs are concatenated and mixed by W_O.",
        "Diagram in two panels. Left: keys k_1 to k_4 on the left and values v_1 to v_4 on the right; between "
        "them bars show the weights 0.10, 0.62, 0.20, 0.08 that a query q, drawn above, gives each key; the "
        "values flow into a sum that gives the output o. Right: queries, keys and values each pass through a "
        "stack of projections W_Q, W_K, W_V, one per head, into a stack of softmax(Q K^T / sqrt(d_k)) V blocks; "
        "the heads are concatenated and pass through W_O to the output of shape (T_q, d_model).",
    ),
    "01_unrolled_rnn_tagger": (
        "(a) An RNN unrolled over time: each step reads x_t and the previous state h_(t-1) (weights W_xh and "
        "W_hh) and emits one output, so a 1:1 tagger gives one tag per input word. (b) Translation does not fit "
        "1:1: 'i love you' -> 'je t' aime' reorders the words, so at step 2 the output t' translates 'you', "
        "which the RNN reads only at step 3.",
        "Diagram in two panels. Left: inputs x_1, x_2, x_3 ('i', 'love', 'you') feed states h_1, h_2, h_3 through "
        "W_xh; each state feeds the next through W_hh, starting from h_0; above each state a softmax emits a tag "
        "(PRON, VERB, PRON). Right: the wanted outputs je, t', aime above the inputs i, love, you; lines join "
        "each output to the word it translates, and the line from t' (step 2) to 'you' (step 3) crosses, "
        "highlighted.",
    ),
    "02_encoder_decoder": (
        "The encoder-decoder without attention: the encoder reads the source into states h_1 .. h_T_enc, and "
        "only its final state h_T_enc, one vector of size d, passes to the decoder (the bottleneck). The decoder "
        "states s_1 .. s_T_dec each give a softmax over the vocabulary and emit one output word; the previous "
        "output word is the decoder's next input.",
        "Diagram: source words i, love, you feed an encoder of three states h_1, h_2, h_T_enc, linked left to "
        "right. The final state, highlighted as the context vector and the bottleneck, is the only arrow into "
        "the decoder. The decoder states s_1 to s_T_dec take <bos>, je, t', aime as inputs and each feed a "
        "softmax that outputs je, t', aime, <eos>.",
    ),
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
    return svg[:end] + attributes + ">" + head + svg[end + 1 :]


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
