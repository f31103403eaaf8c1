"""The attention variants trained side by side (experiments.variants, chapter 05) and the measured figures
of the shipped models: the length curve of chapter 05 and the soft maps of chapter 06's model (issue 12)."""

from __future__ import annotations

import json
import math

import pytest
import torch

from attention_course import assets
from autograder.reference import ch05_gpu_training as ch05
from experiments.models import VARIANTS, VariantDecoder, build_variant
from experiments.variants import CONFIGS, run_variants


def _decoder_inputs(B=3, T_dec=4, T_enc=5, d=6, n_vocab=11):
    gen = torch.Generator().manual_seed(0)
    tgt_in = torch.randint(0, n_vocab, (B, T_dec), generator=gen)
    hidden = torch.randn(B, d, generator=gen)
    enc = torch.randn(B, T_enc, d, generator=gen)
    mask = torch.arange(T_enc)[None, :] < torch.tensor([T_enc, 2, 4])[:, None]  # (B, T_enc), True = real token
    return tgt_in, hidden, enc * mask[..., None], mask


@pytest.mark.parametrize("variant", ["dot", "general", "additive", "scaled_dot"])
def test_each_variant_computes_its_own_score(variant):
    """The weights are a masked softmax of the variant's score, computed here by hand from the decoder's own
    weights; the output layers are chapter 05's (the dot variant equals AttentionDecoder with the same weights)."""
    torch.manual_seed(1)
    decoder = VariantDecoder(variant, 11, 5, 6)
    tgt_in, hidden, enc, mask = _decoder_inputs()
    logits, weights = decoder(tgt_in, hidden, enc, mask)
    states, _ = decoder.rnn(decoder.embedding(tgt_in), hidden.unsqueeze(0))  # (B, T_dec, d)
    if variant in ("dot", "scaled_dot"):
        scores = torch.einsum("btd,bsd->bts", states, enc) / (math.sqrt(6) if variant == "scaled_dot" else 1.0)
    elif variant == "general":
        scores = torch.einsum("btd,de,bse->bts", states, decoder.W, enc)
    else:
        W_q, W_k, v = decoder.score.W_q.weight, decoder.score.W_k.weight, decoder.score.v.weight[0]
        scores = torch.einsum("a,btsa->bts", v, torch.tanh((states @ W_q.T)[:, :, None] + (enc @ W_k.T)[:, None]))
    expected = torch.softmax(scores.masked_fill(~mask[:, None, :], float("-inf")), dim=-1)
    torch.testing.assert_close(weights, expected)
    context = expected @ enc
    torch.testing.assert_close(logits, decoder.out(torch.tanh(decoder.combine(torch.cat([context, states], -1)))))
    if variant == "dot":
        reference = ch05.AttentionDecoder(11, 5, 6)
        reference.load_state_dict(decoder.state_dict())
        torch.testing.assert_close(logits, reference(tgt_in, hidden, enc, mask)[0])


def test_multi_head_variant_matches_torch():
    """Multi-head attention: torch's nn.MultiheadAttention with the same weights gives the same output."""
    torch.manual_seed(2)
    decoder = VariantDecoder("multi_head", 11, 5, 8)
    tgt_in, hidden, enc, mask = _decoder_inputs(d=8)
    states, _ = decoder.rnn(decoder.embedding(tgt_in), hidden.unsqueeze(0))
    mine = decoder.attention
    torch_mha = torch.nn.MultiheadAttention(8, 4, batch_first=True)
    with torch.no_grad():
        torch_mha.in_proj_weight.copy_(torch.cat([mine.q_proj.weight, mine.k_proj.weight, mine.v_proj.weight]))
        torch_mha.in_proj_bias.copy_(torch.cat([mine.q_proj.bias, mine.k_proj.bias, mine.v_proj.bias]))
        torch_mha.out_proj.weight.copy_(mine.out_proj.weight)
        torch_mha.out_proj.bias.copy_(mine.out_proj.bias)
    context, weights = decoder.attend(states, enc, mask)
    expected, expected_weights = torch_mha(states, enc, enc, key_padding_mask=~mask)  # torch: True = ignore
    torch.testing.assert_close(context, expected)
    torch.testing.assert_close(weights, expected_weights)


def test_parameter_counts_follow_from_the_scores():
    """Relative to the dot variant: general adds d^2, additive 2 d d_a + d_a (d_a = d), multi-head 4 (d^2 + d)."""
    config = CONFIGS["tiny"].data
    count = {v: sum(p.numel() for p in build_variant(v, config, 30, 40).parameters()) for v in VARIANTS}
    assert count["scaled_dot"] == count["dot"]
    assert count["general"] - count["dot"] == config.hidden_dim**2
    assert count["additive"] - count["dot"] == 2 * config.hidden_dim**2 + config.hidden_dim
    assert count["multi_head"] - count["dot"] == 4 * (config.hidden_dim**2 + config.hidden_dim)


def test_run_variants_tiny_trains_every_variant_with_the_same_budget():
    results = run_variants("tiny", log=lambda *args: None)
    assert list(results["variants"]) == list(VARIANTS)
    for name, row in results["variants"].items():
        assert row["updates"] == CONFIGS["tiny"].updates, name
        assert row["target_tokens_per_second"] > 0 and row["train_seconds"] > 0
        assert set(row["by_length"]) and 0 <= row["exact_match"] <= 1 and 0 <= row["bleu"] <= 100
        assert (row["soft_row_share"] is None) == (name == "none")


def test_the_shipped_variants_table():
    """One configuration and budget for all six; attention of any kind beats none on the longest sentences."""
    results = json.loads(assets.path("variants_results.json").read_text())
    rows = results["variants"]
    assert list(rows) == list(VARIANTS)
    assert results["config"]["name"] == "variants" and results["made_by"].endswith("--config variants")
    assert len({row["updates"] for row in rows.values()}) == 1
    longest = list(rows["none"]["by_length"])[-1]
    for name in VARIANTS[1:]:
        assert rows[name]["by_length"][longest]["bleu"] > rows["none"]["by_length"][longest]["bleu"] + 10, name


def test_chapter06_model_meets_the_soft_map_targets():
    """Issue 12: on the model chapter 06 reads, "i love you" -> "je t' aime" puts 80 % to 99 % on i, you and love,
    and at least 20 % of the test split's target rows put less than 90 % on their most attended source token."""
    from experiments.soft_maps import measure

    figures = measure()
    for pair, weight in figures["classic"].items():
        assert 0.80 <= weight <= 0.99, f"{pair}: {weight:.4f}"
    assert figures["soft_row_share"] >= 0.20, figures["soft_row_share"]


def test_the_shipped_length_curve_keeps_its_shape():
    """Chapter 05's models: with attention BLEU stays high at every length; without it, it falls with length."""
    results = json.loads(assets.path("translation_results.json").read_text())
    attention, plain = (results["models"][kind]["by_length"] for kind in ("attention", "plain"))
    bins = list(attention)
    assert min(attention[b]["bleu"] for b in bins) > 80
    assert plain[bins[-1]]["bleu"] < plain[bins[0]]["bleu"] - 30
    assert attention[bins[-1]]["bleu"] > plain[bins[-1]]["bleu"] + 30
    assert attention[bins[-1]]["exact_match"] > plain[bins[-1]]["exact_match"] + 0.1
