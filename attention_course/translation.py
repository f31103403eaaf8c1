"""Pieces of the translation models of chapters 05 and 06 that are not exercises.

- :class:`GRUEncoder`: the bidirectional encoder of Bahdanau et al. (2015), projected to
  the decoder's size, or with ``bidirectional=False`` its left-to-right half alone (chapter 06
  compares the attention maps of the two; the encoder of chapter 02 is an exercise there, this
  is a different, given module);
- :class:`Seq2Seq`: joins an encoder and any decoder with the interface of chapter 05's
  ``AttentionDecoder`` (``decoder(tgt_in, hidden, enc_outputs, src_mask) -> (logits, weights)``);
- :class:`BagOfWordsTranslator`: the smallest model with the same ``forward(src, lengths, tgt_in)``,
  to try training code on in a second (chapter 05's tests of ``train_step`` use it);
- :func:`greedy_translate`: greedy decoding with such a model;
- :func:`corpus_bleu`: BLEU (Papineni et al., 2002) of token lists, with brevity penalty;
- :func:`exact_match`: the fraction of predictions equal to their reference.

Nothing here implements a graded function or class.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import torch
from torch import nn

from attention_course.data import BOS_ID, EOS_ID, PAD_ID


class GRUEncoder(nn.Module):
    """Embedding, a GRU over the real tokens only (both directions by default), and projections to ``hidden_dim``.

    ``forward(src, lengths)`` with ``src`` ``(B, S)`` long and ``lengths`` ``(B,)`` returns
    ``(outputs (B, S, hidden_dim), final (B, hidden_dim))``. Bidirectional: ``outputs[:, i]`` is
    ``W_o [forward state i; backward state i]`` (zero at padded positions) and ``final`` is
    ``tanh(W_f [last forward state; first backward state])``, the decoder's initial state. With
    ``bidirectional=False`` only the left-to-right GRU runs: ``outputs[:, i] = W_o h_i`` has read
    the tokens ``0..i`` and nothing to their right, and ``final = tanh(W_f h_last)``.
    """

    def __init__(self, vocab_size: int, emb_dim: int, hidden_dim: int, pad_id: int = PAD_ID, *, bidirectional=True):
        super().__init__()
        directions = 2 if bidirectional else 1
        self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=pad_id)
        self.rnn = nn.GRU(emb_dim, hidden_dim, batch_first=True, bidirectional=bidirectional)
        self.project = nn.Linear(directions * hidden_dim, hidden_dim, bias=False)
        self.bridge = nn.Linear(directions * hidden_dim, hidden_dim)

    def forward(self, src: torch.Tensor, lengths: torch.Tensor):
        return self.forward_embedded(self.embedding(src), lengths)

    def forward_embedded(self, embedded: torch.Tensor, lengths: torch.Tensor):
        """The same from already embedded tokens ``(B, S, emb_dim)`` (for gradient attributions)."""
        lengths = lengths.to(embedded.device)
        run_gru = self._gru_packed if embedded.is_cuda else self._gru_unpacked
        states, last = run_gru(embedded, lengths)  # (B, S, directions * hidden_dim), (B, directions * hidden_dim)
        mask = _real_positions(lengths, embedded.shape[1])  # (B, S)
        outputs = self.project(states) * mask.unsqueeze(-1).to(states.dtype)  # (B, S, hidden_dim)
        summary = torch.tanh(self.bridge(last))  # (B, hidden_dim)
        return outputs, summary

    def _gru_packed(self, embedded: torch.Tensor, lengths: torch.Tensor):
        """The GRU over a packed sequence, so that it reads the real tokens only (cuDNN's fast path on a GPU).

        Returns ``(states (B, S, directions * hidden_dim), last (B, directions * hidden_dim))``: the states
        at every position (zero at padding) and each direction's state after its last real token."""
        packed = nn.utils.rnn.pack_padded_sequence(embedded, lengths.cpu(), batch_first=True, enforce_sorted=False)
        packed_states, final = self.rnn(packed)  # final: (directions, B, hidden_dim)
        hidden_states, _ = nn.utils.rnn.pad_packed_sequence(
            packed_states, batch_first=True, total_length=embedded.shape[1]
        )  # (B, S, directions * hidden_dim)
        return hidden_states, torch.cat(list(final), dim=-1)

    def _gru_unpacked(self, embedded: torch.Tensor, lengths: torch.Tensor):
        """What :meth:`_gru_packed` computes at the real positions, without packing: about a fifth faster on a
        CPU, where PyTorch's GRU then projects the inputs of all positions in one matrix product.

        Padding only comes after a sentence's real tokens, so the left-to-right direction can read the padded
        batch as it is. The right-to-left direction would read the padding first, so it reads each sentence
        reversed within its length instead (its padding then also comes last), and its states are put back in
        sentence order. The states at padded positions are not meaningful (``forward_embedded`` zeroes them)."""
        batch, width = embedded.shape[:2]
        rows = torch.arange(batch, device=embedded.device)
        forward_states = _one_direction(self.rnn, embedded, "")  # (B, S, hidden_dim)
        last = forward_states[rows, lengths - 1]  # (B, hidden_dim): after the last real token
        if not self.rnn.bidirectional:
            return forward_states, last
        # mirror[b, i]: where position i of sentence b reads from, length-1-i for a real token; padding stays put
        positions = torch.arange(width, device=embedded.device)[None, :]  # (1, S)
        mirror = torch.where(_real_positions(lengths, width), lengths[:, None] - 1 - positions, positions)  # (B, S)
        reversed_inputs = embedded.gather(1, mirror[..., None].expand_as(embedded))  # (B, S, emb_dim)
        reversed_states = _one_direction(self.rnn, reversed_inputs, "_reverse")  # (B, S, hidden_dim)
        backward_states = reversed_states.gather(1, mirror[..., None].expand_as(reversed_states))  # sentence order
        first = reversed_states[rows, lengths - 1]  # (B, hidden_dim): after reading back to the first token
        return torch.cat([forward_states, backward_states], dim=-1), torch.cat([last, first], dim=-1)


def _real_positions(lengths: torch.Tensor, width: int) -> torch.Tensor:
    """``(B, width)`` bool, True at the first ``lengths[b]`` positions of row ``b`` (the real tokens)."""
    return torch.arange(width, device=lengths.device)[None, :] < lengths[:, None]


def _one_direction(rnn: nn.GRU, inputs: torch.Tensor, suffix: str) -> torch.Tensor:
    """One direction of the one-layer GRU ``rnn`` read left to right over ``inputs`` ``(B, S, input_size)`` from a
    zero state, with that direction's weights (``suffix`` ``""`` or ``"_reverse"``). Returns the states
    ``(B, S, hidden_size)``. This is the call ``nn.GRU.forward`` makes (``torch._VF.gru``), for one direction alone."""
    weights = [getattr(rnn, f"{name}_l0{suffix}") for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    initial = inputs.new_zeros(1, inputs.shape[0], rnn.hidden_size)  # (layers, B, hidden_size)
    outputs = torch._VF.gru(inputs, initial, weights, True, 1, 0.0, rnn.training, False, True)
    return outputs[0]  # the states; outputs[1] is the last one again, (layers, B, hidden_size)


class Seq2Seq(nn.Module):
    """An encoder and a decoder; ``forward(src, lengths, tgt_in)`` returns the logits ``(B, T, V)``
    (the interface chapter 05's ``train_step`` expects); :meth:`forward_with_weights` also
    returns the attention weights ``(B, T, S)``."""

    def __init__(self, encoder: nn.Module, decoder: nn.Module):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, src: torch.Tensor, lengths: torch.Tensor, tgt_in: torch.Tensor):
        return self.forward_with_weights(src, lengths, tgt_in)[0]

    def forward_with_weights(self, src: torch.Tensor, lengths: torch.Tensor, tgt_in: torch.Tensor):
        outputs, final = self.encoder(src, lengths)
        return self.decoder(tgt_in, final, outputs, self.source_mask(src, lengths))

    def forward_embedded(
        self, src_embedded: torch.Tensor, src: torch.Tensor, lengths: torch.Tensor, tgt_in: torch.Tensor
    ):
        """Like :meth:`forward_with_weights` but from source embeddings (to take gradients with respect to them)."""
        outputs, final = self.encoder.forward_embedded(src_embedded, lengths)
        return self.decoder(tgt_in, final, outputs, self.source_mask(src, lengths))

    def embed_source(self, src: torch.Tensor):
        return self.encoder.embedding(src)

    def source_mask(self, src: torch.Tensor, lengths: torch.Tensor):
        """``(B, S)`` bool, True at the real source tokens."""
        return _real_positions(lengths.to(src.device), src.shape[1])


class BagOfWordsTranslator(nn.Module):
    """A deliberately tiny translation model: every target step sees the previous target word and the
    mean embedding of the real source words (no word order, no recurrence, no attention).

    ``forward(src, lengths, tgt_in)`` with ``src`` ``(B, S)``, ``lengths`` ``(B,)`` and ``tgt_in``
    ``(B, T)`` returns logits ``(B, T, vocab_size)``: ``out(E[tgt_in] + mean of E[src] over the first
    lengths[b] positions)``, one embedding table ``E`` for both languages. It has the interface of
    :class:`Seq2Seq`, so it can stand in for a real model when checking training code.
    """

    def __init__(self, vocab_size: int, dim: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim)
        self.out = nn.Linear(dim, vocab_size)

    def forward(self, src: torch.Tensor, lengths: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        lengths = lengths.to(src.device)
        real = _real_positions(lengths, src.shape[1])  # (B, S)
        summed = (self.embedding(src) * real.unsqueeze(-1)).sum(dim=1)  # (B, dim)
        summary = summed / lengths[:, None].to(summed.dtype)  # (B, dim)
        return self.out(self.embedding(tgt_in) + summary[:, None, :])  # (B, T, vocab_size)


@torch.no_grad()
def greedy_translate(model, src: torch.Tensor, lengths: torch.Tensor, max_len: int = 60):
    """Greedy decoding: at each step feed the prefix decoded so far and take the most likely token.

    ``model`` is a :class:`Seq2Seq`. Returns ``(tokens, weights)``:
    ``tokens`` ``(B, L)`` long, each row ending at its first EOS (kept) and padded with PAD after
    it; ``weights`` ``(B, L, S)`` the attention weights of every produced token (``None`` when the
    decoder returns none). The decoder re-reads the whole prefix at every step (its interface
    returns no state), which costs ``O(L^2)`` recurrent steps: fine for sentences of this course.
    """
    was_training = model.training
    model.eval()
    device = src.device
    ys = torch.full((src.shape[0], 1), BOS_ID, dtype=torch.long, device=device)
    done = torch.zeros(src.shape[0], dtype=torch.bool, device=device)
    weights = None
    for _ in range(max_len):
        logits, weights = model.forward_with_weights(src, lengths, ys)
        next_token = logits[:, -1].argmax(-1)
        next_token = torch.where(done, torch.full_like(next_token, PAD_ID), next_token)
        ys = torch.cat([ys, next_token[:, None]], dim=1)
        done |= next_token == EOS_ID
        if bool(done.all()):
            break
    model.train(was_training)
    tokens = ys[:, 1:]
    if weights is not None:
        weights = weights * (tokens != PAD_ID).unsqueeze(-1).to(weights.dtype)
    return tokens, weights


def _ngrams(tokens: Sequence[str], n: int) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def corpus_bleu(hypotheses: Sequence[Sequence[str]], references: Sequence[Sequence[str]], max_n: int = 4) -> float:
    """Corpus-level BLEU in percent, one reference per hypothesis (Papineni et al., 2002).

    The geometric mean of the clipped n-gram precisions for n = 1 .. max_n, pooled over the
    corpus, times the brevity penalty ``exp(1 - r / c)`` when the hypotheses are shorter
    (``c`` tokens) than the references (``r`` tokens). No smoothing: 0 when some order has no
    match at all. Tokens are compared as given (no retokenisation).
    """
    if len(hypotheses) != len(references):
        raise ValueError(f"got {len(hypotheses)} hypotheses for {len(references)} references")
    matches, totals = [0] * max_n, [0] * max_n
    hyp_len = ref_len = 0
    for hyp, ref in zip(hypotheses, references):
        hyp_len += len(hyp)
        ref_len += len(ref)
        for n in range(1, max_n + 1):
            hyp_counts, ref_counts = _ngrams(hyp, n), _ngrams(ref, n)
            matches[n - 1] += sum(min(count, ref_counts[gram]) for gram, count in hyp_counts.items())
            totals[n - 1] += max(len(hyp) - n + 1, 0)
    if hyp_len == 0 or min(matches) == 0:
        return 0.0
    log_precision = sum(math.log(m / t) for m, t in zip(matches, totals)) / max_n
    brevity = 1.0 if hyp_len > ref_len else math.exp(1.0 - ref_len / hyp_len)
    return 100.0 * brevity * math.exp(log_precision)


def exact_match(hypotheses: Sequence[Sequence[str]], references: Sequence[Sequence[str]]) -> float:
    """The fraction of hypotheses equal to their reference, token for token."""
    if len(hypotheses) != len(references) or not references:
        raise ValueError(
            f"need as many hypotheses as references (at least one), got {len(hypotheses)} and {len(references)}"
        )
    return sum(list(h) == list(r) for h, r in zip(hypotheses, references)) / len(references)
