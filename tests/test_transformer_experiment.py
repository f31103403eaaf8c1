"""experiments.transformer: chapter 07's training program (a Transformer beside the RNN with attention).

A tiny run (seconds on a 2-core CPU) writes a results file with both models, trained on the same
capped data and evaluated on every test length; greedy decoding agrees with a plain re-decoding of the
prefix; the attention maps it stores are the models' attention weights (the Transformer's recomputed from its
weights, head by head); and the shipped results file is what the command it names writes.
"""

from __future__ import annotations

import dataclasses
import json
import math

import torch

from attention_course import assets
from attention_course.data import BOS_ID, EOS_ID, PAD_ID
from attention_course.toy_translation import build_vocabularies
from autograder.reference.ch07_transformer import sinusoidal_positions
from experiments import data, evaluation, transformer


def test_tiny_run_trains_both_models_on_the_same_capped_data(tmp_path):
    torch.manual_seed(0)
    results = transformer.run_transformer(
        "tiny", out=tmp_path, device="cpu", threads=1, show_progress=False, log=lambda _: None
    )
    written = json.loads((tmp_path / transformer.RESULTS_FILE).read_text())
    assert written == json.loads(json.dumps(results)), "the file holds what run_transformer returned"
    config = transformer.CONFIGS["tiny"]
    assert written["config"] == dataclasses.asdict(config)
    assert written["data"]["longest_train_source"] <= config.max_train_len
    assert set(written["models"]) == set(transformer.MODELS)
    steps = {kind: model["steps"] for kind, model in written["models"].items()}
    assert steps == {kind: config.steps for kind in transformer.MODELS}, "the same number of updates for both"
    _, _, splits, _ = data.load_data(config, max_train_len=config.max_train_len)
    longest_test = max(len(english.split()) for english, _ in splits["test"])
    assert longest_test > config.max_train_len, "the test split must reach beyond the training lengths"
    for kind, model in written["models"].items():
        assert sum(row["count"] for row in model["by_length"].values()) == written["data"]["test_pairs"], kind
        assert model["parameters"] > 0 and model["target_tokens_per_second"] > 0, kind
        assert 0 < model["train_cpu_seconds"] and 0 < model["train_seconds"], kind
        assert all(math.isfinite(x) and x > 0 for x in model["history"]["valid_loss"]), kind
        assert 0.0 <= model["exact_match"] <= 1.0 and 0.0 <= model["bleu"] <= 100.0, kind


def test_training_sentences_are_capped_and_the_test_split_is_not():
    tiny = transformer.CONFIGS["tiny"]
    _, _, splits, encoded = data.load_data(tiny, max_train_len=8)
    assert all(len(english.split()) <= 8 for english, _ in splits["train"] + splits["valid"])
    assert all(len(source) <= 8 + 1 for source, _ in encoded["train"] + encoded["valid"])  # + EOS
    _, _, uncapped, _ = data.load_data(tiny)
    assert splits["test"] == uncapped["test"], "the cap leaves the test split untouched"


def test_greedy_decoding_equals_re_decoding_the_whole_prefix():
    torch.manual_seed(0)
    config = transformer.CONFIGS["tiny"]
    model = transformer.build("transformer", config, 20, 17).eval()
    src = torch.tensor([[5, 6, 7, 8, EOS_ID], [9, 4, EOS_ID, PAD_ID, PAD_ID]])
    lengths = torch.tensor([5, 3])
    got = evaluation.transformer_greedy(model, src, lengths, max_len=7)
    with torch.no_grad():
        for row in range(2):
            prefix = [BOS_ID]
            for _ in range(7):
                logits = model(src[row : row + 1, : lengths[row]], lengths[row : row + 1], torch.tensor([prefix]))
                prefix.append(int(logits[0, -1].argmax()))
                if prefix[-1] == EOS_ID:
                    break
            expected = prefix[1:] + [PAD_ID] * (got.shape[1] - len(prefix) + 1)
            assert got[row].tolist() == expected[: got.shape[1]], (row, got[row].tolist(), prefix)


def test_shipped_results_are_what_their_command_writes():
    path = assets.path(transformer.RESULTS_FILE)
    shipped = json.loads(path.read_text())
    name = shipped["config"]["name"]
    assert shipped["made_by"] == f"python -m experiments.transformer --config {name}"
    assert shipped["config"] == dataclasses.asdict(transformer.CONFIGS[name]), (
        "the shipped results come from another configuration than the command would use now: rerun it"
    )
    assert set(shipped["models"]) == set(transformer.MODELS)
    beyond = [b for b in shipped["data"]["length_bins"] if int(b.split("-")[0]) > shipped["config"]["max_train_len"]]
    for kind, model in shipped["models"].items():
        assert model["steps"] == shipped["config"]["steps"], kind
        assert any(b in model["by_length"] for b in beyond), f"{kind}: no test sentence beyond the training lengths"


def test_the_transformers_maps_are_its_cross_attention_weights_head_by_head():
    """The first decoder layer's map, recomputed from its weights: softmax(q k^T / sqrt(d_k)) per head, with q the
    normalised decoder states after causal self-attention and k the memory, both projected (pre-norm layer)."""
    torch.manual_seed(0)
    config = transformer.CONFIGS["tiny"]
    src_vocab, tgt_vocab = build_vocabularies()
    model = transformer.build("transformer", config, len(src_vocab), len(tgt_vocab)).eval()
    english, french = transformer.MAP_PAIRS[1]
    found = transformer.attention_maps("transformer", model, [(english, french)], src_vocab, tgt_vocab, "cpu")
    got = torch.tensor(found["maps"][0])  # (n_layers, n_heads, T_dec, T_enc)
    src = torch.tensor([src_vocab.encode(english)])
    target = tgt_vocab.encode(french)
    tgt_in = torch.tensor([[BOS_ID] + target[:-1]])
    T_dec, T_enc, H = len(target), src.shape[1], config.n_heads
    with torch.no_grad():
        memory, _ = model.encode(src, torch.tensor([T_enc]))
        layer = model.decoder_layers[0]
        y = model.tgt_embedding(tgt_in) * math.sqrt(config.d_model) + sinusoidal_positions(T_dec, config.d_model)
        h = layer.norm1(y)
        y = y + layer.self_attn(h, h, h, attn_mask=~torch.ones(T_dec, T_dec, dtype=torch.bool).tril())[0]
        W_Q, W_K, _ = layer.multihead_attn.in_proj_weight.chunk(3)
        b_Q, b_K, _ = layer.multihead_attn.in_proj_bias.chunk(3)
        q = (layer.norm2(y) @ W_Q.T + b_Q).reshape(T_dec, H, -1).transpose(0, 1)  # (H, T_dec, d_k)
        k = (memory[0] @ W_K.T + b_K).reshape(T_enc, H, -1).transpose(0, 1)  # (H, T_enc, d_k)
        expected = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(q.shape[-1]), dim=-1)
    assert tuple(got.shape) == (config.n_layers, H, T_dec, T_enc)
    torch.testing.assert_close(got[0], expected, atol=1e-4, rtol=0)
    assert len(found["translations"]) == 1


def test_the_rnns_maps_are_its_attention_weights():
    torch.manual_seed(0)
    config = transformer.CONFIGS["tiny"]
    src_vocab, tgt_vocab = build_vocabularies()
    model = transformer.build("rnn_attention", config, len(src_vocab), len(tgt_vocab)).eval()
    english, french = transformer.MAP_PAIRS[0]
    got = torch.tensor(
        transformer.attention_maps("rnn_attention", model, [(english, french)], src_vocab, tgt_vocab, "cpu")["maps"][0]
    )
    src = torch.tensor([src_vocab.encode(english)])
    tgt_in = torch.tensor([[BOS_ID] + tgt_vocab.encode(french)[:-1]])
    with torch.no_grad():
        expected = model.forward_with_weights(src, torch.tensor([src.shape[1]]), tgt_in)[1][0]
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=0)
