"""The words a KG question uses for a graph's node types and relations, beyond the schema's own
names, and the words that say what shape of answer it asks for. Kept here as data, in one
place, so a new graph or a new language adds words, not code.

``TYPE_WORDS`` and ``RELATION_WORDS`` map a word (or phrase) that appears in type or relation
names — "compound", "treat", "side effect" — to the other words people use for it, in English
and in Vietnamese (written without tone marks: questions are matched after accents are
removed). ``RELATION_WORDS`` holds the demo biomedical graph's domain words only: a schema
whose names use none of these words is read by its own names, split into words, with their
agent nouns ("directed" -> director), and the words no name reads are linked through the
graph itself, by the types at each end of its relations and their embeddings
(``ragkit.kgqa.linking``). They are read by the typed-KG planner (``ragkit.kgqa.plan``) only;
the graph walk links a question's relation words through the relation names' embeddings,
with no word list.
"""

from __future__ import annotations

from functools import lru_cache

from ..text import _english_stemmer
from ..text.cues import REQUEST
from ..text.words import terms

TYPE_WORDS: dict[str, tuple[str, ...]] = {
    "compound": ("drug", "medicine", "medication", "medicament", "pharmaceutical", "inhibitor",
                 "thuoc", "duoc pham"),
    "disease": ("illness", "condition", "disorder", "ailment", "sickness", "benh", "chung benh"),
    "symptom": ("sign", "manifestation", "trieu chung", "dau hieu"),
    "gene": ("gen",),
    "anatomy": ("organ", "body part", "part of the body", "parts of the body", "tissue",
                "co quan", "bo phan"),
    "person": ("people", "someone", "somebody", "nguoi"),
    # types common in general-knowledge graphs
    "movie": ("film", "picture", "motion picture", "phim"),
    "film": ("movie", "picture", "motion picture", "phim"),
    "company": ("firm", "business", "corporation", "enterprise", "cong ty"),
    "country": ("nation", "state", "quoc gia", "nuoc"),
    "city": ("town", "municipality", "thanh pho"),
    "book": ("novel", "title", "sach"),
    "song": ("track", "single", "bai hat"),
    "organization": ("organisation", "institution", "body", "to chuc"),
}
# Words in a type's name that make it the type "who" asks for ("Person", "Actor", "Patient").
PERSON_TYPE_WORDS = ("person", "people", "human", "actor", "director", "author", "patient",
                     "employee", "member", "user", "character", "scientist", "nguoi")
RELATION_WORDS: dict[str, tuple[str, ...]] = {
    "treat": ("cure", "heal", "used for", "used to treat", "used against", "prescribed for",
              "given for", "indicated for", "dieu tri", "chua"),
    "associated": ("linked", "related", "tied", "connected", "implicated", "lien quan", "gan voi"),
    "inhibit": ("inhibitor", "block", "target", "suppress", "uc che"),
    "affect": ("involve", "attack", "anh huong", "tac dong"),
    "cause": ("trigger", "induce", "gay ra"),
    "side effect": ("adverse effect", "adverse reaction", "adverse event", "tac dung phu"),
    # "X causes fever", "X presents with a rash": fever, a rash are symptoms of X
    "symptom": ("cause", "present with", "include"),
}


def stems(text: str) -> tuple[str, ...]:
    """The Snowball stems of a text's words: how the planner and the vocabulary compare phrases."""
    stemmer = _english_stemmer()
    return tuple(stemmer.stemWord(w) for w in terms(text))


@lru_cache(maxsize=1)
def _relation_lookup() -> dict[tuple[str, ...], tuple[str, ...]]:
    return {stems(key): synonyms for key, synonyms in RELATION_WORDS.items()}


def other_relation_words(run: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The other words people use for a run of a relation name's words ("founded" → founder,
    started, ...), compared by stem; () when the vocabulary has none."""
    return _relation_lookup().get(stems(" ".join(run)), ())


@lru_cache(maxsize=1)
def _property_lookup() -> dict[tuple[str, ...], tuple[str, ...]]:
    return {stems(key): synonyms for key, synonyms in PROPERTY_WORDS.items()}


def other_property_words(word: str) -> tuple[str, ...]:
    """The other words people use for a word of a property's name ("birth" → born),
    compared by stem; () when the vocabulary has none."""
    return _property_lookup().get(stems(word), ())


# Words that carry no type or relation in relation names ("HAS_SYMPTOM", "ASSOCIATED_WITH").
NAME_FILLERS = {"has", "have", "is", "of", "with", "to", "in", "on", "by", "for", "a", "the"}

# The question's shape. Single tokens unless written with a space (matched as a phrase).
COUNT = ("how many", "number of", "count", "bao nhieu", "so luong")
EXCLUDE = ("not", "except", "excluding", "without", "besides", "other than", "apart from",
           "aside from", "never", "khong", "ngoai tru", "tru")
UNION = ("either", "or", "hoac")
# Words that may stand between entities named together ("A and B", "both A as well as B").
COORDINATION = ("and", "or", "nor", "both", "either", "neither", "as", "well", "plus", "va", "hoac", "ca")
# Where a clause ends: an exclusion cue reaches no further than its own clause.
CLAUSE = ("that", "which", "who", "whose", "but", "while", "whereas", "ma", "nhung")
# Words that ask for a type: the type named right after them (English) or right before them
# (Vietnamese "thuoc nao", "trieu chung gi") is what the question asks for.
ASK_BEFORE = ("which", "what", "how many", "list", "name", "find", "show", "count", "number of",
              "bao nhieu")
ASK_AFTER = ("nao", "gi")

# Words that ask for every node of a type, or point at the graph itself ("list all the
# compounds in the graph", "liệt kê tất cả các thuốc"), not a condition on them.
ENUMERATE = ("all", "every", "each", "any", "graph", "data", "database", "dataset", "known", "listed", "exist",
             "exists", "there", "available", "kind", "kinds", "type", "types", "hold", "holds", "contain",
             "contains", "include", "includes", "store", "stores", "stored", "record", "records", "recorded",
             "total", "altogether", "liet", "ke", "tat", "ca", "cac", "nhung", "moi", "trong", "co", "du", "lieu",
             "loai", "chua", "gom", "tong")

# Comparisons with a number ("approved after 2000", "more than 3 symptoms", "at least two
# drugs"): the words before the number, and the comparison they make. Matched longest first.
COMPARE_BEFORE: dict[str, str] = {
    "more than": ">", "over": ">", "above": ">", "greater than": ">", "higher than": ">",
    "larger than": ">", "bigger than": ">", "exceeding": ">", "after": ">", "later than": ">",
    "at least": ">=", "no fewer than": ">=", "no less than": ">=", "since": ">=", "from": ">=",
    "fewer than": "<", "less than": "<", "under": "<", "below": "<", "lower than": "<",
    "smaller than": "<", "before": "<", "earlier than": "<", "prior to": "<",
    "at most": "<=", "no more than": "<=", "up to": "<=", "until": "<=",
    "exactly": "=", "equal to": "=", "in": "=",
    "nhieu hon": ">", "hon": ">", "tren": ">", "sau": ">", "it nhat": ">=", "tu": ">=",
    "it hon": "<", "duoi": "<", "truoc": "<", "toi da": "<=", "vao": "=",
}
# ... and after it ("3 symptoms or more").
COMPARE_AFTER: dict[str, str] = {"or more": ">=", "or over": ">=", "or above": ">=", "or later": ">=",
                                 "or fewer": "<=", "or less": "<=", "or earlier": "<=", "tro len": ">="}
# Cues that compare dates: with a year and no property word, the type's one year property.
TEMPORAL = ("after", "later than", "since", "from", "before", "earlier than", "prior to", "until", "in",
            "sau", "truoc", "tu", "vao")
# Comparatives that name the property they compare ("older than 50": age).
COMPARE_ADJECTIVES: dict[str, tuple[str, str]] = {
    "older than": (">", "age"), "younger than": ("<", "age"), "taller than": (">", "height"),
    "shorter than": ("<", "height"), "heavier than": (">", "weight"), "lighter than": ("<", "weight"),
    "longer than": (">", "length"), "cheaper than": ("<", "price"), "pricier than": (">", "price"),
    "more expensive than": (">", "price"), "richer than": (">", "revenue"),
}
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
                "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100}
# Words that may stand between a comparison and its number ("after the year 2000").
NUMBER_FILLERS = ("the", "year", "a", "total", "of", "nam")
SCALE_WORDS = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "nghin": 1e3}
# Words a property's name may go by in a question ("born" for a birth year).
PROPERTY_WORDS: dict[str, tuple[str, ...]] = {
    "birth": ("born",), "death": ("died", "dead"), "population": ("inhabitants", "residents", "people"),
    "employees": ("staff", "workers", "employ"), "release": ("came out", "out", "premiered"),
    "founding": ("founded", "established", "set up"), "founded": ("established", "set up"),
    "approval": ("approved", "licensed"), "revenue": ("sales", "turnover", "earn"),
    "height": ("tall",), "age": ("old",), "runtime": ("long", "minutes"), "duration": ("long", "minutes"),
    "price": ("cost", "costs"), "area": ("size",),
}

__all__ = ["ASK_AFTER", "ASK_BEFORE", "CLAUSE", "COMPARE_ADJECTIVES", "COMPARE_AFTER", "COMPARE_BEFORE",
           "COORDINATION", "COUNT", "ENUMERATE", "EXCLUDE", "NAME_FILLERS", "NUMBER_FILLERS", "NUMBER_WORDS",
           "PERSON_TYPE_WORDS",
           "PROPERTY_WORDS", "RELATION_WORDS", "REQUEST", "SCALE_WORDS", "TEMPORAL", "TYPE_WORDS", "UNION",
           "other_property_words", "other_relation_words", "stems"]
