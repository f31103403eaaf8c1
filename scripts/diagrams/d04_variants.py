"""The diagram ``04_variants`` (chapter 04).

The five variants of the chapter's table, side by side: who is query, key and value.
"""

from __future__ import annotations

from .common import FONT_SIZE, INK, MUTED, ROLES, WIDTH, Canvas

CAPTION = (
    "The five variants of the chapter's table, side by side: which vectors are the queries (Q), keys (K) "
    "and values (V), and the score. (1) and (2) are encoder-decoder attention, the decoder state s_t asking "
    "the encoder states h_i, with a dot product or with learnt projections W_Q, W_K, W_V and the scaled "
    "score; (3) and (4) are encoder-only self-attention, one sequence x asking itself; (5), the original "
    "PyTorch tutorial's attention, has no keys: its weights come from [emb(y_(t-1)); s_(t-1)] alone (the "
    "embedding of the previous output word and the decoder state before step t), one per fixed slot."
)
ALT = (
    "Diagram of five panels. In panels 1 and 2 a decoder state s_t points at encoder states h_1, h_2, h_3; "
    "in panels 3 and 4 a token x_t points at the tokens x_1, x_2, x_3 of its own sequence; in panel 5 the "
    "vector [emb(y_(t-1)); s_(t-1)] goes through W_attn to L slots whose weights land on h_1, h_2, h_3 without "
    "comparing with them. Under each panel: Q, K, V and the score, for example Q = W_Q s_t, K = W_K h_i, "
    "V = W_V h_i, score q_t^T k_i / sqrt(d_k) in panel 2, and K = none in panel 5."
)


def draw() -> Canvas:
    """The diagram, on a new canvas."""
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
