"""Evaluation of trained models on a split: greedy decoding, exact match and BLEU by source length, and how
peaked the attention maps are.

- :func:`fast_greedy` (the RNN models) and :func:`transformer_greedy` (chapter 07's Transformer) decode greedily;
- :func:`evaluate` scores greedy translations per :data:`LENGTH_BINS` bin and overall;
- :func:`soft_row_share` measures the share of attention rows with no dominant source token (for multi-head
  attention, on the weights averaged over the heads; :func:`head_soft_row_share` measures it head by head);
- :func:`score_statistics` measures how long the decoder and encoder states are and how large their dot
  products: what decides whether an unscaled dot-product score saturates the softmax.
"""

from __future__ import annotations

import math

import torch

from attention_course.data import BOS_ID, EOS_ID, PAD_ID
from attention_course.translation import Seq2Seq, corpus_bleu
from autograder.reference.ch05_gpu_training import length_bucketed_batches
from autograder.reference.ch07_transformer import TransformerTranslator
from experiments.data import make_batch
from experiments.models import PlainDecoder, VariantDecoder

LENGTH_BINS = [(1, 5), (6, 10), (11, 15), (16, 20), (21, 25), (26, 30), (31, 40)]  # source words, without EOS


@torch.no_grad()
def fast_greedy(model: Seq2Seq, src, lengths, max_len: int):
    """Greedy decoding one step at a time, carrying the decoder's state (``greedy_translate`` of the
    package re-reads the prefix at every step, which is too slow for a whole test split). Each step
    calls the decoder's own ``forward`` on one token; the new state comes from its ``rnn``.
    ``src`` ``(B, T_enc)``, ``lengths`` ``(B,)``; returns ``(B, L)`` long, PAD after each row's first EOS."""
    model.eval()
    outputs, summary = model.encoder(src, lengths)
    mask = model.source_mask(src, lengths)
    decoder, hidden = model.decoder, summary
    y = torch.full((src.shape[0],), BOS_ID, dtype=torch.long, device=src.device)
    done = torch.zeros_like(y, dtype=torch.bool)
    produced = []
    for _ in range(max_len):
        if isinstance(decoder, PlainDecoder):
            logits, _ = decoder(y[:, None], hidden, outputs, mask, context=summary)
            hidden = decoder.last_hidden
        else:
            logits, _ = decoder(y[:, None], hidden, outputs, mask)
            hidden = decoder.rnn(decoder.embedding(y[:, None]), hidden.unsqueeze(0))[1][0]
        y = torch.where(done, torch.full_like(y, PAD_ID), logits[:, -1].argmax(-1))
        produced.append(y)
        done |= y == EOS_ID
        if bool(done.all()):
            break
    return torch.stack(produced, dim=1)


@torch.no_grad()
def transformer_greedy(model: TransformerTranslator, src, lengths, max_len: int, min_len=None):
    """Greedy decoding: encode once, then at every step run the decoder on the prefix so far and take the
    most likely next token. Returns ``(B, L)`` long, PAD after each row's first EOS. With ``min_len`` ``(B,)``,
    EOS is not allowed before each row's ``min_len`` words (an oracle for the decision to stop)."""
    model.eval()
    memory, src_mask = model.encode(src, lengths)
    ys = torch.full((src.shape[0], 1), BOS_ID, dtype=torch.long, device=src.device)
    done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    for step in range(max_len):
        logits = model.decode(ys, memory, src_mask)[:, -1]  # (B, n_vocab)
        if min_len is not None:
            logits[:, EOS_ID] = logits[:, EOS_ID].masked_fill(step < min_len.to(src.device), float("-inf"))
        next_token = logits.argmax(-1)
        next_token = torch.where(done, torch.full_like(next_token, PAD_ID), next_token)
        ys = torch.cat([ys, next_token[:, None]], dim=1)
        done |= next_token == EOS_ID
        if bool(done.all()):
            break
    return ys[:, 1:]


@torch.no_grad()
def evaluate(
    model,
    pairs,
    encoded_pairs,
    tgt_vocab,
    device,
    batch_size: int = 250,
    decode=None,
    max_train_len=None,
    oracle_length: bool = False,
) -> dict:
    """Greedy translations of ``pairs`` scored by source length (in words, without EOS): exact-match accuracy,
    BLEU and length ratio (words produced per reference word) per length bin, and overall.
    ``decode(model, src, lengths, max_len)`` returns the greedy tokens ``(B, L)``; :func:`fast_greedy` by default
    (another model family, e.g. the Transformer, passes its own: :func:`transformer_greedy`). With
    ``max_train_len``, also ``in_length`` and ``beyond_training``: the same figures for the sentences of at most
    / more than that many words. With ``oracle_length``, ``decode`` is given ``min_len``, each reference's length
    (:func:`transformer_greedy` then forbids EOS before it): how well the model translates when it need not
    decide when to stop."""
    order = length_bucketed_batches([len(s) for s, _ in encoded_pairs], batch_size, shuffle=False)
    hypotheses = [None] * len(pairs)
    for indices in order:
        batch = make_batch([encoded_pairs[i] for i in indices])
        max_len = int(batch["tgt_out"].shape[1]) + 10
        options = {"min_len": (batch["tgt_out"] != PAD_ID).sum(1) - 1} if oracle_length else {}  # words, no EOS
        tokens = (decode or fast_greedy)(model, batch["src"].to(device), batch["lengths"], max_len=max_len, **options)
        for row, i in enumerate(indices):
            hypotheses[i] = tgt_vocab.decode(tokens[row].tolist())
    references = [french.split() for _, french in pairs]
    lengths = [len(english.split()) for english, _ in pairs]

    def scores(chosen):
        return {
            "count": len(chosen),
            "exact_match": sum(hypotheses[i] == references[i] for i in chosen) / len(chosen),
            "bleu": corpus_bleu([hypotheses[i] for i in chosen], [references[i] for i in chosen]),
            # words produced per reference word: below 1, the translations stop too early
            "length_ratio": sum(len(hypotheses[i]) for i in chosen) / sum(len(references[i]) for i in chosen),
        }

    table = {}
    for low, high in LENGTH_BINS:
        chosen = [i for i, n in enumerate(lengths) if low <= n <= high]
        if chosen:
            table[f"{low}-{high}"] = scores(chosen)
    split = {}
    if max_train_len is not None:
        for name, chosen in [
            ("in_length", [i for i, n in enumerate(lengths) if n <= max_train_len]),
            ("beyond_training", [i for i, n in enumerate(lengths) if n > max_train_len]),
        ]:
            split[name] = scores(chosen) if chosen else {"count": 0}
    return {
        "by_length": table,
        **split,
        "exact_match": sum(h == r for h, r in zip(hypotheses, references)) / len(references),
        "bleu": corpus_bleu(hypotheses, references),
        "examples": [
            {"source": pairs[i][0], "reference": pairs[i][1], "output": " ".join(hypotheses[i])}
            for i in range(min(5, len(pairs)))
        ],
    }


@torch.no_grad()
def soft_row_share(model: Seq2Seq, encoded_pairs, threshold: float = 0.9, batch_size: int = 250) -> float | None:
    """The share of target rows (gold translation fed to the decoder, ``<eos>`` rows included) whose largest
    attention weight is below ``threshold``; None for a model without attention weights."""
    model.eval()
    device = next(model.parameters()).device
    peaks = []
    for start in range(0, len(encoded_pairs), batch_size):
        chunk = encoded_pairs[start : start + batch_size]
        batch = make_batch(chunk)
        _, weights = model.forward_with_weights(batch["src"].to(device), batch["lengths"], batch["tgt_in"].to(device))
        if weights is None:
            return None
        peaks += [weights[row, : len(t), : len(s)].float().max(-1).values.cpu() for row, (s, t) in enumerate(chunk)]
    return float((torch.cat(peaks) < threshold).float().mean())


def _decoder_states(model: Seq2Seq, batch: dict, device):
    """The encoder states ``h_i`` ``(B, T_enc, d)``, the source mask ``(B, T_enc)`` and the decoder states ``s_t``
    ``(B, T_dec, d)`` of an attention decoder (chapter 05's ``AttentionDecoder`` or a ``VariantDecoder``), the gold
    translation fed to it."""
    src = batch["src"].to(device)
    enc_outputs, summary = model.encoder(src, batch["lengths"])
    mask = model.source_mask(src, batch["lengths"])
    decoder = model.decoder
    states, _ = decoder.rnn(decoder.embedding(batch["tgt_in"].to(device)), summary.unsqueeze(0))
    return enc_outputs, mask, states


@torch.no_grad()
def head_soft_row_share(model: Seq2Seq, encoded_pairs, threshold: float = 0.9, batch_size: int = 250):
    """For the ``multi_head`` variant, the share of target rows whose largest weight is below ``threshold``, head
    by head (the rows of all heads pooled: every head's row counts once); None for any other model.
    :func:`soft_row_share` measures the weights averaged over the heads, which are softer than any single head's
    whenever the heads look at different tokens."""
    decoder = model.decoder
    if not (isinstance(decoder, VariantDecoder) and decoder.variant == "multi_head"):
        return None
    model.eval()
    device = next(model.parameters()).device
    attention = decoder.attention
    peaks = []
    for start in range(0, len(encoded_pairs), batch_size):
        chunk = encoded_pairs[start : start + batch_size]
        enc_outputs, mask, states = _decoder_states(model, make_batch(chunk), device)
        B, T_dec, d = states.shape
        heads, d_k = attention.num_heads, d // attention.num_heads
        q = attention.q_proj(states).reshape(B, T_dec, heads, d_k).transpose(1, 2)  # (B, heads, T_dec, d_k)
        k = attention.k_proj(enc_outputs).reshape(B, -1, heads, d_k).transpose(1, 2)  # (B, heads, T_enc, d_k)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d_k)  # (B, heads, T_dec, T_enc)
        weights = torch.softmax(scores.masked_fill(~mask[:, None, None, :], float("-inf")), dim=-1)
        peaks += [
            weights[row, :, : len(t), : len(s)].float().max(-1).values.reshape(-1).cpu()
            for row, (s, t) in enumerate(chunk)
        ]
    return float((torch.cat(peaks) < threshold).float().mean())


@torch.no_grad()
def score_statistics(model: Seq2Seq, encoded_pairs, batch_size: int = 250) -> dict | None:
    """How long the vectors are that a dot-product score multiplies, on ``encoded_pairs`` (the gold translation
    fed to the decoder): the mean Euclidean length of the decoder states ``s_t`` (every real target row) and of
    the encoder states ``h_i`` (every real source position), the standard deviation and the largest absolute
    value of the dot products ``s_t . h_i`` over every real (row, position) pair (the unscaled dot score;
    the scaled one divides them by ``sqrt(d)``, here ``sqrt_d``), and the standard deviation of single
    components of ``s_t`` and ``h_i``. None for a model without attention."""
    if isinstance(model.decoder, PlainDecoder):
        return None
    model.eval()
    device = next(model.parameters()).device
    state_norms, encoder_norms, products, state_parts, encoder_parts = [], [], [], [], []
    for start in range(0, len(encoded_pairs), batch_size):
        chunk = encoded_pairs[start : start + batch_size]
        enc_outputs, _, states = _decoder_states(model, make_batch(chunk), device)
        for row, (s, t) in enumerate(chunk):
            s_t, h_i = states[row, : len(t)].float(), enc_outputs[row, : len(s)].float()  # (T_dec, d), (T_enc, d)
            state_norms.append(s_t.norm(dim=-1))
            encoder_norms.append(h_i.norm(dim=-1))
            products.append((s_t @ h_i.T).reshape(-1))
            state_parts.append(s_t.reshape(-1))
            encoder_parts.append(h_i.reshape(-1))
    products = torch.cat(products)
    return {
        "decoder_state_norm": float(torch.cat(state_norms).mean()),
        "encoder_state_norm": float(torch.cat(encoder_norms).mean()),
        "dot_product_std": float(products.std()),
        "dot_product_max_abs": float(products.abs().max()),
        "decoder_state_component_std": float(torch.cat(state_parts).std()),
        "encoder_state_component_std": float(torch.cat(encoder_parts).std()),
        "sqrt_d": math.sqrt(enc_outputs.shape[-1]),
        "pairs": len(encoded_pairs),
    }
