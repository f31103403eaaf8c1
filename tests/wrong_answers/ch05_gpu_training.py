"""Chapter 05's likeliest wrong answers and some valid alternatives, per exercise (format: notes FORMATS.md, section 1).

Every WRONG variant must fail the exercise's hidden test cell, and its visible test cell too unless
``visible=False``; every VALID variant must pass both.
"""

from wrong_answers import Variant
from wrong_answers.cells import ch05 as cells

# ---------------------------------------------------------------------------------------------------------------
# 5.1 pick_device
# ---------------------------------------------------------------------------------------------------------------
_CUDA_THEN_MPS = """    if torch.cuda.is_available():
        return torch.device("cuda")
    if mps_ok:
        return torch.device("mps")
"""

PICK_DEVICE_WRONG = [
    Variant(
        "pick_device",
        "never considers MPS (CUDA or the CPU only)",
        replace=[
            (
                'mps_ok = hasattr(torch.backends, "mps") and torch.backends.mps.is_available()',
                "mps_ok = False",
            )
        ],
    ),
    Variant(
        "pick_device",
        "prefers MPS to CUDA",
        replace=[
            (
                _CUDA_THEN_MPS,
                """    if mps_ok:
        return torch.device("mps")
    if torch.cuda.is_available():
        return torch.device("cuda")
""",
            )
        ],
    ),
    Variant(
        "pick_device",
        "accepts any card index when CUDA is available",
        replace=[
            (
                "available = torch.cuda.is_available() and index < torch.cuda.device_count()",
                "available = torch.cuda.is_available()",
            )
        ],
    ),
    Variant(
        "pick_device",
        "off by one: index <= device_count()",
        replace=[("index < torch.cuda.device_count()", "index <= torch.cuda.device_count()")],
    ),
    Variant(
        "pick_device",
        "falls back to the default device instead of raising",
        replace=[("        if not available:\n", "        if not available:\n            return pick_device()\n")],
    ),
    Variant(
        "pick_device",
        "no availability check: the requested device returned as it is",
        replace=[("        if not available:\n", "        if False:\n")],
    ),
    Variant(
        "pick_device",
        "raises ValueError instead of RuntimeError",
        replace=[("raise RuntimeError(", "raise ValueError(")],
    ),
    Variant(
        "pick_device", "returns a string, not a torch.device", replace=[('return torch.device("cpu")', 'return "cpu"')]
    ),
    Variant(
        "pick_device",
        "plain 'cuda' (no index) compares None with the number of cards",
        replace=[("index = 0 if device.index is None else device.index", "index = device.index")],
    ),
    cells.pick_device_available_gpu_wins_over_preference,
]

PICK_DEVICE_VALID = [
    cells.pick_device_parses_name,
]

# ---------------------------------------------------------------------------------------------------------------
# 5.2 pad_batch
# ---------------------------------------------------------------------------------------------------------------
PAD_BATCH_WRONG = [
    Variant(
        "pad_batch",
        "pads on the left",
        replace=[("padded[b, : len(row)] = row", "padded[b, padded.shape[1] - len(row) :] = row")],
    ),
    Variant(
        "pad_batch",
        "always pads with 0",
        replace=[("int(lengths.max())), pad_id, dtype=torch.long)", "int(lengths.max())), 0, dtype=torch.long)")],
    ),
    Variant(
        "pad_batch",
        "returns (L_max, B), pad_sequence's default layout",
        replace=[("return padded, lengths", "return padded.T, lengths")],
    ),
    Variant(
        "pad_batch",
        "a float tensor",
        replace=[("int(lengths.max())), pad_id, dtype=torch.long)", "int(lengths.max())), pad_id, dtype=torch.float)")],
    ),
    Variant(
        "pad_batch",
        "every length is L_max",
        replace=[("return padded, lengths", "return padded, torch.full_like(lengths, int(lengths.max()))")],
    ),
    cells.pad_batch_pads_in_place,
]

PAD_BATCH_VALID = [
    cells.pad_batch_torch_nn_utils_rnn_pad,
    cells.pad_batch_python_lists_then_one_torch,
]

# ---------------------------------------------------------------------------------------------------------------
# 5.3 length_bucketed_batches
# ---------------------------------------------------------------------------------------------------------------
_GENERATOR = "generator = torch.Generator().manual_seed(seed)"

BUCKETS_WRONG = [
    cells.buckets_never_shuffle,
    Variant(
        "length_bucketed_batches",
        "seeds the global random state (torch.manual_seed(seed))",
        replace=[(_GENERATOR, "torch.manual_seed(seed)\n    generator = None")],
    ),
    Variant(
        "length_bucketed_batches",
        "shuffles with the global random state, unseeded",
        replace=[(_GENERATOR, "generator = None")],
    ),
    cells.buckets_random_shuffle,
    Variant(
        "length_bucketed_batches",
        "shuffles with its own generator but also calls random.seed(seed)",
        replace=[(_GENERATOR, "import random\n\n    random.seed(seed)\n    " + _GENERATOR)],
    ),
    Variant(
        "length_bucketed_batches", "ignores the seed (always seed 0)", replace=[("manual_seed(seed)", "manual_seed(0)")]
    ),
    Variant(
        "length_bucketed_batches",
        "shuffles the batches but never the sentences of equal length",
        replace=[
            (
                "order = torch.randperm(len(lengths), generator=generator) if shuffle else torch.arange(len(lengths))",
                "order = torch.arange(len(lengths))",
            )
        ],
    ),
    Variant(
        "length_bucketed_batches",
        "drops the last partial batch",
        replace=[("range(0, len(order), batch_size)", "range(0, len(order) - batch_size + 1, batch_size)")],
    ),
    Variant(
        "length_bucketed_batches",
        "shuffles without sorting by length",
        replace=[("order = order[torch.sort(lengths[order], stable=True).indices]", "order = order")],
    ),
    Variant(
        "length_bucketed_batches",
        "longest sentences first",
        replace=[
            ("torch.sort(lengths[order], stable=True)", "torch.sort(lengths[order], stable=True, descending=True)")
        ],
    ),
]

BUCKETS_VALID = [
    cells.buckets_numpy_rng,
    cells.buckets_python_random,
    cells.buckets_sorted_within_pools,
]

# ---------------------------------------------------------------------------------------------------------------
# 5.4 masked_cross_entropy
# ---------------------------------------------------------------------------------------------------------------
_MEAN = "return (token_nll * mask).sum() / mask.sum()"

LOSS_WRONG = [
    Variant(
        "masked_cross_entropy",
        "the mean of per-sentence means",
        replace=[(_MEAN, "return ((token_nll * mask).sum(1) / mask.sum(1)).mean()")],
    ),
    Variant("masked_cross_entropy", "padding counted in the mean", replace=[(_MEAN, "return token_nll.mean()")]),
    Variant(
        "masked_cross_entropy",
        "divides by every position, padding included",
        replace=[(_MEAN, "return (token_nll * mask).sum() / mask.numel()")],
    ),
    Variant(
        "masked_cross_entropy",
        "log(softmax(...)) instead of log_softmax",
        replace=[("torch.log_softmax(logits, dim=-1)", "torch.log(torch.softmax(logits, dim=-1))")],
    ),
    Variant(
        "masked_cross_entropy",
        "log_softmax over the time axis",
        replace=[("torch.log_softmax(logits, dim=-1)", "torch.log_softmax(logits, dim=1)")],
    ),
    Variant(
        "masked_cross_entropy",
        "returns a float (.item())",
        replace=[(_MEAN, "return ((token_nll * mask).sum() / mask.sum()).item()")],
    ),
    Variant(
        "masked_cross_entropy",
        "overwrites the pad ids of targets in place",
        replace=[("targets.masked_fill(~mask, 0)", "targets.masked_fill_(~mask, 0)")],
    ),
    Variant(
        "masked_cross_entropy",
        "computes in float32 whatever the logits' dtype",
        replace=[("torch.log_softmax(logits, dim=-1)", "torch.log_softmax(logits.float(), dim=-1)")],
    ),
]

LOSS_VALID = [
    cells.masked_cross_entropy_f_cross_entropy_ignore_index,
    cells.masked_cross_entropy_boolean_indexing_f_nll_loss,
    cells.masked_cross_entropy_python_loop_over_real_tokens,
]

# ---------------------------------------------------------------------------------------------------------------
# 5.5 AttentionDecoder
# ---------------------------------------------------------------------------------------------------------------
_STEP1 = "states, _ = self.rnn(self.embedding(tgt_in), hidden.unsqueeze(0))"
_STEP5 = "attentional = torch.tanh(self.combine(torch.cat([context, states], dim=-1)))"
_MASK = 'scores = scores.masked_fill(~src_mask[:, None, :], float("-inf"))'
_SOFTMAX = "weights = torch.softmax(scores, dim=-1)"
_INIT = """        self.embedding = nn.Embedding(vocab_size, emb_dim)
        self.rnn = nn.GRU(emb_dim, hidden_dim, batch_first=True)
        self.combine = nn.Linear(2 * hidden_dim, hidden_dim)
        self.out = nn.Linear(hidden_dim, vocab_size)
"""

DECODER_WRONG = [
    Variant(
        "AttentionDecoder",
        "[s_t; a_t] instead of [a_t; s_t]",
        replace=[(_STEP5, "attentional = torch.tanh(self.combine(torch.cat([states, context], dim=-1)))")],
    ),
    Variant(
        "AttentionDecoder",
        "no tanh in step 5",
        replace=[(_STEP5, "attentional = self.combine(torch.cat([context, states], dim=-1))")],
    ),
    Variant(
        "AttentionDecoder",
        "s_{t-1} instead of s_t",
        replace=[(_STEP1, _STEP1 + "\n        states = torch.cat([hidden.unsqueeze(1), states[:, :-1]], dim=1)")],
    ),
    Variant(
        "AttentionDecoder",
        "the initial state ignored",
        replace=[(_STEP1, "states, _ = self.rnn(self.embedding(tgt_in))")],
    ),
    Variant("AttentionDecoder", "the mask not applied", replace=[(_MASK, "pass")]),
    Variant(
        "AttentionDecoder",
        "the mask applied after the softmax, without renormalising",
        replace=[(_MASK, "pass"), (_SOFTMAX, "weights = torch.softmax(scores, dim=-1) * src_mask[:, None, :]")],
    ),
    Variant(
        "AttentionDecoder",
        "scores divided by sqrt(d)",
        replace=[
            (
                "scores = states @ enc_outputs.transpose(1, 2)",
                "scores = states @ enc_outputs.transpose(1, 2) / states.shape[-1] ** 0.5",
            )
        ],
    ),
    Variant(
        "AttentionDecoder",
        "softmax over the decoder steps",
        replace=[(_SOFTMAX, "weights = torch.softmax(scores, dim=1)")],
    ),
    Variant(
        "AttentionDecoder",
        "dropout 0.1 on the embeddings",
        replace=[
            (_INIT, _INIT + "        self.dropout = nn.Dropout(0.1)\n"),
            (_STEP1, _STEP1.replace("self.embedding(tgt_in)", "self.dropout(self.embedding(tgt_in))")),
        ],
    ),
    Variant(
        "AttentionDecoder",
        "a learned temperature (a parameter of its own)",
        replace=[
            (_INIT, _INIT + "        self.temperature = nn.Parameter(torch.ones(()))\n"),
            (
                "scores = states @ enc_outputs.transpose(1, 2)",
                "scores = states @ enc_outputs.transpose(1, 2) * self.temperature",
            ),
        ],
    ),
]

DECODER_VALID = [
    Variant(
        "AttentionDecoder",
        "one step at a time, GRU state carried by hand",
        replace=[
            (
                _STEP1,
                """state, steps = hidden.unsqueeze(0), []
        for t in range(tgt_in.shape[1]):
            step, state = self.rnn(self.embedding(tgt_in[:, t : t + 1]), state)
            steps.append(step)
        states = torch.cat(steps, dim=1)""",
            )
        ],
    ),
    Variant(
        "AttentionDecoder",
        "einsum, torch.where and -1e9 instead of -inf",
        replace=[
            (
                "scores = states @ enc_outputs.transpose(1, 2)",
                'scores = torch.einsum("btd,bsd->bts", states, enc_outputs)',
            ),
            (_MASK, "scores = torch.where(src_mask[:, None, :], scores, torch.full_like(scores, -1e9))"),
            ("context = weights @ enc_outputs", 'context = torch.einsum("bts,bsd->btd", weights, enc_outputs)'),
        ],
    ),
]

# ---------------------------------------------------------------------------------------------------------------
# 5.6 train_step
# ---------------------------------------------------------------------------------------------------------------
_ZERO = "    optimizer.zero_grad(set_to_none=True)\n"
_CLIP = "    torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)\n"
_BACKWARD = "    loss.backward()\n"
_AUTOCAST = "with torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=amp_dtype is not None):"

TRAIN_STEP_WRONG = [
    Variant("train_step", "never clears the old gradients", replace=[(_ZERO, "")]),
    Variant("train_step", "clears the gradients after backward", replace=[(_ZERO, ""), (_BACKWARD, _BACKWARD + _ZERO)]),
    Variant("train_step", "clips before backward", replace=[(_CLIP, ""), (_BACKWARD, _CLIP + _BACKWARD)]),
    Variant(
        "train_step",
        "clips each value (clip_grad_value_), not the norm",
        replace=[(_CLIP, "    torch.nn.utils.clip_grad_value_(model.parameters(), clip_norm)\n")],
    ),
    Variant(
        "train_step",
        "returns the loss after the update",
        replace=[
            (
                "    return loss.item()",
                "    with torch.no_grad():\n"
                "        return masked_cross_entropy(model(src, lengths, tgt_in).float(), tgt_out, pad_id).item()",
            )
        ],
    ),
    Variant("train_step", "returns a tensor", replace=[("return loss.item()", "return loss.detach()")]),
    Variant("train_step", "ignores amp_dtype", replace=[(_AUTOCAST, "if True:")]),
    Variant("train_step", "autocast hard-coded for CUDA", replace=[("device_type=device.type", 'device_type="cuda"')]),
    Variant(
        "train_step",
        "the loss of the bfloat16 logits, without .float()",
        replace=[
            ("masked_cross_entropy(logits.float(), tgt_out, pad_id)", "masked_cross_entropy(logits, tgt_out, pad_id)")
        ],
    ),
    Variant(
        "train_step",
        "the loss computed inside the autocast block, without .float()",
        replace=[
            (
                "        logits = model(src, lengths, tgt_in)\n"
                "    loss = masked_cross_entropy(logits.float(), tgt_out, pad_id)",
                "        logits = model(src, lengths, tgt_in)\n"
                "        loss = masked_cross_entropy(logits, tgt_out, pad_id)",
            )
        ],
    ),
    Variant(
        "train_step",
        "the device from torch.cuda.is_available(), not from the model",
        replace=[
            (
                "device = next(model.parameters()).device",
                'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
            )
        ],
    ),
    Variant(
        "train_step",
        "feeds tgt_out to the model",
        replace=[("logits = model(src, lengths, tgt_in)", "logits = model(src, lengths, tgt_out)")],
    ),
]

TRAIN_STEP_VALID = [
    cells.train_step_contextlib_nullcontext_f_cross_entropy,
]

# ---------------------------------------------------------------------------------------------------------------
# 5.7 AdditiveScore
# ---------------------------------------------------------------------------------------------------------------
_TANH = "hidden = torch.tanh(projected_q[:, :, None, :] + projected_k[:, None, :, :])"
_RETURN = "return self.v(hidden).squeeze(-1)"

ADDITIVE_WRONG = [
    Variant(
        "AdditiveScore",
        "layers with biases",
        replace=[
            ("self.W_q = nn.Linear(query_dim, attn_dim, bias=False)", "self.W_q = nn.Linear(query_dim, attn_dim)"),
            ("self.W_k = nn.Linear(key_dim, attn_dim, bias=False)", "self.W_k = nn.Linear(key_dim, attn_dim)"),
        ],
    ),
    Variant(
        "AdditiveScore",
        "no tanh",
        replace=[(_TANH, "hidden = projected_q[:, :, None, :] + projected_k[:, None, :, :]")],
    ),
    Variant(
        "AdditiveScore", "squeeze() drops every axis of size 1", replace=[(_RETURN, "return self.v(hidden).squeeze()")]
    ),
    Variant(
        "AdditiveScore",
        "scores transposed, (B, T_k, T_q)",
        replace=[(_TANH, "hidden = torch.tanh(projected_q[:, None, :, :] + projected_k[:, :, None, :])")],
    ),
    Variant(
        "AdditiveScore",
        "softmax applied to the scores",
        replace=[(_RETURN, "return torch.softmax(self.v(hidden).squeeze(-1), dim=-1)")],
    ),
    Variant("AdditiveScore", "sums over d_a instead of applying v", replace=[(_RETURN, "return hidden.sum(-1)")]),
]

ADDITIVE_VALID = [
    Variant(
        "AdditiveScore",
        "einsum with v's weight",
        replace=[(_RETURN, 'return torch.einsum("bijd,d->bij", hidden, self.v.weight[0])')],
    ),
    Variant(
        "AdditiveScore",
        "a loop over the queries",
        replace=[
            (_TANH, "rows = [torch.tanh(projected_q[:, i : i + 1, :] + projected_k) for i in range(q.shape[1])]"),
            (_RETURN, "return torch.stack([self.v(row)[..., 0] for row in rows], dim=1)"),
        ],
    ),
]

WRONG = (
    PICK_DEVICE_WRONG + PAD_BATCH_WRONG + BUCKETS_WRONG + LOSS_WRONG + DECODER_WRONG + TRAIN_STEP_WRONG + ADDITIVE_WRONG
)
VALID = (
    PICK_DEVICE_VALID + PAD_BATCH_VALID + BUCKETS_VALID + LOSS_VALID + DECODER_VALID + TRAIN_STEP_VALID + ADDITIVE_VALID
)
