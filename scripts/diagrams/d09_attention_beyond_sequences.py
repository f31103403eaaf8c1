"""The diagram ``09_attention_beyond_sequences`` (chapter 09).

An image read as patches by a Vision Transformer, and a Perceiver's latents reading a large input.
"""

from __future__ import annotations

from .common import FONT_SIZE, INK, MUTED, ROLES, Canvas

CAPTION = (
    "What chapter 09 builds. (a) The Vision Transformer: a 4 x 4 image cut into patches of 2 x 2 pixels in "
    "reading order; each patch is flattened and projected to a token, a class token is put in front, and "
    "every token gets a learned position; L pre-norm encoder layers let every token attend to every other, "
    "and the head reads only the class token's final row. Each layer's head-averaged map A^(l) is kept for "
    "the rollout. (b) A Perceiver cross-attention block: N latents (the queries) read M inputs (the keys and "
    "values, here pixels with position features): N x M scores, linear in M; no M x M matrix is ever built."
)
ALT = (
    "Diagram in two panels. Top: a four by four grid of pixels divided into four numbered two by two "
    "patches; an arrow labelled patchify leads to a row of five tokens, a class token marked CLS followed by "
    "patch tokens 1 to 4, each with a plus sign for its position; above them a wide box for the L encoder "
    "layers with self-attention over all five tokens, from which the class token's output row goes to a "
    "norm and a head that gives the logits; a side note says the maps A^(1) to A^(L) go to the rollout. "
    "Bottom: a long row of many small input cells labelled M inputs, and above it four latent boxes; lines "
    "fan out from every latent to the inputs, labelled N x M scores; the latents then go to a latent "
    "self-attention box labelled N x N and to the output, and a note says that no M x M matrix is built."
)


def draw() -> Canvas:
    """The diagram, on a new canvas."""
    c = Canvas(5.0)
    enc_edge, enc_fill = ROLES["encoder"]
    attn_edge, attn_fill = ROLES["attention"]
    dec_edge, dec_fill = ROLES["decoder"]
    small, smaller = FONT_SIZE - 1.5, FONT_SIZE - 2

    # (a) the Vision Transformer
    c.title(0.1, 4.8, "(a) the Vision Transformer: an image read as a sequence of patches")
    px, py, cell = 0.35, 2.75, 0.3  # lower left of the 4 x 4 image, one pixel's side
    shades = ["#FFFFFF", "#E0E0E0", "#BDBDBD", "#9E9E9E"]
    for row in range(4):
        for col in range(4):
            shade = shades[(row * 3 + col * 5) % 4]
            c.cell(px + (col + 0.5) * cell, py + (3.5 - row) * cell, cell, cell, shade, lw=0.4)
    for k, (row, col) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)], start=1):  # the 2 x 2 patches, reading order
        x0, y1 = px + col * 2 * cell, py + (2 - row) * 2 * cell
        corners = [(x0, y1), (x0 + 2 * cell, y1), (x0 + 2 * cell, y1 - 2 * cell), (x0, y1 - 2 * cell), (x0, y1)]
        c.line(corners, color=enc_edge, lw=1.8)
        c.badge(x0 + 0.16, y1 - 0.16, k, r=0.1)
    c.text(px + 2 * cell, py - 0.2, "image, patches of $p \\times p$", size=small, color=MUTED)
    tokens_x = [2.65, 3.3, 3.95, 4.6, 5.25]
    y_tok, y_layers, y_out = 2.95, 3.75, 4.4
    c.arrow((px + 4 * cell + 0.08, py + 2 * cell), (tokens_x[0] - 0.4, y_tok))
    c.text(1.8, y_tok + 0.72, "patchify,\nproj", size=smaller, color=MUTED)
    for i, x in enumerate(tokens_x):
        label, role = ("CLS", "decoder") if i == 0 else (str(i), "encoder")
        c.box(x, y_tok, 0.5, 0.34, label, role=role, size=smaller)
        c.text(x, y_tok - 0.34, "$+$ pos", size=smaller, color=MUTED)
    c.text(
        (tokens_x[0] + tokens_x[-1]) / 2,
        y_tok - 0.62,
        "$N + 1$ tokens: the class token, then one per patch",
        size=smaller,
        color=MUTED,
    )
    layers = c.box(
        (tokens_x[0] + tokens_x[-1]) / 2,
        y_layers,
        tokens_x[-1] - tokens_x[0] + 1.0,
        0.42,
        "$L$ pre-norm encoder layers: self-attention over $N + 1$ tokens",
        role="attention",
        size=smaller,
    )
    for x in tokens_x:
        c.arrow((x, y_tok + 0.17), (x, layers.bottom[1]), lw=0.8)
    cls_out = c.box(tokens_x[0], y_out, 0.5, 0.3, "$x^{(L)}_0$", role="decoder", size=smaller)
    c.arrow((tokens_x[0], layers.top[1]), cls_out.bottom, color=dec_edge)
    head = c.box(tokens_x[0] + 1.55, y_out, 1.5, 0.3, "norm, head: logits", role="output", size=smaller)
    c.arrow(cls_out.right, head.left, color=dec_edge)
    c.text(
        5.85,
        y_layers + 0.05,
        "maps $A^{(1)}, \\dots, A^{(L)}$\n$\\rightarrow$ rollout",
        ha="left",
        size=smaller,
        color=attn_edge,
    )

    # (b) the Perceiver's cross-attention
    c.title(0.1, 2.05, "(b) a Perceiver block: $N$ latents read $M$ inputs")
    inputs_x = [0.45 + 0.2 * i for i in range(24)]
    y_in, y_lat = 0.45, 1.45
    for x in inputs_x:
        c.cell(x, y_in, 0.16, 0.26, enc_fill, edge=enc_edge, lw=0.6)
    c.text(
        inputs_x[0] - 0.1,
        y_in - 0.3,
        "$M$ inputs (keys and values): pixels with position features",
        ha="left",
        size=smaller,
        color=MUTED,
    )
    latents_x = [1.55, 2.35, 3.15, 3.95]
    for j, x in enumerate(latents_x):
        for i in range(j % 2, len(inputs_x), 3):  # a fan of lines: each latent reads the whole input
            c.line([(x, y_lat - 0.15), (inputs_x[i], y_in + 0.13)], color=attn_edge, lw=0.35)
    for j, x in enumerate(latents_x):
        c.box(x, y_lat, 0.5, 0.3, f"$z_{j + 1}$", role="decoder", size=smaller)
    c.text(latents_x[0] - 0.45, y_lat, "$N$ latents\n(queries)", ha="right", size=smaller, color=MUTED)
    c.text(
        5.35,
        1.02,
        "cross-attention: $N \\times M$ scores,\nlinear in $M$; no $M \\times M$ matrix",
        size=smaller,
        color=attn_edge,
    )
    block = c.box(5.35, 1.65, 1.6, 0.34, "latent self-attention: $N \\times N$", role="attention", size=smaller)
    c.arrow((latents_x[-1] + 0.25, y_lat), block.left, color=INK)
    c.text(6.45, 1.65, "$\\rightarrow$ out", ha="left", size=smaller, color=MUTED)
    del attn_fill, dec_fill
    return c
