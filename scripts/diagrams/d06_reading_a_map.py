"""The diagram ``06_reading_a_map`` (chapter 06).

How to read an attention map (an illustrative map, not a trained model's).
"""

from __future__ import annotations

import matplotlib
from matplotlib.patches import Rectangle

from .common import FONT_SIZE, INK, MUTED, Canvas

CAPTION = (
    "How to read an attention map (illustrative numbers, not from a trained model). Rows are target tokens "
    "t, top to bottom; columns are source tokens i. (1) Each row holds the weights alpha_t,i of one target "
    "step and sums to 1. (2) A bright cell is a large weight: 'le' attends to 'the'. (3) An off-diagonal "
    "block is a reordering: 'black cat' becomes 'chat noir'. (4) A diagonal is a monotonic alignment, the "
    "same word order."
)
ALT = (
    "A 5 by 5 grid of weights in the viridis colour map, source words the, black, cat, sleeps, . across the "
    "top and target words le, chat, noir, dort, . down the side, each cell printed with its weight. The "
    "bright cells lie on the diagonal (le-the 0.80, dort-sleeps 0.84, .-. 0.85) except for a 2 by 2 block, "
    "outlined, where chat-cat 0.75 and noir-black 0.78 cross. Numbered notes explain rows, bright cells, "
    "the reordered block and the diagonal."
)


def draw() -> Canvas:
    """The diagram, on a new canvas."""
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
