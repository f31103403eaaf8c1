"""Chapter 02: the likeliest wrong answers to Exercises 2.1-2.5, and other correct ways to write them."""

from wrong_answers import Variant

ENCODER_RETURN = "return outputs, final.squeeze(0)"
DECODER_STATE = "_, hidden = self.rnn(embedded, hidden.unsqueeze(0).contiguous())"
DECODER_RETURN = "return self.out(hidden), hidden"
LOSS = "return F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=pad_id)"
SAME = "same = [t for t in prediction if t != pad_id] == [t for t in target if t != pad_id]"

ENCODER_HEAD = '''
class Encoder(nn.Module):
    """Embedding + GRU over a padded batch of source sequences."""

    def __init__(self, vocab_size, emb_dim, hidden_dim, pad_id=0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=pad_id)
        self.rnn = nn.GRU(emb_dim, hidden_dim, batch_first=True)
'''

WRONG = [
    # Exercise 2.1, Encoder
    Variant(
        "Encoder",
        "final state taken at the last column, after the padding",
        replace=[(ENCODER_RETURN, "return outputs, outputs[:, -1]")],
    ),
    Variant(
        "Encoder",
        "no packing: the GRU reads the padding",
        source=ENCODER_HEAD
        + """
    def forward(self, src, lengths):
        outputs, final = self.rnn(self.embedding(src))
        return outputs, final.squeeze(0)
""",
    ),
    Variant("Encoder", "pad_packed_sequence without total_length", replace=[(", total_length=src.size(1)", "")]),
    Variant(
        "Encoder", "enforce_sorted left at True (lengths must then be sorted)", replace=[(", enforce_sorted=False", "")]
    ),
    Variant(
        "Encoder",
        "embedding without padding_idx",
        replace=[("nn.Embedding(vocab_size, emb_dim, padding_idx=pad_id)", "nn.Embedding(vocab_size, emb_dim)")],
    ),
    Variant("Encoder", "final keeps the layer axis, (1, B, d)", replace=[(ENCODER_RETURN, "return outputs, final")]),
    Variant(
        "Encoder",
        "masking: the right final state, but the padded outputs not zeroed",
        source=ENCODER_HEAD
        + """
    def forward(self, src, lengths):
        outputs, _ = self.rnn(self.embedding(src))
        return outputs, outputs[torch.arange(src.size(0)), lengths - 1]
""",
    ),
    Variant(
        "Encoder",
        "forward run under torch.no_grad() (as in the demo cells): no gradient reaches the encoder",
        source=ENCODER_HEAD
        + """
    def forward(self, src, lengths):
        with torch.no_grad():
            packed = pack_padded_sequence(self.embedding(src), lengths.cpu(), batch_first=True, enforce_sorted=False)
            packed_outputs, final = self.rnn(packed)
            outputs, _ = pad_packed_sequence(packed_outputs, batch_first=True, total_length=src.size(1))
        return outputs, final.squeeze(0)
""",
    ),
    # Exercise 2.2, Decoder
    Variant(
        "Decoder",
        "softmax applied to the logits",
        replace=[(DECODER_RETURN, "return torch.softmax(self.out(hidden), dim=-1), hidden")],
    ),
    Variant("Decoder", "returns (hidden, logits)", replace=[(DECODER_RETURN, "return hidden, self.out(hidden)")]),
    Variant(
        "Decoder",
        "the given state ignored (the GRU starts from zeros)",
        replace=[(DECODER_STATE, "_, hidden = self.rnn(embedded)")],
    ),
    Variant(
        "Decoder",
        "logits computed from the previous state, not the new one",
        replace=[
            (DECODER_STATE, "logits = self.out(hidden)\n        " + DECODER_STATE),
            (DECODER_RETURN, "return logits, hidden"),
        ],
    ),
    Variant("Decoder", "tanh on the logits", replace=[(DECODER_RETURN, "return torch.tanh(self.out(hidden)), hidden")]),
    Variant(
        "Decoder",
        "nn.GRUCell instead of nn.GRU (the weights no longer load by name)",
        source='''
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
''',
    ),
    Variant(
        "Decoder",
        "the given state detached (hidden.detach()): no gradient flows back to the encoder",
        replace=[(DECODER_STATE, DECODER_STATE.replace("hidden.unsqueeze(0)", "hidden.detach().unsqueeze(0)"))],
    ),
    # Exercise 2.3, teacher_forcing_loss
    Variant(
        "teacher_forcing_loss",
        "the mean of per-sentence means instead of the mean over all real tokens",
        replace=[
            (
                LOSS,
                "losses = F.cross_entropy(logits.transpose(1, 2), tgt, ignore_index=pad_id, reduction='none')\n"
                "    real = (tgt != pad_id).to(losses.dtype)\n"
                "    return ((losses * real).sum(dim=1) / real.sum(dim=1)).mean()",
            )
        ],
    ),
    Variant(
        "teacher_forcing_loss",
        "the decoder fed its own predictions (argmax)",
        replace=[("y_prev = tgt[:, t]", "y_prev = logits.argmax(dim=-1)")],
    ),
    Variant(
        "teacher_forcing_loss",
        "the state never carried: every step starts from the encoder's state",
        replace=[("logits, hidden = decoder(y_prev, hidden)", "logits, _ = decoder(y_prev, hidden)")],
    ),
    Variant(
        "teacher_forcing_loss",
        "step t reads tgt[:, t], the token it must predict",
        replace=[("logits, hidden = decoder(y_prev, hidden)", "logits, hidden = decoder(tgt[:, t], hidden)")],
    ),
    Variant(
        "teacher_forcing_loss",
        "padding counted in the mean (no ignore_index)",
        replace=[(", ignore_index=pad_id)", ")")],
    ),
    Variant("teacher_forcing_loss", "a Python float (.item())", replace=[(LOSS, LOSS + ".item()")]),
    Variant(
        "teacher_forcing_loss",
        "the decoder starts from zeros, not from the encoder's state",
        replace=[
            (
                "_, hidden = encoder(src, lengths)",
                "_, hidden = encoder(src, lengths)\n    hidden = torch.zeros_like(hidden)",
            )
        ],
    ),
    Variant(
        "teacher_forcing_loss",
        "the sum over tokens instead of the mean",
        replace=[("ignore_index=pad_id)", "ignore_index=pad_id, reduction='sum')")],
    ),
    Variant(
        "teacher_forcing_loss",
        "0 hard-coded as the padding id (ignore_index=0)",
        replace=[("ignore_index=pad_id)", "ignore_index=0)")],
    ),
    Variant(
        "teacher_forcing_loss",
        "1 hard-coded as the BOS id",
        replace=[("y_prev = torch.full_like(tgt[:, 0], bos_id)", "y_prev = torch.full_like(tgt[:, 0], 1)")],
    ),
    # Exercise 2.4, greedy_decode
    Variant(
        "greedy_decode", "rows go on after their EOS (no padding)", replace=[(".masked_fill(finished, pad_id)", "")]
    ),
    Variant(
        "greedy_decode",
        "never stops early: always max_len steps",
        replace=[("if bool(finished.all()):\n                break", "pass")],
    ),
    Variant("greedy_decode", "stops as soon as any row has ended", replace=[("finished.all()", "finished.any()")]),
    Variant(
        "greedy_decode",
        "EOS replaced by padding (finished updated before masking)",
        replace=[
            (
                "y_prev = logits.argmax(dim=-1).masked_fill(finished, pad_id)",
                "y_prev = logits.argmax(dim=-1)\n"
                "            finished = finished | (y_prev == eos_id)\n"
                "            y_prev = y_prev.masked_fill(finished, pad_id)",
            ),
            ("            finished = finished | (y_prev == eos_id)\n            if", "            if"),
        ],
    ),
    Variant("greedy_decode", "one step short of max_len", replace=[("range(max_len)", "range(max_len - 1)")]),
    Variant(
        "greedy_decode",
        "BOS fed at every step instead of the previous choice",
        replace=[
            (
                "logits, hidden = decoder(y_prev, hidden)",
                "logits, hidden = decoder(torch.full_like(y_prev, bos_id), hidden)",
            )
        ],
    ),
    Variant(
        "greedy_decode",
        "1 hard-coded as the BOS id",
        replace=[("y_prev = torch.full_like(src[:, 0], bos_id)", "y_prev = torch.full_like(src[:, 0], 1)")],
    ),
    Variant(
        "greedy_decode",
        "2 hard-coded as the EOS id",
        replace=[("finished = finished | (y_prev == eos_id)", "finished = finished | (y_prev == 2)")],
    ),
    Variant(
        "greedy_decode",
        "0 hard-coded as the padding id",
        replace=[(".masked_fill(finished, pad_id)", ".masked_fill(finished, 0)")],
    ),
    # Exercise 2.5, exact_match_by_length
    Variant(
        "exact_match_by_length",
        "compares only the first len(target) tokens of the prediction",
        replace=[
            (
                SAME,
                "gold = [t for t in target if t != pad_id]\n"
                "        same = [t for t in prediction if t != pad_id][: len(gold)] == gold",
            )
        ],
    ),
    Variant(
        "exact_match_by_length", "padding not removed before comparing", replace=[(SAME, "same = prediction == target")]
    ),
    Variant("exact_match_by_length", "0 hard-coded as the padding id", replace=[(SAME, SAME.replace("pad_id", "0"))]),
    Variant(
        "exact_match_by_length",
        "counts right rows instead of the fraction",
        replace=[("hits[length] / counts[length]", "float(hits[length])")],
    ),
    Variant(
        "exact_match_by_length",
        "the fraction of all rows, not of the rows of that length",
        replace=[("hits[length] / counts[length]", "hits[length] / len(source_lengths)")],
    ),
    Variant(
        "exact_match_by_length",
        "token accuracy instead of exact match",
        source='''
def exact_match_by_length(predictions, targets, source_lengths, pad_id):
    """Per source length: the fraction of target tokens predicted right."""
    right, total = {}, {}
    for prediction, target, length in zip(predictions.tolist(), targets.tolist(), source_lengths.tolist()):
        gold = [t for t in target if t != pad_id]
        guess = [t for t in prediction if t != pad_id] + [None] * len(gold)
        right[length] = right.get(length, 0) + sum(g == p for g, p in zip(gold, guess))
        total[length] = total.get(length, 0) + len(gold)
    return {int(n): right[n] / total[n] for n in sorted(total)}
''',
    ),
]

VALID = [
    Variant(
        "Encoder",
        "masking instead of packing: states at lengths - 1, padded outputs zeroed",
        source=ENCODER_HEAD
        + """
    def forward(self, src, lengths):
        outputs, _ = self.rnn(self.embedding(src))                                         # (B, T_enc, d)
        real = torch.arange(src.size(1), device=src.device)[None, :] < lengths.to(src.device)[:, None]
        outputs = outputs * real[..., None]                                                # zeros at padding
        return outputs, outputs[torch.arange(src.size(0)), lengths - 1]
""",
    ),
    Variant(
        "Decoder",
        "the new state read from the GRU's output sequence",
        replace=[
            (DECODER_STATE, "output, _ = self.rnn(embedded, hidden[None].contiguous())"),
            ("hidden = hidden.squeeze(0)", "hidden = output[:, 0]"),
        ],
    ),
    Variant(
        "teacher_forcing_loss",
        "per-token losses summed over the real tokens and divided by their number",
        replace=[
            (
                LOSS,
                "losses = F.cross_entropy(logits.transpose(1, 2), tgt, reduction='none')        # (B, T_dec)\n"
                "    real = tgt != pad_id\n"
                "    return losses[real].sum() / real.sum()",
            )
        ],
    ),
    Variant(
        "teacher_forcing_loss",
        "log_softmax and gather, step by step, with a mask",
        source='''
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
''',
    ),
    Variant(
        "greedy_decode",
        "lists per row, a while loop, padding added at the end",
        source='''
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
''',
    ),
    Variant(
        "exact_match_by_length",
        "tensors padded to a common width and compared row by row",
        source='''
def exact_match_by_length(predictions, targets, source_lengths, pad_id):
    """Exact match per source length, with tensor operations."""
    width = max(predictions.size(1), targets.size(1))
    pad = lambda x: torch.nn.functional.pad(x, (0, width - x.size(1)), value=pad_id)  # noqa: E731
    same = (pad(predictions) == pad(targets)).all(dim=1)
    return {n: same[source_lengths == n].double().mean().item() for n in sorted(set(source_lengths.tolist()))}
''',
    ),
]
