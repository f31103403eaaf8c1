"""A toy English -> French language, generated on the spot (the course downloads no data).

Sentences come from a small grammar whose French side differs from the English in the ways
that make translation more than word-for-word substitution:

- colour adjectives follow the noun: "the red car" -> "la voiture rouge", while size
  adjectives stay in front: "the small red car" -> "la petite voiture rouge";
- object pronouns move in front of the verb: "i love you" -> "je t' aime",
  "she sees them" -> "elle les voit";
- gender and number agreement of articles, adjectives and verbs ("les voitures rouges",
  "les chats blancs", "il voit", "ils voient");
- negation wraps the verb: "he does not see them" -> "il ne les voit pas";
- elision before a vowel ("j'", "t'", "l'", "n'", "qu'");
- relative clauses ("the dog that the girl sees" -> "le chien que la fille voit") and
  clauses joined by "and" / "but", so that sentences reach 30 tokens and more.

Tokens are separated by single spaces; an elided word keeps its apostrophe as part of the
token ("t'"). The English side determines the French side, so a sentence has exactly one
translation. :func:`make_splits` draws train / valid / test sets that share no sentence;
:class:`Vocabulary` maps tokens to ids with the course's special ids PAD=0, BOS=1, EOS=2.
Everything is deterministic for a given seed. The words and their forms (the lexicon) are in
:mod:`attention_course.toy_lexicon`; this module is the grammar, the splits and the vocabularies.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from attention_course.data import BOS_ID, EOS_ID, PAD_ID
from attention_course.toy_lexicon import (
    CONJUNCTIONS,
    CONTRACT,
    DETERMINERS,
    ELIDE,
    ENGLISH_SYNONYMS,
    FORMAL_YOU,
    FRENCH_SYNONYMS,
    NOUNS,
    OBJECT_PRONOUNS,
    PERSON_INDEX,
    POST_ADJECTIVES,
    PRE_ADJECTIVES,
    REFLEXIVE,
    SPOKEN_WE,
    SUBJECT_PRONOUNS,
    VERBS,
    VOWELS,
)

SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>")

# how often each random choice goes the less usual way
PROBS = {
    "formal": 0.25,  # "you" -> "vous" (the register of the whole sentence)
    "on": 0.3,  # "we" -> "on" + third-person verb
    "not": 0.25,  # a clause negated with "not" -> "ne ... pas"
    "never": 0.12,  # a clause negated with "never" -> "ne ... jamais"
    "contract": 0.4,  # "do not" -> "don't", "does not" -> "doesn't"
    "drop_ne": 0.2,  # spoken French drops the "ne" of "ne ... pas"
    "drop_that": 0.3,  # "the dog that she sees" -> "the dog she sees"
}


@dataclass(frozen=True)
class Phrase:
    """A noun phrase or pronoun, rendered in both languages, with its grammatical person."""

    english: tuple[str, ...]
    french: tuple[str, ...]
    person: str


def _elide(tokens: Sequence[str]) -> list[str]:
    """French elision and contraction: "je aime" -> "j' aime", "le arbre" -> "l' arbre", "ma auto" -> "mon auto",
    then "à le chien" -> "au chien", "à les filles" -> "aux filles" (but "à l' ami" stays)."""
    out = list(tokens)
    for i in range(len(out) - 1):
        if out[i + 1].startswith(VOWELS):
            if out[i] in ELIDE:
                # "le"/"la"/"me"/"te" elide only as articles or object pronouns, which is all they are here
                out[i] = ELIDE[out[i]]
            elif out[i] == "ma":
                out[i] = "mon"
    merged: list[str] = []
    for token in out:
        if merged and (merged[-1], token) in CONTRACT:
            merged[-1] = CONTRACT[merged[-1], token]
        else:
            merged.append(token)
    return merged


class _Grammar:
    """Random sentences; every choice goes through one numpy Generator, so a seed fixes them all."""

    def __init__(self, rng: np.random.Generator, relative_prob: float = 0.35):
        self.rng = rng
        self.relative_prob = relative_prob
        self.formal = False  # the register of the current sentence

    def choice(self, options):
        return options[int(self.rng.integers(len(options)))]

    def chance(self, name: str) -> bool:
        return bool(self.rng.random() < PROBS[name])

    def noun_phrase(self, allow_relative: bool) -> Phrase:
        eng_sg, eng_pl, fr_sg, fr_pl, gender = self.choice(NOUNS)
        plural = self.rng.random() < 0.3
        if fr_sg in FRENCH_SYNONYMS and self.rng.random() < FRENCH_SYNONYMS[fr_sg][2]:
            fr_sg, fr_pl = FRENCH_SYNONYMS[fr_sg][:2]
        det = self.choice(["the", "my"] if plural else ["the", "a", "my"])
        slot = (2 if plural else 0) + (1 if gender == "f" else 0)
        det_forms = DETERMINERS[det]
        fr_det = det_forms[2] if plural else det_forms[0 if gender == "m" else 1]
        english, french_pre, french_post = [det], [fr_det], []
        if self.rng.random() < 0.35:
            adj = self.choice(sorted(PRE_ADJECTIVES))
            synonym, prob = ENGLISH_SYNONYMS.get(adj, (adj, 0.0))
            english.append(synonym if self.rng.random() < prob else adj)
            french_pre.append(PRE_ADJECTIVES[adj][slot])
        if self.rng.random() < 0.45:
            adj = self.choice(sorted(POST_ADJECTIVES))
            english.append(adj)
            french_post.append(POST_ADJECTIVES[adj][slot])
        english.append(eng_pl if plural else eng_sg)
        french = french_pre + [fr_pl if plural else fr_sg] + french_post
        person = "3p" if plural else "3s"
        if allow_relative and self.rng.random() < self.relative_prob:
            rel_en, rel_fr = self.relative_clause(person)
            english += rel_en
            french += rel_fr
        return Phrase(tuple(english), tuple(french), person)

    def verb(self, allow_preposition: bool = True) -> tuple[str, int]:
        """A verb and which of its English forms to use."""
        options = [v for v in sorted(VERBS) if allow_preposition or VERBS[v].preposition is None]
        verb = self.choice(options)
        return verb, int(self.rng.integers(len(VERBS[verb].english)))

    def relative_clause(self, head_person: str) -> tuple[list[str], list[str]]:
        if self.rng.random() < 0.5:  # subject relative: "that sees the dog" -> "qui voit le chien"
            verb, form = self.verb()
            obj = self.noun_phrase(allow_relative=False)
            english = ["that", *_english_verb(verb, head_person, form), *obj.english]
            french = ["qui", _french_verb(verb, head_person), *_prepositional(verb, obj.french)]
            return english, french
        # object relative: "(that) she sees" -> "qu' elle voit"; "that" is optional in English
        verb, form = self.verb(allow_preposition=False)
        subj = self.subject(allow_relative=False)
        that = [] if self.chance("drop_that") else ["that"]
        return [*that, *subj.english, *_english_verb(verb, _english_person(subj), form)], [
            "que",
            *subj.french,
            _french_verb(verb, subj.person),
        ]

    def pronoun_subject(self, english: str) -> Phrase:
        french, person = SUBJECT_PRONOUNS[english]
        if english == "you" and self.formal:
            french, person = FORMAL_YOU
        elif english == "we" and self.chance("on"):
            french, person = SPOKEN_WE
        return Phrase((english,), (french,), person)

    def subject(self, allow_relative: bool) -> Phrase:
        if self.rng.random() < 0.5:
            return self.pronoun_subject(self.choice(sorted(SUBJECT_PRONOUNS)))
        return self.noun_phrase(allow_relative)

    def clause(self) -> tuple[list[str], list[str]]:
        subj = self.subject(allow_relative=True)
        verb, form = self.verb()
        draw = self.rng.random()
        polarity = "not" if draw < PROBS["not"] else "never" if draw < PROBS["not"] + PROBS["never"] else None
        options = dict(
            polarity=polarity,
            form=form,
            contract=self.chance("contract"),
            drop_ne=self.chance("drop_ne"),
            formal=self.formal,
        )
        if VERBS[verb].preposition is None and self.rng.random() < 0.45:
            pronouns = [p for p in sorted(OBJECT_PRONOUNS) if (subj.english[0], p) not in REFLEXIVE]
            return clause_tokens(subj, verb, object_pronoun=self.choice(pronouns), **options)
        obj = self.noun_phrase(allow_relative=True)
        return clause_tokens(subj, verb, object_phrase=obj, **options)

    def sentence(self, num_clauses: int) -> tuple[str, str]:
        self.formal = self.chance("formal")
        english, french = self.clause()
        for _ in range(num_clauses - 1):
            conj = self.choice(sorted(CONJUNCTIONS))
            eng2, fr2 = self.clause()
            english += [conj, *eng2]
            french += [CONJUNCTIONS[conj], *fr2]
        return " ".join(_english_article(english)), " ".join(_elide(french))


def _english_article(tokens: Sequence[str]) -> list[str]:
    """English "a" becomes "an" before a vowel: "a apple" -> "an apple"."""
    return [
        "an" if t == "a" and i + 1 < len(tokens) and tokens[i + 1][0] in "aeiou" else t for i, t in enumerate(tokens)
    ]


def _english_verb(verb: str, person: str, form: int = 0, base: bool = False) -> tuple[str, ...]:
    """English tokens of a verb (with its particle): third person singular unless ``base``."""
    base_form, third = VERBS[verb].english[form]
    return third if person == "3s" and not base else base_form


def _french_verb(verb: str, person: str) -> str:
    return VERBS[verb].french[PERSON_INDEX[person]]


def _prepositional(verb: str, french_object: Sequence[str]) -> list[str]:
    preposition = VERBS[verb].preposition
    return [preposition, *french_object] if preposition else list(french_object)


def clause_tokens(
    subject: Phrase,
    verb: str,
    polarity: str | None = None,
    object_pronoun: str | None = None,
    object_phrase: Phrase | None = None,
    *,
    form: int = 0,
    contract: bool = False,
    drop_ne: bool = False,
    formal: bool = False,
):
    """One clause as ``(english tokens, french tokens before elision)``.

    ``polarity`` is None, ``"not"`` ("does not see" / "doesn't see" with ``contract`` -> "ne voit pas") or
    ``"never"`` ("never sees" -> "ne voit jamais"); ``drop_ne`` leaves out the "ne" as spoken French does.
    Exactly one of ``object_pronoun`` (an English object pronoun such as ``"you"``, "vous" when ``formal``)
    and ``object_phrase`` (a :class:`Phrase`) is given. The French object pronoun goes in front of the verb,
    inside the negation: "je ne t' aime pas". ``form`` picks one of the verb's English forms.
    """
    if (object_pronoun is None) == (object_phrase is None):
        raise ValueError("give exactly one of object_pronoun and object_phrase")
    if polarity not in (None, "not", "never"):
        raise ValueError(f"polarity must be None, 'not' or 'never', got {polarity!r}")
    if object_pronoun is not None and VERBS[verb].preposition is not None:
        raise ValueError(f"{verb!r} takes no object pronoun in this language")
    english = list(subject.english)
    if polarity == "not":
        auxiliary = "does" if _english_person(subject) == "3s" else "do"
        english += [auxiliary + "n't"] if contract else [auxiliary, "not"]
        english += _english_verb(verb, subject.person, form, base=True)
    elif polarity == "never":
        english += ["never", *_english_verb(verb, _english_person(subject), form)]
    else:
        english += _english_verb(verb, _english_person(subject), form)
    french = list(subject.french)
    if polarity is not None and not drop_ne:
        french.append("ne")
    if object_pronoun is not None:
        english.append(object_pronoun)
        french.append(FORMAL_YOU[0] if formal and object_pronoun == "you" else OBJECT_PRONOUNS[object_pronoun][0])
    french.append(_french_verb(verb, subject.person))
    if polarity is not None:
        french.append("pas" if polarity == "not" else "jamais")
    if object_phrase is not None:
        english += object_phrase.english
        french += _prepositional(verb, object_phrase.french)
    return english, french


def _english_person(subject: Phrase) -> str:
    """The person English conjugates for: "we" stays "we" even when French says "on"."""
    return "1p" if subject.english == ("we",) else subject.person


def simple_pair(subject: str, verb: str, obj: str, negated: bool = False) -> tuple[str, str]:
    """The pair for "<subject pronoun> <verb> <object pronoun>" in the plain register (no random choice),
    e.g. ``simple_pair("i", "love", "you")`` gives ``("i love you", "je t' aime")``."""
    fr, person = SUBJECT_PRONOUNS[subject]
    phrase = Phrase((subject,), (fr,), person)
    english, french = clause_tokens(phrase, verb, "not" if negated else None, object_pronoun=obj)
    return " ".join(english), " ".join(_elide(french))


def generate_pairs(num_pairs: int, seed: int = 0, clause_probs: Sequence[float] = (0.3, 0.35, 0.35)):
    """``num_pairs`` random ``(english, french)`` pairs (strings, tokens separated by spaces).

    The number of clauses of each sentence is drawn from ``clause_probs`` (probabilities of 1,
    2, 3, ... clauses). Sentences may repeat; :func:`make_splits` removes duplicates.
    """
    probs = np.asarray(clause_probs, dtype=float)
    if probs.ndim != 1 or len(probs) == 0 or np.any(probs < 0) or not np.isclose(probs.sum(), 1.0):
        raise ValueError(f"clause_probs must be a probability vector, got {clause_probs}")
    rng = np.random.default_rng(seed)
    grammar = _Grammar(rng)
    return [grammar.sentence(int(rng.choice(len(probs), p=probs)) + 1) for _ in range(num_pairs)]


CLASSIC_PAIR = ("i love you", "je t' aime")


def make_splits(num_train: int, num_valid: int, num_test: int, seed: int = 0, max_source_len: int = 40):
    """Train / valid / test lists of ``(english, french)`` pairs that share no sentence.

    Pairs are drawn with :func:`generate_pairs`, duplicates and sources longer than
    ``max_source_len`` tokens dropped, and the distinct pairs shuffled and cut into the three
    splits. The classic pair "i love you" -> "je t' aime" is always in the test split (a
    held-out sentence, so that its attention map is not a memorised one).
    Returns a dict with keys ``"train"``, ``"valid"``, ``"test"``.
    """
    needed = num_train + num_valid + num_test
    seen: dict[str, str] = {}
    batch, round_ = max(needed, 1000), 0
    while len(seen) < needed + 1:
        for english, french in generate_pairs(batch, seed=seed * 1000 + round_):
            if len(english.split()) <= max_source_len and english != CLASSIC_PAIR[0]:
                seen.setdefault(english, french)
        round_ += 1
        if round_ > 50:
            raise ValueError(f"the language has too few distinct sentences for {needed} pairs")
    pairs = sorted(seen.items())
    order = np.random.default_rng(seed).permutation(len(pairs))[:needed]
    chosen = [pairs[i] for i in order]
    test = [CLASSIC_PAIR] + chosen[num_train + num_valid : needed - 1] if num_test else []
    return {
        "train": chosen[:num_train],
        "valid": chosen[num_train : num_train + num_valid],
        "test": test,
    }


class Vocabulary:
    """Token <-> id maps: ids 0, 1, 2 are PAD, BOS, EOS (as in :mod:`attention_course.data`),
    then the tokens in sorted order."""

    def __init__(self, tokens: Iterable[str]):
        words = sorted(set(tokens) - set(SPECIAL_TOKENS))
        self.itos = list(SPECIAL_TOKENS) + words
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        assert (self.stoi["<pad>"], self.stoi["<bos>"], self.stoi["<eos>"]) == (PAD_ID, BOS_ID, EOS_ID)

    @classmethod
    def from_sentences(cls, sentences: Iterable[str]) -> Vocabulary:
        return cls(t for s in sentences for t in s.split())

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, sentence: str, add_eos: bool = True) -> list[int]:
        """Token ids of a sentence, with EOS appended unless ``add_eos=False``."""
        try:
            ids = [self.stoi[t] for t in sentence.split()]
        except KeyError as err:
            raise KeyError(f"token {err.args[0]!r} is not in the vocabulary") from None
        return ids + [EOS_ID] if add_eos else ids

    def decode(self, ids: Iterable[int], strip: bool = True) -> list[str]:
        """Tokens of a sequence of ids; with ``strip`` stop at EOS and drop PAD and BOS."""
        out = []
        for i in ids:
            i = int(i)
            if strip and i == EOS_ID:
                break
            if strip and i in (PAD_ID, BOS_ID):
                continue
            out.append(self.itos[i])
        return out


def build_vocabularies() -> tuple[Vocabulary, Vocabulary]:
    """``(english, french)`` vocabularies of the whole language (every word the grammar can use),
    so that they do not depend on which sentences a split happens to contain."""
    english = set(SUBJECT_PRONOUNS) | set(OBJECT_PRONOUNS) | set(DETERMINERS) | set(CONJUNCTIONS)
    english |= set(PRE_ADJECTIVES) | set(POST_ADJECTIVES) | {synonym for synonym, _ in ENGLISH_SYNONYMS.values()}
    english |= {"that", "do", "does", "not", "don't", "doesn't", "never", "an"}
    english |= {t for v in VERBS.values() for forms in v.english for form in forms for t in form}
    english |= {n[0] for n in NOUNS} | {n[1] for n in NOUNS}
    french = {v[0] for v in SUBJECT_PRONOUNS.values()} | {v[0] for v in OBJECT_PRONOUNS.values()}
    french |= {FORMAL_YOU[0], SPOKEN_WE[0]}
    french |= {f for forms in DETERMINERS.values() for f in forms if f} | set(CONJUNCTIONS.values())
    french |= {f for forms in [*PRE_ADJECTIVES.values(), *POST_ADJECTIVES.values()] for f in forms}
    french |= {f for v in VERBS.values() for f in v.french} | {v.preposition for v in VERBS.values() if v.preposition}
    french |= {n[2] for n in NOUNS} | {n[3] for n in NOUNS} | {s for syn in FRENCH_SYNONYMS.values() for s in syn[:2]}
    french |= {"qui", "que", "ne", "pas", "jamais"} | set(ELIDE.values()) | set(CONTRACT.values())
    return Vocabulary(english), Vocabulary(french)


def encode_pairs(pairs, source_vocab: Vocabulary, target_vocab: Vocabulary) -> list[tuple[list[int], list[int]]]:
    """Token ids of ``(english, french)`` pairs: ``(source ids + [EOS], target ids + [EOS])``."""
    return [(source_vocab.encode(english), target_vocab.encode(french)) for english, french in pairs]
