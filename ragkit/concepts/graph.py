"""The concept graph of a corpus: chunk nodes, concept nodes, MENTIONS edges (chunk – concept)
and weighted CO_OCCURS edges (concept – concept, in the same sentence).

Kept in ``<index>/concepts/`` beside the BM25 index (``ragkit index build --concepts``):

- ``extractions.jsonl``: per chunk, the hash of its text and the concepts found in it. A
  rebuild extracts again only the chunks whose hash changed; a chunk no longer in the corpus
  leaves with its mentions.
- ``graph.json.gz``: the networkx graph (node-link JSON, gzip'd), for notebooks and for
  anyone who wants to read it with networkx.

Concepts in more than ``hub_share`` of the chunks (and at least ``HUB_MIN_CHUNKS``) are
hubs: they say little about any one chunk and would let PageRank's mass reach everything,
so they get no node (they are listed in the header). A co-occurrence edge weighs
``count / sqrt(df_a · df_b)``: the number of sentences holding both, over what their chunk
frequencies would give by chance (a cosine between the two concepts' chunk sets).
"""

from __future__ import annotations

import gc
import gzip
import hashlib
import json
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from itertools import chain, islice
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import scipy.sparse as sp
from ..runtime.progress import progress_bar

from ..corpus import Doc
from ..errors import IndexFormatError, InputError
from ..stores.files import atomic_dir
from ..text import document_language
from .extract import abbreviations, extract_concepts

FORMAT = "ragkit-concepts"
VERSION = 1
EXTRACTOR = "rules-7"          # changes when extraction changes: every chunk is extracted again
HUB_SHARE = 0.05               # a concept in more than 5% of the chunks is a hub ...
HUB_MIN_CHUNKS = 20            # ... if that is at least 20 chunks (small corpora keep theirs)
MAX_PAIRS_PER_SENTENCE = 12    # concepts per sentence paired (the first met): bounds the edges
PARALLEL_FROM = 20_000         # chunks to extract from which the build uses a process per core ...
PARALLEL_BATCH = 500           # ... handing each this many chunks at a time


def chunk_hash(doc: Doc, terms: Sequence[str] = ()) -> str:
    """What a chunk's concepts depend on: the extractor, the term list and the chunk's text."""
    digest = hashlib.sha1(f"{EXTRACTOR}\0{len(terms)}\0{doc.full_text}".encode("utf-8"))
    return digest.hexdigest()[:16]


@dataclass
class ConceptGraphReport:
    chunks: int
    concepts: int
    hubs: int
    mentions: int
    cooccurrences: int
    extracted: int
    reused: int
    removed: int
    seconds: float


@dataclass
class ConceptGraph:
    """Chunks (in index order), concepts, and the sparse matrices PageRank walks on.

    ``mentions`` is chunks × concepts (1 where a chunk mentions a concept); ``cooccurs`` is
    concepts × concepts (the CO_OCCURS weights). Concept ``i`` has key ``keys[i]``, label
    ``labels[i]`` and chunk frequency ``df[i]``.
    """

    chunk_ids: list[str]
    keys: list[str]
    labels: list[str]
    df: np.ndarray
    mentions: sp.csr_matrix
    cooccurs: sp.csr_matrix
    aliases: dict[str, str] = field(default_factory=dict)     # alias key -> concept key
    hubs: list[str] = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    _position: dict | None = field(default=None, repr=False)
    _chunk_position: dict | None = field(default=None, repr=False)
    _by_concept: sp.csc_matrix | None = field(default=None, repr=False)

    # ------------------------------------------------------------------ lookups
    @property
    def position(self) -> dict[str, int]:
        if self._position is None:
            self._position = {k: i for i, k in enumerate(self.keys)}
        return self._position

    @property
    def chunk_position(self) -> dict[str, int]:
        if self._chunk_position is None:
            self._chunk_position = {c: i for i, c in enumerate(self.chunk_ids)}
        return self._chunk_position

    def concept_of(self, key: str) -> int | None:
        """The concept a key names, through its alias when it has one."""
        key = self.aliases.get(key, key)
        return self.position.get(key)

    def concepts_of_chunk(self, row: int) -> np.ndarray:
        return self.mentions.indices[self.mentions.indptr[row]:self.mentions.indptr[row + 1]]

    @property
    def by_concept(self) -> sp.csc_matrix:
        """``mentions`` in CSC form (a concept's chunks are its column), made once."""
        if self._by_concept is None:
            self._by_concept = self.mentions.tocsc()
            self._by_concept.sort_indices()
        return self._by_concept

    def chunks_mentioning(self, concept: int, among=None) -> np.ndarray:
        """Rows of the chunks that mention ``concept``, in order (only those in ``among``, a
        set of rows, when given). A column of ``mentions`` read from its CSC copy, made once:
        slicing a column out of the CSR matrix reads every row."""
        by = self.by_concept
        rows = by.indices[by.indptr[concept]:by.indptr[concept + 1]]
        if among is not None:
            rows = rows[np.isin(rows, np.fromiter(among, np.int64, len(among)))]
        return rows

    @property
    def n_edges(self) -> int:
        return int(self.mentions.nnz + self.cooccurs.nnz // 2)

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, docs: Sequence[Doc], *, previous: dict[str, dict] | None = None,
              terms: Sequence[str] = (), hub_share: float = HUB_SHARE,
              progress: bool | None = None, what: str = "corpus",
              workers: int | None = None) -> tuple["ConceptGraph", dict, ConceptGraphReport]:
        """Extract (or reuse, from ``previous``: {chunk id: extraction row}) every chunk's
        concepts and make the graph. Returns the graph, the extraction rows to keep, and a
        report. An empty corpus, or one where no chunk has a concept, is an error naming ``what``.
        ``workers``: processes extracting at once (None: one per usable core, or
        ``RAGKIT_THREADS``; a corpus of fewer than ``PARALLEL_FROM`` chunks to extract is
        done in this process)."""
        started = time.perf_counter()
        docs = list(docs)
        if not docs:
            raise InputError(f"{what}: holds no documents")
        previous = previous or {}
        rows: dict[str, dict] = {}
        extracted = reused = 0
        with _collector_paused():
            todo: list[Doc] = []
            digests: dict[str, str] = {}
            for doc in docs:
                digest = chunk_hash(doc, terms)
                old = previous.get(doc.doc_id)
                if old is not None and old.get("hash") == digest:
                    rows[doc.doc_id] = old
                    reused += 1
                else:
                    todo.append(doc)
                    digests[doc.doc_id] = digest
            for doc, row in zip(todo, _extract_all(todo, tuple(terms), progress, workers)):
                rows[doc.doc_id] = {"hash": digests[doc.doc_id], **row}
            extracted = len(todo)
            rows = {d.doc_id: rows[d.doc_id] for d in docs}        # in the corpus's order
            removed = len(set(previous) - set(rows))
            graph = cls.from_extractions([d.doc_id for d in docs], rows, hub_share=hub_share, what=what)
        seconds = round(time.perf_counter() - started, 4)
        graph.meta.update({"build_s": seconds, "extractor": EXTRACTOR})
        report = ConceptGraphReport(chunks=len(docs), concepts=len(graph.keys), hubs=len(graph.hubs),
                             mentions=int(graph.mentions.nnz), cooccurrences=int(graph.cooccurs.nnz // 2),
                             extracted=extracted, reused=reused, removed=removed, seconds=seconds)
        return graph, rows, report

    @classmethod
    def from_extractions(cls, chunk_ids: Sequence[str], rows: dict[str, dict], *,
                         hub_share: float = HUB_SHARE, what: str = "corpus") -> "ConceptGraph":
        """The graph of extraction rows (``build``'s): aliases merged, hubs cut, edges weighed."""
        aliases: dict[str, str] = {}
        for cid in chunk_ids:
            for short, long_form in rows[cid].get("abbreviations", {}).items():
                if short != long_form:
                    aliases.setdefault(short, long_form)
        # Every concept entry of every row, flat (the counting below is numpy's): its chunk,
        # its concept (the key after aliases, numbered in the order first met), its label
        # (numbered likewise), whether the rule was "initial", and its sentences.
        entries = [e for cid in chunk_ids for e in rows[cid]["concepts"]]
        chunk = np.repeat(np.arange(len(chunk_ids)), [len(rows[cid]["concepts"]) for cid in chunk_ids])
        concept, names = _numbered([aliases.get(e[0], e[0]) for e in entries] if aliases else [e[0] for e in entries])
        label_of, label_names = _numbered([e[1] for e in entries])
        initial = np.fromiter((e[2] == "initial" for e in entries), bool, len(entries))
        n_sentences = np.fromiter((len(e[3]) for e in entries), np.int64, len(entries))
        sentence = np.fromiter(chain.from_iterable(e[3] for e in entries), np.int64, int(n_sentences.sum()))
        del entries
        # A single capitalised word opening a sentence ("Currently", "Average") is a name only
        # if the corpus also writes it that way elsewhere, or finds it by another rule.
        confirmed = np.zeros(len(names), bool)
        confirmed[concept[~initial]] = True
        if not confirmed.any():
            raise InputError(f"{what}: no concept found in any of its {len(chunk_ids)} chunks "
                             "(no names, noun phrases or terms to build a concept graph from)")
        # Each (chunk, concept) once, at its first entry: that entry's number orders the
        # chunk's concepts as they were first met.
        _, first, inverse = np.unique(chunk * len(names) + concept, return_index=True, return_inverse=True)
        met = first[inverse.ravel()]                        # per entry: the first entry of its pair
        first = first[confirmed[concept[first]]]
        df_all = np.bincount(concept[first], minlength=len(names))
        limit = max(HUB_MIN_CHUNKS, hub_share * len(chunk_ids))
        hubs = sorted(names[c] for c in np.flatnonzero(df_all > limit))
        keys = sorted(names[c] for c in np.flatnonzero(confirmed & (df_all <= limit)))
        position = {k: i for i, k in enumerate(keys)}
        ids = {k: i for i, k in enumerate(names)}
        place = np.full(len(names), -1, dtype=np.int64)     # concept -> its column (-1: a hub, or none)
        place[[ids[k] for k in keys]] = np.arange(len(keys))
        labels = _labels(place[concept], label_of, label_names, len(keys))
        n, m = len(chunk_ids), len(keys)
        kept = first[place[concept[first]] >= 0]
        dfa = df_all[[ids[k] for k in keys]].astype(np.float64)
        a, b, counts = _sentence_pairs(np.repeat(chunk, n_sentences), sentence,
                                       np.repeat(met, n_sentences),
                                       np.repeat(place[concept], n_sentences), m)
        w = counts.astype(np.float64) / np.sqrt(dfa[a] * dfa[b]) if len(counts) else np.zeros(0)
        mentions, cooccurs = edge_matrices(n, m, chunk[kept], place[concept[kept]], a, b, w)
        return cls(chunk_ids=list(chunk_ids), keys=keys, labels=labels, df=dfa, mentions=mentions,
                   cooccurs=cooccurs, aliases={k: v for k, v in aliases.items() if v in position},
                   hubs=hubs, meta={"chunks": n, "concepts": m, "hub_limit": limit}, _position=position)

    # ------------------------------------------------------------------ networkx
    def to_networkx(self):
        """The graph as networkx: nodes ``chunk:<id>`` (kind chunk) and ``concept:<key>``
        (kind concept, label, df); edges MENTIONS (chunk – concept) and CO_OCCURS (weight)."""
        import networkx as nx

        g = nx.Graph()
        g.add_nodes_from((f"chunk:{c}", {"kind": "chunk"}) for c in self.chunk_ids)
        g.add_nodes_from((f"concept:{k}", {"kind": "concept", "label": label, "df": int(d)})
                         for k, label, d in zip(self.keys, self.labels, self.df))
        coo = self.mentions.tocoo()
        g.add_edges_from((f"chunk:{self.chunk_ids[r]}", f"concept:{self.keys[c]}", {"relation": "MENTIONS"})
                         for r, c in zip(coo.row, coo.col))
        coo = sp.triu(self.cooccurs, k=1).tocoo()
        g.add_edges_from((f"concept:{self.keys[a]}", f"concept:{self.keys[b]}",
                          {"relation": "CO_OCCURS", "weight": round(float(w), 6)})
                         for a, b, w in zip(coo.row, coo.col, coo.data))
        return g

    # ------------------------------------------------------------------ persistence
    def save(self, directory: str | Path, rows: dict[str, dict]) -> Path:
        """Write ``extractions.jsonl``, ``graph.json.gz`` and ``meta.json`` atomically."""
        directory = Path(directory)
        with atomic_dir(directory) as tmp:
            self.write_files(tmp, rows)
        return directory

    def write_files(self, folder: str | Path, rows: dict[str, dict]) -> None:
        """The graph's files in ``folder`` (an index version being written)."""
        tmp = Path(folder)
        tmp.mkdir(parents=True, exist_ok=True)
        with (tmp / "extractions.jsonl").open("w", encoding="utf-8") as handle:
            for cid in self.chunk_ids:
                handle.write(json.dumps({"chunk_id": cid, **rows[cid]}, ensure_ascii=False) + "\n")
        self._write_node_link(tmp / "graph.json.gz")
        (tmp / "meta.json").write_text(json.dumps({"format": FORMAT, "version": VERSION,
                                                   **self.meta}, indent=2) + "\n")

    def _write_node_link(self, path: Path) -> None:
        """``graph.json.gz``: {"format", "version", "aliases", "hubs", "graph"}, the graph as
        ``nx.node_link_data(self.to_networkx(), edges="edges")`` gives it (the same JSON text),
        written piece by piece from the matrices: a corpus of 100,000 chunks has millions of
        edges, too many to hold as a networkx graph and its node-link copy just to save them."""
        dump = partial(json.dumps, ensure_ascii=False)
        chunks = [dump(f"chunk:{c}") for c in self.chunk_ids]
        concepts = [dump(f"concept:{k}") for k in self.keys]
        head = dump({"format": FORMAT, "version": VERSION, "aliases": self.aliases, "hubs": self.hubs})
        nodes = chain((f'{{"kind": "chunk", "id": {c}}}' for c in chunks),
                      (f'{{"kind": "concept", "label": {dump(label)}, "df": {d}, "id": {c}}}'
                       for c, label, d in zip(concepts, self.labels, self.df.astype(np.int64).tolist())))
        mentions, pairs = self.mentions.tocoo(), sp.triu(self.cooccurs, k=1).tocoo()
        edges = chain((f'{{"relation": "MENTIONS", "source": {chunks[r]}, "target": {concepts[c]}}}'
                       for r, c in zip(mentions.row.tolist(), mentions.col.tolist())),
                      (f'{{"relation": "CO_OCCURS", "weight": {round(w, 6)!r}, "source": {concepts[a]}, '
                       f'"target": {concepts[b]}}}'
                       for a, b, w in zip(pairs.row.tolist(), pairs.col.tolist(), pairs.data.tolist())))
        with gzip.open(path, "wt", encoding="utf-8", compresslevel=6) as out:
            out.write(head[:-1] + ', "graph": {"directed": false, "multigraph": false, "graph": {}, "nodes": [')
            _write_joined(out, nodes)
            out.write('], "edges": [')
            _write_joined(out, edges)
            out.write("]}}")

    @classmethod
    def load(cls, directory: str | Path) -> "ConceptGraph":
        """The graph of a folder ``save`` wrote, rebuilt from its extractions (the same
        arithmetic as the build, so the two cannot disagree)."""
        directory = Path(directory)
        rows = read_extractions(directory)
        if rows is None:
            raise IndexFormatError(f"concepts {directory}: no concept graph here "
                                   "(build it with 'ragkit index build --concepts')")
        meta = json.loads((directory / "meta.json").read_text())
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise IndexFormatError(f"concepts {directory}: not a ragkit concept graph of version {VERSION}; "
                                   "rebuild it with 'ragkit index build --concepts'")
        graph = cls.from_extractions(list(rows), rows)
        graph.meta.update(meta)
        return graph


def edge_matrices(n_chunks: int, n_concepts: int, mention_rows, mention_cols,
                  pair_a, pair_b, weights) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """The MENTIONS matrix (chunks × concepts, 1 per mention) and the symmetric CO_OCCURS
    matrix (each pair ``a < b`` once in, both directions out), in canonical CSR form: every
    reader of a graph (the build, a Neo4j store) makes them here, so they walk identically."""
    mentions = sp.csr_matrix((np.ones(len(mention_rows)), (mention_rows, mention_cols)),
                             shape=(n_chunks, n_concepts))
    mentions.sum_duplicates()
    mentions.data[:] = 1.0
    if len(weights):
        cooccurs = sp.coo_matrix((np.r_[weights, weights], (np.r_[pair_a, pair_b], np.r_[pair_b, pair_a])),
                                 shape=(n_concepts, n_concepts)).tocsr()
    else:
        cooccurs = sp.csr_matrix((n_concepts, n_concepts))
    return mentions, cooccurs


def read_extractions(directory: str | Path) -> dict[str, dict] | None:
    """{chunk id: extraction row} of a saved concept graph, or None when there is none."""
    path = Path(directory) / "extractions.jsonl"
    if not path.is_file():
        return None
    rows, intern = {}, sys.intern
    with path.open(encoding="utf-8") as handle, _collector_paused():
        for line in handle:
            if line.strip():
                row = json.loads(line)
                # One copy of each string, as ``_entry`` keeps them.
                row["concepts"] = [[intern(k), intern(label), intern(how), s] for k, label, how, s in row["concepts"]]
                rows[row.pop("chunk_id")] = row
    return rows


def extract_row(doc: Doc, terms: Sequence[str] = ()) -> dict:
    """One chunk's extraction row, without its hash: its abbreviations and its concepts."""
    text = doc.full_text
    found = extract_concepts(text, language=document_language(text), terms=terms, title=doc.title)
    return {"abbreviations": abbreviations(text),
            "concepts": [_entry(m.key, m.label, m.how, list(m.sentences)) for m in found]}


def _extract_batch(batch: list[Doc], terms: tuple[str, ...]) -> list[dict]:
    return [extract_row(doc, terms) for doc in batch]


def _extract_all(docs: list[Doc], terms: tuple[str, ...], progress: bool | None,
                 workers: int | None) -> Iterator[dict]:
    """``extract_row`` of each of ``docs``, in order: in this process, or in ``workers``
    processes taking batches of ``PARALLEL_BATCH`` chunks, when there are ``PARALLEL_FROM``
    or more. The workers are forked where the system can (they only run the rules on text),
    so that a script or notebook without a ``__main__`` guard works as it did."""
    from ..runtime.threads import thread_count

    workers = thread_count() if workers is None else max(1, workers)
    bar = progress_bar(total=len(docs), desc="concepts", unit="chunk", progress=progress)
    try:
        if workers == 1 or len(docs) < PARALLEL_FROM:
            for doc in docs:
                yield extract_row(doc, terms)
                bar.update(1)
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        batches = [docs[i:i + PARALLEL_BATCH] for i in range(0, len(docs), PARALLEL_BATCH)]
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(method)) as pool:
            for batch, rows in zip(batches, pool.map(_extract_batch, batches, [terms] * len(batches))):
                for row in rows:            # one copy of each string in this process too
                    row["concepts"] = [_entry(*entry) for entry in row["concepts"]]
                    yield row
                bar.update(len(batch))
    finally:
        bar.close()


def _entry(key: str, label: str, how: str, sentences: list) -> list:
    """One concept of an extraction row, its strings interned: a corpus writes the same
    concepts in chunk after chunk, and one copy of each string keeps the rows of 100,000
    chunks about a third smaller."""
    return [sys.intern(key), sys.intern(label), sys.intern(how), sentences]


@contextmanager
def _collector_paused():
    """Python's cycle collector off while a block makes millions of small objects that hold
    no cycles (extraction rows, their JSON): each of its full passes would walk all of them
    again (reading 100,000 rows takes 5 times as long with it on). On again afterwards."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _write_joined(out, items, batch: int = 65536) -> None:
    """``out.write(", ".join(items))``, a batch at a time."""
    first = True
    for piece in iter(lambda: list(islice(items, batch)), []):
        out.write(("" if first else ", ") + ", ".join(piece))
        first = False


def _numbered(values: list) -> tuple[np.ndarray, list]:
    """Each value's number (distinct values numbered in the order first met), and the
    distinct values."""
    distinct = list(dict.fromkeys(values))
    number = dict(zip(distinct, range(len(distinct))))
    return np.fromiter(map(number.__getitem__, values), np.int64, len(values)), distinct


def _labels(column: np.ndarray, label_of: np.ndarray, label_names: list[str], m: int) -> list[str]:
    """Each concept's label: the way it is most often written (capitalised first on a tie:
    names; then the shorter; then the first met). ``column`` and ``label_of`` hold, per
    entry in the order met, its concept's column (-1: none) and its label's number."""
    kept = np.flatnonzero(column >= 0)
    pair, first, count = np.unique(column[kept] * len(label_names) + label_of[kept],
                                   return_index=True, return_counts=True)
    concept, label = pair // len(label_names), pair % len(label_names)
    upper = np.fromiter((x[:1].isupper() for x in label_names), bool, len(label_names))[label]
    length = np.fromiter((len(x) for x in label_names), np.int64, len(label_names))[label]
    # Best first within each concept: most entries, capitalised, shortest, first met.
    order = np.lexsort((first, length, ~upper, -count, concept))
    labels = [""] * m
    if len(order):
        best = order[np.r_[True, concept[order][1:] != concept[order][:-1]]]
        for c, x in zip(concept[best].tolist(), label[best].tolist()):
            labels[c] = label_names[x]
    return labels


def _sentence_pairs(chunk: np.ndarray, sentence: np.ndarray, order: np.ndarray, concept: np.ndarray,
                    m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CO_OCCURS counts: for each sentence (chunk, sentence number), its first
    ``MAX_PAIRS_PER_SENTENCE`` concepts (in ``order``: the order the chunk first met them),
    those without a column (``concept`` -1: hubs) left out, paired; returns the pairs
    (a < b) and how many sentences hold each."""
    keep = concept >= 0
    if not keep.any():
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    chunk, sentence, order, concept = chunk[keep], sentence[keep], order[keep], concept[keep]
    by = np.lexsort((order, sentence, chunk))
    chunk, sentence, order, concept = chunk[by], sentence[by], order[by], concept[by]
    new_group = np.r_[True, (chunk[1:] != chunk[:-1]) | (sentence[1:] != sentence[:-1])]
    fresh = new_group | np.r_[True, order[1:] != order[:-1]]     # a concept once per sentence
    new_group, concept = new_group[fresh], concept[fresh]
    starts = np.flatnonzero(new_group)
    sizes = np.minimum(np.diff(np.r_[starts, len(concept)]), MAX_PAIRS_PER_SENTENCE)
    codes = []
    for size in np.unique(sizes[sizes >= 2]):
        first = starts[sizes == size][:, None]
        i, j = np.triu_indices(int(size), k=1)
        x, y = concept[first + i].ravel(), concept[first + j].ravel()
        codes.append(np.minimum(x, y) * m + np.maximum(x, y))
    if not codes:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    code, counts = np.unique(np.concatenate(codes), return_counts=True)
    return code // m, code % m, counts

