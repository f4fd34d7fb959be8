"""Bridge documents: the corpus's own page on a name that the first evidence gives and the
question does not.

A question that reaches its answer through another entity ("the city where the author of X
lived") names X; X's document names the author, and the answer stands in the author's own
document, which shares few words with the question and so ranks low. What the data knows
links them: a name written in the sentences of the top documents that bear on the question
is looked up among the corpus's titles (``BM25Index.titled``); a document titled with it
that retrieval did not already give is a bridge. Names the question itself gives are not
bridges (their documents are what retrieval found first), nor are the documents' own titles.

Nothing here reads the question's grammar: the signal is in the evidence (a name it holds
that the question lacks) and in the corpus (a document about that name).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

from ..corpus import Doc
from ..retrieval.bm25 import BM25Index, Hit
from ..text.words import POSSESSIVE, name_key
from .weighing import Weigher, coverage, score_sentences
from .candidates import name_candidates

# Of a very long text, its opening part is read for names (reading every sentence of a huge
# document costs time in proportion to its length, and its opening says what it is about);
# a sentence longer than this is a table or a list run together, not a sentence that names.
SCAN_CHARS = 4000


@dataclass(frozen=True)
class Bridge:
    """A document reached through a name: the name as the evidence writes it, the rank of
    the document it was read in (0-based) and the bridge document's id."""

    name: str
    source_rank: int
    doc_id: str

    def to_dict(self) -> dict:
        return {"name": self.name, "from": self.source_rank + 1, "doc_id": self.doc_id}


def bridge_documents(question: str, texts: Sequence[str], titles: Sequence[str], weigher: Weigher,
                     titled: Callable[[str], Doc | None], sources: int = 3, per_source: int = 2,
                     limit: int = 2) -> list[tuple[Bridge, Doc]]:
    """Up to ``limit`` (bridge, document) pairs read from the first ``sources`` evidence
    texts (``texts``, with their ``titles``): in each, its ``per_source`` sentences that
    cover the most of the question, the names they write that the question does not, whose
    document ``titled(name)`` gives (or ``titled("The " + name)``: a quoted title often
    drops its article) and whose title is not among ``titles``. Of several, those whose own
    title and text cover the most of the question come first (a sentence may list many
    names; the one the question goes on to ask about shares its words)."""
    question_words = set(weigher.tokenize(question))
    question_key = f" {name_key(question)} "
    weights = weigher.weights(question)
    have = {name_key(t) for t in titles if t}
    found: list[tuple[float, int, Bridge, Doc]] = []
    for rank, (text, title) in enumerate(zip(texts[:sources], titles[:sources])):
        sentences = sorted((s for s in score_sentences(question, [text[:SCAN_CHARS]], weigher, [title])
                            if s.share > 0 and len(s.text) <= SCAN_CHARS // 4),
                           key=lambda s: (-s.share, s.position))[:per_source]
        for sentence in sorted(sentences, key=lambda s: s.position):
            for candidate in name_candidates(sentence.text):
                name = POSSESSIVE.sub("", candidate.text).strip()
                words = weigher.tokenize(name)
                if not words or f" {name_key(name)} " in question_key or all(w in question_words for w in words):
                    continue            # the question's own name: retrieval already read for it
                doc = titled(name) or (titled(f"The {name}") if not name.lower().startswith("the ") else None)
                if doc is None or name_key(doc.title) in have:
                    continue
                have.add(name_key(doc.title))
                share = coverage(weights, f"{doc.title} {doc.text}", weigher).share
                found.append((share, len(found), Bridge(name, rank, doc.doc_id), doc))
    return [(bridge, doc) for _, _, bridge, doc in sorted(found, key=lambda x: (-x[0], x[1]))[:limit]]


class Document(Protocol):
    """What a found document needs to be told apart: its id and its title."""

    @property
    def doc_id(self) -> str: ...

    @property
    def title(self) -> str: ...


def item_documents(items: Sequence[str], titles: Sequence[str], titled: Callable[[str], Doc | None],
                   search: Callable[[str], Sequence[Document]] = lambda _: ()) -> list[tuple[str, Document]]:
    """The corpus's own document on each item a question names to compare or choose
    between ("Which opened first, A or B?", "Are A and B both ...?"), where the evidence
    (``titles``) holds none yet: the document ``titled`` with the item's name, else the
    first ``search(item)`` hit whose title writes the item's words. Each item once, in the
    question's order; an item the corpus has no document on is left out."""
    have = {name_key(t) for t in titles if t}
    out: list[tuple[str, Document]] = []
    for item in items:
        key = name_key(item)
        if not key or any(f" {key} " in f" {title} " for title in have):
            continue            # the evidence already holds the item's own document
        doc: Document | None = titled(item) or (titled(f"The {item}") if not item.lower().startswith("the ")
                                                else None)
        if doc is None:
            doc = next((d for d in search(item) if f" {key} " in f" {name_key(d.title)} "), None)
        if doc is not None and name_key(doc.title) not in have:
            have.add(name_key(doc.title))
            out.append((item, doc))
    return out


def with_bridges(index: BM25Index, question: str, selected: list[Hit], weigher: Weigher,
                  limit: int) -> tuple[list[Hit], list]:
    """``selected`` with up to ``limit`` bridge documents (``bridge_documents``), each right
    after the document whose sentence names it, scored as that document."""
    found = bridge_documents(question, [h.text for h in selected], [h.title for h in selected], weigher,
                             index.titled, limit=limit)
    if not found:
        return selected, []
    out = list(selected)
    for bridge, _ in reversed(found):       # inserted last first: each lands right after its source, in order
        source = selected[bridge.source_rank]
        out.insert(out.index(source) + 1, index.hit(bridge.doc_id, source.score))
    return out, [bridge for bridge, _ in found]


def with_items(index: BM25Index, items: Sequence[str], selected: list[Hit]) -> tuple[list[Hit], list]:
    """``selected`` led by the own document of each compared item that it lacks
    (``item_documents``), as many documents as before: the last ones that
    are no item's own give way."""
    found = item_documents(items, [h.title for h in selected], index.titled, lambda name: index.search(name, k=3))
    if not found:
        return selected, []
    added = [index.hit(doc.doc_id, selected[0].score) for _, doc in found]
    kept = [h for h in selected if all(h.doc_id != a.doc_id for a in added)]
    keys = [f" {name_key(item)} " for item in items]
    owned = [any(key in f" {name_key(h.title)} " for key in keys) for h in kept]
    room = max(len(selected), len(added)) - len(added) - sum(owned)      # for documents no item owns
    out = list(added)
    for hit, own in zip(kept, owned):
        if own or room > 0:
            out.append(hit)
            room -= not own
    return out, [(item, doc.doc_id) for item, doc in found]


def interleave(first: list[Hit], second: list[Hit], k: int) -> list[Hit]:
    """``first`` and ``second`` taken in turn, each document once, at most ``k``."""
    out: list[Hit] = []
    for pair in zip(first + [None] * len(second), second + [None] * len(first)):
        for hit in pair:
            if hit is not None and all(h.doc_id != hit.doc_id for h in out):
                out.append(hit)
    return out[:k]
