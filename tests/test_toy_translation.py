"""Unit tests of the toy English -> French language and the translation helpers (not exercises)."""

from __future__ import annotations

import math

import pytest
import torch

from attention_course import BOS_ID, EOS_ID, PAD_ID
from attention_course.toy_translation import (
    CLASSIC_PAIR,
    build_vocabularies,
    encode_pairs,
    generate_pairs,
    make_splits,
    simple_pair,
)
from attention_course.translation import (
    BagOfWordsTranslator,
    GRUEncoder,
    Seq2Seq,
    corpus_bleu,
    exact_match,
    greedy_translate,
)


@pytest.fixture(scope="module")
def splits():
    return make_splits(3000, 200, 400, seed=3)


def test_classic_pairs_are_in_the_language():
    assert simple_pair("i", "love", "you") == ("i love you", "je t' aime") == CLASSIC_PAIR
    assert simple_pair("she", "see", "them") == ("she sees them", "elle les voit")
    assert simple_pair("he", "see", "them", negated=True) == ("he does not see them", "il ne les voit pas")
    assert simple_pair("i", "love", "her", negated=True) == ("i do not love her", "je ne l' aime pas")


def test_generation_is_deterministic_for_a_seed():
    assert generate_pairs(200, seed=4) == generate_pairs(200, seed=4)
    assert generate_pairs(200, seed=4) != generate_pairs(200, seed=5)


def test_reorderings_agreement_and_negation_occur():
    pairs = dict(generate_pairs(4000, seed=0))
    french = list(pairs.values())
    assert any("voiture rouge" in f for f in french), "colour adjectives must follow the noun"
    assert any("petite voiture" in f for f in french), "size adjectives stay in front, with agreement"
    assert any("chats blancs" in f or "chiens noirs" in f for f in french), "plural agreement of adjectives"
    assert any(" ne " in f" {f} " and " pas" in f for f in french), "negation wraps the verb"
    assert any(" qu' " in f" {f} " or " que " in f" {f} " for f in french), "object relative clauses"
    for english, fr in pairs.items():
        if english.startswith("the red car "):
            assert fr.startswith(("la voiture rouge ", "l' auto rouge ")), (english, fr)
    # object pronouns come before the verb: "X sees them" -> "... les voit"
    for english, fr in pairs.items():
        if english in ("she sees them", "he sees them"):
            assert fr.split()[1:] == ["les", "voit"]


def test_the_language_has_real_ambiguity():
    """Random synonyms, optional words, one-to-many and many-to-one alignments, elision and contraction."""
    pairs = generate_pairs(6000, seed=0)
    english = [f" {e} " for e, _ in pairs]
    french = [f" {f} " for _, f in pairs]
    # one English sentence may have several translations: the same source appears with two targets
    targets: dict[str, set[str]] = {}
    for e, f in generate_pairs(40000, seed=1):
        targets.setdefault(e, set()).add(f)
    assert any(len(t) > 1 for t in targets.values()), "some sentence must have more than one translation"
    assert any(" auto" in f for f in french) and any(" voiture" in f for f in french), "French synonyms"
    assert any(" large " in e for e in english) and any(" big " in e for e in english), "English synonyms"
    assert any(" vous " in f for f in french) and any(" tu " in f for f in french), "formal and familiar you"
    assert any(" on " in f for f in french), '"we" may be "on"'
    assert any(" jamais " in f for f in french), "never -> ne ... jamais"
    assert any(" pas " in f and " ne " not in f and " n' " not in f for f in french), "spoken French drops ne"
    assert any(" don't " in e or " doesn't " in e for e in english), "English contractions"
    assert any(" au " in f for f in french) and any(" aux " in f for f in french), "à le -> au, à les -> aux"
    assert any(" looks at " in e or " look at " in e for e in english), '"look at" -> "regarde": two words to one'
    assert any(" listen to " in e or " listens to " in e for e in english)
    assert any(" an " in e for e in english) and not any(" a a" in e or " a e" in e for e in english)
    for e, f in pairs:
        assert " à le " not in f and " à les " not in f and " ma a" not in f, (e, f)
        assert " je a" not in f and " le a" not in f, f"elision missing: {f}"


def test_long_sentences_exist():
    lengths = [len(e.split()) for e, _ in generate_pairs(3000, seed=1)]
    assert max(lengths) >= 30, f"the language must reach 30+ tokens to show the bottleneck, got {max(lengths)}"
    assert min(lengths) == 3


def test_splits_are_disjoint_deterministic_and_hold_the_classic_pair(splits):
    assert [len(splits[k]) for k in ("train", "valid", "test")] == [3000, 200, 400]
    sources = [{e for e, _ in splits[k]} for k in ("train", "valid", "test")]
    assert sum(map(len, sources)) == 3600, "a sentence appears twice"
    assert not (sources[0] & sources[1] or sources[0] & sources[2] or sources[1] & sources[2])
    assert CLASSIC_PAIR in splits["test"]
    assert make_splits(3000, 200, 400, seed=3) == splits
    assert make_splits(3000, 200, 400, seed=4) != splits


def test_vocabularies_use_the_course_ids_and_cover_every_split(splits):
    src_vocab, tgt_vocab = build_vocabularies()
    for vocab in (src_vocab, tgt_vocab):
        assert vocab.itos[:3] == ["<pad>", "<bos>", "<eos>"]
        assert (vocab.stoi["<pad>"], vocab.stoi["<bos>"], vocab.stoi["<eos>"]) == (PAD_ID, BOS_ID, EOS_ID)
    encoded = encode_pairs(splits["train"] + splits["test"], src_vocab, tgt_vocab)
    assert all(s[-1] == EOS_ID and t[-1] == EOS_ID for s, t in encoded)
    english, french = CLASSIC_PAIR
    assert tgt_vocab.decode(tgt_vocab.encode(french)) == french.split()
    assert src_vocab.decode([BOS_ID, *src_vocab.encode(english), PAD_ID]) == english.split()
    with pytest.raises(KeyError, match="bonjour"):
        tgt_vocab.encode("bonjour")


def test_corpus_bleu_hand_worked():
    ref = "the cat is on the mat".split()
    assert corpus_bleu([ref], [ref]) == pytest.approx(100.0)
    # hypothesis "the cat the cat": 1-grams clipped 3/4 (the x2 clipped to 2, cat x2 clipped to 1),
    # 2-grams {the cat: 2 -> clipped 1, cat the: 0} -> 1/3; no 3-gram match -> BLEU 0 without smoothing
    assert corpus_bleu(["the cat the cat".split()], [ref]) == 0.0
    assert corpus_bleu(["the cat the cat".split()], [ref], max_n=2) == pytest.approx(
        100 * math.exp(1 - 6 / 4) * math.sqrt(3 / 4 * 1 / 3)
    )
    # a correct prefix of length 4: precisions 1, brevity penalty exp(1 - 6/4)
    assert corpus_bleu([ref[:4]], [ref]) == pytest.approx(100 * math.exp(1 - 6 / 4))
    # pooled over the corpus, not averaged per sentence
    hyps, refs = [ref, ref[:4]], [ref, ref]
    assert corpus_bleu(hyps, refs) == pytest.approx(100 * math.exp(1 - 12 / 10))
    assert exact_match(hyps, refs) == 0.5
    with pytest.raises(ValueError):
        corpus_bleu([ref], [])


class _Decoder(torch.nn.Module):
    """A stand-in decoder with the chapter 05 interface (uniform weights over real tokens)."""

    def __init__(self, vocab, d):
        super().__init__()
        self.embedding = torch.nn.Embedding(vocab, d)
        self.out = torch.nn.Linear(d, vocab)

    def forward(self, tgt_in, hidden, enc_outputs, src_mask):
        weights = src_mask[:, None, :].float().expand(-1, tgt_in.shape[1], -1)
        weights = weights / weights.sum(-1, keepdim=True)
        return self.out(self.embedding(tgt_in) + (weights @ enc_outputs) + hidden[:, None]), weights


def test_encoder_ignores_padding_and_greedy_decoding_pads_after_eos():
    torch.manual_seed(0)
    encoder = GRUEncoder(20, 8, 6)
    src = torch.tensor([[5, 6, 7, 2], [8, 2, 0, 0]])
    lengths = torch.tensor([4, 2])
    outputs, final = encoder(src, lengths)
    assert outputs.shape == (2, 4, 6) and final.shape == (2, 6)
    assert torch.all(outputs[1, 2:] == 0)
    alone_out, alone_final = encoder(src[1:, :2], lengths[1:])
    torch.testing.assert_close(outputs[1, :2], alone_out[0])
    torch.testing.assert_close(final[1], alone_final[0])
    model = Seq2Seq(encoder, _Decoder(20, 6))
    tokens, weights = greedy_translate(model, src, lengths, max_len=7)
    assert tokens.shape[0] == 2 and tokens.shape[1] <= 7 and weights.shape == (*tokens.shape, 4)
    for row in tokens.tolist():
        if EOS_ID in row:
            assert all(t == PAD_ID for t in row[row.index(EOS_ID) + 1 :])


@pytest.mark.parametrize("bidirectional", [True, False])
def test_the_unpacked_encoder_computes_what_the_packed_one_computes(bidirectional):
    """On a CPU the encoder runs its GRU without packing (each sentence reversed within its length for the
    right-to-left direction); at the real positions the states, the final summary and every gradient must be
    those of the packed sequence, which reads the real tokens only (nn.GRU's own handling of padding)."""
    torch.manual_seed(0)
    encoder = GRUEncoder(20, 8, 6, bidirectional=bidirectional)
    embedded = torch.randn(4, 6, 8)
    lengths = torch.tensor([6, 3, 1, 5])
    mask = torch.arange(6)[None, :] < lengths[:, None]  # (B, S)
    results = []
    for run in (encoder._gru_packed, encoder._gru_unpacked):
        encoder.zero_grad()
        inputs = embedded.clone().requires_grad_()
        states, last = run(inputs, lengths)
        real_states = states * mask[..., None]  # (B, S, directions * d), padding left out
        (real_states.square().sum() + (last * torch.arange(last.shape[1])).sum()).backward()
        grads = [inputs.grad] + [p.grad for p in encoder.rnn.parameters()]
        results.append((real_states.detach(), last.detach(), grads))
    (packed_states, packed_last, packed_grads), (states, last, grads) = results
    torch.testing.assert_close(states, packed_states, msg="states at the real positions differ from the packed GRU's")
    torch.testing.assert_close(last, packed_last, msg="the final states differ from the packed GRU's")
    for name, grad, packed_grad in zip(
        ["inputs"] + [n for n, _ in encoder.rnn.named_parameters()], grads, packed_grads
    ):
        torch.testing.assert_close(grad, packed_grad, msg=f"the gradient of {name} differs from the packed GRU's")


def test_a_left_to_right_encoder_reads_nothing_to_the_right():
    """With bidirectional=False the state at position i depends on tokens 0..i only (the bidirectional one does not)."""
    torch.manual_seed(0)
    src = torch.tensor([[5, 6, 7, 8, 2], [5, 6, 9, 9, 2]])  # equal up to position 1
    lengths = torch.tensor([5, 5])
    forward_only = GRUEncoder(20, 8, 6, bidirectional=False)
    outputs, final = forward_only(src, lengths)
    assert outputs.shape == (2, 5, 6) and final.shape == (2, 6)
    torch.testing.assert_close(outputs[0, :2], outputs[1, :2])
    assert not torch.allclose(outputs[0, 2:], outputs[1, 2:])
    both_ways, _ = GRUEncoder(20, 8, 6)(src, lengths)
    assert not torch.allclose(both_ways[0, :2], both_ways[1, :2])


def test_bag_of_words_translator_matches_its_definition():
    """logits = out(E[previous word] + mean of E over the real source words); padding is ignored."""
    torch.manual_seed(0)
    model = BagOfWordsTranslator(10, 4)
    src = torch.tensor([[3, 4, 5], [6, 7, 0]])
    lengths = torch.tensor([3, 2])
    tgt_in = torch.tensor([[1, 8], [1, 9]])
    logits = model(src, lengths, tgt_in)
    E = model.embedding.weight
    summary = torch.stack([E[[3, 4, 5]].mean(0), E[[6, 7]].mean(0)])
    expected = model.out(E[tgt_in] + summary[:, None, :])
    assert logits.shape == (2, 2, 10)
    torch.testing.assert_close(logits, expected)
    other_padding = src.clone()
    other_padding[1, 2] = 9
    torch.testing.assert_close(model(other_padding, lengths, tgt_in), logits)
