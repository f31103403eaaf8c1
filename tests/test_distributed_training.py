"""The multi-process path of the training program (experiments.translation) on a CPU.

torchrun starts two processes on this machine (loopback rendezvous, gloo backend); each trains
a DistributedDataParallel replica of the attention model on its half of every epoch's batches
for the ``tiny`` configuration (a few seconds). DDP averages the gradients in every step, so
both ranks must end with identical parameters, which must differ from the initial ones.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from attention_course.toy_translation import build_vocabularies
from autograder import course
from experiments.config import CONFIGS
from experiments.models import build_model

pytest.importorskip("torch.distributed")


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
