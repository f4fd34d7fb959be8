"""``ragkit eval mcq``: multiple-choice questions answered from the spec knowledge graph.

Input: a JSON object ``{"question": ..., "option 1": ..., ..., "answer": "option k: ..."}``,
a list of them, an object of them keyed by id (TeleQnA's layout), or JSON lines.

Deterministic scorer, the term dictionary first. For a question that asks what an
abbreviation stands for, what a term means, or which term a description defines, each option
is compared with the dictionary's own entries (every expansion, every definition; for a
description, the definitions of the terms the options name): the IDF-weighted overlap of
their words, which counts twice the evidence score below. When the dictionary has nothing,
only the evidence decides.

Evidence score: retrieve evidence for the question (term resolution, dedicated
sections, function chunks) and for each option (BM25 over the question with that option),
cut it into sentences, and score each option by its best sentence: the IDF-weighted share of
the option's words in that sentence, times (0.5 + the share of the question's words in it).
An option is supported when the evidence says it *together with* what the question asks.
A bonus goes to an option naming the expansion of an abbreviation the question asks about.
The best option wins; ties go to the lower option number. A question counts as answered when
its best option has some support.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from ..runtime.progress import progress_bar

from ..errors import InputError
from .datasets import read_json_or_lines
from ..specs.store import GraphStore
from ..specs.evidence import bm25_evidence, retrieve_spec_evidence
from ..specs.dictionary import TermDictionary, store_signature, term_dictionary, words_of
from ..text import Tokenizer, split_sentences

_OPTION = re.compile(r"^option\s*(\d+)$", re.IGNORECASE)
_TOKENIZER = Tokenizer(lang="en")


def load_mcq(path: str | Path) -> list[dict]:
    """Questions with their options in order and the correct option number (or None)."""
    path = Path(path)
    data = read_json_or_lines(path, "questions")
    if isinstance(data, dict):
        data = [data] if "question" in data else list(data.values())
    if not isinstance(data, list) or not data:
        raise InputError(f"questions {path}: holds no questions (a list of them, or one per line)")
    items = []
    for i, item in enumerate(data, 1):
        if not isinstance(item, dict) or not str(item.get("question", "")).strip():
            raise InputError(f"questions {path}: item {i} has no 'question'")
        options = sorted(((int(m.group(1)), str(v)) for k, v in item.items()
                          if (m := _OPTION.match(k.strip()))), key=lambda x: x[0])
        if len(options) < 2:
            raise InputError(f"questions {path}: item {i} has fewer than two 'option N' fields")
        answer = None
        match = re.match(r"^\s*option\s*(\d+)", str(item.get("answer", "")), re.IGNORECASE)
        if match:
            answer = int(match.group(1))
        items.append({"question": str(item["question"]), "options": options, "answer": answer})
    return items


def _weights(tokens: list[str], index) -> dict[str, float]:
    n = len(index.docs)
    out = {}
    for t in set(tokens):
        j = index.vocab.get(t)
        df = int(index.weights.indptr[j + 1] - index.weights.indptr[j]) if j is not None else 0
        out[t] = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return out


def _share(tokens: set[str], weights: dict[str, float], sentence: set[str]) -> float:
    total = sum(weights[t] for t in tokens)
    return sum(weights[t] for t in tokens if t in sentence) / total if total else 0.0


DICTIONARY_WEIGHT = 2.0     # a dictionary entry outweighs any evidence sentence


def overlap(a: set[str], b: set[str], weights: dict[str, float]) -> float:
    """IDF-weighted F1 of two word sets: 1 for the same words, 0 for none shared."""
    shared = sum(weights.get(w, 0.0) for w in a & b)
    wa, wb = sum(weights.get(w, 0.0) for w in a), sum(weights.get(w, 0.0) for w in b)
    return 2 * shared / (wa + wb) if wa + wb else 0.0


def dictionary_scores(dictionary: TermDictionary, analysis, evidence, options: list[tuple[int, str]]) -> list[float]:
    """How well each option matches what the dictionary says about the question: the
    entries found for its entity (expansions, definitions), or, for a description, the
    definitions of the terms each option names. All zeros when the dictionary has nothing."""
    option_words = [words_of(text) for _, text in options]
    if analysis.qtype == "reverse":
        asked = words_of(analysis.phrase)
        scores = []
        for _, text in options:
            named = [t for link in dictionary.linker.link(text, kinds=("term", "abbreviation"))
                     if (link.end - link.start) >= 0.6 * len(text.strip())
                     for t in dictionary.entries(link.label, link.kind) if t.term_type == "definition"]
            weights = dictionary.weights(asked.union(*(words_of(t.definition) for t in named)))
            scores.append(max((overlap(asked, words_of(t.definition), weights) for t in named), default=0.0))
        return scores
    entries = [e.term for e in evidence if e.stage == "term" and e.term is not None]
    if not entries:
        return [0.0] * len(options)
    # words an option repeats from the question prove nothing ("Which of the following best
    # describes Group call?": "... provides the group call service" is not its definition)
    asked = words_of(analysis.phrase) if analysis.phrase else set()
    option_words = [(w - asked) or w for w in option_words]
    texts = [words_of(t.full_name if t.term_type == "abbreviation" else t.definition) for t in entries]
    texts += [words_of(t.full_name) for t in entries if t.term_type == "definition"]
    weights = dictionary.weights(set().union(*texts, *option_words))
    return [max((overlap(words, text, weights) for text in texts), default=0.0) for words in option_words]


@dataclass
class OptionScores:
    choice: int | None              # None when nothing supports any option
    scores: list[float]
    evidence: int                   # evidence items used, question and options together
    question_evidence: list         # what the question alone retrieved (the LLM scorer reads it)


def score_options(store: GraphStore, question: str, options: list[tuple[int, str]]) -> OptionScores:
    """Score every option against the evidence; the best one is the choice."""
    from ..specs.evidence import store_index

    signature = store_signature(store)      # read once per question: a query on Neo4j
    analysis, resolved, question_evidence = retrieve_spec_evidence(store, question, signature=signature)
    evidence = list(question_evidence)
    seen = {e.chunk.chunk_id for e in evidence if e.chunk}
    for _, text in options:
        for e in bm25_evidence(store, f"{question} {text}", 3, signature):
            if e.passage.chunk_id not in seen:
                seen.add(e.passage.chunk_id)
                evidence.append(e)
    sentences = [set(_TOKENIZER(s)) for e in evidence for s in split_sentences(e.text)]
    index, _ = store_index(store.uri, signature)
    q_tokens = set(_TOKENIZER(question))
    option_tokens = [set(_TOKENIZER(text)) for _, text in options]
    weights = _weights(list(q_tokens.union(*option_tokens)), index)
    expansions = [t.full_name.lower() for terms in resolved.values() for t in terms[:2]]
    # the abbreviation of a name the question spells out ("the acronym used for Access Stratum")
    short = {t.abbreviation.lower() for terms in resolved.values() for t in terms[:2]
             if t.term_type == "abbreviation" and t.abbreviation and t.full_name.lower() in question.lower()}
    from_dictionary = dictionary_scores(term_dictionary(store, signature), analysis, question_evidence, options)
    scores = []
    for (_, text), tokens, known in zip(options, option_tokens, from_dictionary):
        asked = q_tokens - tokens  # words the option repeats from the question prove nothing
        best = max((_share(tokens, weights, s) * (0.5 + _share(asked, weights, s)) for s in sentences),
                   default=0.0)
        if any(x and x in text.lower() and x not in question.lower() for x in expansions):
            best += 1.0     # states an expansion the question does not already name
        if text.strip().lower() in short:
            best += 1.0
        scores.append(round(best + DICTIONARY_WEIGHT * known, 6))
    best_i = max(range(len(options)), key=lambda i: (scores[i], -i))
    return OptionScores(options[best_i][0] if scores[best_i] > 0 else None, scores, len(evidence),
                        question_evidence)


MCQ_SYSTEM = ("You answer multiple-choice questions about 3GPP specifications using only the "
              "evidence. Reply with the number of the correct option and nothing else.")


def llm_choice(llm, question: str, options: list[tuple[int, str]], evidence_text: str,
               max_tokens: int = 8) -> int | None:
    """The option number the model names first, or None when its reply names none."""
    listing = "\n".join(f"{n}. {text}" for n, text in options)
    messages = [{"role": "system", "content": MCQ_SYSTEM},
                {"role": "user", "content": f"EVIDENCE:\n{evidence_text}\n\nQUESTION: {question}\n"
                                            f"OPTIONS:\n{listing}\n\nANSWER (option number):"}]
    reply = llm.chat(messages, max_tokens=max_tokens, temperature=0.0).text
    numbers = {n for n, _ in options}
    for match in re.finditer(r"\d+", reply):
        if int(match.group()) in numbers:
            return int(match.group())
    return None


def evaluate_mcq(path: str | Path, store: GraphStore, progress: bool | None = None, llm=None,
                 evidence_tokens: int = 1200) -> dict:
    """Accuracy over the questions. With ``llm``, the model picks from the options given the
    same evidence (cut to ``evidence_tokens`` of its tokenizer); when its reply names no
    option, the deterministic scorer's choice stands."""
    from ..llm.budget import fit_context

    items = load_mcq(path)
    answered = correct = judged = 0
    details = []
    for item in progress_bar(items, desc="questions", unit="q", progress=progress):
        scored = score_options(store, item["question"], item["options"])
        choice = scored.choice
        if llm is not None:
            context = fit_context([e.text for e in scored.question_evidence] or ["(none)"],
                                  llm.count_tokens, evidence_tokens)
            picked = llm_choice(llm, item["question"], item["options"], context.text)
            choice = picked if picked is not None else choice
        answered += choice is not None
        if item["answer"] is not None:
            judged += 1
            correct += choice == item["answer"]
        details.append({"question": item["question"], "choice": choice, "answer": item["answer"],
                        "scores": scored.scores, "evidence": scored.evidence,
                        "scorer": "llm" if llm is not None else "evidence"})
    return {"n": len(items), "answered": answered,
            "accuracy": round(correct / judged, 4) if judged else None, "details": details}
