"""Helpers of chapter 02's visible tests (the encoder-decoder and its bottleneck, in PyTorch).

Toy models whose weights are set by hand, oracles built from PyTorch's own modules (``nn.GRUCell``,
``F.cross_entropy``) and comparisons that say what differs and the likely fix. Each check raises
``AssertionError`` with a message that teaches and prints nothing when the answer is right. The
models are passed in (your ``Encoder`` and ``Decoder`` classes), so that the checks run them.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from . import compare

__all__ = [
    "close",
    "constant_models",
    "counting_models",
    "decoder_attributes",
    "encoder_attributes",
    "fractions_by_length",
    "gold_previous_tokens",
    "gradient_reaches_encoder",
    "gradients_reach",
    "gru_cell_step",
    "ids_are_arguments",
    "mean_over_real_tokens",
    "padding_ignored",
    "same_tokens",
]


def close(got, expected, what: str, hint: str = "", atol: float = 1e-8, rtol: float = 1e-5) -> None:
    """Two tensors of the same shape and dtype with equal values within atol and rtol (``torch.allclose``;
    the comparison is :func:`attention_course.checks.compare.close`)."""
    compare.close(got, expected, what, hint, rtol=rtol, atol=atol)


def encoder_attributes(encoder, pad_id: int, hidden_dim: int) -> None:
    """The attributes Exercise 2.1 names: embedding (with padding_idx) and a batch-first GRU."""
    embedding, rnn = getattr(encoder, "embedding", None), getattr(encoder, "rnn", None)
    if not (isinstance(embedding, nn.Embedding) and embedding.padding_idx == pad_id):
        raise AssertionError(
            f"encoder.embedding must be nn.Embedding(vocab_size, emb_dim, padding_idx=pad_id), got {embedding!r}"
        )
    if not (isinstance(rnn, nn.GRU) and rnn.batch_first and rnn.hidden_size == hidden_dim):
        raise AssertionError(f"encoder.rnn must be nn.GRU(emb_dim, hidden_dim, batch_first=True), got {rnn!r}")


def decoder_attributes(decoder, emb_dim: int, vocab_size: int) -> None:
    """The attributes Exercise 2.2 names: embedding, a batch-first GRU and the output layer out."""
    embedding, rnn, out = (getattr(decoder, name, None) for name in ("embedding", "rnn", "out"))
    if not (isinstance(embedding, nn.Embedding) and embedding.embedding_dim == emb_dim):
        raise AssertionError(f"decoder.embedding must be nn.Embedding(vocab_size, emb_dim), got {embedding!r}")
    if not (isinstance(rnn, nn.GRU) and rnn.batch_first):
        raise AssertionError(f"decoder.rnn must be nn.GRU(emb_dim, hidden_dim, batch_first=True), got {rnn!r}")
    if not (isinstance(out, nn.Linear) and out.out_features == vocab_size):
        raise AssertionError(f"decoder.out must be nn.Linear(hidden_dim, vocab_size), got {out!r}")


def gradients_reach(module, tensors, names, what: str) -> None:
    """Each of ``tensors`` carries a gradient, and the sum of their sums backpropagates into each named weight."""
    if not all(t.requires_grad for t in tensors):
        raise AssertionError(
            f"{what} carry no gradient, so no loss could train the model: do not run forward under torch.no_grad() "
            "(that is for the demo cells, not for the model) and do not .detach() what you return"
        )
    module.zero_grad()
    sum(t.sum() for t in tensors).backward()
    weights = dict(module.named_parameters())
    for name in names:
        grad = weights[name].grad
        if grad is None or grad.abs().sum() == 0:
            raise AssertionError(
                f"no gradient reached {name} from {what}: compute them from the embedding and the GRU, without "
                "detaching anything on the way"
            )


def gru_cell_step(rnn, embedded, hidden):
    """The oracle of one decoder step: ``nn.GRUCell`` holding the weights of the one-layer GRU ``rnn``."""
    cell = nn.GRUCell(rnn.input_size, rnn.hidden_size)
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, name).copy_(getattr(rnn, name + "_l0"))
        return cell(embedded, hidden)


def _reaches(encoder, tensor) -> bool:
    """Does a loss computed from ``tensor`` reach the encoder's recurrent weights?"""
    for weight in encoder.parameters():
        weight.grad = None
    if not tensor.requires_grad:
        return False
    torch.autograd.backward(tensor.sum())
    grad = encoder.rnn.weight_hh_l0.grad
    return grad is not None and grad.abs().sum() > 0


def gradient_reaches_encoder(loss, encoder, decoder, src, lengths, bos_id: int = 1) -> None:
    """``loss.backward()`` reaches the encoder's GRU; if not, say where the gradient is cut: in the Encoder, in
    the Decoder (which must let the gradient flow back into the state it is given) or in the loss itself."""
    if not _reaches(encoder, loss):
        _, final = encoder(src, lengths)
        if not _reaches(encoder, final):
            cut = "in your Encoder: its final state carries no gradient (mend Exercise 2.1 first)"
        elif not _reaches(encoder, decoder(torch.full((src.size(0),), bos_id), encoder(src, lengths)[1])[0]):
            cut = "in your Decoder: no gradient flows back into the state it is given (mend Exercise 2.2 first)"
        else:
            cut = (
                "in teacher_forcing_loss: start the decoder from the encoder's final state, without detaching it "
                "(no .detach(), .item() or torch.no_grad())"
            )
        raise AssertionError(f"no gradient reached the encoder; the cut is {cut}")


def padding_ignored(teacher_forcing_loss, encoder, decoder, src, lengths, tgt, loss) -> None:
    """One more column of padding (id 0) adds no real token: the loss must not change."""
    wider = torch.cat([tgt, torch.zeros(tgt.size(0), 1, dtype=torch.long)], dim=1)
    with torch.no_grad():
        loss_wider = teacher_forcing_loss(encoder, decoder, src, lengths, wider, bos_id=1, pad_id=0)
    if not torch.isclose(loss_wider, loss.detach(), atol=1e-6):
        raise AssertionError(
            f"an extra padding column changed the loss from {loss.item():.6f} to {loss_wider.item():.6f}: "
            "padded target positions must be ignored (ignore_index=pad_id)"
        )


def mean_over_real_tokens(teacher_forcing_loss, encoder, decoder, src, lengths, tgt) -> None:
    """Two losses worked out by hand for the targets [[5, 4, 3, 2], [7, 6, 2, 0]] (EOS 2, padding 0, 7 real tokens):
    with decoder.out at zero every logit is 0 and the mean loss is log n_vocab; with EOS four times as likely as each
    other token, 5 tokens cost log(n_vocab + 3) and the 2 EOS cost log((n_vocab + 3) / 4). Sets decoder.out."""
    n_vocab = decoder.out.out_features
    with torch.no_grad():
        decoder.out.weight.zero_()
        decoder.out.bias.fill_(0.0)
        uniform = teacher_forcing_loss(encoder, decoder, src, lengths, tgt, bos_id=1, pad_id=0).item()
    if not math.isclose(uniform, math.log(n_vocab), rel_tol=1e-5):
        raise AssertionError(
            f"uniform predictions: expected the MEAN over real tokens, log({n_vocab}) = {math.log(n_vocab):.5f}, "
            f"got {uniform:.5f}"
        )
    with torch.no_grad():
        decoder.out.bias[2] = math.log(4.0)
        biased = teacher_forcing_loss(encoder, decoder, src, lengths, tgt, bos_id=1, pad_id=0).item()
    z = n_vocab + 3  # the normaliser: n_vocab - 1 logits of exp(0) = 1 and one of exp(log 4) = 4
    by_hand = math.log(z) - 2 / 7 * math.log(4)  # 7 real tokens, 2 of them EOS
    per_sentence = math.log(z) - 7 / 24 * math.log(4)  # (1/2) (1/4 + 1/3) log 4: the mean of the sentences' means
    if not math.isclose(biased, by_hand, rel_tol=1e-5):
        raise AssertionError(
            f"with EOS four times as likely as each other token: expected log {z} - (2/7) log 4 = {by_hand:.5f} "
            f"(the mean over the 7 real tokens), got {biased:.5f}"
            + (
                ": that is the mean of the two sentences' means, where a sentence's tokens weigh more the shorter "
                "the sentence; the loss is the mean over ALL real tokens of the batch (F.cross_entropy over the "
                "flattened batch with ignore_index=pad_id)"
                if math.isclose(biased, per_sentence, rel_tol=1e-5)
                else ""
            )
        )


def _loss_when_fed(encoder, decoder, src, lengths, targets, choose_input, carry_state=True, pad_id=0) -> float:
    """The oracle: cross-entropy over the real tokens of targets when step t reads choose_input(t, logits of
    step t - 1), running your Encoder and Decoder one step at a time."""
    with torch.no_grad():
        _, start = encoder(src, lengths)
        hidden, logits, steps = start, None, []
        for t in range(targets.size(1)):
            logits, new_hidden = decoder(choose_input(t, logits), hidden)
            hidden = new_hidden if carry_state else start
            steps.append(logits)
        return F.cross_entropy(torch.stack(steps, dim=1).flatten(0, 1), targets.flatten(), ignore_index=pad_id).item()


def _same_loss(got: float, want: float, mistakes: dict, message: str, fallback: str = "") -> None:
    if not math.isclose(got, want, rel_tol=1e-5):
        hint = next((name for name, value in mistakes.items() if math.isclose(got, value, rel_tol=1e-5)), fallback)
        raise AssertionError(f"{message} {want:.5f}, got {got:.5f}" + (f": {hint}" if hint else ""))


def gold_previous_tokens(teacher_forcing_loss, encoder, decoder, src, lengths, tgt) -> None:
    """Teacher forcing: the loss when the decoder reads BOS (1), then the GOLD previous token, carrying its state
    from step to step; other ways of feeding it are named when the answer matches them."""
    bos = torch.full((src.size(0),), 1)

    def fed(choose, **kw):
        return _loss_when_fed(encoder, decoder, src, lengths, tgt, choose, **kw)

    gold = fed(lambda t, logits: bos if t == 0 else tgt[:, t - 1])
    with torch.no_grad():
        got = teacher_forcing_loss(encoder, decoder, src, lengths, tgt, bos_id=1, pad_id=0).item()
    mistakes = {
        "the decoder is fed its own predictions (argmax): teacher forcing feeds the GOLD previous token tgt[:, t - 1]":
            fed(lambda t, logits: bos if t == 0 else logits.argmax(dim=-1)),
        "every step starts again from the encoder's state: carry the state the decoder returns to the next step":
            fed(lambda t, logits: bos if t == 0 else tgt[:, t - 1], carry_state=False),
        "step t reads tgt[:, t], the token it must predict: it reads the one before (BOS at the first step)":
            fed(lambda t, logits: tgt[:, t]),
        "every step reads BOS: after the first step, feed the gold previous token tgt[:, t - 1]":
            fed(lambda t, logits: bos),
    }  # fmt: skip
    _same_loss(got, gold, mistakes, "feeding BOS and then the gold previous tokens gives the loss")


def ids_are_arguments(teacher_forcing_loss, encoder, decoder, src, lengths) -> None:
    """bos_id=7 and pad_id=9, while 0 and 1 are ordinary tokens, on the targets [[5, 0, 3, 2], [1, 6, 2, 9]]."""
    other = torch.tensor([[5, 0, 3, 2], [1, 6, 2, 9]])  # each row ends with EOS (2); row 1 is padded with 9
    bos, bos7 = torch.full((2,), 1), torch.full((2,), 7)
    gold = _loss_when_fed(
        encoder, decoder, src, lengths, other, lambda t, _: bos7 if t == 0 else other[:, t - 1], pad_id=9
    )
    with torch.no_grad():
        got = teacher_forcing_loss(encoder, decoder, src, lengths, other, bos_id=7, pad_id=9).item()
    mistakes = {
        "the first step reads token 1, not bos_id": _loss_when_fed(
            encoder, decoder, src, lengths, other, lambda t, _: bos if t == 0 else other[:, t - 1], pad_id=9
        ),
        "the loss leaves out the tokens 0 and counts the padding 9: pass ignore_index=pad_id": _loss_when_fed(
            encoder, decoder, src, lengths, other, lambda t, _: bos7 if t == 0 else other[:, t - 1], pad_id=0
        ),
    }
    _same_loss(
        got, gold, mistakes, "with bos_id=7 and pad_id=9 (0 and 1 are ordinary tokens here) the loss should be",
        "bos_id and pad_id are arguments; use them instead of the course's ids 1 and 0",
    )  # fmt: skip


def constant_models(encoder_class, decoder_class, n_vocab: int, winner: int):
    """Your Encoder and Decoder (torch.manual_seed(0), sizes 4 and 6) whose output layer always picks ``winner``:
    out's weights at zero, its bias 1 for ``winner`` and 0 elsewhere."""
    torch.manual_seed(0)
    encoder, decoder = encoder_class(n_vocab, 4, 6), decoder_class(n_vocab, 4, 6)
    with torch.no_grad():
        decoder.out.weight.zero_()
        decoder.out.bias.fill_(0.0)
        decoder.out.bias[winner] = 1.0
    return encoder, decoder


def counting_models(encoder_class, decoder_class, n_vocab: int, content=None, eos: int = 2, pad: int = 0):
    """Your Encoder and Decoder with hand-set weights: the encoder's final state points at the last real source
    token s, and the decoder then counts through the content tokens (3 .. n_vocab-1 unless given) from s to the
    last one, then EOS. After EOS (or padding) it would start again at the first content token; any other input
    (BOS) leaves the choice to the state."""
    content = list(range(3, n_vocab)) if content is None else content
    encoder = encoder_class(n_vocab, n_vocab, n_vocab, pad_id=pad)
    decoder = decoder_class(n_vocab, n_vocab, n_vocab)
    eye, successor = torch.eye(n_vocab), torch.zeros(n_vocab, n_vocab)
    for k, following in zip(content, content[1:]):
        successor[following, k] = 1.0  # k -> the next content token
    successor[eos, content[-1]] = successor[content[0], eos] = successor[content[0], pad] = 1.0
    with torch.no_grad():
        for model in (encoder, decoder):
            model.embedding.weight.copy_(eye)  # token k -> one-hot vector e_k
            for p in model.rnn.parameters():
                p.zero_()
            model.rnn.bias_ih_l0[:n_vocab] = 20.0  # reset gate r = 1
            model.rnn.bias_ih_l0[n_vocab : 2 * n_vocab] = -20.0  # update gate z = 0: new state = tanh(...)
        encoder.rnn.weight_ih_l0[2 * n_vocab :] = 3 * eye  # encoder state = tanh(3 e_x): the last token read
        decoder.rnn.weight_ih_l0[2 * n_vocab :] = 2 * successor
        decoder.rnn.weight_hh_l0[2 * n_vocab :] = eye  # decoder state = tanh(2 e_next(y_prev) + previous state)
        decoder.out.weight.copy_(eye)
        decoder.out.bias.fill_(0.0)
    return encoder, decoder


def same_tokens(out, expected, what: str, hint: str = "") -> None:
    """``out`` is a long tensor holding exactly the token ids ``expected`` (a list of rows)."""
    if not (torch.is_tensor(out) and out.dtype == torch.long):
        raise AssertionError(f"{what}: expected a long tensor, got {out!r}")
    if out.tolist() != expected:
        raise AssertionError(f"{what}: expected {expected}, got {out.tolist()} {hint}".rstrip())


def fractions_by_length(got, expected: dict, hints: dict | None = None) -> None:
    """A dict {source length (int): fraction (float)} equal to ``expected``; ``hints`` maps (length, a wrong
    fraction) to what that wrong fraction means."""
    if not isinstance(got, dict):
        raise AssertionError(f"expected a dict, got {type(got).__name__}")
    if sorted(got) != sorted(expected) or not all(type(k) is int for k in got):
        raise AssertionError(
            f"keys must be the source lengths as Python ints {sorted(expected)}, got {list(got)} "
            "(a tensor key is not equal to an int key in a dict: use .tolist() or int())"
        )
    if not all(isinstance(v, float) for v in got.values()):
        raise AssertionError(f"values must be Python floats, got {got}")
    for length, fraction in expected.items():
        if not math.isclose(got[length], fraction, abs_tol=1e-6):
            hint = next(
                (h for (n, wrong), h in (hints or {}).items() if n == length and math.isclose(got[length], wrong)), ""
            )
            raise AssertionError(
                f"length {length}: expected {fraction:.4f}, got {got[length]}" + (f" ({hint})" if hint else "")
            )
