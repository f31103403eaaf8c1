"""Chapter 02: the likeliest wrong answers to Exercises 2.1-2.5, and other correct ways to write them."""

from wrong_answers import Variant
from wrong_answers.cells import ch02 as cells

ENCODER_RETURN = "return outputs, final.squeeze(0)"
DECODER_STATE = "_, hidden = self.rnn(embedded, hidden.unsqueeze(0).contiguous())"
DECODER_RETURN = "return self.out(hidden), hidden"
LOSS = "return F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=pad_id)"
SAME = "same = [t for t in prediction if t != pad_id] == [t for t in target if t != pad_id]"


WRONG = [
    # Exercise 2.1, Encoder
    Variant(
        "Encoder",
        "final state taken at the last column, after the padding",
        replace=[(ENCODER_RETURN, "return outputs, outputs[:, -1]")],
    ),
    cells.encoder_no_packing_gru_reads_padding,
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
    cells.encoder_masked_outputs_not_zeroed,
    cells.encoder_under_no_grad,
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
    cells.decoder_grucell,
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
    cells.exact_match_token_accuracy,
]

VALID = [
    cells.encoder_masking_instead_of_packing,
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
    cells.teacher_forcing_loss_step_by_step,
    cells.greedy_decode_lists_per_row_while_loop,
    cells.exact_match_padded_to_common_width,
]
