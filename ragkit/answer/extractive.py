"""What the lexical reader adds to the answer stage: an answer made of the evidence's own
sentences when there is no model (``extractive_answer``), the check of an answer that reads
sentences (``reading_check``: off-topic evidence, unknown names, a short answer of the asked
kind that the evidence holds, a choice among the offered items), a short answer completed
from the sentence it came from, and the corpus lookups those checks make
(``written_lower``, ``unknown_names``)."""

from __future__ import annotations

import re
from typing import Sequence

from ..llm.prompts import (extract_outline)
from ..retrieval.bm25 import BM25Index, Hit
from ..text import VIETNAMESE_FUNCTION_WORDS, split_sentences, tokenize
from ..text.question import chosen
from .both import JoinedVerdict
from .claims import strip_citations
from .grounding import is_refusal
from .reading import Shape, in_evidence, of_asked_kind, parse_short_answer, short_answer, trim_short_answer, yes_no
from .weighing import Weigher, coverage, score_sentences
from .candidates import lower_case_words, writes
from .stage import NOT_ENOUGH_VI, Check


# Below this share of the question's (IDF-weighted) words in its best sentence, the evidence
# does not bear on the question: the answer says so instead of quoting unrelated sentences.
NOT_FOUND_SHARE = 0.3
# A refusal is wrong when the evidence gives a short answer from a sentence that holds at
# least this share of the question's weighted words.
WRONG_REFUSAL_SHARE = 0.5


def rare_name(name: str, weigher: Weigher) -> bool:
    """Whether a name holds a word among the corpus's rarest (IDF at least 0.75 of the
    highest): "ISO 23125" in a corpus of manuals, not the company name on every page."""
    idf = weigher.idf
    return idf is not None and any((idf(w) or 0.0) >= 0.75 * weigher.highest for w in weigher.tokenize(name))


def written_lower(index: BM25Index, texts: Sequence[str], limit: int = 12, depth: int = 10) -> set[str]:
    """The capitalised words that open sentences of ``texts`` ("Quy định ...") and that the
    corpus writes in lower case elsewhere (among the ``depth`` documents that best match
    each), lower-cased; at most ``limit`` words are looked up."""
    openers = {m.group(1) for t in texts for sentence in split_sentences(t)
               for m in [re.match(r"\W*([^\W\d_]+)", sentence)] if m and m.group(1)[:1].isupper()}
    lower = lower_case_words(texts)
    openers = {w for w in openers if not w.isupper() and w.lower() not in lower}
    out = set()
    for word in sorted(openers)[:limit]:
        if word.lower() in lower_case_words([h.text for h in index.search(word, depth)]):
            out.add(word.lower())
    return out


def unknown_names(index: BM25Index, names: Sequence[str], depth: int = 20) -> list[str]:
    """The ``names`` the corpus of ``index`` does not write: none of the ``depth`` documents
    that best match a name holds it as a phrase, and a one-word name is not one letter off a
    word the corpus has ("Brittish" is "British")."""
    out = []
    for name in names:
        if writes([f"{h.title}\n{h.text}" for h in index.search(name, depth)], name):
            continue
        tokens = index.tokenizer(name)
        if len(tokens) == 1 and len(tokens[0]) >= 5 and any(
                index.vocab.get(tokens[0][:i] + tokens[0][i + 1:]) is not None for i in range(len(tokens[0]))):
            continue
        out.append(name)
    return out


def extractive_answer(question: str, hits: list[Hit], procedural: bool,
                      max_sentences: int = 3, weigher: Weigher | None = None) -> str:
    """An answer made only of the evidence's own sentences, each with its [n] citation.

    Procedural questions get the numbered steps of the best chunk that has steps (and of the
    chunks of the same section); other questions get the sentences that cover the most of
    the question's (weighted) words, in reading order, leaving out those that cover less
    than half as much as the best (sentences of unrelated chunks).
    """
    if not hits:
        return NOT_ENOUGH_VI
    if procedural:
        for rank, hit in enumerate(hits):
            steps = extract_outline([hit.text])
            if not steps:
                continue
            lines = [f"{i}) {s.split(':', 1)[1].strip()} [{rank + 1}]" for i, s in enumerate(steps, 1)]
            for later, other in enumerate(hits[rank + 1:], rank + 2):
                if other.title == hit.title and other.source == hit.source:
                    for s in extract_outline([other.text]):
                        lines.append(f"{len(lines) + 1}) {s.split(':', 1)[1].strip()} [{later}]")
            head = hit.title.split(" > ")[-1] if hit.title else "Các bước"
            return f"{head}:\n" + "\n".join(lines)
    weigher = weigher or Weigher(tokenize=lambda t: [w for w in tokenize(t) if w not in VIETNAMESE_FUNCTION_WORDS])
    scored = [x for x in score_sentences(question, [h.text for h in hits], weigher, [h.title for h in hits])
              if x.share > 0]
    if not scored:
        return NOT_ENOUGH_VI
    top = max(x.share for x in scored)
    best = sorted((x for x in scored if x.share >= top / 2), key=lambda x: (-x.share, x.item, x.position))
    best = sorted(best[:max_sentences], key=lambda x: (x.item, x.position))
    return " ".join(f"{x.text.rstrip()} [{x.item}]" for x in best)


def reading_check(check, question: str, shape: Shape, evidence: list[str], found, best_share: float,
                  weigher: Weigher | None = None, offered: tuple[str, ...] = (), unknown: Sequence[str] = (),
                  common: set[str] | None = None, together: JoinedVerdict | None = None):
    """The grounding check of an answer to a question that reads sentences, and more.

    - An answer fails where the evidence does not bear on the question (``best_share``
      under ``NOT_FOUND_SHARE``) or never names what it asks about (``unknown``).
    - A factoid answer's first line is its short answer: it must occur in the evidence
      (yes and no excepted), be of the asked kind (a name asked is no word the texts write
      in lower case, ``common``), and the lines after it are checked as any answer.
    - A question that offers a choice (``offered``) is answered with one of its items, and
      with the one the stated values choose where the evidence states a value of each
      (``found``, then that choice).
    - A refusal passes only when the evidence really lacks the answer: not when the
      evidence gives a short answer of the asked shape from a sentence that covers most of
      the question."""

    def judge(text: str) -> Check:
        first = parse_short_answer(text)[0] if shape.factoid else text.strip()
        if is_refusal(first) and len(first.split()) <= 25:
            if first != text.strip() and len(split_sentences(text)) > 1 and not is_refusal(text.strip()):
                return Check(False, "refuses and answers at once", {"refusal": False})
            if found is not None and found.share >= WRONG_REFUSAL_SHARE:
                return Check(False, f"refuses, though evidence [{found.item}] answers it: {found.text!r}",
                             {"refusal": True, "evidence_answer": found.to_dict()})
            if found is None and best_share >= 0.75:
                return Check(False, "refuses, though an evidence sentence holds the question's words",
                             {"refusal": True})
            return Check(True, "says the evidence is not enough to answer", {"refusal": True})
        if best_share < NOT_FOUND_SHARE and evidence:
            return Check(False, f"the evidence does not bear on the question (its best sentence holds "
                                f"{best_share:.0%} of the question's weighted words)", {"refusal": False})
        if unknown and evidence:
            return Check(False, f"the evidence never names {unknown[0]!r}, which the question asks about",
                         {"refusal": False})
        if not shape.factoid:
            return check(text)
        short, rest = parse_short_answer(text)
        if len(short.split()) > 12:
            return check(text)
        if not (yes_no(short) if shape.kind == "yesno" else in_evidence(short, evidence)):
            return Check(False, f"the short answer {short!r} is not in the evidence", {"short_answer": short})
        if offered and chosen(short, offered) is None:
            return Check(False, f"the short answer {short!r} is none of the items the question offers "
                                f"({' or '.join(offered)})", {"short_answer": short})
        if offered and found is not None and chosen(short, offered) != found.text:
            # the values the evidence states of each item chose the other one (answer.choice)
            return Check(False, f"chooses {chosen(short, offered)!r}, but the values the evidence states "
                                f"choose {found.text!r}: {found.sentence!r}", {"short_answer": short})
        if shape.proper and {w.lower() for w in short.split()} <= (common or set()) | lower_case_words(evidence):
            return Check(False, f"the short answer {short!r} is a common word of the evidence, not the name "
                                f"the question asks for", {"short_answer": short})
        if not of_asked_kind(short, shape) and not offered:
            return Check(False, f"the short answer {short!r} is not a {shape.target or shape.kind}, "
                                f"which the question asks for", {"short_answer": short})
        if together is not None and yes_no(short) != together.text:
            return Check(False, f"answers {yes_no(short)!r}, but the evidence says {together.text!r} of the items "
                                f"asked about together: {together.sentence!r}", {"short_answer": short})
        if not rest:
            return Check(True, "", {"short_answer": short})
        if shape.kind == "yesno" and weigher is not None and together is None:
            # The sentences it cites decide yes or no: a negation the question lacks says no (for
            # items asked about together, what each one's evidence says decided it above).
            said = short_answer(question, shape, [strip_citations(rest)], weigher, min_share=0.5)
            if said is not None and said.text != yes_no(short):
                return Check(False, f"answers {yes_no(short)!r}, but the sentence it gives says {said.text!r}",
                             {"short_answer": short})
        verdict = check(rest)
        # the short answer is the first claim: what the lines after it support
        claims = verdict.claims.with_short_answer(short) if verdict.claims is not None else None
        return Check(verdict.passed, verdict.reason, {**verdict.details, "short_answer": short}, claims)

    return judge


def complete_short_answer(text: str, question: str, shape: Shape, evidence: list[str], weigher: Weigher,
                          offered: tuple[str, ...] = ()) -> str:
    """A model's factoid answer in the shape the check reads: the short answer on the first
    line, then its support. A short answer alone gets the evidence sentence that holds it
    (with its number); a sentence alone gets the short answer read from it. ``offered``: the
    items the question offers to choose between (its reading's ``alternatives``)."""
    short, rest = parse_short_answer(text)
    if not short or is_refusal(text.strip()):
        return text.strip()
    if len(short.split()) > 12 or (not rest and len(short.split()) > 6):      # a sentence, not a span
        found = short_answer(question, shape, [text], weigher, min_share=0.0)
        return f"{found.text}\n{text.strip()}" if found else text.strip()
    short = trim_short_answer(short, shape, evidence, question, offered)
    if rest:
        return f"{short}\n{rest}"
    best = None
    for n, item in enumerate(evidence, 1):
        for sentence in split_sentences(item):
            if in_evidence(short, [sentence]) or (shape.kind == "yesno" and yes_no(short)):
                share = coverage(weigher.weights(question), sentence, weigher).share
                if best is None or share > best[0]:
                    best = (share, sentence, n)
    return f"{short}\n{best[1]} [{best[2]}]" if best else short


def resupport(text: str, question: str, shape: Shape, evidence: list[str], weigher: Weigher,
              offered: tuple[str, ...] = ()) -> str | None:
    """A model's factoid answer whose support lines fail the check, with the evidence's own
    sentence that holds its short answer in their place: the model read the span, the
    evidence says it. None when the short answer is not in the evidence (or is a refusal)."""
    short, rest = parse_short_answer(text)
    if not short or not rest or is_refusal(short) or len(short.split()) > 12:
        return None
    short = trim_short_answer(short, shape, evidence, question, offered)
    if not (yes_no(short) if shape.kind == "yesno" else in_evidence(short, evidence)):
        return None
    completed = complete_short_answer(short, question, shape, evidence, weigher, offered)
    return completed if completed != short else None
