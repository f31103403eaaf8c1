"""The diagram ``08_attention_at_scale`` (chapter 08).

Tiled attention with running statistics, a decoding step with a key-value cache, rotary positions.
"""

from __future__ import annotations

import math

from .common import FONT_SIZE, INK, MUTED, ROLES, Canvas

CAPTION = (
    "What chapter 08 builds. (a) Tiled attention: the queries Q meet the keys and values one block of b "
    "rows at a time; the block's scores E_j update three running quantities per query row (the maximum m, "
    "the normaliser l and the output O), and the T_q x T_k score matrix is never built. (b) A decoding step "
    "with a key-value cache: only the new token x_t is projected; its key k_t and value v_t are appended to "
    "the cached ones, and its query q_t attends to all of them. (c) Rotary positions: each pair of "
    "coordinates of a query or key at position p is turned by the angle p theta_i, so that the score of "
    "two rotated vectors depends only on the offset p' - p."
)
ALT = (
    "Diagram in three panels. Top: a tall box Q on the left, a dashed grid standing for the T_q by T_k "
    "scores, labelled never built, with one column block of cells shaded green: the scores E_j of block "
    "K_j, V_j, highlighted among the blocks drawn above the grid; an arrow leads to three narrow boxes m, l "
    "and O, and the update formulas are written beside them. Bottom left: a row of cached keys k_0 to k_4 "
    "and values v_0 to v_4 with a new key k_t and value v_t appended in orange; below, the new token x_t "
    "goes through W_Q, W_K, W_V; its query q_t points at the keys. Bottom right: two arrows from the origin "
    "of a plane, a pair of coordinates before and after a rotation by the angle p theta_i, with the formula "
    "theta_i = base^(-2i/d_k) and the identity of the scores."
)


def draw() -> Canvas:
    """The diagram, on a new canvas."""
    c = Canvas(6.0)
    attn_edge, attn_fill = ROLES["attention"]
    enc_edge, enc_fill = ROLES["encoder"]
    dec_edge = ROLES["decoder"][0]
    warn_edge, warn_fill = ROLES["warning"]
    small, smaller = FONT_SIZE - 1.5, FONT_SIZE - 2

    # (a) tiled attention: one block of keys at a time, the score matrix never built
    c.title(0.1, 5.8, "(a) tiled attention: one block of keys and values at a time")
    x0, y0, cw, ch = 0.85, 3.35, 0.3, 0.3  # lower left of the (T_q x T_k) grid, and one cell's size
    rows, cols, block, j = 6, 8, 2, 1  # j: the block being read
    mid = y0 + rows * ch / 2
    c.frame(x0 - 0.05, y0 - 0.05, x0 + cols * cw + 0.05, y0 + rows * ch + 0.05, role="plain", dashed=True)
    c.text(x0 + cols * cw / 2, y0 - 0.22, r"$T_q \times T_k$ scores: never built", size=small, color=MUTED)
    for col in range(j * block, (j + 1) * block):
        for row in range(rows):
            c.cell(x0 + (col + 0.5) * cw, y0 + (row + 0.5) * ch, cw, ch, attn_fill, edge=attn_edge, lw=0.6)
    c.text(x0 + (j * block + 1) * cw, mid, r"$E_j$")
    for b in range(cols // block):  # the keys and values, in blocks of b rows
        role = "attention" if b == j else "neutral"
        label = rf"$K_{{{b + 1}}}, V_{{{b + 1}}}$"
        c.box(x0 + (b * block + 1) * cw, y0 + rows * ch + 0.3, block * cw - 0.06, 0.26, label, role=role, size=smaller)
    c.text(x0 + cols * cw + 0.12, y0 + rows * ch + 0.3, r"$b$ keys per block", ha="left", size=small, color=MUTED)
    q = c.box(x0 - 0.42, mid, 0.36, rows * ch, r"$Q$", role="decoder", rounding=0.03)
    c.text(q.x, y0 - 0.22, r"$T_q$ rows", size=small, color=MUTED)
    sx = x0 + cols * cw + 0.4  # the running quantities of every query row
    for label, x, width in [(r"$m$", 0.12, 0.24), (r"$\ell$", 0.44, 0.24), (r"$O$", 0.84, 0.45)]:
        c.box(sx + x, mid, width, rows * ch, label, role="output", rounding=0.03)
    c.arrow((x0 + (j + 1) * block * cw + 0.02, mid), (sx - 0.02, mid), color=attn_edge)
    c.text(sx + 0.53, y0 - 0.22, "running, per row", size=small, color=MUTED)
    formulas = [
        r"$E_j = Q K_j^{\top} / \sqrt{d_k}$",
        r"$m' = \max(m, \mathrm{rowmax}\ E_j)$",
        r"$\ell' = e^{m - m'} \ell + \mathrm{rowsum}\ e^{E_j - m'}$",
        r"$O' = e^{m - m'} O + e^{E_j - m'}\, V_j$",
        r"at the end: $O / \ell$, $L = m + \log \ell$",
    ]
    for k, text in enumerate(formulas):
        c.text(sx + 1.17, y0 + rows * ch - 0.05 - k * 0.36, text, ha="left", size=smaller)

    # (b) one decoding step with a key-value cache
    c.title(0.1, 2.75, "(b) one decoding step with a key-value cache")
    y_k, y_v, kw, past = 1.95, 1.45, 0.36, 5
    for i in range(past):
        x = 0.75 + i * (kw + 0.06)
        c.cell(x, y_k, kw, 0.36, enc_fill, edge=enc_edge, text=rf"$k_{{{i}}}$", size=smaller)
        c.cell(x, y_v, kw, 0.36, enc_fill, edge=enc_edge, text=rf"$v_{{{i}}}$", size=smaller)
    x_new = 0.75 + past * (kw + 0.06)
    c.cell(x_new, y_k, kw, 0.36, warn_fill, edge=warn_edge, text=r"$k_t$", size=smaller, lw=1.4)
    c.cell(x_new, y_v, kw, 0.36, warn_fill, edge=warn_edge, text=r"$v_t$", size=smaller, lw=1.4)
    c.text(1.4, 2.42, r"cache: $T_{\mathrm{past}}$ earlier tokens, kept", size=small, color=MUTED)
    c.text(0.35, y_k, "K", weight="bold", size=FONT_SIZE - 1)
    c.text(0.35, y_v, "V", weight="bold", size=FONT_SIZE - 1)
    token = c.box(x_new + 1.2, 0.45, 0.7, 0.32, r"new $x_t$", role="decoder", size=small)
    proj = c.box(x_new + 1.2, 1.0, 1.1, 0.32, r"$W_Q, W_K, W_V$", role="neutral", size=small)
    c.arrow(token.top, proj.bottom)
    c.arrow((proj.x - 0.45, proj.y + 0.16), (x_new + kw / 2 + 0.02, y_v), color=warn_edge)
    c.arrow((proj.x - 0.3, proj.y + 0.16), (x_new + kw / 2 + 0.02, y_k), color=warn_edge)
    qt = c.box(x_new + 1.2, 1.95, 0.45, 0.32, r"$q_t$", role="decoder", size=small)
    c.arrow((proj.x + 0.15, proj.y + 0.16), qt.bottom)
    bracket = y_k + 0.27  # over every key, the cached ones and the new one
    c.line(
        [(0.6, bracket - 0.06), (0.6, bracket), (x_new + kw / 2, bracket), (x_new + kw / 2, bracket - 0.06)],
        color=dec_edge,
        lw=1.0,
    )
    c.arrow(qt.top, (x_new + 0.05, bracket), color=dec_edge, rad=0.35)
    c.text(x_new + 0.6, 2.42, "attends to all keys", ha="left", size=smaller, color=dec_edge)
    c.text(1.6, 0.85, "a step projects only the new token;\nits key and value are appended", size=small, color=MUTED)

    # (c) rotary positions
    c.title(4.55, 2.75, "(c) rotary positions")
    ox, oy, r = 5.0, 1.0, 1.0
    c.arrow((ox - 0.15, oy), (ox + r + 0.25, oy), color=MUTED, lw=0.8)
    c.arrow((ox, oy - 0.15), (ox, oy + r + 0.3), color=MUTED, lw=0.8)
    c.text(ox + r + 0.28, oy - 0.14, r"$x_{2i}$", size=smaller, color=MUTED)
    c.text(ox - 0.2, oy + r + 0.28, r"$x_{2i+1}$", size=smaller, color=MUTED)
    start, end = math.radians(15), math.radians(70)
    c.arrow((ox, oy), (ox + r * math.cos(start), oy + r * math.sin(start)), color=enc_edge, lw=1.4)
    c.arrow((ox, oy), (ox + r * math.cos(end), oy + r * math.sin(end)), color=warn_edge, lw=1.4)
    angles = [start + (end - start) * s / 20 for s in range(21)]
    c.line([(ox + 0.55 * math.cos(a), oy + 0.55 * math.sin(a)) for a in angles], color=INK, lw=0.9)
    c.text(ox + 0.72, oy + 0.5, r"$p\,\theta_i$", size=FONT_SIZE - 1)
    c.text(ox + r + 0.05, oy + 0.45, "pair i of\nq or k", ha="left", size=smaller, color=enc_edge)
    c.text(ox + 0.45, oy + r + 0.05, "at position p", ha="left", size=smaller, color=warn_edge)
    identity = r"$\theta_i = \mathrm{base}^{-2i/d_k}$,  $(R_p q)^{\top} R_{p'} k = q^{\top} R_{p'-p}\, k$"
    c.text(4.5, 0.3, identity, ha="left", size=smaller)
    return c
