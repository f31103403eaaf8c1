# ruff: noqa: E501
"""Chapter 02's answers written as whole cells, wrong and valid (tests/wrong_answers/__init__.py runs them).

Each function's body is an answer cell as a student writes it (the function is never called): its decorator
says which exercise it answers, what the student did and whether the answer is wrong or valid, and turns it
into the :class:`~wrong_answers.Variant` that ``ch02_seq2seq_bottleneck.py`` lists in its place. The imports
are the names such a cell finds in the student's namespace (the export cell and the answers above it), here
for the linter.
"""

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from wrong_answers import valid, wrong


@wrong("Encoder", "no packing: the GRU reads the padding")
def encoder_no_packing_gru_reads_padding():
    class Encoder(nn.Module):
        """Embedding + GRU over a padded batch of source sequences."""

        def __init__(self, vocab_size, emb_dim, hidden_dim, pad_id=0):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=pad_id)
            self.rnn = nn.GRU(emb_dim, hidden_dim, batch_first=True)

        def forward(self, src, lengths):
            outputs, final = self.rnn(self.embedding(src))
            return outputs, final.squeeze(0)


@wrong("Encoder", "masking: the right final state, but the padded outputs not zeroed")
def encoder_masked_outputs_not_zeroed():
    class Encoder(nn.Module):
        """Embedding + GRU over a padded batch of source sequences."""

        def __init__(self, vocab_size, emb_dim, hidden_dim, pad_id=0):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=pad_id)
            self.rnn = nn.GRU(emb_dim, hidden_dim, batch_first=True)

        def forward(self, src, lengths):
            outputs, _ = self.rnn(self.embedding(src))
            return outputs, outputs[torch.arange(src.size(0)), lengths - 1]


@wrong("Encoder", "forward run under torch.no_grad() (as in the demo cells): no gradient reaches the encoder")
def encoder_under_no_grad():
    class Encoder(nn.Module):
        """Embedding + GRU over a padded batch of source sequences."""

        def __init__(self, vocab_size, emb_dim, hidden_dim, pad_id=0):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=pad_id)
            self.rnn = nn.GRU(emb_dim, hidden_dim, batch_first=True)

        def forward(self, src, lengths):
            with torch.no_grad():
                packed = pack_padded_sequence(
                    self.embedding(src), lengths.cpu(), batch_first=True, enforce_sorted=False
                )
                packed_outputs, final = self.rnn(packed)
                outputs, _ = pad_packed_sequence(packed_outputs, batch_first=True, total_length=src.size(1))
            return outputs, final.squeeze(0)


@wrong("Decoder", "nn.GRUCell instead of nn.GRU (the weights no longer load by name)")
def decoder_grucell():
    class Decoder(nn.Module):
        """One step of a GRU decoder."""

        def __init__(self, vocab_size, emb_dim, hidden_dim):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, emb_dim)
            self.rnn = nn.GRUCell(emb_dim, hidden_dim)
            self.out = nn.Linear(hidden_dim, vocab_size)

        def forward(self, y_prev, hidden):
            hidden = self.rnn(self.embedding(y_prev), hidden)
            return self.out(hidden), hidden


@wrong("exact_match_by_length", "token accuracy instead of exact match")
def exact_match_token_accuracy():
    def exact_match_by_length(predictions, targets, source_lengths, pad_id):
        """Per source length: the fraction of target tokens predicted right."""
        right, total = {}, {}
        for prediction, target, length in zip(predictions.tolist(), targets.tolist(), source_lengths.tolist()):
            gold = [t for t in target if t != pad_id]
            guess = [t for t in prediction if t != pad_id] + [None] * len(gold)
            right[length] = right.get(length, 0) + sum(g == p for g, p in zip(gold, guess))
            total[length] = total.get(length, 0) + len(gold)
        return {int(n): right[n] / total[n] for n in sorted(total)}


@valid("Encoder", "masking instead of packing: states at lengths - 1, padded outputs zeroed")
def encoder_masking_instead_of_packing():
    class Encoder(nn.Module):
        """Embedding + GRU over a padded batch of source sequences."""

        def __init__(self, vocab_size, emb_dim, hidden_dim, pad_id=0):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=pad_id)
            self.rnn = nn.GRU(emb_dim, hidden_dim, batch_first=True)

        def forward(self, src, lengths):
            outputs, _ = self.rnn(self.embedding(src))  # (B, T_enc, d)
            real = torch.arange(src.size(1), device=src.device)[None, :] < lengths.to(src.device)[:, None]
            outputs = outputs * real[..., None]  # zeros at padding
            return outputs, outputs[torch.arange(src.size(0)), lengths - 1]


@valid("teacher_forcing_loss", "log_softmax and gather, step by step, with a mask")
def teacher_forcing_loss_step_by_step():
    def teacher_forcing_loss(encoder, decoder, src, lengths, tgt, bos_id, pad_id):
        """Teacher forcing, the loss accumulated step by step."""
        _, hidden = encoder(src, lengths)
        previous = torch.full((tgt.size(0),), bos_id, dtype=torch.long)
        total, count = 0.0, 0
        for t in range(tgt.size(1)):
            logits, hidden = decoder(previous, hidden)
            log_p = torch.log_softmax(logits, dim=-1).gather(1, tgt[:, t : t + 1]).squeeze(1)
            real = tgt[:, t] != pad_id
            total = total - (log_p * real).sum()
            count += int(real.sum())
            previous = tgt[:, t]
        return total / count


@valid("greedy_decode", "lists per row, a while loop, padding added at the end")
def greedy_decode_lists_per_row_while_loop():
    def greedy_decode(encoder, decoder, src, lengths, bos_id, eos_id, pad_id, max_len):
        """Greedy decoding, row lists."""
        with torch.no_grad():
            _, hidden = encoder(src, lengths)
            rows = [[] for _ in range(src.size(0))]
            previous = torch.full((src.size(0),), bos_id, dtype=torch.long)
            step = 0
            while step < max_len and not all(row and row[-1] == eos_id for row in rows):
                logits, hidden = decoder(previous, hidden)
                previous = logits.argmax(dim=-1)
                for row, token in zip(rows, previous.tolist()):
                    if not (row and row[-1] == eos_id):
                        row.append(token)
                step += 1
            width = max(len(row) for row in rows)
            return torch.tensor([row + [pad_id] * (width - len(row)) for row in rows], dtype=torch.long)


@valid("exact_match_by_length", "tensors padded to a common width and compared row by row")
def exact_match_padded_to_common_width():
    def exact_match_by_length(predictions, targets, source_lengths, pad_id):
        """Exact match per source length, with tensor operations."""
        width = max(predictions.size(1), targets.size(1))
        pad = lambda x: torch.nn.functional.pad(x, (0, width - x.size(1)), value=pad_id)  # noqa: E731
        same = (pad(predictions) == pad(targets)).all(dim=1)
        return {n: same[source_lengths == n].double().mean().item() for n in sorted(set(source_lengths.tolist()))}
