"""The diagram ``07_transformer_block`` (chapter 07).

A pre-norm Transformer encoder layer and decoder layer, with sinusoidal positions, and the final layer norm
after each stack.
"""

from __future__ import annotations

from matplotlib.patches import Circle

from .common import FONT_SIZE, INK, MUTED, ROLES, Canvas

CAPTION = (
    "A pre-norm Transformer encoder layer (left) and decoder layer (right). Sinusoidal positions are added "
    "to the embeddings. Every sublayer computes x + sublayer(LayerNorm(x)): the encoder layer has multi-head "
    "self-attention and a feed-forward block; the decoder layer has causal multi-head self-attention, "
    "cross-attention whose keys and values are the encoder's output (the memory) and whose queries come from "
    "the decoder, and a feed-forward block. Every width is d_model; attention has n_heads heads; N layers "
    "are stacked, and a final LayerNorm closes each stack (encoder_norm gives the memory, decoder_norm feeds "
    "the output layer)."
)
ALT = (
    "Diagram of two columns. Left: source embeddings of shape (B, T_enc, d_model) plus sinusoidal positions "
    "enter the encoder layer: LayerNorm, multi-head self-attention, a residual add, then LayerNorm, "
    "feed-forward (d_ff), a residual add; after the stack a final LayerNorm gives the memory. Right: target "
    "embeddings of shape (B, T_dec, d_model) plus positions enter the decoder layer: LayerNorm, causal "
    "multi-head self-attention, add; LayerNorm, cross-attention, add, where an arrow brings the memory as "
    "keys and values; LayerNorm, feed-forward, add; after the stack a final LayerNorm, then linear and "
    "softmax give p_t. Each residual path is a line that skips around its sublayer."
)


def draw() -> Canvas:
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
