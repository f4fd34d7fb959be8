"""A BM25 index whose every (document, term) weight is computed once, at build time.

The index is a sparse matrix W (documents × vocabulary, CSC) holding
``IDF(t) · tf_saturation(f(t, D), |D|)`` for each term present in each document. Scoring a
query is then a slice of the query's columns and a sum (``np.bincount`` over their
postings): work proportional to the postings touched, with no Python loop over documents.
Scores equal rank-bm25's ``BM25Okapi.get_scores`` (with ``idf="okapi"``) to rounding.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from collections import Counter
from functools import partial
from itertools import chain, islice
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

import numpy as np
import scipy.sparse as sp
from ..runtime.progress import progress_bar

from .. import __version__
from ..corpus import Doc
from ..errors import IndexFormatError, InputError
from ..runtime.faults import fault_point
from ..stores.files import atomic_dir
from ..text import LanguageChoice, Tokenizer, choose_language, tokenizer_for
from .docs_file import BLOCK_TABLE, BLOCKS_FILE, DocBlocks, DocBlockWriter, DocsFile, write_doc_blocks
from .scoring import matched_scores, select_idf, top_k, weight_matrix

if TYPE_CHECKING:
    from ..runtime.ray_engine import RayEngine

FORMAT_VERSION = 2     # 2: the default IDF is named robertson
_FILES = ("meta.json", "vocab.json", "idf.npy", "doc_len.npy", "boost.npy")
# The documents: compressed blocks (docs_file.DocBlocks), or one JSON line each in an index of
# an earlier ragkit (docs.jsonl).
DOCS_FILES = (BLOCKS_FILE, BLOCK_TABLE)
BUILD_BLOCK = 65_536       # documents whose postings are counted together while building
# The weight matrix's arrays, each memory-mapped at load (an index of an earlier ragkit has
# them in one weights.npz, read whole).
WEIGHT_ARRAYS = ("weights.indptr.npy", "weights.indices.npy", "weights.data.npy")
# A score for each of a block of document texts, kept as the index's ``boost`` and added to
# their BM25 scores when a search asks (the lexical pipeline's structural boost: boosting.py).
DocScores = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class BM25Params:
    """BM25's parameters and their defaults (k1 1.5, b 0.75, Robertson IDF)."""

    k1: float = 1.5
    b: float = 0.75
    idf: str = "robertson"

    def __post_init__(self) -> None:
        if self.k1 < 0:
            raise ValueError(f"k1: must be >= 0, got {self.k1}")
        if not 0.0 <= self.b <= 1.0:
            raise ValueError(f"b: must be in [0, 1], got {self.b}")
        select_idf(self.idf)


@dataclass(frozen=True)
class Hit:
    """One retrieved document: its position in the index, scores and text."""

    index: int
    doc_id: str
    score: float
    bm25: float
    boost: float = 0.0
    text: str = ""
    title: str = ""
    source: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class BM25Index:
    """Documents, their tokenizer, and the precomputed weight matrix."""

    docs: Sequence[Doc]        # a list, or the index file's documents read by offset (DocsFile)
    tokenizer: Tokenizer
    params: BM25Params
    vocab: dict[str, int]
    idf: np.ndarray
    doc_len: np.ndarray
    weights: sp.csc_matrix
    boost: np.ndarray
    meta: dict = field(default_factory=dict)
    _by_row: sp.csr_matrix | None = field(default=None, repr=False, compare=False)
    _positions: dict | None = field(default=None, repr=False, compare=False)
    _titles: dict | None = field(default=None, repr=False, compare=False)
    _positive: bool | None = field(default=None, repr=False, compare=False)
    _checked: np.ndarray | None = field(default=None, repr=False, compare=False)   # terms whose postings passed
    _scratch: list = field(default_factory=list, repr=False, compare=False)   # bm25_batch's free workspaces
    loaded_from: Path | None = field(default=None, repr=False, compare=False)   # the version ``load`` read
    _spool: tempfile.TemporaryDirectory | None = field(default=None, repr=False, compare=False)   # streamed docs

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, docs: Sequence[Doc], tokenizer: Tokenizer | None = None,
              params: BM25Params | None = None, *, progress: bool | None = None,
              engine: RayEngine | None = None, boost_scores: DocScores | None = None) -> "BM25Index":
        """Tokenize ``docs`` (here, or by ``engine``'s workers: the same token lists) and
        precompute their BM25 weights (and ``boost_scores`` of their texts, else no boost)."""
        tokenizer = tokenizer or Tokenizer()
        docs = list(docs)
        if not docs:
            raise InputError("corpus: holds no documents")
        started = time.perf_counter()
        tokens: Iterable[Sequence[str]]
        if engine is not None:
            token_lists: list[list[str]] = engine.map(partial(_tokenize, tokenizer), [d.full_text for d in docs],
                                                      stage="tokenize", batch=512)
            tokens = token_lists
        else:
            tokens = (tokenizer(d.full_text) for d in
                      progress_bar(docs, desc="tokenize", unit="doc", progress=progress))
        index = cls.from_tokens(tokens, params, docs=docs, tokenizer=tokenizer, boost_scores=boost_scores)
        index.meta["build_s"] = round(time.perf_counter() - started, 4)
        return index

    @classmethod
    def for_corpus(cls, docs: Sequence[Doc], lang: str = "auto", *, accents: bool = False,
                   bigrams: bool | None = None, tokenizer: Tokenizer | None = None,
                   params: BM25Params | None = None, progress: bool | None = None,
                   engine: RayEngine | None = None, boost_scores: DocScores | None = None) -> "BM25Index":
        """``build`` with the tokenizer ``--lang`` selects: "auto" takes the documents'
        language (``text.detect_language``), a given ``tokenizer`` wins over ``lang``. The
        choice, and the languages the documents are in, are kept in ``meta["language"]``."""
        docs = list(docs)
        choice = choose_language(tokenizer.lang if tokenizer else lang, [d.full_text for d in docs])
        tokenizer = tokenizer or tokenizer_for(choice.lang, accents=accents, bigrams=bigrams)
        index = cls.build(docs, tokenizer, params, progress=progress, engine=engine, boost_scores=boost_scores)
        index.meta["language"] = choice.to_dict()
        return index

    @property
    def language(self) -> LanguageChoice:
        """How the tokenizer's language was chosen (an index built before this was recorded:
        as given, the documents taken to be in the tokenizer's language)."""
        info = self.meta.get("language") or {}
        return LanguageChoice(self.tokenizer.lang, bool(info.get("detected", False)),
                              tuple(info.get("languages") or (self.tokenizer.lang,)),
                              info.get("reason", "as given"))

    @classmethod
    def from_tokens(cls, corpus_tokens: Iterable[Sequence[str]], params: BM25Params | None = None,
                    *, docs: Iterable[Doc] | None = None,
                    tokenizer: Tokenizer | None = None, boost_scores: DocScores | None = None) -> "BM25Index":
        """Build from token lists (benchmarks feed every library the same; ``build`` feeds
        them as it tokenizes). Both ``corpus_tokens`` and ``docs`` are read once, in step,
        a block of documents at a time: the postings of a block become three flat arrays
        (document, term, count) and nothing is kept per posting but those, so memory is the
        postings' final arrays and their sort, not a Python object per posting. ``docs``
        given as a list stay the index's documents; given as any other iterable (a
        generator) they are written, compressed, to a file beside the process and read back
        by offset, so they are never all in memory. ``boost_scores`` gives each document's
        boost from its text (a block at a time); without it every boost is zero."""
        params = params or BM25Params()
        vocab: dict[str, int] = {}
        spool = tempfile.TemporaryDirectory(prefix="ragkit-docs-") if docs is not None and \
            not isinstance(docs, Sequence) else None
        writer = DocBlockWriter(spool.name) if spool is not None else None
        kept = docs if isinstance(docs, Sequence) else None
        doc_iter = iter(docs) if docs is not None else None
        tokens_iter = iter(corpus_tokens)
        docs_part, terms_part, counts_part, lengths_part, boost_part = [], [], [], [], []
        n_docs = 0
        try:
            while block := list(islice(tokens_iter, BUILD_BLOCK)):
                lengths = np.fromiter(map(len, block), dtype=np.int64, count=len(block))
                flat = list(chain.from_iterable(block))
                for term in dict.fromkeys(flat):         # new terms numbered in the order first met
                    vocab.setdefault(term, len(vocab))
                terms = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
                del flat
                # One key per posting, (document in the block, term): sorted and counted.
                keys, counts = np.unique(np.repeat(np.arange(len(block), dtype=np.int64), lengths) << 32 | terms,
                                         return_counts=True)
                docs_part.append((n_docs + (keys >> 32)).astype(np.int32))
                terms_part.append((keys & 0xFFFFFFFF).astype(np.int32))
                counts_part.append(counts.astype(np.int32))
                lengths_part.append(lengths)
                texts = _block_docs(doc_iter, kept, n_docs, len(block), writer)
                boost_part.append(np.asarray(boost_scores([d.full_text for d in texts]), dtype=np.float64)
                                  if boost_scores is not None and texts is not None else np.zeros(len(block)))
                n_docs += len(block)
            if doc_iter is not None and kept is None and next(doc_iter, None) is not None:
                raise InputError("corpus: more documents than token lists")
            if writer is not None:
                writer.close()
        except BaseException:
            if spool is not None:
                spool.cleanup()
            raise
        if n_docs == 0:
            raise InputError("corpus: holds no documents")
        if kept is not None and len(kept) != n_docs:
            raise InputError(f"corpus: {len(kept)} documents for {n_docs} token lists")
        doc_len = np.concatenate(lengths_part).astype(np.float64)
        avgdl = float(doc_len.mean())
        if avgdl == 0:
            raise InputError("corpus: no document has a single token after normalization")
        weights, idf = weight_matrix(docs_part, terms_part, counts_part, doc_len, avgdl, len(vocab), params)
        if spool is not None:
            docs = DocBlocks(spool.name)
        elif docs is None:
            docs = [Doc(doc_id=str(i), text="") for i in range(n_docs)]
        meta = {"n_docs": n_docs, "avgdl": avgdl, "vocab_size": len(vocab),
                "postings": int(weights.nnz)}
        index = cls(docs=docs if isinstance(docs, DocBlocks) else list(docs), tokenizer=tokenizer or Tokenizer(),
                    params=params, vocab=vocab, idf=idf, doc_len=doc_len, weights=weights,
                    boost=np.concatenate(boost_part), meta=meta)
        index._spool = spool
        return index

    # ------------------------------------------------------------------ scoring
    def __len__(self) -> int:
        return len(self.docs)

    def _postings(self, query_tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Document indices and weighted contributions of every query term's postings.

        A term repeated in the query counts once per repetition, as in rank-bm25.
        """
        counts = Counter(self.vocab[t] for t in query_tokens if t in self.vocab)
        if not counts:
            return np.empty(0, dtype=np.int32), np.empty(0)
        indptr, indices, data = self.weights.indptr, self.weights.indices, self.weights.data
        checked = self.checked_terms
        idx_parts, w_parts = [], []
        for term, times in counts.items():
            if not checked[term]:
                self.check_postings(term)
            lo, hi = indptr[term], indptr[term + 1]
            idx_parts.append(indices[lo:hi])
            w_parts.append(data[lo:hi] * times if times > 1 else data[lo:hi])
        return np.concatenate(idx_parts), np.concatenate(w_parts)

    def _scores(self, query_tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The documents sharing a query term (ascending) and their scores.

        A query with few postings (under an eighth of the documents) sorts its postings by
        document and adds each document's contributions (O(postings log postings)); one
        with many adds them into one slot per document (O(postings + n)). Either way
        ``bincount`` adds a document's contributions in the query's term order, starting
        from zero, so the sums are the same to the last bit.
        """
        idx, w = self._postings(query_tokens)
        return matched_scores(idx, w, len(self.docs))

    def score_tokens(self, query_tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every document for a tokenized query (zeros where nothing matches)."""
        idx, w = self._postings(query_tokens)
        return np.bincount(idx, weights=w, minlength=len(self.docs))

    def get_scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for a query string."""
        return self.score_tokens(self.tokenizer(query))

    def top_k_tokens(self, query_tokens: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Indices and scores of the ``k`` best documents that share a term with the query.

        Ties go to the earlier document, so results are reproducible.
        """
        matched, scores = self._scores(query_tokens)
        return top_k(matched, scores, k)

    @property
    def checked_terms(self) -> np.ndarray:
        """One flag per term: its postings were found in strictly increasing document order,
        every one in the index. Each term is checked the first time a query uses it (the
        compiled loop reads postings without bound checks), not at load, which stays
        well under a second at a million documents."""
        if self._checked is None:
            self._checked = np.zeros(self.weights.shape[1], dtype=np.bool_)
        return self._checked

    def _postings_file(self) -> Path | str:
        """Where the postings were read from, for errors."""
        if self.loaded_from is None:
            return "in memory"
        mapped = self.loaded_from / WEIGHT_ARRAYS[1]
        return mapped if mapped.exists() else self.loaded_from / "weights.npz"

    def check_postings(self, term: int) -> None:
        """Check ``term``'s postings (``checked_terms``) and flag them; postings out of document
        order or outside the index are an ``IndexFormatError`` naming the file and the term."""
        run = self.weights.indices[self.weights.indptr[term]:self.weights.indptr[term + 1]]
        if run.size and (run[0] < 0 or run[-1] >= len(self.docs) or not (run[1:] > run[:-1]).all()):
            name = next((t for t, i in self.vocab.items() if i == term), term)
            raise IndexFormatError(f"index {self._postings_file()}: the postings of term {name!r} are not in "
                                   f"document order within its {len(self.docs)} documents (a damaged file); "
                                   f"rebuild it with 'ragkit index build'")
        self.checked_terms[term] = True

    @property
    def positive_weights(self) -> bool:
        """Every (document, term) weight is above zero (so a score above zero means a shared
        term); false only for an IDF that goes negative on very common terms."""
        if self._positive is None:
            self._positive = bool(self.weights.data.size == 0 or self.weights.data.min() > 0)
        return self._positive

    def top_k_many(self, queries: Sequence[Sequence[str]], k: int, *, threads: int = 1,
                   compiled: bool | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
        """``top_k_tokens`` for a batch of tokenized queries, with the same results, compiled
        (numba, ``threads`` cores) when ``ragkit-workbench[fast]`` is installed and the batch
        is worth loading it for (``ragkit.retrieval.bm25_batch``: ``compiled``)."""
        from .bm25_batch import top_k_many

        return top_k_many(self, queries, k, threads=threads, compiled=compiled)

    def search(self, query: str, k: int = 10, *, boost: bool = False,
               candidates: int | None = None) -> list[Hit]:
        """The ``k`` best documents for ``query``.

        boost: add each document's boost (given at build, ``boost_scores``) to its score.
        candidates: rank this many (at least k) before cutting, e.g. 50 for MMR.
        """
        if k < 1:
            raise InputError(f"k: must be at least 1, got {k}")
        matched, bm25 = self._scores(self.tokenizer(query))
        if matched.size == 0:
            return []
        extra = self.boost[matched] if boost else np.zeros(matched.size)
        # ranked by position in ``matched``, which is ascending: ties still go to the
        # earlier document
        at, scores = top_k(np.arange(matched.size), bm25 + extra, max(k, candidates or k))
        hits = []
        for j, s in zip(at.tolist(), scores.tolist()):
            i = int(matched[j])
            d = self.docs[i]
            hits.append(Hit(index=i, doc_id=d.doc_id, score=float(s), bm25=float(bm25[j]),
                            boost=float(self.boost[i]) if boost else 0.0, text=d.text,
                            title=d.title, source=d.source))
        return hits

    def search_many(self, queries: Sequence[str], k: int = 10, *, boost: bool | Sequence[bool] = False,
                    threads: int = 1) -> list[list[Hit]]:
        """``search(query, k, boost=...)`` for every query, the same hits, ranked as one
        batch (``top_k_many``: compiled with ``ragkit-workbench[fast]``, on ``threads`` cores).
        ``boost`` is one for all or one per query; a boosted query is ranked alone by ``search``."""
        if k < 1:
            raise InputError(f"k: must be at least 1, got {k}")
        boosted = per_query(boost, len(queries))
        plain = [i for i, b in enumerate(boosted) if not b]
        ranked = self.top_k_many([self.tokenizer(queries[i]) for i in plain], k, threads=threads)
        out: list[list[Hit]] = [[] for _ in queries]
        for i, (order, scores) in zip(plain, ranked):
            hits = []
            for j, score in zip(order.tolist(), scores.tolist()):
                d = self.docs[j]
                hits.append(Hit(index=j, doc_id=d.doc_id, score=score, bm25=score, boost=0.0,
                                text=d.text, title=d.title, source=d.source))
            out[i] = hits
        for i, b in enumerate(boosted):
            if b:
                out[i] = self.search(queries[i], k, boost=True)
        return out

    def hit(self, doc_id: str, score: float) -> Hit:
        """A Hit for a document found another way (dense retrieval, fusion, the concept
        graph). The ids are read from the index's id list, not from every document."""
        if self._positions is None:
            ids = self.docs.ids() if isinstance(self.docs, DocBlocks) else None
            self._positions = {d: i for i, d in enumerate(ids)} if ids is not None else \
                {d.doc_id: i for i, d in enumerate(self.docs)}
        i = self._positions.get(doc_id)
        if i is None:
            raise InputError(f"document {doc_id!r}: not in this index (were its vectors built from another corpus?)")
        d = self.docs[i]
        return Hit(index=i, doc_id=doc_id, score=float(score), bm25=0.0, text=d.text, title=d.title,
                   source=d.source)

    def titled(self, title: str) -> Doc | None:
        """The first document whose title is ``title`` (case, accents and punctuation aside),
        else the first whose title is ``title`` and a bracketed qualifier ("Mara Quill
        (painter)"): what the corpus's own page on a name says."""
        if self._titles is None:
            self._titles = {}
            kept = self.docs.titles() if isinstance(self.docs, DocBlocks) else None
            firsts: Iterable[tuple[str, int]] = kept if kept is not None else \
                ((d.title, i) for i, d in enumerate(self.docs) if d.title)
            qualified: dict[str, int] = {}
            for written, i in firsts:
                self._titles.setdefault(_title_key(written), i)
                bare = _QUALIFIER.sub("", written)
                if bare != written:
                    qualified.setdefault(_title_key(bare), i)
            for key, i in qualified.items():
                self._titles.setdefault(key, i)
        first = self._titles.get(_title_key(title))
        return None if first is None else self.docs[first]

    def term_sets(self, indices: Sequence[int]) -> sp.csr_matrix:
        """Binary document × term incidence rows for ``indices`` (for Jaccard in MMR)."""
        if self._by_row is None:  # row-major copy, made once, for row slicing
            # scipy's conversion reads every posting without a bound check (queries check
            # only the terms they use: ``checked_terms``)
            postings = self.weights.indices
            if postings.size and (postings.min() < 0 or postings.max() >= len(self.docs)):
                raise IndexFormatError(f"index {self._postings_file()}: a posting names a document outside its "
                                       f"{len(self.docs)} documents (a damaged file); rebuild it with "
                                       f"'ragkit index build'")
            self._by_row = self.weights.tocsr()
        rows = self._by_row[np.asarray(indices, dtype=np.int64)]
        rows.data = np.ones_like(rows.data)
        return rows

    # ------------------------------------------------------------------ persistence
    def save(self, directory: str | Path) -> Path:
        """Write the index to ``directory`` atomically: a new version folder beside it, then
        one switch of the ``directory`` symlink (``stores.files.atomic_dir``). The chunk
        vectors (``directory/dense``) and concept graph (``directory/concepts``) of the
        current version are copied along; ``index build`` writes new ones into the version
        itself (``write_files``)."""
        directory = Path(directory)
        with atomic_dir(directory) as tmp:
            self.write_files(tmp, keep_from=directory)
        return directory

    def write_files(self, folder: str | Path, keep_from: str | Path | None = None) -> None:
        """The index's files in ``folder`` (a version being written); ``dense`` and
        ``concepts`` not already there are copied from the index at ``keep_from``."""
        tmp = Path(folder)
        if keep_from is not None:
            for kept in ("dense", "concepts"):       # built beside the index, kept with it
                if (Path(keep_from) / kept).is_dir() and not (tmp / kept).exists():
                    shutil.copytree(Path(keep_from) / kept, tmp / kept, symlinks=True)
        meta = {"format_version": FORMAT_VERSION, "ragkit_version": __version__,
                "params": asdict(self.params), "tokenizer": self.tokenizer.to_dict(),
                **{k: v for k, v in self.meta.items() if k not in ("format_version", "shape")},
                "shape": list(self.weights.shape)}
        terms = [""] * len(self.vocab)
        for term, i in self.vocab.items():
            terms[i] = term
        (tmp / "vocab.json").write_text(json.dumps(terms, ensure_ascii=False))
        np.save(tmp / "idf.npy", self.idf)
        np.save(tmp / "doc_len.npy", self.doc_len)
        np.save(tmp / "boost.npy", self.boost)
        weights = self.weights.tocsc()
        for name, array in zip(WEIGHT_ARRAYS, (weights.indptr, weights.indices, weights.data)):
            np.save(tmp / name, np.ascontiguousarray(array))
        if isinstance(self.docs, DocBlocks):       # already compressed: copied as they are
            for path in self.docs.files():
                shutil.copyfile(path, tmp / path.name)
        else:
            write_doc_blocks(self.docs, tmp)
        fault_point("index.files")
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False))

    @staticmethod
    def is_current(directory: str | Path) -> bool:
        """Whether ``directory`` holds an index this ragkit reads (its format version)."""
        try:
            meta = json.loads((Path(directory) / "meta.json").read_text())
        except (OSError, ValueError):
            return False
        return isinstance(meta, dict) and meta.get("format_version") == FORMAT_VERSION

    @classmethod
    def load(cls, directory: str | Path) -> "BM25Index":
        """Read an index written by ``save``; a missing or foreign folder is an error.

        The folder is resolved once, so every file comes from one version; should a save
        switch versions twice while this reads (and remove the one being read), it reads
        the new one."""
        for _ in range(3):
            resolved = Path(directory).resolve()
            try:
                return cls._load(Path(directory), resolved)
            except (OSError, IndexFormatError):
                if Path(directory).resolve() == resolved:
                    raise
        return cls._load(Path(directory), Path(directory).resolve())

    @classmethod
    def _load(cls, named: Path, directory: Path) -> "BM25Index":
        if not directory.is_dir():
            raise IndexFormatError(f"index {named}: no such folder (build it with 'ragkit index build')")
        missing = [f for f in _FILES if not (directory / f).exists()]
        blocks = all((directory / f).exists() for f in DOCS_FILES)
        if not blocks and not (directory / "docs.jsonl").exists():
            missing.append(BLOCKS_FILE)
        mapped = all((directory / f).exists() for f in WEIGHT_ARRAYS)
        if not mapped and not (directory / "weights.npz").exists():
            missing.append(WEIGHT_ARRAYS[0])
        if missing:
            raise IndexFormatError(f"index {named}: not a ragkit BM25 index (missing {', '.join(missing)})")
        meta = _read_index_file(directory / "meta.json", shown=named / "meta.json", parse=json.loads)
        if not isinstance(meta, dict) or meta.get("format_version") != FORMAT_VERSION:
            meta = meta if isinstance(meta, dict) else {}
            raise IndexFormatError(
                f"index {named}: format version {meta.get('format_version')!r}, this ragkit "
                f"reads {FORMAT_VERSION}; rebuild it with 'ragkit index build'")
        terms = _read_index_file(directory / "vocab.json", shown=named / "vocab.json", parse=json.loads)
        docs: DocBlocks | DocsFile = DocBlocks(directory, shown=named) if blocks else \
            DocsFile(directory / "docs.jsonl", shown=named / "docs.jsonl")
        docs.check()
        if mapped and "shape" in meta:      # memory-mapped: pages are read as the postings are
            indptr, indices, data = (np.load(directory / f, mmap_mode="r") for f in WEIGHT_ARRAYS)
            weights = sp.csc_matrix((data, indices, indptr), shape=tuple(meta["shape"]), copy=False)
        else:
            weights = sp.load_npz(directory / "weights.npz").tocsc()
        if weights.shape[0] != len(docs):
            raise IndexFormatError(f"index {docs.shown}: holds {len(docs)} documents, the index "
                                   f"{weights.shape[0]}; rebuild it with 'ragkit index build'")
        # each term's postings are checked as queries first use them (``checked_terms``); their
        # bounds here, as the compiled loop reads them unchecked
        if len(terms) != weights.shape[1]:
            raise IndexFormatError(f"index {named}: its vocabulary ({len(terms)} terms) and weight matrix "
                                   f"({weights.shape[1]} columns) do not agree (a damaged file); rebuild it "
                                   f"with 'ragkit index build'")
        if (np.diff(weights.indptr) < 0).any():
            raise IndexFormatError(f"index {named}: its postings' offsets ({WEIGHT_ARRAYS[0]}) go backwards "
                                   f"(a damaged file); rebuild it with 'ragkit index build'")
        index = cls(docs=docs, tokenizer=Tokenizer.from_dict(meta["tokenizer"]),
                   params=BM25Params(**meta["params"]),
                   vocab={t: i for i, t in enumerate(terms)},
                   idf=np.load(directory / "idf.npy"), doc_len=np.load(directory / "doc_len.npy", mmap_mode="r"),
                   weights=weights, boost=np.load(directory / "boost.npy", mmap_mode="r"), meta=meta)
        index.loaded_from = directory        # the version read: its vectors belong to it
        return index


def _tokenize(tokenizer: Tokenizer, texts: list[str]) -> list[list[str]]:
    return [tokenizer(text) for text in texts]


def _block_docs(doc_iter, kept: Sequence[Doc] | None, start: int, n: int,
                writer: DocBlockWriter | None) -> Sequence[Doc] | None:
    """The next ``n`` documents (from ``start``) of a build: sliced from ``kept``, or read
    from ``doc_iter`` and written by ``writer``; None when the build has no documents."""
    if kept is not None:
        return kept[start:start + n]
    if doc_iter is None:
        return None
    block = list(islice(doc_iter, n))
    if len(block) != n:
        raise InputError(f"corpus: {start + len(block)} documents for more token lists")
    assert writer is not None
    writer.add_all(block)
    return block


def _read_index_file(path: Path, parse, shown: Path | None = None):
    """``parse`` of an index file's text; a file that cannot be read, is not UTF-8 or does
    not parse is a one-line IndexFormatError naming it (as ``shown``, the path the user gave)."""
    name = shown or path
    try:
        return parse(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise IndexFormatError(f"index {name}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise IndexFormatError(f"index {name}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at "
                               f"offset {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise IndexFormatError(f"index {name}: not JSON ({exc.msg} at line {exc.lineno})") from None
    except (TypeError, ValueError) as exc:
        raise IndexFormatError(f"index {name}: not a ragkit index file ({exc})") from None


_QUALIFIER = re.compile(r"\s*\([^()]*\)\s*$")     # "(painter)" after a title's name


def _title_key(title: str) -> str:
    return " ".join(re.findall(r"\w+", title.casefold()))


def per_query(boost: bool | Sequence[bool], n: int) -> list[bool]:
    """``boost`` for each of ``n`` queries: one value for all, or one each."""
    if isinstance(boost, bool):
        return [boost] * n
    if len(boost) != n:
        raise InputError(f"boost: {len(boost)} values for {n} queries")
    return [bool(b) for b in boost]
