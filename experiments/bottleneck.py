"""Measure the bottleneck of an encoder-decoder without attention (chapter 02_seq2seq_bottleneck).

What it produces: ``attention_course/assets/bottleneck_results.json``, the file the
chapter's notebook loads and plots. The script trains the chapter's model (the reference
``Encoder``, ``Decoder`` and ``teacher_forcing_loss`` of ``autograder.reference.ch02_seq2seq_bottleneck``,
GRU hidden size 128) on the reversal of sequences of 4 to 40 tokens, then decodes 100 fresh
test sequences per source length with the reference ``greedy_decode`` and records, per
source length: exact match (``exact_match_by_length``), token accuracy, and token accuracy
at each output position; plus the settings, the seed, the training loss and a few examples.

How long: 2 to 6 minutes on one CPU thread (3000 training steps): the committed results took
309 s of training on a busy 2-core machine (load average 3.6 at the start); the same settings took
about 110 s on a quieter one. Seeds are fixed; on the same machine and PyTorch version the numbers
repeat exactly, elsewhere they may differ slightly (an earlier run of the same settings, machine not
recorded, differed from this one in the exact match of single lengths by up to 5 points), which
is why the file records the machine
(``experiments.machine.describe_machine``: processor, instruction set, cores, threads, load).

How to run it, from the repository root:

    .venv/bin/python -m experiments.bottleneck

(``--output PATH`` writes elsewhere, ``--steps N`` shortens a trial run.) After
regenerating, run ``.venv/bin/python -m autograder generate 02_seq2seq_bottleneck`` so that
the students' copy in ``chapters/`` is updated, and update the numbers quoted in the
notebook's prose.
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import torch
from torch.nn.utils.rnn import pad_sequence

from attention_course import BOS_ID, EOS_ID, PAD_ID, reversal_task, token_vocabulary
from autograder.reference import ch02_seq2seq_bottleneck
from experiments import machine
from experiments.cli import ASSETS, make_parser

DEFAULT_OUTPUT = ASSETS / "bottleneck_results.json"

SETTINGS = {
    "task": "reversal",
    "vocab_size": 23,  # 3 special ids + 20 content tokens
    "min_len": 4,
    "max_len": 40,
    "emb_dim": 32,
    "hidden_dim": 128,
    "train_sequences": 20000,
    "test_sequences_per_length": 100,
    "batch_size": 64,
    "steps": 3000,
    "lr": 3e-3,
    "lr_schedule": "constant, then linear decay to 0 over the last 30% of the steps",
    "clip_grad_norm": 1.0,
    "batching": "batches of similar source lengths, shuffled",
    "decoding": "greedy, max_len = max_len + 2",
}
SEED = 0
BUCKETS = [(4, 10), (11, 20), (21, 30), (31, 40)]


def make_batch(pairs):
    """src (B, S), lengths (B,), tgt (B, T) with EOS appended, all padded with PAD_ID."""
    src = pad_sequence([torch.tensor(s) for s, _ in pairs], batch_first=True, padding_value=PAD_ID)
    tgt = pad_sequence([torch.tensor(t + [EOS_ID]) for _, t in pairs], batch_first=True, padding_value=PAD_ID)
    return src, torch.tensor([len(s) for s, _ in pairs]), tgt


def batch_plan(pairs, batch_size, steps, generator):
    """Index batches of similar lengths (less padding, faster steps), in a random order, for ``steps`` steps."""
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]))
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    plan = []
    while len(plan) < steps:
        plan += [batches[j] for j in torch.randperm(len(batches), generator=generator).tolist()]
    return plan[:steps]


def train(ref, settings, seed):
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    train_pairs = reversal_task(
        settings["train_sequences"], settings["min_len"], settings["max_len"], settings["vocab_size"], seed=seed
    )
    encoder = ref.Encoder(settings["vocab_size"], settings["emb_dim"], settings["hidden_dim"], pad_id=PAD_ID)
    decoder = ref.Decoder(settings["vocab_size"], settings["emb_dim"], settings["hidden_dim"])
    parameters = [*encoder.parameters(), *decoder.parameters()]
    optimizer = torch.optim.Adam(parameters, lr=settings["lr"])
    steps = settings["steps"]
    decay_steps = 0.3 * steps
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (steps - step) / decay_steps))
    losses = []
    for step, indices in enumerate(batch_plan(train_pairs, settings["batch_size"], steps, generator), start=1):
        src, lengths, tgt = make_batch([train_pairs[i] for i in indices])
        loss = ref.teacher_forcing_loss(encoder, decoder, src, lengths, tgt, BOS_ID, PAD_ID)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(parameters, settings["clip_grad_norm"])
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if step % 250 == 0:
            print(f"step {step}/{steps}: mean loss of the last 250 steps {sum(losses[-250:]) / 250:.3f}", flush=True)
    return encoder.eval(), decoder.eval(), losses


def evaluate(ref, encoder, decoder, settings):
    """Per source length: exact match, token accuracy, token accuracy at each output position; and examples."""
    names = token_vocabulary(settings["vocab_size"])
    per_length = settings["test_sequences_per_length"]
    lengths_range = range(settings["min_len"], settings["max_len"] + 1)
    exact, tokens, by_position, examples = [], [], [], []
    for length in lengths_range:
        pairs = reversal_task(per_length, length, length, settings["vocab_size"], seed=1000 + length)
        src, lengths, tgt = make_batch(pairs)
        prediction = ref.greedy_decode(encoder, decoder, src, lengths, BOS_ID, EOS_ID, PAD_ID, settings["max_len"] + 2)
        exact.append(ref.exact_match_by_length(prediction, tgt, lengths, PAD_ID)[length])
        width = tgt.size(1)  # length + 1 (EOS); every target of this batch has it
        aligned = torch.full_like(tgt, PAD_ID)
        aligned[:, : min(width, prediction.size(1))] = prediction[:, :width]
        correct = (aligned == tgt).double()
        tokens.append(correct.mean().item())
        by_position.append([round(v, 4) for v in correct.mean(dim=0).tolist()])
        if length in (5, 12, 25, 40):
            row = prediction[0].tolist()
            examples.append(
                {
                    "source": " ".join(names[i] for i in src[0].tolist()),
                    "target": " ".join(names[i] for i in tgt[0].tolist()),
                    "prediction": " ".join(names[i] for i in row if i != PAD_ID),
                }
            )
    return list(lengths_range), exact, tokens, by_position, examples


def main(argv=None):
    parser = make_parser("python -m experiments.bottleneck", __doc__)
    parser.add_argument(
        "--output", type=Path, default=DEFAULT_OUTPUT, help="the results file (default: the shipped one)"
    )
    parser.add_argument("--steps", type=int, default=SETTINGS["steps"], help="training steps (default: 3000)")
    args = parser.parse_args(argv)
    settings = {**SETTINGS, "steps": args.steps}

    ref = ch02_seq2seq_bottleneck  # the chapter's reference solutions (autograder/ is not released to students)
    torch.set_num_threads(1)  # small recurrent models: one thread is fastest, and robust on a busy machine
    where = machine.describe_machine()  # the processor, its instruction set, cores, threads and load at the start

    start = time.time()
    encoder, decoder, losses = train(ref, settings, SEED)
    train_seconds = time.time() - start
    lengths, exact, tokens, by_position, examples = evaluate(ref, encoder, decoder, settings)

    buckets = []
    for low, high in BUCKETS:
        inside = [i for i, n in enumerate(lengths) if low <= n <= high]
        buckets.append(
            {
                "lengths": f"{low}-{high}",
                "exact_match": round(sum(exact[i] for i in inside) / len(inside), 4),
                "token_accuracy": round(sum(tokens[i] for i in inside) / len(inside), 4),
            }
        )
    results = {
        "description": "Encoder-decoder (GRU, no attention) on reversal: accuracy by source length. "
        "Written by python -m experiments.bottleneck.",
        "settings": settings,
        "seed": SEED,
        "train_seconds": round(train_seconds, 1),
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "machine": where,
        "lengths": lengths,
        "exact_match": [round(v, 4) for v in exact],
        "token_accuracy": [round(v, 4) for v in tokens],
        "token_accuracy_by_position": by_position,
        "buckets": buckets,
        "loss_every_100_steps": [
            round(sum(losses[i : i + 100]) / len(losses[i : i + 100]), 4) for i in range(0, len(losses), 100)
        ],
        "examples": examples,
    }
    # one line per top-level key: readable diffs, small file
    lines = [f" {json.dumps(key)}: {json.dumps(value)}" for key, value in results.items()]
    args.output.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    print(f"trained in {train_seconds:.0f} s; wrote {args.output}")
    for bucket in buckets:
        print(
            f"  source length {bucket['lengths']:>5}: exact match {bucket['exact_match']:.2f}, "
            f"token accuracy {bucket['token_accuracy']:.2f}"
        )


if __name__ == "__main__":
    main()
