"""The diagram ``01_unrolled_rnn_tagger`` (chapter 01).

An RNN unrolled over time, used as a 1:1 tagger, and why translation does not fit 1:1.
"""

from __future__ import annotations

from .common import FONT_SIZE, MUTED, ROLES, Canvas

CAPTION = (
    "(a) An RNN unrolled over time: each step reads x_t and the previous state h_(t-1) (weights W_xh and "
    "W_hh) and emits one output, so a 1:1 tagger gives one tag per input word. (b) Translation does not fit "
    "1:1: 'i love you' -> 'je t' aime' reorders the words, so at step 2 the output t' translates 'you', "
    "which the RNN reads only at step 3."
)
ALT = (
    "Diagram in two panels. Left: inputs x_1, x_2, x_3 ('i', 'love', 'you') feed states h_1, h_2, h_3 through "
    "W_xh; each state feeds the next through W_hh, starting from h_0; above each state a softmax emits a tag "
    "(PRON, VERB, PRON). Right: the wanted outputs je, t', aime above the inputs i, love, you; lines join "
    "each output to the word it translates, and the line from t' (step 2) to 'you' (step 3) crosses, "
    "highlighted."
)


def draw() -> Canvas:
    """The diagram, on a new canvas."""
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
