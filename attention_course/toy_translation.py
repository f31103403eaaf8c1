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
Everything is deterministic for a given seed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from attention_course.data import BOS_ID, EOS_ID, PAD_ID

SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>")

# person keys: 1s 2s 3s 1p 3p  (3s and 3p also cover nouns)
SUBJECT_PRONOUNS = {  # english -> (french, person)
    "i": ("je", "1s"),
    "you": ("tu", "2s"),
    "he": ("il", "3s"),
    "she": ("elle", "3s"),
    "we": ("nous", "1p"),
    "they": ("ils", "3p"),
}
OBJECT_PRONOUNS = {  # english -> (french, person of the referent)
    "me": ("me", "1s"),
    "you": ("te", "2s"),
    "him": ("le", "3s"),
    "her": ("la", "3s"),
    "us": ("nous", "1p"),
    "them": ("les", "3p"),
}
# english base form, english 3rd singular, french forms for 1s 2s 3s 1p 3p
VERBS = {
    "love": ("loves", ("aime", "aimes", "aime", "aimons", "aiment")),
    "see": ("sees", ("vois", "vois", "voit", "voyons", "voient")),
    "know": ("knows", ("connais", "connais", "connaît", "connaissons", "connaissent")),
    "watch": ("watches", ("regarde", "regardes", "regarde", "regardons", "regardent")),
    "help": ("helps", ("aide", "aides", "aide", "aidons", "aident")),
    "find": ("finds", ("trouve", "trouves", "trouve", "trouvons", "trouvent")),
    "hear": ("hears", ("entends", "entends", "entend", "entendons", "entendent")),
    "call": ("calls", ("appelle", "appelles", "appelle", "appelons", "appellent")),
}
PERSON_INDEX = {"1s": 0, "2s": 1, "3s": 2, "1p": 3, "3p": 4}
# english singular, english plural, french singular, french plural, gender
NOUNS = [
    ("cat", "cats", "chat", "chats", "m"),
    ("dog", "dogs", "chien", "chiens", "m"),
    ("bird", "birds", "oiseau", "oiseaux", "m"),
    ("book", "books", "livre", "livres", "m"),
    ("boy", "boys", "garçon", "garçons", "m"),
    ("man", "men", "homme", "hommes", "m"),
    ("friend", "friends", "ami", "amis", "m"),
    ("tree", "trees", "arbre", "arbres", "m"),
    ("car", "cars", "voiture", "voitures", "f"),
    ("house", "houses", "maison", "maisons", "f"),
    ("apple", "apples", "pomme", "pommes", "f"),
    ("girl", "girls", "fille", "filles", "f"),
    ("woman", "women", "femme", "femmes", "f"),
    ("table", "tables", "table", "tables", "f"),
]
# adjectives before the noun in French: english -> (m sg, f sg, m pl, f pl)
PRE_ADJECTIVES = {
    "small": ("petit", "petite", "petits", "petites"),
    "big": ("grand", "grande", "grands", "grandes"),
    "young": ("jeune", "jeune", "jeunes", "jeunes"),
}
# adjectives after the noun in French
POST_ADJECTIVES = {
    "red": ("rouge", "rouge", "rouges", "rouges"),
    "black": ("noir", "noire", "noirs", "noires"),
    "white": ("blanc", "blanche", "blancs", "blanches"),
    "green": ("vert", "verte", "verts", "vertes"),
    "blue": ("bleu", "bleue", "bleus", "bleues"),
}
DETERMINERS = {  # english -> (m sg, f sg, plural) ; None where the english form does not exist
    "the": ("le", "la", "les"),
    "a": ("un", "une", None),
    "my": ("mon", "ma", "mes"),
}
CONJUNCTIONS = {"and": "et", "but": "mais"}
ELIDE = {"je": "j'", "me": "m'", "te": "t'", "le": "l'", "la": "l'", "ne": "n'", "que": "qu'"}
VOWELS = tuple("aeiouyéèêh")


@dataclass(frozen=True)
class Phrase:
    """A noun phrase or pronoun, rendered in both languages, with its grammatical person."""

    english: tuple[str, ...]
    french: tuple[str, ...]
    person: str


def _elide(tokens: Sequence[str]) -> list[str]:
    """French elision: "je aime" -> "j' aime", "le arbre" -> "l' arbre", "ne aime" -> "n' aime"."""
    out = list(tokens)
    for i in range(len(out) - 1):
        if out[i] in ELIDE and out[i + 1].startswith(VOWELS):
            # "le"/"la"/"me"/"te" elide only as articles or object pronouns, which is all they are here
            out[i] = ELIDE[out[i]]
    return out


class _Grammar:
    """Random sentences; every choice goes through one numpy Generator, so a seed fixes them all."""

    def __init__(self, rng: np.random.Generator, relative_prob: float = 0.35):
        self.rng = rng
        self.relative_prob = relative_prob

    def choice(self, options):
        return options[int(self.rng.integers(len(options)))]

    def noun_phrase(self, allow_relative: bool) -> Phrase:
        eng_sg, eng_pl, fr_sg, fr_pl, gender = self.choice(NOUNS)
        plural = self.rng.random() < 0.3
        det = self.choice(["the", "my"] if plural else ["the", "a", "my"])
        slot = (2 if plural else 0) + (1 if gender == "f" else 0)
        det_forms = DETERMINERS[det]
        fr_det = det_forms[2] if plural else det_forms[0 if gender == "m" else 1]
        english, french_pre, french_post = [det], [fr_det], []
        if self.rng.random() < 0.35:
            adj = self.choice(sorted(PRE_ADJECTIVES))
            english.append(adj)
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

    def relative_clause(self, head_person: str) -> tuple[list[str], list[str]]:
        verb = self.choice(sorted(VERBS))
        if self.rng.random() < 0.5:  # subject relative: "that sees the dog" -> "qui voit le chien"
            obj = self.noun_phrase(allow_relative=False)
            return ["that", _english_verb(verb, head_person)] + list(obj.english), [
                "qui",
                _french_verb(verb, head_person),
            ] + list(obj.french)
        subj = self.subject(allow_relative=False)  # object relative: "that she sees" -> "qu' elle voit"
        return ["that", *subj.english, _english_verb(verb, subj.person)], [
            "que",
            *subj.french,
            _french_verb(verb, subj.person),
        ]

    def subject(self, allow_relative: bool) -> Phrase:
        if self.rng.random() < 0.5:
            eng = self.choice(sorted(SUBJECT_PRONOUNS))
            fr, person = SUBJECT_PRONOUNS[eng]
            return Phrase((eng,), (fr,), person)
        return self.noun_phrase(allow_relative)

    def clause(self) -> tuple[list[str], list[str]]:
        subj = self.subject(allow_relative=True)
        verb = self.choice(sorted(VERBS))
        negated = self.rng.random() < 0.3
        if self.rng.random() < 0.45:
            # an object pronoun, never the subject's own person ("i love me" is not in the language)
            options = [
                p
                for p in sorted(OBJECT_PRONOUNS)
                if OBJECT_PRONOUNS[p][1] != subj.person or p in ("him", "her", "them")
            ]
            pron = self.choice(options)
            return clause_tokens(subj, verb, negated, object_pronoun=pron)
        obj = self.noun_phrase(allow_relative=True)
        return clause_tokens(subj, verb, negated, object_phrase=obj)

    def sentence(self, num_clauses: int) -> tuple[str, str]:
        english, french = self.clause()
        for _ in range(num_clauses - 1):
            conj = self.choice(sorted(CONJUNCTIONS))
            eng2, fr2 = self.clause()
            english += [conj, *eng2]
            french += [CONJUNCTIONS[conj], *fr2]
        return " ".join(english), " ".join(_elide(french))


def _english_verb(verb: str, person: str) -> str:
    return VERBS[verb][0] if person == "3s" else verb


def _french_verb(verb: str, person: str) -> str:
    return VERBS[verb][1][PERSON_INDEX[person]]


def clause_tokens(subject: Phrase, verb: str, negated: bool, object_pronoun=None, object_phrase=None):
    """One clause as ``(english tokens, french tokens before elision)``.

    Exactly one of ``object_pronoun`` (an English object pronoun such as ``"you"``) and
    ``object_phrase`` (a :class:`Phrase`) is given. The French object pronoun goes in front
    of the verb, inside the negation: "je ne t' aime pas".
    """
    if (object_pronoun is None) == (object_phrase is None):
        raise ValueError("give exactly one of object_pronoun and object_phrase")
    english = list(subject.english)
    if negated:
        english += ["does" if subject.person == "3s" else "do", "not", verb]
    else:
        english.append(_english_verb(verb, subject.person))
    french = list(subject.french)
    if negated:
        french.append("ne")
    if object_pronoun is not None:
        english.append(object_pronoun)
        french.append(OBJECT_PRONOUNS[object_pronoun][0])
    french.append(_french_verb(verb, subject.person))
    if negated:
        french.append("pas")
    if object_phrase is not None:
        english += object_phrase.english
        french += object_phrase.french
    return english, french


def simple_pair(subject: str, verb: str, obj: str, negated: bool = False) -> tuple[str, str]:
    """The pair for "<subject pronoun> <verb> <object pronoun>", e.g. ``simple_pair("i", "love", "you")``
    gives ``("i love you", "je t' aime")``."""
    fr, person = SUBJECT_PRONOUNS[subject]
    english, french = clause_tokens(Phrase((subject,), (fr,), person), verb, negated, object_pronoun=obj)
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
    english |= set(PRE_ADJECTIVES) | set(POST_ADJECTIVES) | {"that", "do", "does", "not"}
    english |= set(VERBS) | {v[0] for v in VERBS.values()} | {n[0] for n in NOUNS} | {n[1] for n in NOUNS}
    french = {v[0] for v in SUBJECT_PRONOUNS.values()} | {v[0] for v in OBJECT_PRONOUNS.values()}
    french |= {f for forms in DETERMINERS.values() for f in forms if f} | set(CONJUNCTIONS.values())
    french |= {f for forms in [*PRE_ADJECTIVES.values(), *POST_ADJECTIVES.values()] for f in forms}
    french |= {f for v in VERBS.values() for f in v[1]} | {n[2] for n in NOUNS} | {n[3] for n in NOUNS}
    french |= {"qui", "que", "ne", "pas"} | set(ELIDE.values())
    return Vocabulary(english), Vocabulary(french)


def encode_pairs(pairs, source_vocab: Vocabulary, target_vocab: Vocabulary) -> list[tuple[list[int], list[int]]]:
    """Token ids of ``(english, french)`` pairs: ``(source ids + [EOS], target ids + [EOS])``."""
    return [(source_vocab.encode(english), target_vocab.encode(french)) for english, french in pairs]
