"""The diagram ``04_qkv_multihead`` (chapter 04).

Attention as a soft lookup (query, keys, values), and multi-head attention.
"""

from __future__ import annotations

from matplotlib.patches import Rectangle

from .common import FONT_SIZE, MUTED, ROLES, Canvas

CAPTION = (
    "(a) Attention as a soft lookup: a query q is compared with every key k_j, a softmax turns the scores "
    "into weights alpha_j (illustrative numbers), and the output is the weighted sum of the values v_j. "
    "(b) Multi-head attention: n_heads heads in parallel, each with its own projections W_Q, W_K, W_V and "
    "scaled dot-product attention; their outputs are concatenated and mixed by W_O."
)
ALT = (
    "Diagram in two panels. Left: keys k_1 to k_4 on the left and values v_1 to v_4 on the right; between "
    "them bars show the weights 0.10, 0.62, 0.20, 0.08 that a query q, drawn above, gives each key; the "
    "values flow into a sum that gives the output o. Right: queries, keys and values each pass through a "
    "stack of projections W_Q, W_K, W_V, one per head, into a stack of softmax(Q K^T / sqrt(d_k)) V blocks; "
    "the heads are concatenated and pass through W_O to the output of shape (T_q, d_model)."
)


def draw() -> Canvas:
    """The diagram, on a new canvas."""
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
