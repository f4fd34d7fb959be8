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

import gzip
import hashlib
import json
import math
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Sequence

import numpy as np
import scipy.sparse as sp
from tqdm.auto import tqdm

from ..corpus import Doc
from ..errors import IndexFormatError, InputError
from ..stores.files import atomic_dir
from ..text import document_language
from .extract import Mention, abbreviations, concept_key, extract_concepts

FORMAT = "ragkit-concepts"
VERSION = 1
EXTRACTOR = "rules-4"          # changes when extraction changes: every chunk is extracted again
HUB_SHARE = 0.05               # a concept in more than 5% of the chunks is a hub ...
HUB_MIN_CHUNKS = 20            # ... if that is at least 20 chunks (small corpora keep theirs)
MAX_PAIRS_PER_SENTENCE = 12    # concepts per sentence paired (the first met): bounds the edges


def chunk_hash(doc: Doc, terms: Sequence[str] = ()) -> str:
    """What a chunk's concepts depend on: the extractor, the term list and the chunk's text."""
    digest = hashlib.sha1(f"{EXTRACTOR}\0{len(terms)}\0{doc.full_text}".encode("utf-8"))
    return digest.hexdigest()[:16]


@dataclass
class BuildReport:
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
    def n_edges(self) -> int:
        return int(self.mentions.nnz + self.cooccurs.nnz // 2)

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, docs: Sequence[Doc], *, previous: dict[str, dict] | None = None,
              terms: Sequence[str] = (), hub_share: float = HUB_SHARE,
              progress: bool = True, what: str = "corpus") -> tuple["ConceptGraph", dict, BuildReport]:
        """Extract (or reuse, from ``previous``: {chunk id: extraction row}) every chunk's
        concepts and make the graph. Returns the graph, the extraction rows to keep, and a
        report. An empty corpus, or one where no chunk has a concept, is an error naming ``what``."""
        started = time.perf_counter()
        docs = list(docs)
        if not docs:
            raise InputError(f"{what}: holds no documents")
        previous = previous or {}
        rows: dict[str, dict] = {}
        extracted = reused = 0
        for doc in tqdm(docs, desc="concepts", unit="chunk", disable=not progress):
            digest = chunk_hash(doc, terms)
            old = previous.get(doc.doc_id)
            if old is not None and old.get("hash") == digest:
                rows[doc.doc_id] = old
                reused += 1
                continue
            text = doc.full_text
            found = extract_concepts(text, language=document_language(text), terms=terms, title=doc.title)
            rows[doc.doc_id] = {"hash": digest, "abbreviations": abbreviations(text),
                                "concepts": [[m.key, m.label, m.how, list(m.sentences)] for m in found]}
            extracted += 1
        removed = len(set(previous) - set(rows))
        graph = cls.from_extractions([d.doc_id for d in docs], rows, hub_share=hub_share, what=what)
        seconds = round(time.perf_counter() - started, 4)
        graph.meta.update({"build_s": seconds, "extractor": EXTRACTOR})
        report = BuildReport(chunks=len(docs), concepts=len(graph.keys), hubs=len(graph.hubs),
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
        # A single capitalised word opening a sentence ("Currently", "Average") is a name only
        # if the corpus also writes it that way elsewhere, or finds it by another rule.
        confirmed = {aliases.get(c[0], c[0]) for cid in chunk_ids for c in rows[cid]["concepts"]
                     if c[2] != "initial"}
        per_chunk: list[dict[str, list[int]]] = []
        label_counts: dict[str, Counter] = defaultdict(Counter)
        df: Counter = Counter()
        for cid in chunk_ids:
            seen: dict[str, list[int]] = {}
            for key, label, _how, sentences in rows[cid]["concepts"]:
                key = aliases.get(key, key)
                if key not in confirmed:
                    continue
                seen.setdefault(key, []).extend(sentences)
                label_counts[key][label] += 1
            per_chunk.append(seen)
            df.update(seen.keys())
        if not df:
            raise InputError(f"{what}: no concept found in any of its {len(chunk_ids)} chunks "
                             "(no names, noun phrases or terms to build a concept graph from)")
        limit = max(HUB_MIN_CHUNKS, hub_share * len(chunk_ids))
        hubs = sorted(k for k, n in df.items() if n > limit)
        hub_set = set(hubs)
        keys = sorted(k for k in df if k not in hub_set)
        position = {k: i for i, k in enumerate(keys)}
        labels = [_label(label_counts[k]) for k in keys]
        rows_i, cols_i, pair_counts = [], [], Counter()
        for r, seen in enumerate(per_chunk):
            by_sentence: dict[int, list[int]] = defaultdict(list)
            for key, sentences in seen.items():
                if key in position:
                    rows_i.append(r)
                    cols_i.append(position[key])
                    for s in set(sentences):
                        by_sentence[s].append(position[key])
            for members in by_sentence.values():
                for a, b in combinations(sorted(set(members[:MAX_PAIRS_PER_SENTENCE])), 2):
                    pair_counts[(a, b)] += 1
        n, m = len(chunk_ids), len(keys)
        dfa = np.asarray([df[k] for k in keys], dtype=np.float64)
        a = np.array([p[0] for p in pair_counts], dtype=np.int64)
        b = np.array([p[1] for p in pair_counts], dtype=np.int64)
        w = np.array(list(pair_counts.values()), dtype=np.float64) / np.sqrt(dfa[a] * dfa[b])
        mentions, cooccurs = edge_matrices(n, m, rows_i, cols_i, a, b, w)
        return cls(chunk_ids=list(chunk_ids), keys=keys, labels=labels, df=dfa, mentions=mentions,
                   cooccurs=cooccurs, aliases={k: v for k, v in aliases.items() if v in position},
                   hubs=hubs, meta={"chunks": n, "concepts": m, "hub_limit": limit})

    # ------------------------------------------------------------------ networkx
    def to_networkx(self):
        """The graph as networkx: nodes ``chunk:<id>`` (kind chunk) and ``concept:<key>``
        (kind concept, label, df); edges MENTIONS (chunk – concept) and CO_OCCURS (weight)."""
        import networkx as nx

        g = nx.Graph()
        g.add_nodes_from((f"chunk:{c}", {"kind": "chunk"}) for c in self.chunk_ids)
        g.add_nodes_from((f"concept:{k}", {"kind": "concept", "label": l, "df": int(d)})
                         for k, l, d in zip(self.keys, self.labels, self.df))
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
        import networkx as nx

        tmp = Path(folder)
        tmp.mkdir(parents=True, exist_ok=True)
        with (tmp / "extractions.jsonl").open("w", encoding="utf-8") as handle:
            for cid in self.chunk_ids:
                handle.write(json.dumps({"chunk_id": cid, **rows[cid]}, ensure_ascii=False) + "\n")
        data = {"format": FORMAT, "version": VERSION, "aliases": self.aliases, "hubs": self.hubs,
                "graph": nx.node_link_data(self.to_networkx(), edges="edges")}
        (tmp / "graph.json.gz").write_bytes(gzip.compress(json.dumps(data, ensure_ascii=False).encode("utf-8")))
        (tmp / "meta.json").write_text(json.dumps({"format": FORMAT, "version": VERSION,
                                                   **self.meta}, indent=2) + "\n")

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
    rows = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                rows[row.pop("chunk_id")] = row
    return rows


def _label(counts: Counter) -> str:
    """The way a concept is most often written (capitalised first on a tie: names)."""
    return max(counts.items(), key=lambda x: (x[1], x[0][:1].isupper(), -len(x[0])))[0]

