"""The diagram ``02_encoder_decoder`` (chapter 02).

The encoder-decoder whose only link is the encoder's final state (the bottleneck).
"""

from __future__ import annotations

from .common import FONT_SIZE, MUTED, ROLES, Canvas

CAPTION = (
    "The encoder-decoder without attention: the encoder reads the source into states h_1 .. h_T_enc, and "
    "only its final state h_T_enc, one vector of size d, passes to the decoder (the bottleneck). The decoder "
    "states s_1 .. s_T_dec each give a softmax over the vocabulary and emit one output word; the previous "
    "output word is the decoder's next input."
)
ALT = (
    "Diagram: source words i, love, you feed an encoder of three states h_1, h_2, h_T_enc, linked left to "
    "right. The final state, highlighted as the context vector and the bottleneck, is the only arrow into "
    "the decoder. The decoder states s_1 to s_T_dec take <bos>, je, t', aime as inputs and each feed a "
    "softmax that outputs je, t', aime, <eos>."
)


def draw() -> Canvas:
    """The diagram, on a new canvas."""
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
