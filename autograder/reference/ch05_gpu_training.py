"""Reference implementations for 05_gpu_training.

GENERATED from solutions/05_gpu_training/05_gpu_training.ipynb by `python -m autograder generate`: the cells tagged
"export" and every autograded-answer cell, in order, without the solution markers.
Do not edit: edit the notebook and regenerate.
"""
import torch
import torch.nn.functional as F
from torch import nn


def pick_device(prefer=None):
    """The device to train on.

    prefer : None, or a device name such as "cpu", "cuda", "cuda:1" or "mps" (a torch.device works too).
    Returns a torch.device: `prefer` when it is given and available (a RuntimeError that names the
    device otherwise), else CUDA if available, else Apple's MPS if available, else the CPU.
    """
    mps_ok = hasattr(torch.backends, "mps") and torch.backends.mps.is_available()
    if prefer is not None:
        device = torch.device(prefer)
        if device.type == "cpu":
            available = True
        elif device.type == "cuda":
            index = 0 if device.index is None else device.index
            available = torch.cuda.is_available() and index < torch.cuda.device_count()
        elif device.type == "mps":
            available = mps_ok
        else:
            available = False
        if not available:
            raise RuntimeError(f"pick_device: the device {str(prefer)!r} was requested but is not available here "
                               f"(CUDA available: {torch.cuda.is_available()}, MPS available: {mps_ok})")
        return device
    if torch.cuda.is_available():
        return torch.device("cuda")
    if mps_ok:
        return torch.device("mps")
    return torch.device("cpu")


def pad_batch(sequences, pad_id):
    """Stack sequences of different lengths into one padded tensor.

    sequences : list of B sequences of token ids, each a 1-D long tensor or a list of ints (length >= 1).
    pad_id    : the id written after the end of each shorter sequence.
    Returns (padded, lengths): padded is a long tensor (B, L_max) whose row b starts with sequences[b]
    and continues with pad_id; lengths is a long tensor (B,) with the length of each sequence.
    """
    rows = [torch.as_tensor(seq, dtype=torch.long) for seq in sequences]
    lengths = torch.tensor([len(row) for row in rows], dtype=torch.long)
    padded = torch.full((len(rows), int(lengths.max())), pad_id, dtype=torch.long)
    for b, row in enumerate(rows):
        padded[b, : len(row)] = row
    return padded, lengths


def length_bucketed_batches(lengths, batch_size, shuffle=True, seed=0):
    """Group the indices 0 .. N-1 into batches of sequences of similar length.

    lengths    : N sequence lengths (a list, a NumPy array or a 1-D tensor).
    batch_size : the largest number of indices in a batch.
    shuffle    : when True, the order of equal lengths and the order of the batches are shuffled
                 (with a generator seeded by `seed`); when False, batches come in order of length.
    Returns a list of lists of ints: every index exactly once, each batch at most batch_size long.
    The same arguments always give the same batches.
    """
    lengths = torch.as_tensor(lengths).reshape(-1)
    generator = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(lengths), generator=generator) if shuffle else torch.arange(len(lengths))
    order = order[torch.sort(lengths[order], stable=True).indices]  # by length; ties in shuffled order
    batches = [order[i : i + batch_size].tolist() for i in range(0, len(order), batch_size)]
    if shuffle:
        batches = [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
    return batches


def masked_cross_entropy(logits, targets, pad_id):
    """Mean cross-entropy over the real (non-pad) target tokens of a batch.

    logits  : (B, T_dec, n_vocab) unnormalised scores.
    targets : (B, T_dec) long target ids; positions equal to pad_id are ignored.
    Returns a scalar tensor: the sum of -log softmax(logits)[target] over real tokens divided by
    the number of real tokens (every real token counts the same, whatever its sentence's length).
    """
    log_probs = torch.log_softmax(logits, dim=-1)
    mask = targets != pad_id
    safe_targets = targets.masked_fill(~mask, 0)  # any valid index; these positions are masked out
    token_nll = -log_probs.gather(-1, safe_targets.unsqueeze(-1)).squeeze(-1)  # (B, T_dec)
    return (token_nll * mask).sum() / mask.sum()


class AttentionDecoder(nn.Module):
    """A GRU decoder with Luong dot-product attention over the encoder outputs.

    Attributes (the tests copy weights between models through these names):
    embedding : nn.Embedding(vocab_size, emb_dim)
    rnn       : nn.GRU(emb_dim, hidden_dim, batch_first=True)
    combine   : nn.Linear(2 * hidden_dim, hidden_dim), applied to the concatenation [a_t; s_t]
    out       : nn.Linear(hidden_dim, vocab_size)
    """

    def __init__(self, vocab_size, emb_dim, hidden_dim):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_dim)
        self.rnn = nn.GRU(emb_dim, hidden_dim, batch_first=True)
        self.combine = nn.Linear(2 * hidden_dim, hidden_dim)
        self.out = nn.Linear(hidden_dim, vocab_size)

    def forward(self, tgt_in, hidden, enc_outputs, src_mask):
        """Teacher-forced decoding of all T_dec steps at once.

        tgt_in      : (B, T_dec) long, the decoder inputs (BOS followed by the gold target shifted right).
        hidden      : (B, d) the initial decoder state (the encoder's summary of the source).
        enc_outputs : (B, T_enc, d) the encoder states h_1 .. h_T_enc.
        src_mask    : (B, T_enc) bool, True at real source tokens.
        Returns (logits (B, T_dec, n_vocab), weights (B, T_dec, T_enc)); weights are exactly 0 at padded source positions.
        """
        states, _ = self.rnn(self.embedding(tgt_in), hidden.unsqueeze(0))   # step 1: s_1 .. s_T_dec, (B, T_dec, d)
        scores = states @ enc_outputs.transpose(1, 2)                       # step 2: s_t . h_i, (B, T_dec, T_enc)
        scores = scores.masked_fill(~src_mask[:, None, :], float("-inf"))
        weights = torch.softmax(scores, dim=-1)                             # step 3: (B, T_dec, T_enc)
        context = weights @ enc_outputs                                     # step 4: a_t, (B, T_dec, d)
        attentional = torch.tanh(self.combine(torch.cat([context, states], dim=-1)))  # step 5
        return self.out(attentional), weights


def train_step(model, batch, optimizer, pad_id, amp_dtype=None, clip_norm=1.0):
    """One optimisation step on one batch; returns the loss before the step as a Python float.

    model     : an nn.Module whose forward(src, lengths, tgt_in) returns logits (B, T_dec, n_vocab).
    batch     : dict with "src" (B, T_enc) long, "lengths" (B,) long, "tgt_in" (B, T_dec) long and
                "tgt_out" (B, T_dec) long (the targets, pad_id where there is no token).
    optimizer : a torch.optim optimizer over the model's parameters.
    amp_dtype : None for full precision, or a dtype such as torch.bfloat16: the forward pass then
                runs under torch.autocast on the device of the model's parameters.
    clip_norm : the largest allowed global norm of the gradient (torch.nn.utils.clip_grad_norm_).
    """
    device = next(model.parameters()).device
    src, lengths = batch["src"].to(device), batch["lengths"]
    tgt_in, tgt_out = batch["tgt_in"].to(device), batch["tgt_out"].to(device)
    model.train()
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
        logits = model(src, lengths, tgt_in)
    loss = masked_cross_entropy(logits.float(), tgt_out, pad_id)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    optimizer.step()
    return loss.item()


class AdditiveScore(nn.Module):
    """Bahdanau's additive score as a module: e[b, i, j] = v^T tanh(W_q q_i + W_k k_j).

    Attributes (the tests load weights through these names):
    W_q : nn.Linear(query_dim, attn_dim, bias=False), weight (d_a, query_dim)
    W_k : nn.Linear(key_dim, attn_dim, bias=False), weight (d_a, key_dim)
    v   : nn.Linear(attn_dim, 1, bias=False), weight (1, d_a)
    forward(q (B, T_q, query_dim), k (B, T_k, key_dim)) -> scores (B, T_q, T_k), before any softmax.
    """

    def __init__(self, query_dim, key_dim, attn_dim):
        super().__init__()
        self.W_q = nn.Linear(query_dim, attn_dim, bias=False)
        self.W_k = nn.Linear(key_dim, attn_dim, bias=False)
        self.v = nn.Linear(attn_dim, 1, bias=False)

    def forward(self, q, k):
        """q : (B, T_q, query_dim) queries, k : (B, T_k, key_dim) keys -> scores (B, T_q, T_k)."""
        projected_q = self.W_q(q)  # (B, T_q, d_a)
        projected_k = self.W_k(k)  # (B, T_k, d_a)
        hidden = torch.tanh(projected_q[:, :, None, :] + projected_k[:, None, :, :])  # (B, T_q, T_k, d_a)
        return self.v(hidden).squeeze(-1)  # (B, T_q, T_k)
