"""The diagram ``05_training_pipeline`` (chapter 05).

From sentence pairs to the masked loss, as chapter 05's training loop does it.
"""

from __future__ import annotations

from .common import FONT_SIZE, MUTED, ROLES, Canvas

CAPTION = (
    "The training pipeline: (1) sentence pairs of different lengths; (2) length buckets group pairs whose "
    "source lengths are close; (3) one bucket becomes a padded batch, src of shape (B, T_enc) and tgt of "
    "shape (B, T_dec), with PAD filling each row up to the longest; (4) masks mark the real tokens: the "
    "source padding mask M for attention, the target mask for the loss; (5) the model gives logits "
    "(B, T_dec, n_vocab); (6) the masked cross-entropy averages over the real target tokens only."
)
ALT = (
    "Diagram in six numbered stages. Six sentence pairs drawn as rows of blue source cells and orange target "
    "cells of different lengths; two buckets, lengths 3 to 4 and 5 to 6; a padded batch of three rows where "
    "grey PAD cells fill the short rows; two boolean masks of the same shape, green for real tokens and "
    "white for PAD; a model box that outputs logits; and a grid of per-token losses in which the PAD "
    "position is crossed out, with the note: loss = mean over the real target tokens only."
)


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


def draw() -> Canvas:
    """The diagram, on a new canvas."""
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
