"""The words of the course's toy English -> French language, and the rules that change their form.

The lexicon of :mod:`attention_course.toy_translation`: pronouns (subject and object, with the person
each takes), verbs with their English forms and their six French forms, nouns with their plurals and
genders, adjectives (those French puts before the noun and those it puts after), determiners,
conjunctions, synonyms drawn at random, and French elision and contraction. Data only: the grammar
that builds sentences from these words, and the vocabularies, are ``toy_translation``'s (which
imports the names it uses, so ``from attention_course.toy_translation import NOUNS`` works too).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CONJUNCTIONS",
    "CONTRACT",
    "DETERMINERS",
    "ELIDE",
    "ENGLISH_SYNONYMS",
    "FORMAL_YOU",
    "FRENCH_SYNONYMS",
    "NOUNS",
    "OBJECT_PRONOUNS",
    "PERSON_INDEX",
    "POST_ADJECTIVES",
    "PRE_ADJECTIVES",
    "REFLEXIVE",
    "SPOKEN_WE",
    "SUBJECT_PRONOUNS",
    "VERBS",
    "VOWELS",
    "Verb",
]

# person keys: 1s 2s 3s 1p 2p 3p  (3s and 3p also cover nouns; 2p is the formal "vous")
PERSON_INDEX = {"1s": 0, "2s": 1, "3s": 2, "1p": 3, "2p": 4, "3p": 5}
SUBJECT_PRONOUNS = {  # english -> (french, person); "you" may be formal and "we" may be "on" (see _Grammar)
    "i": ("je", "1s"),
    "you": ("tu", "2s"),
    "he": ("il", "3s"),
    "she": ("elle", "3s"),
    "we": ("nous", "1p"),
    "they": ("ils", "3p"),
}
OBJECT_PRONOUNS = {  # english -> (french, person of the referent); formal "you" is "vous"
    "me": ("me", "1s"),
    "you": ("te", "2s"),
    "him": ("le", "3s"),
    "her": ("la", "3s"),
    "us": ("nous", "1p"),
    "them": ("les", "3p"),
}
FORMAL_YOU = ("vous", "2p")  # "you" in the formal register, subject and object alike
SPOKEN_WE = ("on", "3s")  # "we" as spoken French often says it, with a third-person verb
# a subject never has itself as object pronoun ("i love me" is not in the language)
REFLEXIVE = {("i", "me"), ("you", "you"), ("we", "us")}


@dataclass(frozen=True)
class Verb:
    """A verb: its English forms (base and third person singular, each a token tuple, with a
    particle such as "to" where English needs one), and French forms for the persons of
    ``PERSON_INDEX`` (and the preposition French puts before a noun object, if any)."""

    english: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]  # alternatives, chosen at random
    french: tuple[str, str, str, str, str, str]
    preposition: str | None = None  # "à": "talk to the dog" -> "parle au chien"; no object pronouns then


def _forms(base: str, third: str, particle: str | None = None):
    tail = (particle,) if particle else ()
    return ((base, *tail), (third, *tail))


VERBS = {
    "love": Verb((_forms("love", "loves"),), ("aime", "aimes", "aime", "aimons", "aimez", "aiment")),
    "see": Verb((_forms("see", "sees"),), ("vois", "vois", "voit", "voyons", "voyez", "voient")),
    "know": Verb(
        (_forms("know", "knows"),), ("connais", "connais", "connaît", "connaissons", "connaissez", "connaissent")
    ),
    # two English verbs for one French one, chosen at random; "look at" -> "regarde" is two words to one
    "watch": Verb(
        (_forms("watch", "watches"), _forms("look", "looks", "at")),
        ("regarde", "regardes", "regarde", "regardons", "regardez", "regardent"),
    ),
    "help": Verb((_forms("help", "helps"),), ("aide", "aides", "aide", "aidons", "aidez", "aident")),
    "find": Verb((_forms("find", "finds"),), ("trouve", "trouves", "trouve", "trouvons", "trouvez", "trouvent")),
    "hear": Verb((_forms("hear", "hears"),), ("entends", "entends", "entend", "entendons", "entendez", "entendent")),
    "call": Verb((_forms("call", "calls"),), ("appelle", "appelles", "appelle", "appelons", "appelez", "appellent")),
    "listen": Verb(
        (_forms("listen", "listens", "to"),), ("écoute", "écoutes", "écoute", "écoutons", "écoutez", "écoutent")
    ),
    "talk": Verb(
        (_forms("talk", "talks", "to"),), ("parle", "parles", "parle", "parlons", "parlez", "parlent"), preposition="à"
    ),
}
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
# French synonyms chosen at random: french singular -> (synonym singular, synonym plural, probability)
FRENCH_SYNONYMS = {"voiture": ("auto", "autos", 0.3)}
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
# English synonyms chosen at random (two English words for one French word)
ENGLISH_SYNONYMS = {"small": ("little", 0.4), "big": ("large", 0.4)}
DETERMINERS = {  # english -> (m sg, f sg, plural) ; None where the english form does not exist
    "the": ("le", "la", "les"),
    "a": ("un", "une", None),
    "my": ("mon", "ma", "mes"),
}
CONJUNCTIONS = {"and": "et", "but": "mais"}
ELIDE = {"je": "j'", "me": "m'", "te": "t'", "le": "l'", "la": "l'", "ne": "n'", "que": "qu'"}
CONTRACT = {("à", "le"): "au", ("à", "les"): "aux"}  # two French words become one
VOWELS = tuple("aeiouyéèêh")
