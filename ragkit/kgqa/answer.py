"""The AnswerGenerator: the answer from the context store, with a prompt that shows the
reasoning path without the store's keys and numbers the edges, and two fixed messages
(``EMPTY_STORE``, ``EMPTY_FINAL``) for an empty store and an empty final result (the context store is
kept either way; a model that fails gives the written answer, as every pipeline does).

Without a model the answer is written from the plan: each step's list in turn, so the
reasoning path reads as prose and never names a key. A model's answer is checked: the plan's
answer must be of the type the question asks for, every graph entity the answer names must be
in the context store, and it must name at least one item of the final result; otherwise the
written answer is given, with the reason in the trace.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from ..answer.stage import Check, Draft, NamedShort
from ..answer.claims import citations
from ..llm.prompts import answer_language, answer_messages, numbered_evidence
from .execute import FINAL_LIMIT
from .filters import SAID
from .plan import Plan, step_types
from .question_reading import plural
from .steps import EdgeFilter, Every, Expand, Given, Join, Named, PropertyFilter, Step
from ..text.words import terms

if TYPE_CHECKING:
    from .flow import KGQA
    from .records import KGRun

EMPTY_STORE = "Based on the available data, I cannot find an answer to your question in the knowledge base."
EMPTY_FINAL = "Based on the data, I followed the steps but could not find a final answer for your question."
NOT_MAPPED = "I could not map this question to the graph"
SHOWN = 8     # names listed per intermediate step in the written answer

KG_TASK = {
    "en": ("You answer questions from a knowledge graph. The STEPS say how the query went from the "
           "question's entities to the answer, ANSWER lists what it found, and the numbered evidence "
           "holds the graph edges it followed. Start with the answer: name the items found. Then "
           "explain the path in plain sentences. Never mention JSON, keys, lists or data structures."),
    "vi": ("Bạn trả lời câu hỏi từ một đồ thị tri thức. Mục CÁC BƯỚC nói truy vấn đi từ các thực thể "
           "của câu hỏi tới câu trả lời thế nào, mục TRẢ LỜI liệt kê những gì tìm được, và các đoạn "
           "bằng chứng đánh số là các cạnh của đồ thị đã đi qua. Mở đầu bằng câu trả lời: nêu tên các "
           "mục tìm được. Sau đó giải thích đường đi bằng câu văn thường. Không nhắc tới JSON, khóa, "
           "danh sách hay cấu trúc dữ liệu."),
}


def _names(items: list[dict], limit: int) -> str:
    shown = [i["name"] for i in items[:limit]]
    more = len(items) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _phrase(relation: str) -> str:
    return relation.lower().replace("_", " ")


def _count(n: int, type_name: str) -> str:
    """"1 disease", "7 diseases"."""
    word = plural(type_name) if n != 1 else re.sub(r"(?<!^)(?=[A-Z])", "_", type_name).lower()
    return f"{n} {word.replace('_', ' ')}"


def _type_of(plan: Plan, key: str, items: list[dict]) -> str:
    return step_types(plan.steps).get(key) or (items[0]["type"] if items else "Item")


def compared(step: PropertyFilter | EdgeFilter) -> str:
    """A filter step in words: "whose approved is after 2000", "with more than 3 symptoms"."""
    op, value = step.compare, step.value
    if isinstance(step, PropertyFilter):
        said = YEAR_SAID[op] if isinstance(value, int) and 1000 <= value <= 2100 else SAID[op]
        return f"whose {_phrase(step.property)} is {said} {value}"
    return f"with {SAID[op]} {_count(int(value), step.target_type)} ({_phrase(step.relation)})"


YEAR_SAID = {">": "after", ">=": "in or after", "<": "before", "<=": "in or before", "=": "in", "!=": "not in"}


def written_answer(question: str, plan: Plan, context_store: dict, nodes: dict[str, dict]) -> str:
    """The reasoning path as prose, step by step, then the answer."""
    if not context_store:
        return EMPTY_STORE
    lines = []
    for step in plan.steps:
        items = context_store.get(step.key, [])
        if step.key == plan.final:
            continue
        found = _count(len(items), _type_of(plan, step.key, items))
        listed = f" ({_names(items, SHOWN)})." if items else "."
        lines.append(f"{_step_head(plan, step, nodes)}{found}{listed}")
    final = context_store.get("final_result", [])
    total = context_store.get("final_result_total", len(final))
    if not final:
        return " ".join([EMPTY_FINAL] + lines)
    last = plan.step(plan.final)
    shown = f" ({len(final)} of {total} shown)" if total > len(final) else ""
    found = _count(total, _type_of(plan, plan.final, final))
    head = _step_head(plan, last, nodes) if isinstance(last, (Expand, Join, PropertyFilter, EdgeFilter)) else ""
    number = f"{total}. " if plan.count else ""
    answer = f"Answer: {number}{head}{found}{shown}: {_names(final, FINAL_LIMIT)}."
    return "Based on the data: " + " ".join(lines + [answer])


JOINED = {"intersection": "In common", "union": "Together", "difference": "Taking those away"}


def _step_head(plan: Plan, step: Step, nodes: dict[str, dict]) -> str:
    """What a step did, before what it found: "Aspirin —treats→ ", "In common: "."""
    match step:
        case Expand():
            return f"{_arrow(plan, step, nodes)} "
        case Join():
            return f"{JOINED[step.op]}: "
        case Named():
            return "Named: "
        case Every():
            return "In the graph: "
        case Given():
            return "From the previous answer: "
        case PropertyFilter() | EdgeFilter():
            return f"Those {compared(step)}: "


def _arrow(plan: Plan, step: Expand, nodes: dict[str, dict]) -> str:
    """"Aspirin —treats→", "those diseases —has symptom→", "Liver ←affects—"."""
    origin = nodes[step.entity]["name"] if step.entity is not None else f"those {label_of(plan, step.step or '')}"
    origin = origin[0].upper() + origin[1:]
    rel = _phrase(step.relation)
    return f"{origin} —{rel}→" if step.direction == "out" else f"{origin} ←{rel}—"


def label_of(plan: Plan, key: str) -> str:
    found = step_types(plan.steps).get(key)
    return plural(found).replace("_", " ") if found else "items"


@dataclass(frozen=True)
class EntityCheck:
    grounded: bool
    reason: str
    named: list[str]
    outside_context: list[str]

    def to_dict(self) -> dict:
        return self.__dict__.copy()


def whole_names(tokens: list[str], names) -> list[tuple[str, ...]]:
    """The names (word tuples) that occur in ``tokens`` as whole names, longest first: the
    words of a matched name are taken, so a name inside it ("Liver" in "Enlarged Liver")
    is not found there, though it still is where it stands alone. In order of position.

    >>> whole_names("an enlarged liver and a liver".split(), {("liver",), ("enlarged", "liver")})
    [('enlarged', 'liver'), ('liver',)]
    >>> whole_names("an enlarged liver".split(), {("liver",), ("enlarged", "liver")})
    [('enlarged', 'liver')]
    """
    lengths = sorted({len(k) for k in names}, reverse=True)
    taken = [False] * len(tokens)
    found = []
    for n in lengths:
        for i in range(len(tokens) - n + 1):
            key = tuple(tokens[i:i + n])
            if key in names and not any(taken[i:i + n]):
                taken[i:i + n] = [True] * n
                found.append((i, key))
    return [key for _, key in sorted(found)]


def check_entities(answer: str, context_store: dict, all_nodes: list[dict],
                   question_entities: frozenset[str] | set[str] = frozenset()) -> EntityCheck:
    """Every graph name the answer uses must be in the context store (or be one of the
    question's own entities); one must be a final item.

    Names are matched longest first, and a matched name hides the words inside it: "Low
    Back Pain" does not also name "Back Pain", nor "Fatty Liver Disease" "Liver". Nodes that
    share a name count as named once, and are outside the evidence only if none of them is
    in it."""
    tokens = terms(answer)
    text = " " + " ".join(tokens) + " "
    in_context = {i["id"] for v in context_store.values() if isinstance(v, list) for i in v}
    in_context |= set(question_entities)
    by_key: dict[tuple[str, ...], list[dict]] = {}
    for node in all_nodes:
        key = tuple(terms(node["name"]))
        if len(" ".join(key)) >= 3:
            by_key.setdefault(key, []).append(node)
    finals = {tuple(terms(i["name"])) for i in context_store.get("final_result", [])}
    found = whole_names(tokens, by_key.keys() | finals)
    named, outside = [], []
    for key in dict.fromkeys(k for k in found if k in by_key):
        nodes = by_key[key]
        named.append(nodes[0]["name"])
        if not any(n["id"] in in_context for n in nodes):
            outside.append(nodes[0]["name"])
    named.sort()
    # The answer must never mention the JSON, its keys or AI.
    internals = [k for k in ("json", "ai", "language model") if f" {k} " in text]
    internals += [key for key in context_store if "_" in key and key in answer]
    if internals:
        return EntityCheck(False, f"mentions the context's internals: {', '.join(internals)}",
                           named, outside)
    if outside:
        return EntityCheck(False, f"names entities that are not in the evidence: {', '.join(outside[:5])}",
                           named, outside)
    if finals and finals.isdisjoint(found):
        return EntityCheck(False, "names none of the final results", named, outside)
    return EntityCheck(True, "", named, outside)


def answer_draft(run: KGRun, qa: KGQA, edges: Sequence[str] = ()) -> Draft:
    """The answer stage's input for a planned ``run`` of the flow ``qa``: the written answer,
    the prompt (only when there is a final result to explain: an empty store or final
    result gets its fixed message, no model) and the entity check. ``edges`` are the cited
    edges ("A -[REL]-> B"), in citation order: the prompt numbers them as its evidence."""
    if run.plan is None:
        raise ValueError("answer_draft: the run has no plan (not_mapped_draft answers it)")
    question, plan, context_store, nodes = run.standalone, run.plan, run.context_store, qa.nodes
    written = written_answer(question, plan, context_store, nodes) if context_store else EMPTY_STORE
    asked = {s.entity for s in plan.steps if isinstance(s, Expand) and s.entity is not None}
    asked |= {i for s in plan.steps if isinstance(s, Named) for i in s.ids}
    language = answer_language(question, "en")

    def prompt(_model) -> tuple[list[dict], None]:
        final = context_store.get("final_result", [])
        total = context_store.get("final_result_total", len(final))
        steps = written.removeprefix("Based on the data: ").split(" Answer: ")[0]
        head = ("CÁC BƯỚC", "TRẢ LỜI", "trong số") if language == "vi" else ("STEPS", "ANSWER", "of")
        shown = f" ({len(final)} {head[2]} {total})" if total > len(final) else ""
        found = f"{head[0]}: {steps}\n{head[1]}{shown}: {_names(final, FINAL_LIMIT)}"
        # The plan found an answer: the model explains it and is not offered a refusal.
        return answer_messages(KG_TASK[language], question, numbered_evidence(edges), language, None,
                               preamble=found), None

    asked_type = plan.linked.get("asked_type")
    answered = step_types(plan.steps).get(plan.final)

    def check(text: str) -> Check:
        if asked_type and answered and asked_type != answered:
            return Check(False, f"the answer lists {plural(answered)}, but the question asks for {plural(asked_type)}",
                         {"asked_type": asked_type, "answer_type": answered})
        result = check_entities(text, context_store, list(nodes.values()), asked)
        details = {"named": result.named, "outside_context": result.outside_context}
        beyond = [n for n in citations(text) if not 1 <= n <= len(edges)]
        if result.grounded and beyond:
            return Check(False, f"cites [{beyond[0]}], but the evidence has {len(edges)} edges", details)
        return Check(result.grounded, result.reason, details)

    final = context_store.get("final_result", []) if context_store else []
    # One item in the final result is the short answer (a list is no short answer).
    short = final[0].get("name") if len(final) == 1 and context_store.get("final_result_total", 1) == 1 else None
    return Draft(evidence_answer=written, check=check,
                 prompt=prompt if context_store.get("final_result") else None,
                 short_answer=short, short_reader=NamedShort(short) if short else None, close_lines=True,
                 evidence=[json.dumps(context_store, ensure_ascii=False)] if context_store else [])


def not_mapped_answer(reason: str, linked: dict) -> str:
    """"I could not map this question to the graph", why, and what of it was found."""
    entities = ", ".join(f"{e['name']} ({e['type']})" for e in linked.get("entities", [])) or "none"
    types = ", ".join(linked.get("types", [])) or "none"
    relations = ", ".join(linked.get("relations", [])) or "none"
    why = reason.removeprefix("plan: ")
    return (f"{NOT_MAPPED}: {why}. Found in it: entities {entities}; types {types}; "
            f"relations {relations}.")


def not_mapped_draft(run: KGRun) -> Draft:
    """A question the planner could not map (``run.plan_error``): the answer says so (no
    model is asked, there is no evidence to ask about)."""
    text = not_mapped_answer(run.plan_error or "", run.planning.linked)
    return Draft(evidence_answer=text, check=lambda _text: Check(False, "not the answer for this question"),
                 refusals=(text,))
