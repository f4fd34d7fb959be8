"""Questions in, answers out, for every pipeline: the one code path behind ``ragkit ask``
and ``ragkit serve``, so both return the same JSON.

A ``Service`` is given the sources once (an index, stores, a graph, an evidence KG), loads
each on first use and keeps it, and answers ``AskRequest``s from any thread. The pipelines
come from the registry (``ragkit.pipelines``); the LLM is chosen by
``llm.backends.default_llm`` (the GGUF in process, or ``RAGKIT_LLM_URL``).
"""

from __future__ import annotations

import threading
from functools import lru_cache
from dataclasses import dataclass, field, fields, make_dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from .config import LIMITS, GraphConfig, LexicalConfig, LLMConfig, check_range
from .errors import InputError
from . import pipelines as registry
from .pipelines import Option, get_pipeline, option_users, options, pipelines
from .pipelines import sources as registered_sources
from .pipelines.base import Answer, Sources
from .runtime.extras import requires_extra

SESSION_PATTERN = r"^[A-Za-z0-9_.:-]{1,64}$"    # a session id ("new" opens one)


def common_options() -> tuple[Option, ...]:
    """The options every pipeline takes; each pipeline declares its own (``Pipeline.options``)."""
    return (Option("pipeline", str, registry.DEFAULT_PIPELINE, "the pipeline that answers",
                   choices=registry.PIPELINES),
            Option("no_llm", bool, False, "answer from the evidence, without the model"),
            Option("max_tokens", int, None, "generation budget (default: the LLM config's)"))


def request_options() -> dict[str, Option]:
    """Every field of ``AskRequest`` but the question: the common options, then each
    pipeline's (``ragkit.pipelines.options``)."""
    return {**{o.name: o for o in common_options()}, **options()}


def _check(request: Any) -> None:
    """Refuse a request whose values a field's choices, range or pipeline do not allow."""
    if request.pipeline not in registry.PIPELINES:
        raise InputError(f"pipeline: must be one of {', '.join(registry.PIPELINES)}, got {request.pipeline!r}")
    for option in request_options().values():
        value = getattr(request, option.name, option.default)
        if value is None or option.name == "pipeline":
            continue
        if option.choices and value not in option.choices:
            raise InputError(f"{option.name}: must be one of {', '.join(option.choices)}, got {value!r}")
        if option.name in LIMITS:
            check_range(option.name, value)
    for pipeline in pipelines():
        pipeline.validate(request)


def _from_dict(cls: type[R], data: Any) -> R:
    """A request from parsed JSON, every key and type checked (one-line errors)."""
    if not isinstance(data, dict):
        raise InputError(f"request: must be a JSON object, got {type(data).__name__}")
    names = [f.name for f in fields(cls)]
    known = set(names)
    unknown = sorted(set(data) - known - {"session"})
    if unknown:
        raise InputError(f"{unknown[0]}: not a request field (known: {', '.join(names)}, session)")
    if "question" not in data:
        raise InputError("question: is missing")
    for key, value in data.items():
        want = field_types().get(key)
        if want is None or value is None and key not in ("question", "pipeline"):
            continue
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            raise InputError(f"{key}: must be {want.__name__}, got {type(value).__name__}")
    return cls(**{k: v for k, v in data.items() if k in known and v is not None})


R = TypeVar("R", bound="AskRequest")


@dataclass
class AskRequest:
    """One question and the options ``ragkit ask`` takes for it: the common ones, then each
    built-in pipeline's (``Pipeline.options``; defaults and ranges from ``ragkit.config``).
    Every value is checked when the request is made (one-line ``InputError``s). A pipeline
    registered from another package adds its options to :func:`request_type`'s class."""

    question: str
    pipeline: str = registry.DEFAULT_PIPELINE
    no_llm: bool = False
    max_tokens: int | None = None
    # the lexical pipeline's
    k: int = LexicalConfig.k
    method: str = LexicalConfig.method
    rerank: str = LexicalConfig.rerank
    rerank_depth: int = LexicalConfig.rerank_depth
    bridges: int = LexicalConfig.bridges
    steps: int = LexicalConfig.steps
    # the causal pipeline's
    at: str | None = None
    # the graph pipeline's
    depth: int = GraphConfig.depth
    max_hops: int = GraphConfig.max_hops
    top_k_paths: int = GraphConfig.top_k_paths
    # the kg pipeline's
    history: list[dict] | None = None
    llm_planner: bool = False

    def __post_init__(self) -> None:
        _check(self)

    @classmethod
    def from_dict(cls: type[R], data: Any) -> R:
        """A request from parsed JSON (``POST /ask``'s body), every key and type checked."""
        return _from_dict(cls, data)


def _request_class() -> type[AskRequest]:
    """:class:`AskRequest`, or, when a pipeline registered from another package declares
    options it lacks, a subclass with those options as fields."""
    have = {f.name for f in fields(AskRequest)}
    more = [(o.name, o.kind, field(default=o.default)) for o in request_options().values() if o.name not in have]
    if not more:
        return AskRequest
    return make_dataclass("AskRequest", more, bases=(AskRequest,), namespace={"__module__": __name__,
                                                                             "__doc__": AskRequest.__doc__})


@lru_cache(maxsize=None)
def request_type() -> type[AskRequest]:
    """The request class the command line and the server read: :class:`AskRequest`, with the
    options of pipelines registered from other packages added (made when first asked for, so a
    pipeline registered before the first request is in it)."""
    return _request_class()


def field_types() -> dict[str, type]:
    """Each request field's JSON type, checked by ``from_dict`` (a bool is not an int there)."""
    return {"question": str, **{name: o.kind for name, o in request_options().items()}}


def __getattr__(name: str) -> Any:
    if name == "FIELD_TYPES":
        return field_types()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def ask_request_model(max_question: int = 2000):
    """``AskRequest`` as a pydantic model, for the OpenAPI schema of ``POST /ask``: each
    field's type, default, range (``config.LIMITS``), choices and what it does, plus the
    server's ``session``. It describes the request; ``AskRequest.from_dict`` checks it (the
    server's one-line errors, the same for ``/ask``, ``/ws`` and the command line)."""
    from typing import Literal, Optional

    with requires_extra("server"):      # pydantic comes with fastapi
        from pydantic import ConfigDict, Field, create_model

    asked = Field(description=f"the question (1 to {max_question} characters, not only spaces)", min_length=1,
                  max_length=max_question)
    specs: dict[str, Any] = {"question": (str, asked)}
    for name, option in request_options().items():
        users = option_users(name)
        doc = f"{', '.join(users)}: {option.help}" if users else option.help
        kind = Literal[tuple(option.choices)] if option.choices else \
            (list[dict] if option.kind is list else option.kind)
        bounds: dict[str, Any] = dict(zip(("ge", "le"), LIMITS[name])) if name in LIMITS else {}
        nullable = name != "pipeline"      # null means the default, but for the pipeline
        specs[name] = (Optional[kind] if nullable else kind, Field(default=option.default, description=doc, **bounds))
    specs["session"] = (Optional[str], Field(default=None, pattern=SESSION_PATTERN, description=(
        '"new" opens a conversation (the answer gives its id); an id sends the question in that '
        "conversation (follow-ups of a pipeline that reads earlier turns)")))
    return create_model("AskRequest", __config__=ConfigDict(extra="forbid"), **specs)


class Service:
    """Answers questions from fixed sources; safe to call from several threads."""

    def __init__(self, sources: Sources, llm_config: LLMConfig | None = None, llm=None,
                 flags: dict[str, str] | None = None):
        unknown = sorted(set(sources.given()) - set(registered_sources()))
        if unknown:
            raise InputError(f"{unknown[0]}: no pipeline reads such a source (known: "
                             f"{', '.join(registered_sources())})")
        self.sources = sources
        self.llm_config = llm_config or LLMConfig.for_model(llm)
        self._llm = llm
        self.flags = flags or {}          # Sources field -> the option that names it
        self._loaded: dict[str, Any] = {}
        self._locks = {name: threading.Lock() for name in registry.PIPELINES}
        self._llm_lock = threading.Lock()

    # ----------------------------------------------------------------- sources
    def available(self) -> list[str]:
        return [name for name in registry.PIPELINES if getattr(self.sources, get_pipeline(name).source)]

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
    def ask(self, request: Any, on_token: Callable[[str, int], None] | None = None) -> dict:
        """The answer JSON of ``ragkit ask --json`` (``answer(...).to_dict()``)."""
        return self.answer(request, on_token).to_dict()

    def answer(self, request: Any, on_token: Callable[[str, int], None] | None = None) -> Answer:
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
    existing source is reused, an index of an older format rebuilt), as each pipeline's
    ``build_demo`` builds it."""
    data = Path(data) if data else demo_data_dir()
    if not (data / "manuals").is_dir():
        raise InputError(f"--demo: {data} holds no demo data (expected manuals/, specs/, biomed/)")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    built: dict[str, str] = {}
    for pipeline in registry.pipelines():
        built.update(pipeline.build_demo(data, out, progress=progress))
    return Sources(**built)


def ask(question: str, *, pipeline: str | None = None, llm=None, llm_config: LLMConfig | None = None,
        **given: Any) -> Answer:
    """One question answered from the sources named, as ``ragkit ask`` answers it.

    ``given`` holds the sources (the fields the pipelines declare: ``index=``, ``spec_store=``,
    ``evidence_kg=``, ``graph=``, ``typed_kg=``, ``weather=``; the earlier ``kg=`` and
    ``kg_store=`` still work) and ``AskRequest``'s options
    (``no_llm=True``, ``k=``, ``method=`` ...). ``pipeline`` may be left out when the sources
    given are one pipeline's (an ``index`` is the lexical pipeline's, a ``spec_store`` the
    spec pipeline's ...). For many questions over the same sources, make one ``Service`` and
    call its ``answer``: it loads each source once.
    """
    fields_ = {*registered_sources(), *registry.source_aliases()}
    sources = Sources(**{k: given.pop(k) for k in list(given) if k in fields_})
    named = [name for name in registry.PIPELINES if getattr(sources, get_pipeline(name).source)]
    if pipeline is None:
        if len(named) != 1:
            raise InputError("pipeline: name one when the sources given are not exactly one pipeline's "
                             f"(given: {', '.join(named) or 'none'})")
        pipeline = named[0]
    service = Service(sources, llm_config=llm_config, llm=llm)
    try:
        return service.answer(request_type()(question=question, pipeline=pipeline, **given))
    finally:
        service.close()
