# ruff: noqa: E501
"""Chapter 05's answers written as whole cells, wrong and valid (tests/wrong_answers/__init__.py runs them).

Each function's body is an answer cell as a student writes it (the function is never called): its decorator
says which exercise it answers, what the student did and whether the answer is wrong or valid, and turns it
into the :class:`~wrong_answers.Variant` that ``ch05_gpu_training.py`` lists in its place. The imports
are the names such a cell finds in the student's namespace (the export cell and the answers above it), here
for the linter.
"""

import torch
import torch.nn.functional as F

from wrong_answers import valid, wrong


@wrong("pick_device", "an available GPU wins over the preference")
def pick_device_available_gpu_wins_over_preference():
    def pick_device(prefer=None):
        if torch.cuda.is_available():
            return torch.device("cuda")
        if torch.backends.mps.is_available():
            return torch.device("mps")
        if prefer is None or torch.device(prefer).type == "cpu":
            return torch.device("cpu")
        raise RuntimeError(f"the device {prefer!r} is not available")


@valid("pick_device", "parses the name by hand and answers cuda:0 for the default")
def pick_device_parses_name():
    def pick_device(prefer=None):
        if prefer is None:
            if torch.cuda.device_count() > 0 and torch.cuda.is_available():
                return torch.device("cuda:0")
            if torch.backends.mps.is_available():
                return torch.device("mps")
            return torch.device("cpu")
        name = str(prefer)
        kind, _, number = name.partition(":")
        if kind == "cpu":
            return torch.device("cpu")
        if kind == "cuda" and torch.cuda.is_available() and int(number or 0) < torch.cuda.device_count():
            return torch.device(name)
        if kind == "mps" and torch.backends.mps.is_available():
            return torch.device("mps")
        raise RuntimeError(f"{name} is not available on this machine")


@wrong("pad_batch", "pads the caller's lists in place")
def pad_batch_pads_in_place():
    def pad_batch(sequences, pad_id):
        rows = [list(map(int, seq)) if torch.is_tensor(seq) else seq for seq in sequences]
        lengths = torch.tensor([len(row) for row in rows], dtype=torch.long)
        longest = int(lengths.max())
        for row in rows:
            row.extend([pad_id] * (longest - len(row)))
        return torch.tensor(rows, dtype=torch.long), lengths


@valid("pad_batch", "torch.nn.utils.rnn.pad_sequence")
def pad_batch_torch_nn_utils_rnn_pad():
    def pad_batch(sequences, pad_id):
        rows = [torch.as_tensor(seq).long() for seq in sequences]
        padded = torch.nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=pad_id)
        return padded, torch.tensor([len(row) for row in rows])


@valid("pad_batch", "Python lists, then one torch.tensor")
def pad_batch_python_lists_then_one_torch():
    def pad_batch(sequences, pad_id):
        rows = [[int(x) for x in seq] for seq in sequences]
        longest = max(len(row) for row in rows)
        padded = [row + [pad_id] * (longest - len(row)) for row in rows]
        return torch.tensor(padded, dtype=torch.long), torch.tensor([len(row) for row in rows], dtype=torch.long)


@wrong("length_bucketed_batches", "never shuffles (ignores shuffle and seed)")
def buckets_never_shuffle():
    def length_bucketed_batches(lengths, batch_size, shuffle=True, seed=0):
        lengths = [int(n) for n in lengths]
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


@wrong("length_bucketed_batches", "shuffles with random.shuffle after random.seed(seed)")
def buckets_random_shuffle():
    def length_bucketed_batches(lengths, batch_size, shuffle=True, seed=0):
        import random

        lengths = [int(n) for n in lengths]
        order = list(range(len(lengths)))
        if shuffle:
            random.seed(seed)
            random.shuffle(order)
        order.sort(key=lambda i: lengths[i])
        batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        if shuffle:
            random.shuffle(batches)
        return batches


@valid("length_bucketed_batches", "NumPy's default_rng and a stable argsort")
def buckets_numpy_rng():
    def length_bucketed_batches(lengths, batch_size, shuffle=True, seed=0):
        import numpy as np

        lengths = np.asarray(lengths).reshape(-1)
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(lengths)) if shuffle else np.arange(len(lengths))
        order = order[np.argsort(lengths[order], kind="stable")]
        batches = [order[i : i + batch_size].tolist() for i in range(0, len(order), batch_size)]
        if shuffle:
            batches = [batches[i] for i in rng.permutation(len(batches))]
        return batches


@valid("length_bucketed_batches", "pure Python with random.Random(seed)")
def buckets_python_random():
    def length_bucketed_batches(lengths, batch_size, shuffle=True, seed=0):
        import random

        lengths = [int(n) for n in lengths]
        order = list(range(len(lengths)))
        rng = random.Random(seed)
        if shuffle:
            rng.shuffle(order)
        order.sort(key=lambda i: lengths[i])
        batches = []
        for start in range(0, len(order), batch_size):
            batches.append(order[start : start + batch_size])
        if shuffle:
            rng.shuffle(batches)
        return batches


@valid("length_bucketed_batches", "sorts within random pools of 50 batches")
def buckets_sorted_within_pools():
    def length_bucketed_batches(lengths, batch_size, shuffle=True, seed=0):
        lengths = torch.as_tensor(lengths).reshape(-1)
        generator = torch.Generator().manual_seed(seed)
        order = torch.randperm(len(lengths), generator=generator) if shuffle else torch.arange(len(lengths))
        pool = len(order) if not shuffle else 50 * batch_size
        batches = []
        for start in range(0, len(order), pool):
            chunk = order[start : start + pool]
            chunk = chunk[torch.sort(lengths[chunk], stable=True).indices]
            batches += [chunk[i : i + batch_size].tolist() for i in range(0, len(chunk), batch_size)]
        if shuffle:
            batches = [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
        return batches


@valid("masked_cross_entropy", "F.cross_entropy with ignore_index")
def masked_cross_entropy_f_cross_entropy_ignore_index():
    def masked_cross_entropy(logits, targets, pad_id):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=pad_id)


@valid("masked_cross_entropy", "boolean indexing and F.nll_loss")
def masked_cross_entropy_boolean_indexing_f_nll_loss():
    def masked_cross_entropy(logits, targets, pad_id):
        real = targets != pad_id
        return F.nll_loss(torch.log_softmax(logits[real], dim=-1), targets[real])


@valid("masked_cross_entropy", "a Python loop over the real tokens")
def masked_cross_entropy_python_loop_over_real_tokens():
    def masked_cross_entropy(logits, targets, pad_id):
        total, count = 0, 0
        for b in range(targets.shape[0]):
            for t in range(targets.shape[1]):
                if int(targets[b, t]) != pad_id:
                    total = total - torch.log_softmax(logits[b, t], dim=-1)[targets[b, t]]
                    count += 1
        return total / count


@valid("train_step", "contextlib.nullcontext, F.cross_entropy and clipping by hand")
def train_step_contextlib_nullcontext_f_cross_entropy():
    def train_step(model, batch, optimizer, pad_id, amp_dtype=None, clip_norm=1.0):
        import contextlib

        device = next(model.parameters()).device
        optimizer.zero_grad(set_to_none=False)
        context = contextlib.nullcontext() if amp_dtype is None else torch.autocast(device.type, dtype=amp_dtype)
        with context:
            logits = model(batch["src"].to(device), batch["lengths"], batch["tgt_in"].to(device))
        target = batch["tgt_out"].to(device)
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), target.reshape(-1), ignore_index=pad_id)
        loss.backward()
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads))
        factor = min(1.0, clip_norm / (float(norm) + 1e-6))
        for g in grads:
            g.mul_(factor)
        optimizer.step()
        return float(loss)
