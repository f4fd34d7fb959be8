"""The concept graph of a corpus: chunk nodes, concept nodes, MENTIONS edges (chunk – concept)
and weighted CO_OCCURS edges (concept – concept, in the same sentence).

Kept in ``<index>/concepts/`` beside the BM25 index (``ragkit index build --concepts``):

- ``extractions.jsonl``: per chunk, the hash of its text and the concepts found in it. A
  rebuild extracts again only the chunks whose hash changed; a chunk no longer in the corpus
  leaves with its mentions.
- ``graph.json.gz``: the networkx graph (node-link JSON, gzip'd), for notebooks and for
  anyone who wants to read it with networkx.
- ``graph.npz`` and ``names.json``: the same graph as its sparse matrices and its names, what
  a query process loads (assembling it from the extractions again took seconds at 10,000
  chunks and minutes at a million). ``names.json`` also keeps the linker's keys of the labels
  and aliases (``linking.surface_keys``, with their ``KEY_VERSION``): computing them again
  took about 1 s of a question's cold start at 100,000 chunks.

Concepts in more than ``hub_share`` of the chunks (and at least ``HUB_MIN_CHUNKS``) are
hubs: they say little about any one chunk and would let PageRank's mass reach everything,
so they get no node (they are listed in the header). A co-occurrence edge weighs
``count / sqrt(df_a · df_b)``: the number of sentences holding both, over what their chunk
frequencies would give by chance (a cosine between the two concepts' chunk sets).
"""

from __future__ import annotations

import gzip
import json
import time
from array import array
from dataclasses import dataclass, field
from functools import partial
from itertools import chain, islice
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from ..corpus import Doc
from ..errors import IndexFormatError, InputError
from ..text.linking import KEY_VERSION, Surface, surface_keys
from ..runtime.collector import collector_paused
from ..stores.files import atomic_dir
from .extractions import (EXTRACTOR, ExtractionRows, chunk_hash, extract_all, extract_batch, jsonl_line,
                          read_extractions, text_of, unchanged_row)

if TYPE_CHECKING:
    from ..runtime.ray_engine import RayEngine

FORMAT = "ragkit-concepts"
VERSION = 1
HUB_SHARE = 0.05               # a concept in more than 5% of the chunks is a hub ...
HUB_MIN_CHUNKS = 20            # ... if that is at least 20 chunks (small corpora keep theirs)
MAX_PAIRS_PER_SENTENCE = 12    # concepts per sentence paired (the first met): bounds the edges
ARRAYS, NAMES = "graph.npz", "names.json"   # the assembled graph, as ``load`` reads it


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
    # the linker's keys of the labels, then of the aliases (``link_surfaces``), when a saved
    # graph of this KEY_VERSION had them; None: computed when a linker is made
    link_keys: list[str] | None = field(default=None, repr=False)
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

    def link_surfaces(self) -> list[Surface]:
        """The labels and the aliases as a linker's surfaces (target: the concept's number),
        in the order ``link_keys`` keeps their keys."""
        with collector_paused():
            surfaces = [Surface(label, str(i), "concept") for i, label in enumerate(self.labels)]
            surfaces += [Surface(alias, str(self.position[key]), "alias") for alias, key in self.aliases.items()]
        return surfaces

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
    def build(cls, docs: Sequence[Doc], *, previous: Mapping[str, dict] | None = None,
              terms: Sequence[str] = (), hub_share: float = HUB_SHARE,
              progress: bool | None = None, what: str = "corpus", workers: int | None = None,
              engine: RayEngine | None = None) -> tuple["ConceptGraph", "ExtractionRows", ConceptGraphReport]:
        """Extract (or reuse, from ``previous``: {chunk id: extraction row}) every chunk's
        concepts and make the graph. Returns the graph, the extraction rows to keep
        (``ExtractionRows``), and a report. An empty corpus, or one where no chunk has a
        concept, is an error naming ``what``.
        ``workers``: processes extracting at once (None: one per usable core, or
        ``RAGKIT_THREADS``; a corpus of fewer than ``extractions.PARALLEL_FROM`` chunks to extract is
        done in this process); ``engine``: a ``RayEngine`` whose workers extract instead."""
        started = time.perf_counter()
        docs = list(docs)
        if not docs:
            raise InputError(f"{what}: holds no documents")
        previous = previous or {}
        texts: dict[str, str] = {}
        extracted = reused = 0
        with collector_paused():
            todo: list[Doc] = []
            digests: dict[str, str] = {}
            for doc in docs:
                digest = chunk_hash(doc, terms)
                old = unchanged_row(previous, doc.doc_id, digest)
                if old is not None:
                    texts[doc.doc_id] = old
                    reused += 1
                else:
                    todo.append(doc)
                    digests[doc.doc_id] = digest
            extracted_texts = engine.map(partial(extract_batch, terms=tuple(terms)), todo, stage="concepts") \
                if engine is not None and todo else extract_all(todo, tuple(terms), progress, workers)
            for doc, text in zip(todo, extracted_texts):
                texts[doc.doc_id] = f'{{"hash": "{digests[doc.doc_id]}", {text[1:]}'
            extracted = len(todo)
            rows = ExtractionRows({d.doc_id: texts[d.doc_id] for d in docs})     # in the corpus's order
            del texts
            removed = len(set(previous) - set(rows))
            graph = cls.from_extractions([d.doc_id for d in docs], rows, hub_share=hub_share, what=what)
        seconds = round(time.perf_counter() - started, 4)
        graph.meta.update({"build_s": seconds, "extractor": EXTRACTOR})
        report = ConceptGraphReport(chunks=len(docs), concepts=len(graph.keys), hubs=len(graph.hubs),
                             mentions=int(graph.mentions.nnz), cooccurrences=int(graph.cooccurs.nnz // 2),
                             extracted=extracted, reused=reused, removed=removed, seconds=seconds)
        return graph, rows, report

    @classmethod
    def from_extractions(cls, chunk_ids: Sequence[str], rows: Mapping[str, dict], *,
                         hub_share: float = HUB_SHARE, what: str = "corpus") -> "ConceptGraph":
        """The graph of extraction rows (``build``'s): aliases merged, hubs cut, edges weighed."""
        # One pass over the rows, each read once, into flat arrays (the counting below is
        # numpy's): per concept entry, its chunk (by count per chunk), its key and its label
        # (numbered in the order first met), whether the rule was "initial", and its sentences.
        aliases: dict[str, str] = {}
        key_ids: dict[str, int] = {}
        label_ids: dict[str, int] = {}
        per_chunk, key_column, label_column = array("q"), array("q"), array("q")
        sentence_counts, sentence_column, initial_column = array("q"), array("q"), bytearray()
        with collector_paused():
            for cid in chunk_ids:
                row = rows[cid]
                for short, long_form in row.get("abbreviations", {}).items():
                    if short != long_form:
                        aliases.setdefault(short, long_form)
                concepts = row["concepts"]
                per_chunk.append(len(concepts))
                for key, label, how, sentences in concepts:
                    key_column.append(key_ids.setdefault(key, len(key_ids)))
                    label_column.append(label_ids.setdefault(label, len(label_ids)))
                    initial_column.append(how == "initial")
                    sentence_counts.append(len(sentences))
                    sentence_column.extend(sentences)
        # A key's concept is its long form where an abbreviation names one (numbered in the
        # order first met, as the keys are).
        concept_of_key, names = _numbered([aliases.get(k, k) for k in key_ids] if aliases else list(key_ids))
        concept = concept_of_key[np.frombuffer(key_column, np.int64)] if key_column else np.zeros(0, np.int64)
        label_of = np.frombuffer(label_column, np.int64)
        label_names = list(label_ids)
        chunk = np.repeat(np.arange(len(chunk_ids)), np.frombuffer(per_chunk, np.int64))
        initial = np.frombuffer(initial_column, np.uint8).astype(bool)
        n_sentences = np.frombuffer(sentence_counts, np.int64)
        sentence = np.frombuffer(sentence_column, np.int64)
        del key_ids, label_ids
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
    def save(self, directory: str | Path, rows: Mapping[str, dict]) -> Path:
        """Write ``extractions.jsonl``, ``graph.json.gz`` and ``meta.json`` atomically."""
        directory = Path(directory)
        with atomic_dir(directory) as tmp:
            self.write_files(tmp, rows)
        return directory

    def write_files(self, folder: str | Path, rows: Mapping[str, dict]) -> None:
        """The graph's files in ``folder`` (an index version being written)."""
        tmp = Path(folder)
        tmp.mkdir(parents=True, exist_ok=True)
        with (tmp / "extractions.jsonl").open("w", encoding="utf-8") as handle:
            for cid in self.chunk_ids:
                handle.write(jsonl_line(cid, text_of(rows, cid)) + "\n")
        self._write_node_link(tmp / "graph.json.gz")
        self._write_arrays(tmp)
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

    def _write_arrays(self, folder: Path) -> None:
        """``graph.npz`` (the two matrices in CSR parts, and ``df``) and ``names.json`` (the
        chunk ids, concept keys and labels, aliases and hubs): what ``load`` reads, so that a
        fresh process has the graph without assembling it from the extractions again."""
        np.savez(folder / ARRAYS, mentions_indptr=self.mentions.indptr, mentions_indices=self.mentions.indices,
                 cooccurs_indptr=self.cooccurs.indptr, cooccurs_indices=self.cooccurs.indices,
                 cooccurs_data=self.cooccurs.data, df=self.df)
        link_keys = self.link_keys if self.link_keys is not None else surface_keys(chain(self.labels, self.aliases))
        names = {"chunk_ids": self.chunk_ids, "keys": self.keys, "labels": self.labels,
                 "aliases": self.aliases, "hubs": self.hubs,
                 "link_keys": {"version": KEY_VERSION, "keys": link_keys}}
        (folder / NAMES).write_text(json.dumps(names, ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, directory: str | Path) -> "ConceptGraph":
        """The graph of a folder ``save`` wrote: its matrices and names as the build left
        them, or, in a folder written before they were kept, rebuilt from its extractions
        (the same arithmetic as the build)."""
        directory = Path(directory)
        if not (directory / "extractions.jsonl").is_file():
            raise IndexFormatError(f"concepts {directory}: no concept graph here "
                                   "(build it with 'ragkit index build --concepts')")
        meta = json.loads((directory / "meta.json").read_text())
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise IndexFormatError(f"concepts {directory}: not a ragkit concept graph of version {VERSION}; "
                                   "rebuild it with 'ragkit index build --concepts'")
        if (directory / ARRAYS).is_file() and (directory / NAMES).is_file():
            graph = cls._read_arrays(directory)
        else:
            rows = read_extractions(directory)
            assert rows is not None, "extractions.jsonl is there"
            graph = cls.from_extractions(list(rows), rows)
        graph.meta.update(meta)
        return graph

    @classmethod
    def _read_arrays(cls, directory: Path) -> "ConceptGraph":
        with collector_paused():
            names = json.loads((directory / NAMES).read_text(encoding="utf-8"))
        n, m = len(names["chunk_ids"]), len(names["keys"])
        with np.load(directory / ARRAYS) as arrays:
            indices = arrays["mentions_indices"]
            mentions = sp.csr_matrix((np.ones(len(indices)), indices, arrays["mentions_indptr"]), shape=(n, m))
            cooccurs = sp.csr_matrix((arrays["cooccurs_data"], arrays["cooccurs_indices"], arrays["cooccurs_indptr"]),
                                     shape=(m, m))
            df = arrays["df"]
        saved = names.get("link_keys") or {}
        if not isinstance(saved, dict):
            raise IndexFormatError(f"concepts {directory}: {NAMES} keeps its link keys as {type(saved).__name__}, "
                                   "not an object; rebuild it with 'ragkit index build --concepts'")
        link_keys = saved.get("keys") if saved.get("version") == KEY_VERSION else None
        if link_keys is not None and (not isinstance(link_keys, list)
                                      or len(link_keys) != len(names["labels"]) + len(names["aliases"])):
            count = len(link_keys) if isinstance(link_keys, list) else "no list of"
            raise IndexFormatError(f"concepts {directory}: {NAMES} keeps {count} link keys for "
                                   f"{len(names['labels'])} labels and {len(names['aliases'])} aliases; "
                                   "rebuild it with 'ragkit index build --concepts'")
        return cls(chunk_ids=names["chunk_ids"], keys=names["keys"], labels=names["labels"], df=df,
                   mentions=mentions, cooccurs=cooccurs, aliases=names["aliases"], hubs=names["hubs"],
                   link_keys=link_keys)


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

