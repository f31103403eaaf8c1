"""Chapter 07's claims about earlier chapters' code, and the maps it reads.

- The cell where a student may paste chapter 04's ``MultiHeadAttention`` holds, in the instructor notebook, exactly
  chapter 04's reference answers (so the book shows the comparison made with them, and the two cannot drift apart).
- The training step the chapter writes out (``training_step``) is what chapter 05's reference ``train_step`` does on
  a CPU: the same losses and the same weights after a few updates of a Transformer (the chapter says so).
- The attention maps in the shipped results are shaped as the chapter reads them.
"""

from __future__ import annotations

import ast
import json
import re

import nbformat
import torch
import torch.nn.functional as F

from attention_course import assets
from attention_course.data import BOS_ID, PAD_ID
from autograder import conventions, course
from autograder.conventions import SOLUTION, is_demo_cell, normalise, without_markers
from autograder.reference import ch05_gpu_training as ch05
from autograder.reference import ch07_transformer as ch07


def _cells(assignment):
    return nbformat.read(course.solution_notebook(assignment), as_version=4).cells


def test_the_pasted_chapter04_code_is_chapter04s_reference():
    paste = conventions.instructor("07_transformer").by_grade_id["your_chapter04_attention"]
    region = re.search(re.escape(SOLUTION[0]) + r"\n(.*?)\n" + re.escape(SOLUTION[1]), paste.source, re.DOTALL)
    assert region, "the paste cell has no solution region"
    ch04 = {
        grade_id: without_markers(c.source).strip()
        for grade_id, c in conventions.instructor("04_qkv_variants").answers.items()
    }
    expected = "\n\n\n".join(ch04[name] for name in ("dot_score", "scaled_dot_product_attention", "MultiHeadAttention"))
    assert normalise(region.group(1)) == normalise(expected), (
        "copy chapter 04's three answer cells into the paste cell again"
    )
    assert "'''" not in expected, "the pasted code sits in a r'''...''' string"


def _training_step():
    """The function ``training_step`` defined in one of chapter 07's demo cells."""
    for cell in _cells("07_transformer"):
        if is_demo_cell(cell) and "def training_step(" in cell.source:
            (node,) = [
                n for n in ast.parse(cell.source).body if isinstance(n, ast.FunctionDef) and n.name == "training_step"
            ]
            names = {"torch": torch, "F": F, "PAD_ID": PAD_ID}
            exec(compile(ast.Module(body=[node], type_ignores=[]), "chapter 07", "exec"), names)
            return names["training_step"]
    raise AssertionError("no demo cell of chapter 07 defines training_step")


def _batches(generator, count=4, vocab=15):
    batches = []
    for _ in range(count):
        lengths = torch.randint(2, 7, (5,), generator=generator)
        src = torch.randint(3, vocab, (5, int(lengths.max())), generator=generator)
        src = src.masked_fill(torch.arange(src.shape[1])[None, :] >= lengths[:, None], PAD_ID)
        tgt_lengths = torch.randint(2, 8, (5,), generator=generator)
        tgt_out = torch.randint(3, vocab, (5, int(tgt_lengths.max())), generator=generator)
        tgt_out = tgt_out.masked_fill(torch.arange(tgt_out.shape[1])[None, :] >= tgt_lengths[:, None], PAD_ID)
        tgt_in = torch.cat([torch.full((5, 1), BOS_ID), tgt_out[:, :-1]], dim=1)
        batches.append({"src": src, "lengths": lengths, "tgt_in": tgt_in, "tgt_out": tgt_out})
    return batches


def test_the_chapters_training_step_is_chapter05s_train_step_on_a_cpu():
    """The same losses, the same (clipped) gradients and the same weights, update after update. With plain SGD:
    Adam divides each gradient by a running estimate of its own size, so for the key projections' biases, whose
    gradients are zero in exact arithmetic, rounding noise alone would set the direction of their updates."""
    training_step = _training_step()
    torch.manual_seed(0)
    ours = ch07.TransformerTranslator(15, 15, 16, 2, 32, 1)
    theirs = ch07.TransformerTranslator(15, 15, 16, 2, 32, 1)
    theirs.load_state_dict(ours.state_dict())
    optimizer_ours = torch.optim.SGD(ours.parameters(), lr=0.5)
    optimizer_theirs = torch.optim.SGD(theirs.parameters(), lr=0.5)
    for batch in _batches(torch.Generator().manual_seed(7)):
        loss = training_step(ours, batch, optimizer_ours)
        expected = ch05.train_step(theirs, batch, optimizer_theirs, PAD_ID, amp_dtype=None, clip_norm=1.0)
        assert abs(loss - expected) < 1e-5, (loss, expected)
        for (name, a), b in zip(ours.named_parameters(), theirs.parameters()):
            torch.testing.assert_close(a.grad, b.grad, atol=1e-6, rtol=1e-5, msg=lambda m, name=name: f"{name}: {m}")
            torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5, msg=lambda m, name=name: f"{name}: {m}")


def test_the_shipped_maps_are_shaped_as_the_chapter_reads_them():
    results = json.loads(assets.path("transformer_results.json").read_text())
    config, sentences = results["config"], results["maps"]["sentences"]
    assert sentences, "no sentences"
    for sentence in sentences:
        assert sentence["source_tokens"] == sentence["english"].split() + ["<eos>"]
        assert sentence["target_tokens"] == sentence["french"].split() + ["<eos>"]
    for kind, model in results["models"].items():
        assert len(model["maps"]) == len(model["translations"]) == len(sentences), kind
        for sentence, weights in zip(sentences, model["maps"]):
            weights = torch.tensor(weights, dtype=torch.float64)
            T_dec, T_enc = len(sentence["target_tokens"]), len(sentence["source_tokens"])
            shape = (config["n_layers"], config["n_heads"], T_dec, T_enc) if kind == "transformer" else (T_dec, T_enc)
            assert tuple(weights.shape) == shape, (kind, sentence["english"], tuple(weights.shape))
            assert weights.min() >= 0 and (weights.sum(-1) - 1).abs().max() < 1e-3, (kind, sentence["english"])
