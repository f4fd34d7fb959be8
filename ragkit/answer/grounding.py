"""Grounding checks: does an answer say only what its evidence holds?

``check_claims`` (below) judges an answer claim by claim against the evidence each claim
cites, with rules a reader can verify (coverage, numbers with their units, negation, the
roles of names); ``grounding_check`` in ``answer.stage`` is every pipeline's default check.
The report names what the evidence does not hold, so a reader sees why.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import replace
from typing import Iterable

from ..text import ENGLISH_STOPWORDS, split_sentences
from ..text.cues import (ANAPHORS, NEGATIONS, NOT_NEGATING, REFUSAL_CUES,
                         REFUSAL_WORDS, SOURCE_NOUNS, SOURCE_NOUNS_VI)
from .claim_rules import (BOUNDARY, ClaimText, claim_tokens, claim_word, is_number, negation_problem, number_key,
                          number_problem, order_problem, refusal_stems, word_stem)
from .claims import Claim, split_claims, without_brackets
from .verdicts import ClaimReport, ClaimVerdict, Support, claims_reason
from ..llm.injection import suspicious_evidence
from ..llm.prompts import inert_for

_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    """Lowercase words with their diacritics (NFC), "_" split off."""
    return [w for w in _WORD.findall(unicodedata.normalize("NFC", text.lower()).replace("_", " "))]


def distinct_trigram_ratio(words: list[str]) -> float:
    """Distinct word trigrams over all trigrams (1.0 for fewer than 6 words)."""
    if len(words) < 6:
        return 1.0
    grams = list(zip(words, words[1:], words[2:]))
    return len(set(grams)) / len(grams)


# --------------------------------------------------------------------------- claim level
#
# A check of the answer's words as a whole cannot tell which evidence supports which
# sentence: an answer that recombines evidence words into a false claim passes it (the
# word-share check this replaced, kept in bench/grounding_check.py as the baseline).
# ``check_claims`` judges each claim
# (``claims.split_claims``) against the sentences of the evidence it cites (any evidence when
# it cites none). A claim is supported by a span (one evidence sentence, or two adjacent ones)
# when all of these hold, each a rule a reader can verify:
#
# - coverage: at least ``MIN_CLAIM_SUPPORT`` of its content words are in the span (or in the
#   question, which an answer may restate); English words are compared by their stems;
# - numbers: every number it states is in the span, with the unit it gives that number;
# - negation: what the claim negates ("not", "never", "không", "chưa", "cấm" ... before it)
#   is negated in the span too, and what the span negates is negated in the claim. Each
#   negation is compared as a whole, by what it bears on: the first content word after it
#   (and after an "and"/"or" inside its scope) must be what a negation of the other text
#   bears on, so "không được đổ dầu cũ" restates "dầu cũ chẳng được đổ" although the words
#   its scope takes in differ;
# - names and roles: every name it uses (a capitalised, all-capitals or letter-and-digit word
#   such as "AMF", "Marie Curie", "N4") is in the span, and two names that are not merely
#   listed ("A, B and C") stand in the same order there ("the NRF selects the SMF" is not
#   "the SMF selects the NRF"); a passive "by"/"bởi"/"được" between them reverses the order.
#   A name may be matched by a longer one ("Marie Curie" / "Marie Skłodowska Curie"), but not
#   by another name the claim itself uses ("NF Set" is not "NF Service Set" in a claim that
#   names both).
#
# What the question states is given, not claimed: its words count as found (though the span
# itself must hold half of the claim's words: a claim made of the question's words affirms
# the question, and a heading that shares none of them does not support it); a number or a
# name it states may stand in the claim when the claim also says something of the span's own
# (a number the span gives and the question does not: "120 euros is above the 50 the rule
# allows", but not in place of a number of the span with the same unit; for a name: a span
# word the question lacks, in a span that names no one the question's name could be standing
# in for: "the NRF selects an SMF" against "the AMF selects an SMF" still fails).
#
# A claim citing two or more items that compares or joins them ("X is A, whereas Y is B
# [1][2]") is also supported when each part between its joints (";", "whereas", "while",
# "but", ", and", "trong khi", "còn", "nhưng" ...) is supported by one of the cited items
# on its own: without a word only another cited item holds. Such a claim is never supported
# by one item through words only the other holds ("the drill mills slots, whereas the mill
# drills holes" is not supported by the mill's item because it has most of the words).
#
# An answer that refuses ("the evidence is not enough") and also answers contradicts itself:
# a refusal that names nothing the claims beside it leave open is ``inconsistent`` and fails.
#
# The trace names, for every claim, the span that supports it or why none does.

MIN_CLAIM_SUPPORT = 0.75
BORDERLINE_SUPPORT = 0.5     # a claim short only on coverage, above this, may go to a model judge
def is_refusal(text: str, refusals: Iterable[str] = ()) -> bool:
    """Whether a claim says the evidence is not enough: one of the pipeline's own refusal
    sentences, a sentence with a common refusal phrase, or a short sentence that names the
    evidence ("the documents", "tài liệu") and negates (English or Vietnamese)."""
    plain = " ".join(_WORD.findall(text.lower()))
    if any(plain == " ".join(_WORD.findall(r.lower())) for r in refusals):
        return True
    if len(plain.split()) > 25:
        return False
    if any(cue in plain for cue in REFUSAL_CUES):
        return True
    tokens = [t.lower() for t in claim_tokens(text)]
    for i, t in enumerate(tokens):
        noun = 1 if t in SOURCE_NOUNS else 2 if tuple(tokens[i:i + 2]) in SOURCE_NOUNS_VI else 0
        if noun and i <= 3 and tokens[0] in NEGATIONS and not any(w in BOUNDARY for w in tokens[:i]):
            return True         # opens with a negated quantifier over the source: "None of the passages ..."
        if noun:
            after = tokens[i + noun:i + noun + 4]       # the source, then a negated verb: its subject
            after = after[:next((k for k, w in enumerate(after) if w in BOUNDARY), len(after))]
            if any(w in NEGATIONS and not (k + 1 < len(after) and after[k + 1] in NOT_NEGATING.get(w, ()))
                   for k, w in enumerate(after)):
                return True
    return False


def _spans(evidence: list[str], numbers: Iterable[int], words: tuple[str, ...], vocabulary: frozenset):
    """(evidence number, span text, analysed span) for every sentence of the chosen evidence
    items, and every pair of adjacent sentences that each hold a claim word (not a name) the
    other lacks (a claim may join two sentences; one sentence must not borrow a number or a
    name from the next)."""
    numbers = tuple(numbers)
    if len(numbers) > 1 and len(numbers) < len(evidence):
        # A claim that cites several items may join them ("X [1] (also: Y [2])").
        joined = " ".join(evidence[n - 1] for n in numbers)
        yield numbers[0], joined, ClaimText.of(joined, vocabulary)
    for n in numbers:
        sentences = split_sentences(evidence[n - 1])
        analysed = [ClaimText.of(sentence, vocabulary) for sentence in sentences]
        found = [{w for w in words if a.has(w)} for a in analysed]
        head = evidence[n - 1].lstrip().split("\n", 1)[0]
        subject = _subject(ClaimText.of(head if len(head.split()) <= 8 else sentences[0] if sentences else "",
                                    vocabulary))
        for i, sentence in enumerate(sentences):
            yield n, sentence, analysed[i]
            resolved = resolve_reference(sentence, subject) if i else None
            if resolved:
                yield n, resolved, ClaimText.of(resolved, vocabulary)
            if i + 1 < len(sentences) and found[i] - found[i + 1] and found[i + 1] - found[i]:
                pair = f"{sentence} {sentences[i + 1]}"
                yield n, pair, ClaimText.of(pair, vocabulary)


def _subject(first: ClaimText) -> str:
    """What a text is about: the name its first line (a title of at most eight words) or
    else its first sentence opens with (in its first three tokens), as written; '' when it
    opens with none."""
    for pos, name in first.names:
        if pos <= 2:
            return " ".join(first.tokens[pos:pos + len(name)])
    return ""


_DEFINITE = frozenset({"the", "this", "that"})


def resolve_reference(sentence: str, subject: str) -> str | None:
    """``sentence`` with the reference it opens with replaced by its text's ``subject``,
    when it opens with one: a pronoun ("It was founded in 1879" -> "Greyfen Brewery was
    founded in 1879"), a possessive ("Its score" -> "Greyfen Brewery's score") or a definite
    noun phrase of one lower-case noun ("The company employs ..."). None when it does not,
    or there is no subject: within a text, such a sentence speaks of what the text names
    first, and a claim about that subject may stand on it."""
    if not subject:
        return None
    m = re.match(r"\s*([\w'’-]+)(\s+([\w'’-]+))?", sentence)
    if not m:
        return None
    first, second = m.group(1), m.group(3) or ""
    lower = first.lower()
    if lower in ("his", "her", "its", "their"):
        return f"{subject} 's{sentence[m.end(1):]}"      # apart: the name stays the name
    if lower in ANAPHORS and lower not in _DEFINITE:
        return f"{subject}{sentence[m.end(1):]}"
    if lower in _DEFINITE and second and second.islower() and second not in ENGLISH_STOPWORDS:
        return f"{subject}{sentence[m.end():]}"
    return None


def _said(body: str) -> str:
    """A claim's text as the rules read it: reference brackets of quoted source text ("TS
    23.502 [3]") say nothing; they are where the source comes from."""
    return without_brackets(body)


# Joints at which a claim comparing or joining two items may be cut: a semicolon, a contrast,
# or a comma before "and"/"và" (a new clause, not a list).
_JOINT = re.compile(
    r"\s*;\s*|,?\s+(?:whereas|while|whilst|but|however|although|though|by contrast|in contrast|on the other hand|"
    r"unlike|trong khi(?: đó)?|nhưng|tuy nhiên|ngược lại|khác với|song)\s+|,\s+(?:and|và|còn)\s+",
    re.IGNORECASE)


def comparison_parts(body: str) -> list[str]:
    """The parts of a claim between its joints ("A is X, whereas B is Y": "A is X", "B is
    Y"); a part without a content word stays with the one before.

    >>> comparison_parts("Máy khoan đứng dùng để khoan lỗ, còn máy phay đứng dùng dao phay")
    ['Máy khoan đứng dùng để khoan lỗ', 'máy phay đứng dùng dao phay']
    """
    parts: list[str] = []
    for piece in _JOINT.split(body):
        piece = piece.strip(" ,.;:")
        if parts and not any(claim_word(w.lower()) for w in claim_tokens(piece)):
            parts[-1] = f"{parts[-1]} {piece}".strip()
        elif piece:
            parts.append(piece)
    return parts


def _judge_claim(claim: Claim, evidence: list[str], spans_of, question_words: ClaimText,
                 vocabulary: frozenset, refusals, min_support: float) -> ClaimVerdict:
    cited = list(claim.cited)
    if is_refusal(claim.body, refusals):
        return ClaimVerdict(claim.text, "refusal", cited, None, "says the evidence is not enough")
    text = ClaimText.of(_said(claim.body), vocabulary)
    words = sorted({w for w in text.lower if claim_word(w)})
    if not words and not any(is_number(t) for t in text.lower):
        return ClaimVerdict(claim.text, "no claim", cited, None, "no content words")
    if claim.body.rstrip().endswith(":") and len(claim.body.split()) <= 4 and not cited:
        return ClaimVerdict(claim.text, "no claim", cited, None, "a lead-in (ends with ':')")
    if claim.body.rstrip().endswith("?"):
        return ClaimVerdict(claim.text, "no claim", cited, None, "a question (ends with '?')")
    outside = [n for n in cited if not 1 <= n <= len(evidence)]
    if cited and len(outside) == len(cited):
        return ClaimVerdict(claim.text, "unsupported", cited, None,
                            f"cites [{outside[0]}], but the evidence has {len(evidence)} items")
    numbers = [n for n in cited if n not in outside] or range(1, len(evidence) + 1)
    joins = cited and len(numbers) >= 2 and len(comparison_parts(_said(claim.body))) >= 2
    borrowed = _borrowing(evidence, numbers, vocabulary) if joins else None
    judge = _SpanJudge(claim.body, text, words, question_words, spans_of, evidence, min_support, borrowed=borrowed)
    best = judge.best(numbers)
    if best is None:
        return ClaimVerdict(claim.text, "unsupported", cited, None, "there is no evidence")
    _, n, span_text, problem, coverage, short = best
    if problem and joins:
        joined = _parts_supported(claim, text, numbers, question_words, spans_of, evidence, vocabulary, min_support,
                                  borrowed)
        if joined is not None:
            return ClaimVerdict(claim.text, "supported", cited, joined, "", 1.0)
    where = f"[{n}]" if cited else "any evidence"
    support = Support(n, span_text)
    if problem and cited:
        # Supported, but by an item it does not cite: the answer stage may correct the citation.
        other = judge.best([m for m in range(1, len(evidence) + 1) if m not in numbers])
        if other is not None and not other[3]:
            return ClaimVerdict(claim.text, "miscited", cited, Support(other[1], other[2]),
                                f"cites [{n}], but [{other[1]}] supports it", round(other[4], 4))
    if problem:
        return ClaimVerdict(claim.text, "unsupported", cited, support,
                            f"no span of {where} supports it; the closest: {problem}", round(coverage, 4),
                            borderline=short and coverage >= BORDERLINE_SUPPORT)
    return ClaimVerdict(claim.text, "supported", cited, support, "", round(coverage, 4))


class _SpanJudge:
    """The best span of some evidence items for one claim: a verbatim quote, else the span
    whose words cover the claim best with no rule broken (numbers, negations, roles).
    ``distinct``: the names of the whole claim, when this judges a part of it; ``borrowed``:
    (item, word) -> whether another item the claim cites holds a word the span lacks (a part
    of a comparison must stand on one item)."""

    def __init__(self, body: str, text: ClaimText, words: list[str], question_words: ClaimText, spans_of,
                 evidence: list[str], min_support: float, distinct=None, borrowed=None):
        self.body, self.text, self.words, self.question_words = body, text, words, question_words
        self.spans_of, self.evidence, self.min_support = spans_of, evidence, min_support
        self.distinct, self.borrowed = distinct, borrowed

    def best(self, numbers) -> tuple | None:
        """(rank, evidence number, span, problem, coverage, short) of the best span of the
        items ``numbers`` (problem '' when the span supports the claim), or None."""
        text, words, question_words = self.text, self.words, self.question_words
        quoted = " ".join(self.body.split()).rstrip(" .;:")
        for n in numbers:           # a quote says exactly what its evidence says
            if len(quoted) >= 20 and quoted in " ".join(self.evidence[n - 1].split()):
                return ((True, 1.0, -len(quoted)), n, quoted, "", 1.0, False)
        numbers_in = {t for t in text.lower if is_number(t)}
        best: tuple | None = None
        in_names = {w for _, name in text.names for w in name}
        for n, span_text, span in self.spans_of(tuple(numbers), tuple(w for w in words if w not in in_names)):
            found = [w for w in words if span.has(w) or question_words.has(w)]
            coverage = len(found) / len(words) if words else 1.0
            itself = sum(span.has(w) for w in words) / len(words) if words else 1.0
            if itself < BORDERLINE_SUPPORT:
                coverage = itself     # the question's words are given, but the span must say something of the claim
            rules = ""
            if coverage >= BORDERLINE_SUPPORT:    # the other rules, only on spans that may support it
                rules = number_problem(text, span, question_words) or \
                    negation_problem(text, span, {word_stem(w) for w in words if span.has(w)} | numbers_in) or \
                    order_problem(text, span, question_words, self.distinct)
            if not rules and self.borrowed is not None:
                foreign = [w for w in words if not span.has(w) and self.borrowed(n, w)]
                if foreign:
                    rules = f"{foreign[0]!r} is another cited item's"
            short = coverage < self.min_support and not rules
            problem = rules
            if coverage < self.min_support and not rules:
                missing = [w for w in words if not span.has(w)]
                problem = f"only {coverage:.0%} of its words are in the span (not: {', '.join(missing[:5])})"
            rank = (not problem, coverage, -len(span_text))
            if best is None or rank > best[0]:
                best = (rank, n, span_text, problem, coverage, short)
            if not problem and coverage == 1.0:
                break
        return best


def _borrowing(evidence: list[str], numbers, vocabulary: frozenset):
    """(item, word) -> whether ``word`` is not in that item but in another of ``numbers``
    (the items a claim cites)."""
    items = {n: ClaimText.of(evidence[n - 1], vocabulary) for n in numbers}

    def borrowed(n: int, word: str) -> bool:
        return n in items and not items[n].has(word) and any(items[m].has(word) for m in items if m != n)

    return borrowed


def _parts_supported(claim: Claim, text: ClaimText, numbers, question_words: ClaimText, spans_of, evidence: list[str],
                     vocabulary: frozenset, min_support: float, borrowed) -> Support | None:
    """The support of a claim citing several items that compares or joins them, when each
    of its parts (``comparison_parts``) is supported by one cited item without a word only
    another cited item holds: the first part's item, the parts' spans joined with " | ", and
    each part's support; None when a part is not."""
    parts = comparison_parts(_said(claim.body))
    if len(parts) < 2:
        return None
    distinct = [name for _, name in text.names]
    found = []
    for part in parts:
        part_text = ClaimText.of(part, vocabulary)
        words = sorted({w for w in part_text.lower if claim_word(w)})
        best = _SpanJudge(part, part_text, words, question_words, spans_of, evidence, min_support,
                          distinct, borrowed).best(numbers)
        if best is None or best[3]:
            return None
        found.append(Support(best[1], best[2]))
    return Support(found[0].evidence, " | ".join(f.span for f in found), tuple(found))


def _refusal_words(body: str) -> list[str]:
    """What a refusal says the evidence lacks: its content words that are not the words of
    any refusal ("evidence", "not enough", "tài liệu", "không đề cập" ...)."""
    return [w for w in ClaimText.of(body).lower if claim_word(w) and w not in REFUSAL_WORDS
            and word_stem(w) not in refusal_stems()]


def _inconsistent(verdicts: list[ClaimVerdict], claims: list[Claim]) -> list[ClaimVerdict]:
    """``verdicts`` with each refusal that the answer's other claims contradict made
    ``inconsistent``: a refusal of the whole question ("the evidence is not enough to
    answer") beside a claim that says something, or one that says the evidence lacks what
    those claims state (most of its own words are theirs). A refusal naming what the claims
    leave open ("the manual does not give the oil grade") is a partial answer's and stays."""
    said = [i for i, v in enumerate(verdicts) if v.verdict not in ("refusal", "no claim")]
    if not said:
        return verdicts
    answered = ClaimText.of(" ".join(_said(claims[i].body) for i in said))
    out = list(verdicts)
    for i, v in enumerate(verdicts):
        if v.verdict != "refusal":
            continue
        lacking = _refusal_words(claims[i].body)
        if not lacking or sum(answered.has(w) for w in lacking) / len(lacking) >= MIN_CLAIM_SUPPORT:
            others = ", ".join(str(j + 1) for j in said[:3])
            out[i] = replace(v, verdict="inconsistent",
                             why=f"says the evidence is not enough, but claim{'s' if len(said) > 1 else ''} "
                                 f"{others} answer{'' if len(said) > 1 else 's'} from it")
    return out


def check_claims(answer: str, evidence: Iterable[str], question: str = "", *,
                 refusals: Iterable[str] = (), min_support: float = MIN_CLAIM_SUPPORT) -> ClaimReport:
    """Judge each claim of ``answer`` against the evidence it cites (``[n]`` is the n-th
    evidence text; a claim citing nothing may be supported by any; brackets quoted from the
    evidence, "TS 23.502 [3]", are text, not citations). The answer passes when every claim
    is supported, a refusal or no claim, at least one says something, it does not refuse and
    answer at once (an ``inconsistent`` refusal), and it does not loop (distinct trigrams
    >= 0.5).

    >>> evidence = ["The AMF selects an SMF for the PDU Session.", "The SMF controls the UPF."]
    >>> check_claims("The AMF selects an SMF [1].", evidence).passed
    True
    >>> check_claims("The UPF selects an SMF [1].", evidence).claims[0].verdict
    'unsupported'
    >>> check_claims("The SMF controls the UPF [1].", evidence).claims[0].why
    'cites [1], but [2] supports it'
    >>> check_claims("The SMF controls the NRF [2].", evidence).claims[0].why
    "no span of [2] supports it; the closest: names 'NRF', which the span does not"
    """
    evidence = [e for e in evidence]
    refusals = tuple(refusals)
    lowercase = {w for text in evidence for w in _WORD.findall(unicodedata.normalize("NFC", text)) if w.islower()}
    vocabulary = frozenset(lowercase | {word_stem(w) for w in lowercase})     # words and their stems
    question_words = ClaimText.of(question)
    cache: dict[tuple, list] = {}

    def spans_of(numbers: tuple, words: tuple) -> list:
        if (numbers, words) not in cache:
            cache[numbers, words] = list(_spans(evidence, numbers, words, vocabulary))
        return cache[numbers, words]

    claims = split_claims(answer, evidence)
    verdicts = [_judge_claim(c, evidence, spans_of, question_words, vocabulary, refusals, min_support)
                for c in claims]
    verdicts = _inconsistent(verdicts, claims)
    suspicious = suspicious_evidence(evidence)
    trusted = [n for n in range(1, len(evidence) + 1) if n not in {s["evidence"] for s in suspicious}]
    verdicts = [_contradicted(v, c, trusted, spans_of, vocabulary, min_support) if v.verdict == "supported" else v
                for v, c in zip(verdicts, claims)]
    core = next((i for i, v in enumerate(verdicts) if v.verdict != "no claim"), None)
    trigrams = round(distinct_trigram_ratio(_words(answer)), 4)
    reason = claims_reason(verdicts, core, trigrams)
    return ClaimReport(not reason, reason, verdicts, core, trigrams, suspicious)


def _contradicted(verdict: ClaimVerdict, claim: Claim, items: list[int], spans_of, vocabulary: frozenset,
                  min_support: float) -> ClaimVerdict:
    """``verdict`` made ``contradicted`` when a span of one of ``items`` (the evidence that
    does not address the model) shares most of the claim's content words but not its
    polarity: the claim negates or drops what that span states, or states what it negates."""
    text = ClaimText.of(_said(claim.body), vocabulary)
    words = sorted({w for w in text.lower if claim_word(w)})
    if len(words) < 2:
        return verdict
    values = {number_key(t) for t in text.lower if is_number(t)}
    for m in items:
        for _, span_text, span in spans_of((m,), tuple(words)):
            shared = [w for w in words if span.has(w)]
            if len(shared) < 2 or len(shared) / len(words) < min_support:
                continue
            if not values <= {number_key(t) for t in span.lower if is_number(t)}:
                continue        # a span without the claim's numbers states another fact: it cannot deny this one
            problem = negation_problem(text, span, {word_stem(w) for w in shared})
            if problem:
                n = verdict.support.evidence if verdict.support else None
                return replace(verdict, verdict="contradicted", contradicts=Support(m, span_text),
                               why=f"[{n}] supports it, but [{m}] contradicts it: {problem}")
    return verdict


# An optional model judge for borderline claims (off by default: ``LLMConfig.judge_claims``).
_JUDGE_SYSTEM = ("You judge whether a passage supports a statement. "
                 "Reply with one word: Yes or No.")


def judge_prompt(claim: str, span: str, clean=None) -> str:
    """The ChatML prompt asking whether ``span`` supports ``claim``, ending where the
    assistant's one-word reply starts (the reranker's format, ``retrieval.rerank``); ``clean``
    makes both plain text (``llm.prompts.inert_for`` the judge; default ``inert``)."""
    from ..llm.prompts import inert

    clean = clean or inert
    user = (f"Passage: {clean(span)}\n\nStatement: {clean(claim)}\n\n"
            "Does the passage support the statement? Reply Yes or No.")
    return (f"<|im_start|>system\n{_JUDGE_SYSTEM}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
            "<|im_start|>assistant\n")


def judge_borderline(report: ClaimReport, judge) -> tuple[ClaimReport, list[dict]]:
    """Ask ``judge`` (a model with ``choice_logprobs``) about each borderline claim of a
    claim check's ``report``: a claim short only on coverage whose closest span the model
    says supports it (Yes/No log-odds > 0) becomes supported. Returns the new report
    (``passed`` and ``reason`` recomputed) and one row per judged claim."""
    from ..retrieval.rerank import NO, YES, yes_no_logodds

    claims = list(report.claims)
    judged = []
    for i, claim in enumerate(claims):
        if not isinstance(claim, ClaimVerdict) or not claim.borderline or claim.support is None:
            continue
        prompt = judge_prompt(claim.text, claim.support.span, clean=lambda t: inert_for(judge, t))
        logodds = yes_no_logodds(judge.choice_logprobs(prompt, YES + NO))
        judged.append({"claim": i + 1, "logodds": round(logodds, 4)})
        if logodds > 0:
            claims[i] = replace(claim, verdict="supported", borderline=False,
                                why=f"the model judge says the span supports it (log-odds {logodds:.2f})")
    reason = claims_reason(claims, report.core, report.distinct_trigrams)
    return replace(report, passed=not reason, reason=reason, claims=claims), judged
