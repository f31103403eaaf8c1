"""The diagram ``03_attention_unit`` (chapter 03).

One decoder step t of dot-product attention, its five steps numbered.
"""

from __future__ import annotations

from .common import FONT_SIZE, MUTED, ROLES, Canvas

CAPTION = (
    "The attention unit for one decoder step t, in five steps: (1) the encoder states h_i and the decoder "
    "state s_t; (2) one score e_t,i = s_t^T h_i per encoder state; (3) a softmax over i turns the scores into "
    "weights alpha_t,i that sum to 1; (4) the attention vector a_t = sum_i alpha_t,i h_i; (5) the output "
    "layers s~_t = tanh(W_c [a_t; s_t]) and p_t = softmax(W_o s~_t)."
)
ALT = (
    "Diagram: encoder states h_1 to h_T_enc in a row and the decoder state s_t on the right. Each h_i and s_t "
    "give a score e_t,i; a softmax over the scores gives weights alpha_t,i; the weighted sum of the h_i gives "
    "a_t; a_t and s_t are concatenated, passed through tanh(W_c ...) to give s~_t, and softmax(W_o s~_t) gives "
    "the output distribution p_t."
)


def draw() -> Canvas:
    """The diagram, on a new canvas."""
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
