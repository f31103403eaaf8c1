"""Reference implementations for 02_seq2seq_bottleneck.

GENERATED from solutions/02_seq2seq_bottleneck/02_seq2seq_bottleneck.ipynb by `python -m autograder generate`: the cells tagged
"export" and every autograded-answer cell, in order, without the solution markers.
Do not edit: edit the notebook and regenerate.
"""
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class Encoder(nn.Module):
    """Embedding + GRU over a padded batch of source sequences.

    Attributes: embedding (nn.Embedding, padding_idx=pad_id), rnn (nn.GRU(emb_dim, hidden_dim, batch_first=True)).
    forward(src (B, T_enc) long, lengths (B,) long) -> (outputs (B, T_enc, d), final (B, d)):
    outputs are zero at padded positions; final is the state after each sequence's last real token.
    """

    def __init__(self, vocab_size, emb_dim, hidden_dim, pad_id=0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=pad_id)
        self.rnn = nn.GRU(emb_dim, hidden_dim, batch_first=True)

    def forward(self, src, lengths):
        packed = pack_padded_sequence(self.embedding(src), lengths.cpu(), batch_first=True, enforce_sorted=False)
        packed_outputs, final = self.rnn(packed)
        outputs, _ = pad_packed_sequence(packed_outputs, batch_first=True, total_length=src.size(1))
        return outputs, final.squeeze(0)


class Decoder(nn.Module):
    """One step of a GRU decoder.

    Attributes: embedding (nn.Embedding(vocab_size, emb_dim)), rnn (nn.GRU(emb_dim, hidden_dim, batch_first=True)),
    out (nn.Linear(hidden_dim, vocab_size)).
    forward(y_prev (B,) long, hidden (B, d)) -> (logits (B, n_vocab), hidden (B, d)), logits = out(new hidden).
    """

    def __init__(self, vocab_size, emb_dim, hidden_dim):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_dim)
        self.rnn = nn.GRU(emb_dim, hidden_dim, batch_first=True)
        self.out = nn.Linear(hidden_dim, vocab_size)

    def forward(self, y_prev, hidden):
        embedded = self.embedding(y_prev).unsqueeze(1)               # (B, 1, emb_dim)
        _, hidden = self.rnn(embedded, hidden.unsqueeze(0).contiguous())
        hidden = hidden.squeeze(0)                                   # (B, d)
        return self.out(hidden), hidden


def teacher_forcing_loss(encoder, decoder, src, lengths, tgt, bos_id, pad_id):
    """Mean cross-entropy over the non-pad tokens of tgt, feeding the gold previous token at every step.

    src: (B, T_enc) long; lengths: (B,) long; tgt: (B, T_dec) long, each row ends with EOS, no BOS, padded with pad_id.
    The decoder starts from the encoder's final state with y_prev = bos_id. Returns a scalar tensor.
    """
    _, hidden = encoder(src, lengths)
    y_prev = torch.full_like(tgt[:, 0], bos_id)
    step_logits = []
    for t in range(tgt.size(1)):
        logits, hidden = decoder(y_prev, hidden)
        step_logits.append(logits)
        y_prev = tgt[:, t]
    logits = torch.stack(step_logits, dim=1)                         # (B, T_dec, n_vocab)
    return F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=pad_id)


def greedy_decode(encoder, decoder, src, lengths, bos_id, eos_id, pad_id, max_len):
    """Greedy decoding for a batch.

    src: (B, T_enc) long; lengths: (B,) long. Returns a long tensor (B, L), L <= max_len: the argmax token at each
    step; each row ends at its first eos_id (kept) and holds pad_id after it; decoding stops early once every
    row has produced eos_id.
    """
    with torch.no_grad():
        _, hidden = encoder(src, lengths)
        y_prev = torch.full_like(src[:, 0], bos_id)
        finished = torch.zeros_like(y_prev, dtype=torch.bool)
        tokens = []
        for _ in range(max_len):
            logits, hidden = decoder(y_prev, hidden)
            y_prev = logits.argmax(dim=-1).masked_fill(finished, pad_id)
            tokens.append(y_prev)
            finished = finished | (y_prev == eos_id)
            if bool(finished.all()):
                break
        if not tokens:
            return src.new_full((src.size(0), 0), pad_id)
        return torch.stack(tokens, dim=1)


def exact_match_by_length(predictions, targets, source_lengths, pad_id):
    """Exact-match accuracy per source length.

    predictions: (B, L) long; targets: (B, T_dec) long (L and T_dec may differ), both padded with pad_id;
    source_lengths: (B,). Returns {source length (int): fraction (float) of its rows whose prediction
    equals the target, padding ignored}.
    """
    hits, counts = {}, {}
    for prediction, target, length in zip(predictions.tolist(), targets.tolist(), source_lengths.tolist()):
        same = [t for t in prediction if t != pad_id] == [t for t in target if t != pad_id]
        hits[length] = hits.get(length, 0) + int(same)
        counts[length] = counts.get(length, 0) + 1
    return {int(length): hits[length] / counts[length] for length in sorted(counts)}
