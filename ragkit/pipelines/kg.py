"""KG question answering as a pipeline: the plan, the context store and the
answer, with the graph edges behind the final results as citations."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ..config import KGConfig, LLMConfig
from ..errors import InputError
from ..llm.base import LLM
from .base import Answer, AskContext, Citation, Gathered, Option, Pipeline, Source, Sources, Trace

if TYPE_CHECKING:
    from ..kgqa.flow import KGQA, Turn
    from ..kgqa.records import TurnRecord
    from ..kgqa.store import TypedStore

# The typed KG (networkx or Neo4j) is imported when a question is asked, not when the
# pipeline is declared: ``ragkit ask`` with another pipeline pays nothing for it.

MAX_CITATIONS = 20


@dataclass
class KGTrace(Trace):
    """How a KG answer was made: the standalone question, the entities found, what the
    planner linked (entities, types, relations, the asked type and the shape), the plan (and
    who wrote it) or why there is none, the context store each step filled, the edges
    followed and the property values compared, and the turn a follow-up question passes back
    (with the history it carried)."""

    standalone: str = ""
    entities: list = field(default_factory=list)
    plan: dict | None = None
    planner: str = "rules"
    llm_plan: str | None = None
    llm_plan_rejected: str | None = None
    llm_plan_constrained: bool | None = None     # the model's plan was decoded under the plan's JSON schema
    plan_error: str | None = None
    linked: dict = field(default_factory=dict)
    context_store: dict = field(default_factory=dict)
    counts: dict = field(default_factory=dict)
    edges: list = field(default_factory=list)
    facts: list = field(default_factory=list)       # property values a filter compared
    turn: TurnRecord | None = None
    history: list[TurnRecord] = field(default_factory=list)


TURN_KEYS = {"question", "standalone", "plan", "context_store"}


def read_history(path: str) -> list[TurnRecord]:
    """The turns of a conversation from a file: a previous ``ask --pipeline kg --json``
    output (its trace's turn, none when its question was not mapped, and any history it
    carried)."""
    import json

    from ..inputs import read_text

    try:
        trace = json.loads(read_text(path, "--history"))["trace"]
        turn = trace["turn"]
        return trace.get("history", []) + ([turn] if turn is not None else [])
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
        raise InputError(f"--history {path}: not the JSON of an earlier 'ask --pipeline kg --json'") from None


def _import(nodes: Path, edges: Path, store: Path) -> None:
    from ..kgqa.importer import import_kg
    from ..kgqa.store import open_typed_store

    with open_typed_store(str(store)) as opened:
        import_kg(nodes, edges, opened)


class KGPipeline(Pipeline):
    """Planned multi-step questions over a typed knowledge graph."""

    name = "kg"
    sources = (Source("typed_kg", "--store", "a typed KG store (a file or bolt://)", "ragkit kg import",
                      store=True, aliases=("kg_store",)),)
    options = (Option("history", list, None, "the --json output of the previous question, for follow-ups "
                                             "(over HTTP: earlier turns, each an earlier answer's trace.turn)",
                      read=read_history),
               Option("llm_planner", bool, False, "let the model write the plan (validated)"))
    sample_questions = ("What symptoms do diseases treated by Aspirin have?",
                        "What are the common symptoms of diseases treated by both Aspirin and Ibuprofen?",
                        "What treats gout?")
    conversational = True
    size_unit, sizes = "edges", (1000, 10000, 100000)

    def build_demo(self, data: Path, out: Path, progress: bool | None = None) -> dict[str, str]:
        """The biomedical demo KG, in a file store."""
        store = out / "biomed.json.gz"
        if not store.exists():
            _import(data / "biomed" / "nodes.csv", data / "biomed" / "edges.csv", store)
        return {"typed_kg": str(store)}

    def build_sized(self, size: int, data: Path, workdir: Path) -> tuple[dict[str, str], tuple[str, ...]]:
        """A KG of ``size`` edges in the demo KG's schema, between invented entities."""
        from ..testing.generated import generated_typed_kg

        nodes, edges = generated_typed_kg(size, workdir / f"kg-{size}")
        _import(nodes, edges, workdir / f"kg-{size}.json.gz")
        return {"typed_kg": str(workdir / f"kg-{size}.json.gz")}, (
            "What symptoms do diseases treated by Compound 1 have?",
            "What are the common symptoms of diseases treated by both Compound 2 and Compound 3?",
            "Which genes are associated with diseases treated by Compound 4?")

    def validate(self, request) -> None:
        for i, turn in enumerate(request.history or []):
            if not isinstance(turn, dict) or not TURN_KEYS <= set(turn) or \
                    not all(isinstance(turn[k], dict) for k in ("plan", "context_store")):
                raise InputError(f"history[{i}]: must be a turn of an earlier kg answer (its trace.turn)")

    def load(self, where: str, sources: Sources) -> KGQA:
        from ..kgqa.flow import KGQA
        from ..kgqa.store import open_typed_store

        return KGQA(open_typed_store(where, must_exist=True))

    def close(self, loaded: KGQA) -> None:
        loaded.store.close()

    def ping(self, loaded: KGQA) -> None:
        loaded.store.ping()

    def config_from(self, request) -> KGConfig:
        return KGConfig(history=tuple(request.history or ()), llm_planner=request.llm_planner)

    def gather(self, question: str, qa: KGQA, query: KGConfig | None, ctx: AskContext) -> Gathered:
        from ..kgqa.answer import answer_draft, not_mapped_draft
        from ..kgqa.flow import Turn

        query = query or KGConfig()
        if ctx.use_llm:
            check_fits(question, ctx)
        turns = [t if isinstance(t, Turn) else Turn.from_dict(t) for t in query.history]
        planner = ctx.model if ctx.use_llm and query.llm_planner else None
        run = qa.ask(question, turns, model=planner, use_llm_planner=planner is not None,
                     profiler=ctx.profiler, reading=ctx.reading(question))
        planning = run.planning
        trace = KGTrace(standalone=run.standalone, entities=[e.__dict__ for e in run.entities],
                        plan=run.plan.to_dict() if run.plan is not None else None, planner=planning.planner,
                        llm_plan=planning.llm_plan, llm_plan_rejected=planning.llm_plan_rejected,
                        llm_plan_constrained=planning.llm_plan_constrained, plan_error=run.plan_error,
                        linked=planning.linked, context_store=run.context_store, counts=run.counts,
                        edges=run.edges, facts=run.facts, turn=run.turn.to_dict() if run.turn else None,
                        history=[t.to_dict() for t in turns])
        citations = citations_for(run.context_store, run.edges, qa.nodes, run.facts)
        draft = not_mapped_draft(run) if run.plan is None else answer_draft(run, qa, [c.title for c in citations])
        draft.max_tokens = ctx.llm_config.max_tokens
        return Gathered(draft, citations, trace)


def check_fits(question: str, ctx: AskContext) -> None:
    """Refuse, as the other pipelines do, a question that cannot fit the model's context
    with the instructions and the answer (counted with the model's tokenizer), before the
    graph is searched for every word of it."""
    from ..errors import ContextTooLongError, GenerationError

    config = ctx.llm_config
    count = getattr(ctx.model, "count_tokens", None)
    try:
        tokens = count(question) if count is not None else 0
    except GenerationError:     # a model server that is down: the answer stage falls back
        return
    if tokens + config.prompt_tokens + config.max_tokens > config.n_ctx:
        raise ContextTooLongError(
            f"question: too long for the model's context ({tokens} question tokens + {config.prompt_tokens} "
            f"for the instructions + {config.max_tokens} for the answer > n_ctx {config.n_ctx})")


def citations_for(context_store: dict, edges: list[dict], nodes: dict[str, dict],
                  facts: list[dict] | None = None) -> list[Citation]:
    """The edges and property values that touch a final result first, then the other edges the
    plan followed, each with its source note (a value's: its node's ``source``)."""
    finals = {i["id"] for i in context_store.get("final_result", [])}
    last = [e for e in edges if {e["source"], e["target"]} & finals]
    rest = [e for e in edges if e not in last]
    out: list[Citation] = []
    for f in [f for f in facts or () if f["node"] in finals][:MAX_CITATIONS // 2]:
        node = nodes[f["node"]]
        out.append(Citation(id=len(out) + 1, doc_id=f"{f['node']}.{f['property']}",
                            title=f"{node['name']} {f['property']}: {f['value']}",
                            source=str(node.get("source", "")), stage=f["step"]))
    for e in (last + rest)[:max(MAX_CITATIONS - len(out), 0)]:
        text = f"{nodes[e['source']]['name']} -[{e['relation']}]-> {nodes[e['target']]['name']}"
        out.append(Citation(id=len(out) + 1, doc_id=f"{e['source']} -[{e['relation']}]-> {e['target']}",
                            title=text, source=e.get("source_note", ""), stage=e["step"]))
    return out[:MAX_CITATIONS]


def ask_kg(question: str, store: str | Path | TypedStore | KGQA, *,
           history: Sequence[Turn | TurnRecord] | None = None,
           use_llm: bool = True, llm: LLM | None = None, llm_config: LLMConfig | None = None,
           llm_planner: bool = False) -> Answer:
    """Answer ``question`` from a typed KG (a store path, a store, or a loaded ``KGQA``)."""
    from ..kgqa.flow import KGQA
    from ..kgqa.store import open_typed_store

    ctx = AskContext(llm_config, use_llm, llm)
    with ctx.profiler.stage("load_graph"):
        if isinstance(store, KGQA):
            qa = store
        else:
            qa = KGQA(open_typed_store(str(store), must_exist=True) if isinstance(store, (str, Path)) else store)
    return KGPipeline().ask(question, qa, KGConfig(tuple(history or ()), llm_planner), ctx)


__all__ = ["KGPipeline", "KGTrace", "ask_kg", "citations_for"]
