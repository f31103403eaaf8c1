"""The encoder-decoder models the training programs build, all from the course's reference implementations.

- :class:`PlainDecoder`: the decoder without attention (the RNN encoder-decoder of Cho et al., 2014);
- :class:`VariantDecoder`: chapter 05's ``AttentionDecoder`` with another attention score (:data:`VARIANTS`);
- :func:`build_model`: chapter 05's models (``attention`` or ``plain``) at a :class:`experiments.config.Config`'s
  sizes; :func:`build_variant`: the model of one attention variant (``experiments.variants``).

Every model is a :class:`attention_course.translation.Seq2Seq` over a ``GRUEncoder``.
"""

from __future__ import annotations

import torch
from torch import nn

from attention_course.translation import GRUEncoder, Seq2Seq
from autograder.reference import ch04_qkv_variants as ch04
from autograder.reference import ch05_gpu_training as ch05
from experiments.config import Config

VARIANTS = ("none", "dot", "general", "additive", "scaled_dot", "multi_head")
NUM_HEADS = 4  # the multi_head variant's heads


class PlainDecoder(nn.Module):
    """The same decoder without attention: every step sees the encoder's fixed summary ``c``
    (as input beside the previous word, and in place of the attention vector before the output
    layer), as in the RNN encoder-decoder of Cho et al. (2014). Same interface as
    ``AttentionDecoder``; returns ``(logits (B, T_dec, n_vocab), None)``."""

    def __init__(self, vocab_size: int, emb_dim: int, hidden_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_dim)
        self.rnn = nn.GRU(emb_dim + hidden_dim, hidden_dim, batch_first=True)
        self.combine = nn.Linear(2 * hidden_dim, hidden_dim)
        self.out = nn.Linear(hidden_dim, vocab_size)

    def forward(self, tgt_in, hidden, enc_outputs, src_mask, context=None):
        embedded = self.embedding(tgt_in)
        summary = hidden if context is None else context
        context = summary.unsqueeze(1).expand(-1, tgt_in.shape[1], -1)
        states, last = self.rnn(torch.cat([embedded, context], dim=-1), hidden.unsqueeze(0))
        self.last_hidden = last[0]
        return self.out(torch.tanh(self.combine(torch.cat([context, states], dim=-1)))), None


class VariantDecoder(ch05.AttentionDecoder):
    """Chapter 05's ``AttentionDecoder`` (embedding, GRU, ``combine``, ``out``) with its attention step swapped.

    ``forward(tgt_in (B, T_dec), hidden (B, d), enc_outputs (B, T_enc, d), src_mask (B, T_enc))`` returns
    ``(logits (B, T_dec, n_vocab), weights (B, T_dec, T_enc))``: the GRU gives the decoder states ``s_t``, the
    variant's :meth:`attend` gives the attention vectors ``a_t`` and weights ``alpha_t``, and the output is
    ``out(tanh(combine([a_t; s_t])))`` for every variant.
    """

    def __init__(self, variant: str, vocab_size: int, emb_dim: int, hidden_dim: int):
        super().__init__(vocab_size, emb_dim, hidden_dim)
        self.variant = variant
        d = hidden_dim
        if variant == "general":
            self.W = nn.Parameter(torch.empty(d, d))  # (d, d): e_t,i = s_t^T W h_i
            nn.init.xavier_uniform_(self.W)
        elif variant == "additive":
            self.score = ch05.AdditiveScore(d, d, d)  # d_a = d
        elif variant == "multi_head":
            self.attention = ch04.MultiHeadAttention(d, NUM_HEADS)
        elif variant not in ("dot", "scaled_dot"):
            raise ValueError(f"unknown attention variant {variant!r}; choose from {VARIANTS[1:]}")

    def attend(self, states: torch.Tensor, enc_outputs: torch.Tensor, src_mask: torch.Tensor):
        """Attention of the decoder states ``(B, T_dec, d)`` over the encoder states ``(B, T_enc, d)`` ->
        ``(a (B, T_dec, d), alpha (B, T_dec, T_enc))``; padded source positions get weight 0."""
        mask = src_mask[:, None, :]  # (B, 1, T_enc), True = may attend
        if self.variant == "scaled_dot":
            return ch04.scaled_dot_product_attention(states, enc_outputs, enc_outputs, mask)
        if self.variant == "multi_head":
            return self.attention(states, enc_outputs, enc_outputs, key_padding_mask=src_mask)
        if self.variant == "dot":
            scores = ch04.dot_score(states, enc_outputs)  # (B, T_dec, T_enc)
        elif self.variant == "general":
            scores = ch04.general_score(states, enc_outputs, self.W)
        else:
            scores = self.score(states, enc_outputs)
        weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)  # (B, T_dec, T_enc)
        return weights @ enc_outputs, weights  # (B, T_dec, d), (B, T_dec, T_enc)

    def forward(self, tgt_in, hidden, enc_outputs, src_mask):
        states, _ = self.rnn(self.embedding(tgt_in), hidden.unsqueeze(0))  # s_1 .. s_T_dec, (B, T_dec, d)
        context, weights = self.attend(states, enc_outputs, src_mask)
        attentional = torch.tanh(self.combine(torch.cat([context, states], dim=-1)))  # (B, T_dec, d)
        return self.out(attentional), weights


def build_model(kind: str, config: Config, src_vocab_size: int, tgt_vocab_size: int) -> Seq2Seq:
    """Chapter 05's ``attention`` model (``config.score``: ``dot`` is ``AttentionDecoder``, another score a
    :class:`VariantDecoder`) or its ``plain`` model, with ``config``'s sizes and encoder direction."""
    encoder = GRUEncoder(src_vocab_size, config.emb_dim, config.hidden_dim, bidirectional=config.bidirectional)
    if kind == "attention" and config.score != "dot":
        return Seq2Seq(encoder, VariantDecoder(config.score, tgt_vocab_size, config.emb_dim, config.hidden_dim))
    decoder_class = {"attention": ch05.AttentionDecoder, "plain": PlainDecoder}[kind]
    return Seq2Seq(encoder, decoder_class(tgt_vocab_size, config.emb_dim, config.hidden_dim))


def build_variant(variant: str, config: Config, src_vocab_size: int, tgt_vocab_size: int) -> Seq2Seq:
    """The encoder-decoder of ``variant`` (one of :data:`VARIANTS`), with ``config``'s sizes."""
    encoder = GRUEncoder(src_vocab_size, config.emb_dim, config.hidden_dim)
    if variant == "none":
        decoder = PlainDecoder(tgt_vocab_size, config.emb_dim, config.hidden_dim)
    else:
        decoder = VariantDecoder(variant, tgt_vocab_size, config.emb_dim, config.hidden_dim)
    return Seq2Seq(encoder, decoder)
