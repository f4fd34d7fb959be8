"""The pipeline family: what every pipeline returns (``Answer``: the answer, the evidence it
cites, how it got there in a typed ``trace``, how long each stage took in ``timings_ms``)
and the one interface every pipeline implements (``Pipeline``).

A pipeline supplies only what is its own: how to load its source, and ``gather``: analyse
the question, retrieve typed evidence, write the deterministic answer and say how to prompt
the model and check its answer (a ``Draft``). ``Pipeline.ask`` runs the rest the same way
for all of them: the shared answer stage (``ragkit.answer.stage``), then the answer with its
citations, trace and timings.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Iterator, Sequence
from pathlib import Path

from ..answer.stage import NOT_ENOUGH_VI, Check, Draft, Outcome
from ..answer.stage import answer as answer_stage
from ..config import LLMConfig
from ..errors import InputError
from ..answer.claims import add_citations, renumber_citations, split_claims
from ..answer.claims import citations as claim_citations
from ..runtime.profiler import Profiler
from ..text.question import QuestionReading, read_question

if TYPE_CHECKING:
    from ..llm.base import LLM


# The words of an answer's Markdown (``Answer.to_markdown``), by language.
MARKDOWN_LABELS = {
    "en": {"question": "Question", "sources": "Sources", "none": "(none)", "source": "Answer from",
           "grounded": "grounded in the evidence", "yes": "yes", "no": "no"},
    "vi": {"question": "Câu hỏi", "sources": "Nguồn", "none": "(không có)", "source": "Nguồn câu trả lời",
           "grounded": "bám sát tài liệu", "yes": "có", "no": "không"},
}


@dataclass
class Citation:
    id: int
    doc_id: str
    title: str = ""
    source: str = ""
    score: float = 0.0
    # Spec answers also say where in the spec, for which entity, and from which stage.
    spec_id: str = ""
    section_id: str = ""
    entity: str = ""
    stage: str = ""
    version: str = ""     # spec answers: the cited spec's version ("16.4.0")
    page: int = 0         # spec answers from a PDF: the page the cited text starts on (1-based)
    evidence: int = 0     # its number in the evidence the prompt showed and the check read


@dataclass
class Trace:
    """How an answer was made. Each pipeline's trace subclasses this with its own typed
    fields; ``outcome`` is the answer stage's part, the same for every pipeline
    (``answer_source``, ``check`` ...). ``to_dict()`` is the JSON of ``trace``.

    Reading a key (``trace["paths"]``) works too, for notebooks and JSON-minded readers;
    ragkit's own code reads attributes."""

    outcome: Outcome | None = field(default=None, repr=False)

    @property
    def answer_source(self) -> str:
        return self.outcome.answer_source if self.outcome else "evidence"

    @property
    def check(self) -> Check | None:
        return self.outcome.check if self.outcome else None

    @property
    def short_answer(self) -> str | None:
        """The answer's short answer (a name, a date, a number), when the question asks for one."""
        return self.outcome.short_answer if self.outcome else None

    @property
    def model_answer(self) -> str | None:
        """What the model wrote, before the check; None when no model answered."""
        return self.outcome.model_answer if self.outcome else None

    @property
    def fallback_reason(self) -> str:
        """Why the model's answer was replaced by the evidence's ("" when it was not)."""
        return self.outcome.fallback_reason if self.outcome else ""

    @property
    def generation(self) -> dict:
        """The model's prompt and completion tokens and tokens per second ({} without a model)."""
        return dict(self.outcome.generation) if self.outcome else {}

    def to_dict(self) -> dict:
        out = {f.name: _plain(getattr(self, f.name)) for f in fields(self) if f.name != "outcome"}
        if self.outcome is not None:
            out.update(self.outcome.to_dict())
        return out

    # Read-only mapping access over to_dict().
    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.to_dict().get(key, default)

    def __contains__(self, key: str) -> bool:
        return key in self.to_dict()

    def keys(self) -> Iterator[str]:
        return iter(self.to_dict())


def _plain(value: Any) -> Any:
    """Plain JSON data of a trace field (dataclasses and objects with to_dict converted)."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass
class Answer:
    question: str
    pipeline: str
    answer: str
    citations: list[Citation] = field(default_factory=list)
    trace: Trace = field(default_factory=Trace)
    timings_ms: dict = field(default_factory=dict)
    # The text the answer stage could draw on (``Draft.evidence``): not in the JSON, which
    # cites it; ``ragkit eval answers`` reads it to judge an abstention.
    evidence: list[str] = field(default_factory=list, repr=False)
    # What retrieval found, whole (``Draft.retrieved``; empty: ``evidence``).
    retrieved: list[str] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict:
        """The JSON shape of ``ragkit ask --json`` and ``POST /ask``."""
        return {"question": self.question, "pipeline": self.pipeline, "answer": self.answer,
                "citations": [asdict(c) for c in self.citations], "trace": self.trace.to_dict(),
                "timings_ms": self.timings_ms}

    def to_markdown(self, language: str | None = None) -> str:
        """The question, the answer, its numbered sources and whether the check found it
        grounded, as Markdown; labels in ``language`` ("en" or "vi"; default: the question's).
        Graph and KG citations show the path or edge they cite and its source; document
        citations their id and title."""
        if language is None:
            from ..text import vietnamese_char_count

            language = "vi" if vietnamese_char_count(self.question) else "en"
        words = MARKDOWN_LABELS.get(language, MARKDOWN_LABELS["en"])
        text = self.answer
        short = self.trace.outcome.short_answer if self.trace.outcome else None
        if short and text.splitlines()[0].strip() == short:     # the short answer first, in bold
            text = f"**{short}**" + text[len(text.splitlines()[0]):]
        lines = [f"**{words['question']}:** {self.question}", "", text.replace("\n", "  \n"), "",
                 f"**{words['sources']}:**"]
        lines += [f"- [{c.id}] {c.title} — {c.source}" if self.pipeline in ("graph", "kg") else
                  f"- [{c.id}] `{c.doc_id}` — {c.title}" for c in self.citations] or [f"- {words['none']}"]
        check = self.trace.check
        source = f"*{words['source']}:* {self.trace.answer_source}"
        if check is not None:
            source += (f" · *{words['grounded']}:* {words['yes'] if check.passed else words['no']}"
                       + (f" ({check.reason})" if check.reason else ""))
        return "\n".join([*lines, "", source])

    def _repr_markdown_(self) -> str:
        """Jupyter shows an answer as its Markdown (``to_markdown``)."""
        return self.to_markdown()


MAX_QUESTION_CHARS = 2000     # what ``ragkit serve`` takes too (its --max-body aside)


def check_question(question: str | None, limit: int = MAX_QUESTION_CHARS) -> str:
    """The question stripped; an empty one, or one over ``limit`` characters, is refused (every
    pipeline alike: a page of text is not a question, and a graph pipeline would otherwise
    match every name in it)."""
    if question is None or not question.strip():
        raise InputError("question: is empty")
    question = question.strip()
    if len(question) > limit:
        raise InputError(f"question: {len(question)} characters, over the {limit}-character limit")
    return question


@dataclass(frozen=True)
class Option:
    """One option of a pipeline, declared once: a field of ``AskRequest`` and of ``POST
    /ask``'s schema, a flag of ``ragkit ask`` and ``ragkit eval answers``. ``choices`` and the
    range in ``config.LIMITS`` (by ``name``) are checked wherever a request comes from;
    ``read`` turns the command line's text into the value (a file's content), when it is not
    ``kind`` itself."""

    name: str
    kind: type
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    read: Callable[[str], Any] | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Source:
    """What a pipeline reads: the ``Sources`` field that holds it, the command-line flag that
    names it, what it is and how to make one (said when it is missing). A pipeline's first
    source is the one it needs; the others are optional (the causal pipeline's weather table)."""

    field: str
    flag: str
    what: str
    how: str
    serve_flag: str = ""     # ragkit serve's flag, when another pipeline's source takes ``flag`` there
    store: bool = False      # a store: a file only its build command makes, or a bolt:// URI
    aliases: tuple[str, ...] = ()   # earlier names of ``field``, still read

    @property
    def served_by(self) -> str:
        return self.serve_flag or self.flag


class Sources:
    """Where the pipelines read, by the field each pipeline's ``Source`` declares:
    ``Sources(index="outputs/index/manuals", spec_store="specs.json.gz")``. A field that was
    not given reads as None (that pipeline is not available); ``Service`` refuses a field no
    pipeline declares."""

    _where: dict[str, str | None]

    def __init__(self, **where: str | None):
        renamed = Sources.renamed()
        object.__setattr__(self, "_where", {renamed.get(k, k): (str(v) if v is not None else None)
                                            for k, v in where.items()})

    def __getattr__(self, name: str) -> str | None:
        if name.startswith("_"):
            raise AttributeError(name)
        name = Sources.renamed().get(name, name)
        if name in self._where:
            return self._where[name]
        declared = list(Sources.declared())
        if name not in declared:
            raise AttributeError(f"Sources has no field {name!r}: the pipelines declare {', '.join(declared)}")
        return None

    @staticmethod
    def declared() -> Iterable[str]:
        """The fields some registered pipeline declares (the registry sets this)."""
        return ()

    @staticmethod
    def renamed() -> dict[str, str]:
        """Earlier field names and the fields they name now (the registry sets this)."""
        return {}

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Sources is read-only: make another")

    def given(self) -> dict[str, str]:
        """The fields given a place, as ``{field: where}``."""
        return {k: v for k, v in self._where.items() if v}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sources) and self.given() == other.given()

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.given().items())))

    def __repr__(self) -> str:
        return f"Sources({', '.join(f'{k}={v!r}' for k, v in self.given().items())})"


class AskContext:
    """What a pipeline needs besides the question and its source: the shared profiler, the
    LLM configuration, whether the answer may be written by the model, the model itself
    (made on first use, so ``--no-llm`` answers never load one unless a stage needs its
    tokenizer) and the question's reading (``reading``)."""

    def __init__(self, llm_config: LLMConfig | None = None, use_llm: bool = True,
                 llm: "LLM | None" = None, profiler: Profiler | None = None,
                 make_llm: "Callable[[], LLM] | None" = None):
        self.llm_config = llm_config or LLMConfig.for_model(llm)
        self.use_llm = use_llm
        self._llm = llm
        self._make_llm = make_llm
        self.profiler = profiler or Profiler()
        self._readings: dict[str, QuestionReading] = {}

    def reading(self, question: str) -> QuestionReading:
        """What ``question``'s own words say (``ragkit.text.question.read_question``), read
        once per ask: every stage that needs it asks the context."""
        found = self._readings.get(question)
        if found is None:
            found = self._readings[question] = read_question(question)
        return found

    @property
    def model(self) -> "LLM":
        if self._llm is None:
            if self._make_llm is not None:
                self._llm = self._make_llm()
            else:
                from ..llm.backends import default_llm

                self._llm = default_llm(self.llm_config)
        return self._llm


@dataclass
class Gathered:
    """A pipeline's evidence, ready for the answer stage."""

    draft: Draft
    citations: list[Citation]
    trace: Trace
    # Model answers cite only the evidence their prompt kept (``Outcome.kept_evidence``);
    # evidence answers cite everything they drew from.
    cite_kept: bool = False


class Pipeline(ABC):
    """One question-answering capability. Subclasses set the class attributes and implement
    ``load`` and ``gather``; ``ask`` is shared. The registry (``ragkit.pipelines``) reads the
    declarations, and the service, the command line, the server and the profiler are made from
    them: nothing outside ``ragkit/pipelines/`` names a pipeline.

    - ``sources``: what it reads (``Source``; the first is the one it needs).
    - ``options``: the options it takes (``Option``); ``config_from(request)`` turns a
      request's values into its own config, ``validate(request)`` refuses combinations a
      single option cannot see (one-line ``InputError``).
    - ``sample_questions``: questions its demo source answers (the profiler asks them).
    - ``build_demo``: its source built from the bundled demo data (``ragkit serve --demo``,
      the notebooks' profiler); ``build_sized``, ``size_unit`` and ``sizes``: a source of
      generated data of a given size and the questions it answers, for timing how the
      pipeline grows (a pipeline without them is left out of the scaling study).
    - ``conversational``: it reads earlier turns (its ``history`` option), which the server
      keeps per session and rebuilds from a chat's earlier messages.
    """

    name: ClassVar[str]
    sources: ClassVar[tuple[Source, ...]]
    options: ClassVar[tuple[Option, ...]] = ()
    sample_questions: ClassVar[tuple[str, ...]] = ()
    conversational: ClassVar[bool] = False
    size_unit: ClassVar[str] = ""                 # what a generated source's size counts
    sizes: ClassVar[tuple[int, ...]] = ()         # the scaling study's sizes unless given others

    @property
    def source(self) -> str:
        """The ``Sources`` field it needs."""
        return self.sources[0].field

    @property
    def flag(self) -> str:
        return self.sources[0].flag

    @property
    def source_what(self) -> str:
        return self.sources[0].what

    @property
    def source_how(self) -> str:
        return self.sources[0].how

    def validate(self, request: Any) -> None:
        """Refuse a request whose values this pipeline's options cannot take together."""

    def build_demo(self, data: Path, out: Path, progress: bool | None = None) -> dict[str, str]:
        """Its source built from the demo data in ``data`` into ``out`` (once: one already
        there is reused), as ``Sources`` fields; none when it has no demo source."""
        return {}

    def build_sized(self, size: int, data: Path, workdir: Path) -> tuple[dict[str, str], tuple[str, ...]]:
        """A source of ``size`` (``size_unit``) generated from the demo data in ``data``,
        written under ``workdir``, as ``Sources`` fields, and questions it answers."""
        raise InputError(f"sizes: pipeline {self.name!r} has no generated source to time")

    @abstractmethod
    def load(self, where: str, sources: Sources) -> Any:
        """Open the pipeline's source (an index, a store, a graph ...)."""

    def close(self, loaded: Any) -> None:
        if hasattr(loaded, "close"):
            loaded.close()

    def ping(self, loaded: Any) -> None:
        """Check a loaded source still answers (a store on a server may have gone away):
        ``StoreUnavailableError`` if not. Sources in memory or in files always do."""
        if hasattr(loaded, "ping"):
            loaded.ping()

    def config_from(self, request: Any) -> Any:
        return None

    @abstractmethod
    def gather(self, question: str, source: Any, config: Any, ctx: AskContext) -> Gathered:
        """Analyse the question, retrieve typed evidence, write the evidence answer and the
        prompt (each stage inside ``ctx.profiler.stage``)."""

    def ask(self, question: str, source: Any, config: Any = None, ctx: AskContext | None = None) -> Answer:
        """The answer to ``question`` from ``source``: read it (``read``: gather, then the
        shared answer stage), then settle its citations (``finish``). Every pipeline answers
        through this one path."""
        question = check_question(question)
        ctx = ctx or AskContext()
        gathered, outcome = self.read(question, source, config, ctx)
        return self.finish(question, gathered, outcome, ctx)

    def read(self, question: str, source: Any, config: Any, ctx: AskContext) -> tuple[Gathered, Outcome]:
        """The evidence gathered for ``question`` and the answer stage's outcome on it, in one
        step. A pipeline that reads some questions in several steps overrides this, each
        step a ``gather`` and an ``answer``; the last step's are the answer's."""
        gathered = self.gather(question, source, config, ctx)
        return gathered, self.answer(gathered, ctx)

    def answer(self, gathered: Gathered, ctx: AskContext) -> Outcome:
        """The shared answer stage on ``gathered``'s draft (the model asked only when the
        context allows one and the draft has a prompt)."""
        asks = ctx.use_llm and gathered.draft.prompt is not None
        return answer_stage(gathered.draft, ctx.model if asks else None, ctx.llm_config, ctx.profiler, ctx.use_llm)

    def finish(self, question: str, gathered: Gathered, outcome: Outcome, ctx: AskContext) -> Answer:
        """The ``Answer`` of a gathered question and the answer stage's outcome: its text and
        citations numbered alike, its trace and timings."""
        gathered.trace.outcome = outcome
        citations = gathered.citations
        if gathered.cite_kept and outcome.answer_source == "model" and outcome.kept_evidence is not None:
            citations = citations[: outcome.kept_evidence]
        text, citations = settle_citations(outcome, citations, gathered.draft.cites)
        return Answer(question=question, pipeline=self.name, answer=text, citations=citations,
                      trace=gathered.trace, timings_ms=ctx.profiler.as_dict(),
                      evidence=list(gathered.draft.evidence),
                      retrieved=list(gathered.draft.retrieved or gathered.draft.evidence))


def settle_citations(outcome: Outcome, citations: list[Citation],
                     cites: Sequence[int] | None = None) -> tuple[str, list[Citation]]:
    """The answer's text and citation list, numbered alike: ``[1]`` is the first citation.

    A model answer's claims that cite nothing get the citation of the evidence the check
    found supporting them, so a model answer keeps its sources. Then whatever the answer
    cites (a model answer, a fallback or an evidence answer) is numbered 1, 2, ... in the
    order it is first cited, and the list holds only those; each citation keeps its number in
    the evidence (``Citation.evidence``), the numbering of the prompt and of the check's
    claims. An answer that cites nothing keeps the whole list (it stands on all of it).
    ``cites[n - 1]`` is the citation id of evidence item ``n`` (None: the same number)."""
    def citation_of(n: int) -> int | None:
        if cites is None:
            return n
        return cites[n - 1] if 1 <= n <= len(cites) else None

    text = outcome.text
    if outcome.answer_source == "model":
        claims = outcome.check.verdicts
        parts = split_claims(text)
        if len(parts) == len(claims):
            # A lead-in to a list ("Các bước:") introduces what follows; it cites nothing.
            added = {i: citation_of(c.support.evidence) for i, c in enumerate(claims)
                     if c.verdict == "supported" and not parts[i].cited and c.support is not None
                     and not parts[i].body.rstrip().endswith(":")}
            text = add_citations(text, {i: n for i, n in added.items() if n is not None})
    by_id = {c.id: c for c in citations}
    cited = [n for n in claim_citations(text) if n in by_id]
    if not cited:       # markers of numbers the list lacks (a check that reads no markers) go
        text = renumber_citations(text, {}) if claim_citations(text) else text
        return text, [replace(c, evidence=c.evidence or c.id) for c in citations]
    numbers = {old: new for new, old in enumerate(cited, 1)}
    return renumber_citations(text, numbers), [replace(by_id[old], id=new, evidence=by_id[old].evidence or old)
                                               for old, new in numbers.items()]


__all__ = ["Answer", "AskContext", "Citation", "Gathered", "NOT_ENOUGH_VI", "Option", "Pipeline", "Source",
           "Sources", "Trace", "check_question", "settle_citations"]
