"""experiments.beam: chapter 08's beam search on chapter 07's Transformer and chapter 05's RNN with attention.

What the program's pieces do, checked against independent oracles: the Transformer's cached step (chapter 08's
``KVCacheSelfAttention`` in each decoder layer) gives the log-probabilities of chapter 07's own ``decode`` on the
whole prefix; the replay that stands for the model at the other alphas gives what a fresh search with that alpha
gives; the sample of sentences is seeded and stratified by source length. A tiny run (``slow``: it trains,
seconds) writes the file's layout, and the shipped file is what its command writes: its configuration is chapter
07's, its sentences are the seeded sample, its chosen alphas are the validation's best, its totals agree with its
bins.
"""

from __future__ import annotations

import json

import pytest
import torch

from attention_course import assets
from attention_course.data import BOS_ID, EOS_ID
from autograder.reference import ch08_attention_at_scale as ch08
from experiments import beam, transformer
from experiments.data import load_data


def tiny_models(seed=0):
    """Chapter 07's two models at the tiny configuration, with seeded random weights (no training)."""
    config = transformer.CONFIGS["tiny"]
    torch.manual_seed(seed)
    return {kind: transformer.build(kind, config, 40, 30).eval() for kind in beam.MODELS}


def test_the_cached_transformer_step_is_chapter_07s_decoder():
    model = tiny_models()["transformer"]
    src, lengths = torch.randint(3, 40, (1, 7)), torch.tensor([7])
    cached, reorder, caches = beam.transformer_cached(model, src, lengths, 20)
    recompute, _, prefixes = beam.transformer_recompute(model, src, lengths)
    memory, mask = model.encode(src, lengths)
    tokens = [BOS_ID]
    with torch.no_grad():
        for t in range(6):
            last = torch.tensor([tokens[-1], 5, 7])[: 1 if t == 0 else 3]  # three rows after the first step
            if t == 1:
                caches, prefixes = (
                    reorder(caches, torch.tensor([0, 0, 0])),
                    prefixes.index_select(0, torch.tensor([0, 0, 0])),
                )
            a, caches = cached(last, caches)
            b, prefixes = recompute(last, prefixes)
            rows = prefixes.shape[0]
            oracle = torch.log_softmax(
                model.decode(prefixes, memory.expand(rows, -1, -1), mask.expand(rows, -1))[:, -1], -1
            )
            torch.testing.assert_close(a, oracle, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(b, oracle, atol=1e-5, rtol=1e-5)
            tokens.append(int(a[0].argmax()))
    assert [tuple(K.shape) for K, _ in caches] == [(3, model.decoder_layers[0].self_attn.num_heads, 6, 32 // 4)] * len(
        caches
    )


@pytest.mark.parametrize("beam_size", [1, 3])
def test_the_replay_gives_what_a_fresh_search_gives(beam_size):
    models = tiny_models(seed=1)
    src, lengths = torch.randint(3, 40, (1, 5)), torch.tensor([5])
    for kind, model in models.items():
        with torch.no_grad():
            replayed = beam.search_every_alpha(*beam.stepper(kind, model, src, lengths, 9), beam_size, 9)
            for alpha in beam.ALPHAS:
                fresh = ch08.beam_search(
                    *beam.stepper(kind, model, src, lengths, 9), BOS_ID, EOS_ID, beam_size, 9, alpha
                )
                assert replayed[alpha][0] == fresh[0] and abs(replayed[alpha][1] - fresh[1]) < 1e-6, (kind, alpha)


def test_the_sample_is_seeded_and_stratified():
    config = transformer.CONFIGS["tiny"]
    _, _, splits, _ = load_data(config, max_train_len=config.max_train_len)
    sample = beam.SAMPLES["tiny"]
    chosen = beam.choose_sentences(splits, sample)
    assert chosen == beam.choose_sentences(splits, sample)
    bins = [beam.bin_of(len(splits["test"][i][0].split())) for i in chosen["test"]]
    for name in {beam.bin_of(len(e.split())) for e, _ in splits["test"]}:
        available = sum(beam.bin_of(len(e.split())) == name for e, _ in splits["test"])
        assert bins.count(name) == min(sample.test_per_bin, available), name
    assert set(chosen["timing"]) <= set(chosen["test"]) and len(set(chosen["valid"])) == len(chosen["valid"])


def check_layout(results: dict, config_name: str):
    sample = beam.SAMPLES[config_name]
    assert results["made_by"] == beam.command(config_name)
    assert results["beam_sizes"] == list(beam.BEAM_SIZES) and results["alphas"] == list(beam.ALPHAS)
    assert results["machine"]["cpu_threads"] == 1 and "load_average_at_start" in results["machine"]
    assert results["sample"]["test_per_bin"] == sample.test_per_bin and results["sample"]["seed"] == sample.seed
    assert list(results["models"]) == list(beam.MODELS)
    for entry in results["models"].values():
        for split in ("valid", "test"):
            assert sorted(entry[split]) == sorted(str(b) for b in beam.BEAM_SIZES)
            for row in entry[split].values():
                assert sorted(row) == sorted(str(a) for a in beam.ALPHAS)
                for cell in row.values():
                    assert cell["count"] == len(results["sample"][split])
                    assert 0 <= cell["exact_match"] <= 1 and 0 <= cell["bleu"] <= 100 and cell["mean_log_prob"] <= 0
                    if split == "test":  # the totals are the bins' counts put together
                        bins = cell["by_length"].values()
                        assert sum(b["count"] for b in bins) == cell["count"]
                        matches = sum(b["exact_match"] * b["count"] for b in bins)
                        assert abs(matches - cell["exact_match"] * cell["count"]) < 1e-6
        for b in beam.BEAM_SIZES:  # alpha chosen on the validation sentences
            assert entry["chosen_alpha"][str(b)] == beam.choose_alpha(entry["valid"][str(b)])
            # the search maximises the log-probability: with alpha 0 no wider beam finds a less probable sentence on
            # average than greedy decoding (beam 1) does, or the search is not what it says
            assert entry["test"][str(b)]["0.0"]["mean_log_prob"] >= entry["test"]["1"]["0.0"]["mean_log_prob"] - 1e-6
    timing = results["timing"]
    assert timing["transformer"]["same_tokens"] == {str(b): timing["transformer"]["sentences"] for b in beam.BEAM_SIZES}
    assert results["cache_check_max_difference"] < 1e-4


@pytest.mark.slow
def test_a_tiny_run_writes_the_layout(tmp_path):
    results = beam.run_beam("tiny", out=tmp_path, show_progress=False, log=lambda *a: None)
    assert json.loads((tmp_path / beam.RESULTS_FILE).read_text()) == json.loads(json.dumps(results))
    check_layout(results, "tiny")


def test_shipped_results_are_what_their_command_writes_on_chapter_07s_data():
    shipped = json.loads(assets.path(beam.RESULTS_FILE).read_text())
    chapter07 = json.loads(assets.path(transformer.RESULTS_FILE).read_text())
    name = shipped["config"]["name"]
    check_layout(shipped, name)
    assert shipped["config"] == chapter07["config"], "chapter 07's configuration (data, sizes, updates, seed)"
    config = transformer.CONFIGS[name]
    _, _, splits, _ = load_data(config, max_train_len=config.max_train_len)
    chosen = beam.choose_sentences(splits, beam.SAMPLES[name])
    assert {key: shipped["sample"][key] for key in chosen} == chosen, "the seeded sample of sentences"
    for kind in beam.MODELS:
        assert shipped["models"][kind]["parameters"] == chapter07["models"][kind]["parameters"]
