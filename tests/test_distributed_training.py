"""The multi-process path of the training program (experiments.translation) on a CPU.

torchrun starts two processes on this machine (loopback rendezvous, gloo backend); each trains
a DistributedDataParallel replica of the attention model on its half of every epoch's batches
for the ``tiny`` configuration (a few seconds). DDP combines the gradients in every step, so
both ranks must end with identical parameters, which must differ from the initial ones.

The replicas' batches hold different numbers of real target tokens, and the loss is a mean per token, so
averaging the replicas' gradients (DDP's default) is not the gradient of the per-token mean over the union
of their batches; the program weights each replica by its share of the tokens
(``experiments.training.token_weighted_ddp``). The second test runs this file itself under torchrun
(``__main__`` below): two replicas with 4 and 110 real target tokens take one step, which must be the SGD
step of the per-token mean over the union of their batches.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from attention_course.data import PAD_ID
from attention_course.toy_translation import build_vocabularies, encode_pairs, generate_pairs
from autograder import course
from experiments.config import CONFIGS
from experiments.data import make_batch
from experiments.models import build_model

pytest.importorskip("torch.distributed")

LR = 0.5


def replica_batches():
    """Rank 0's batch (one short sentence pair) and rank 1's (three long ones): very different token counts."""
    src_vocab, tgt_vocab = build_vocabularies()
    pairs = sorted(generate_pairs(60, seed=5), key=lambda pair: len(pair[1].split()))
    encoded = encode_pairs(pairs[:1] + pairs[-3:], src_vocab, tgt_vocab)
    return make_batch(encoded[:1]), make_batch(encoded[1:])


def initial_model():
    src_vocab, tgt_vocab = build_vocabularies()
    torch.manual_seed(CONFIGS["tiny"].seed)
    return build_model("attention", CONFIGS["tiny"], len(src_vocab), len(tgt_vocab))


@pytest.mark.skipif(not torch.distributed.is_gloo_available(), reason="PyTorch was built without gloo")
def test_two_gloo_processes_end_with_identical_parameters(tmp_path):
    dump = tmp_path / "params"
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1", "--nproc_per_node=2",
        "-m", "experiments.translation", "--config", "tiny", "--model", "attention", "--device", "cpu",
        "--no-write", "--quiet", "--fresh", "--workdir", str(tmp_path / "work"), "--dump-params", str(dump),
    ]  # fmt: skip
    env = {**course.environment_with_course(), "OMP_NUM_THREADS": "1", "MASTER_ADDR": "127.0.0.1"}
    result = subprocess.run(command, cwd=course.ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"torchrun failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    ranks = [torch.load(tmp_path / f"params.attention.rank{r}.pt") for r in (0, 1)]
    assert ranks[0].keys() == ranks[1].keys()
    for name in ranks[0]:
        assert torch.equal(ranks[0][name], ranks[1][name]), f"rank 0 and rank 1 differ in {name}"
    # the replicas trained: the weights are not the initial ones
    torch.manual_seed(CONFIGS["tiny"].seed)
    src_vocab, tgt_vocab = build_vocabularies()
    initial = build_model("attention", CONFIGS["tiny"], len(src_vocab), len(tgt_vocab)).state_dict()
    assert any(not torch.equal(initial[name], ranks[0][name]) for name in initial), "training changed nothing"
    assert "world size 2" in result.stdout, f"the program did not run as two processes:\n{result.stdout[-2000:]}"


@pytest.mark.skipif(not torch.distributed.is_gloo_available(), reason="PyTorch was built without gloo")
def test_replicas_with_unequal_token_counts_take_the_step_of_the_union(tmp_path):
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1", "--nproc_per_node=2",
               __file__, str(tmp_path)]  # fmt: skip
    env = {**course.environment_with_course(), "OMP_NUM_THREADS": "1", "MASTER_ADDR": "127.0.0.1"}
    result = subprocess.run(command, cwd=course.ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"torchrun failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in (0, 1)]

    batches = replica_batches()
    counts = [int((batch["tgt_out"] != PAD_ID).sum()) for batch in batches]
    assert counts[0] * 4 < counts[1], counts  # the test needs very different counts
    model = initial_model()
    params = dict(model.named_parameters())
    sums, means = [], []
    for batch in batches:
        logits = model(batch["src"], batch["lengths"], batch["tgt_in"])
        targets = batch["tgt_out"].flatten()
        summed = F.cross_entropy(logits.flatten(0, 1), targets, ignore_index=PAD_ID, reduction="sum")
        sums.append(summed)
        means.append(summed / int((targets != PAD_ID).sum()))
    union = torch.autograd.grad((sums[0] + sums[1]) / sum(counts), list(params.values()), retain_graph=True)
    averaged = torch.autograd.grad((means[0] + means[1]) / 2, list(params.values()))
    moved_apart = 0.0
    for (name, p), g_union, g_average in zip(params.items(), union, averaged):
        expected = p.detach() - LR * g_union
        for r in (0, 1):
            message = f"rank {r}, {name}: not the SGD step of the per-token mean over the union of the batches"
            torch.testing.assert_close(ranks[r][name], expected, rtol=1e-5, atol=1e-6, msg=message)
        moved_apart = max(moved_apart, float((LR * (g_union - g_average)).abs().max()))
    assert moved_apart > 1e-3, "DDP's plain average would have given the same step: the test would not tell them apart"


def _replica(out: Path) -> None:
    """One replica (under torchrun): one train_step with the token-weighted DDP on this rank's batch."""
    import torch.distributed as dist

    from autograder.reference.ch05_gpu_training import train_step
    from experiments.training import token_weighted_ddp

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    batch = replica_batches()[rank]
    model = initial_model()
    wrapped, share = token_weighted_ddp(model, torch.device("cpu"))
    share.set_tokens(int((batch["tgt_out"] != PAD_ID).sum()), torch.device("cpu"))
    train_step(wrapped, batch, torch.optim.SGD(model.parameters(), lr=LR), PAD_ID, clip_norm=1e9)
    torch.save({name: p.detach().clone() for name, p in model.named_parameters()}, out / f"rank{rank}.pt")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    _replica(Path(sys.argv[1]))
