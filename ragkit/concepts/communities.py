"""Communities of a concept graph: the themes of a corpus, for questions about all of it
(GraphRAG's global search, done without a model).

1. **Detection**: Leiden modularity maximisation (Traag, Waltman and van Eck, 2019;
   ``leiden``: graspologic-native's, the implementation Microsoft GraphRAG uses; a fixed
   ``seed``, ``resolution`` 1) over the CO_OCCURS weights. Every concept of the graph is in
   exactly one community; a concept with no CO_OCCURS edge is a community of its own.
2. **Home chunks**: a chunk's home is the community holding most of its concepts (on a tie,
   the one with more concepts). A community's ``chunks`` is how many chunks it is home to:
   its share of the corpus. Communities are numbered by that, largest first.
3. **Top concepts**: each member's weighted degree inside its community (the sum of its
   CO_OCCURS weights to other members) times its ``idf = log(N / df)``: central to the
   community and rare in the corpus. Overlapping word n-grams ("tiện trụ", "tiện trụ ngoài")
   are shown once, the best first.
4. **Representative chunks**: the chunks mentioning members, ranked by the centrality of
   the members they mention times the share of their concepts that are members.
5. **Extractive summary**: up to ``SUMMARY_SENTENCES`` sentences of the representative
   chunks, chosen greedily by the centrality weight of the members they mention that no
   chosen sentence mentions yet (weighted maximum coverage), shown in reading order, each
   with the chunk it was cut from. Every sentence is a verbatim piece of its chunk's text
   (up to whitespace), cut by ``ragkit.text.split_sentences`` (``summary_sentences``).

A community home to at least ``MIN_CHUNKS`` chunks is a **theme**; a corpus with none (too
small, or chunks sharing no concept) has no themes, and ``Communities.unavailable`` says why.

Built with the concept graph (``ragkit index build --concepts``) and kept beside it in
``<index>/concepts/communities.json.gz``, so a question never recomputes them and a rebuild
always does. Complexity: Leiden is about O(E) per iteration, in compiled code (MuSiQue's
17k concepts in 0.07 CPU seconds, SciFact's 93k in 0.6: docs/benchmarks/concepts.md, Community
detection); the rest is one pass over the MENTIONS and CO_OCCURS matrices.

    >>> from ragkit.corpus import Doc
    >>> from ragkit.concepts.graph import ConceptGraph
    >>> docs = [Doc("a", "The Bubye River flows into the Limpopo River in Zimbabwe."),
    ...         Doc("b", "The Limpopo River forms the border of Zimbabwe and South Africa."),
    ...         Doc("c", "Victoria Falls lies on the Zambezi River.")]
    >>> graph, _, _ = ConceptGraph.build(docs, progress=False)
    >>> found = detect_communities(graph, {d.doc_id: d.text for d in docs})
    >>> [(c.id, c.chunks, c.label) for c in found.themes]
    [(0, 2, 'Bubye River · South Africa · Limpopo River')]
    >>> [s["chunk_id"] for s in found.themes[0].summary]
    ['a', 'b']
"""

from __future__ import annotations

import gzip
import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Mapping

import graspologic_native
import numpy as np
import scipy.sparse as sp

from ..errors import IndexFormatError
from ..stores.files import atomic_write_bytes
from ..text import LIST_MARKER, sentence_spans
from .extract import concept_key
from .graph import ConceptGraph

FORMAT = "ragkit-communities"
VERSION = 1
FILE = "communities.json.gz"
SEED = 42                 # Leiden's random choices: fixed, so a rebuild finds the same communities
RESOLUTION = 1.0          # modularity's resolution: < 1 gives fewer, larger communities
MIN_CHUNKS = 2            # a community home to at least this many chunks is a theme
TOP_CONCEPTS = 8          # concepts shown per community
REPRESENTATIVES = 3       # chunks the summary is cut from
SUMMARY_SENTENCES = 3
MIN_SENTENCE_WORDS = 4    # shorter pieces are headings or fragments, not sentences
MAX_SENTENCE_CHARS = 400  # longer ones are lists or tables run together

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)


@dataclass
class Community:
    """One community: its members (concept keys), how many chunks it is home to, its top
    concepts, representative chunks and extractive summary."""

    id: int
    size: int                       # member concepts
    chunks: int                     # chunks whose home it is
    members: list[str]
    top_concepts: list[dict]        # {"concept", "key", "score", "df"}
    representatives: list[dict]     # {"chunk_id", "in_community", "share", "home"}
    summary: list[dict]             # {"text", "chunk_id"}: verbatim sentences of their chunks

    @property
    def label(self) -> str:
        """Its three top concepts, the name tables and answers give it."""
        return " · ".join(c["concept"] for c in self.top_concepts[:3])

    @property
    def summary_text(self) -> str:
        return " ".join(s["text"] for s in self.summary)

    def cited_chunks(self) -> list[str]:
        """The chunks its summary cites, in the order it cites them."""
        return list(dict.fromkeys(s["chunk_id"] for s in self.summary))


@dataclass
class Communities:
    """A corpus's communities, largest first, with what the build found."""

    communities: list[Community]
    chunks: int                                     # chunks in the corpus
    meta: dict = field(default_factory=dict)        # algorithm, seed, resolution, modularity, seconds
    _membership: dict | None = field(default=None, repr=False)

    @property
    def themes(self) -> list[Community]:
        """The communities home to at least ``MIN_CHUNKS`` chunks, largest first."""
        need = self.meta.get("min_chunks", MIN_CHUNKS)
        return [c for c in self.communities if c.chunks >= need]

    @property
    def unavailable(self) -> str | None:
        """Why the corpus has no themes, or None when it has some."""
        if self.themes:
            return None
        need = self.meta.get("min_chunks", MIN_CHUNKS)
        if self.chunks < need:
            return (f"the corpus has {self.chunks} chunk{'s' * (self.chunks != 1)}: a community needs "
                    f"at least {need} chunks that share concepts")
        return (f"no community of its {len(self.communities)} is home to {need} or more of its "
                f"{self.chunks} chunks (the chunks share too few concepts)")

    def community_of(self, key: str) -> int | None:
        """The community a concept key belongs to."""
        if self._membership is None:
            self._membership = {k: c.id for c in self.communities for k in c.members}
        return self._membership.get(key)

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict:
        return {"format": FORMAT, "version": VERSION, "chunks": self.chunks, **self.meta,
                "communities": [asdict(c) for c in self.communities]}

    def save(self, directory: str | Path) -> Path:
        """Write ``communities.json.gz`` into a concepts folder (atomically)."""
        path = Path(directory) / FILE
        data = json.dumps(self.to_dict(), ensure_ascii=False).encode("utf-8")
        atomic_write_bytes(path, gzip.compress(data, mtime=0))
        return path

    @classmethod
    def load(cls, directory: str | Path) -> "Communities | None":
        """The communities saved in a concepts folder, or None when it has none (a graph
        built before communities were)."""
        path = Path(directory) / FILE
        if not path.is_file():
            return None
        data = json.loads(gzip.decompress(path.read_bytes()))
        if data.get("format") != FORMAT or data.get("version") != VERSION:
            raise IndexFormatError(f"communities {path}: not ragkit communities of version {VERSION}; "
                                   "rebuild with 'ragkit index build --concepts'")
        communities = [Community(**c) for c in data.pop("communities")]
        for key in ("format", "version"):
            data.pop(key)
        return cls(communities, data.pop("chunks"), data)


# ---------------------------------------------------------------------- detection
def leiden_partition(graph: ConceptGraph, *, seed: int = SEED,
                     resolution: float = RESOLUTION) -> tuple[np.ndarray, float]:
    """Each concept's community (an array of labels, not yet ordered) over the CO_OCCURS
    weights (``leiden``), and the partition's modularity."""
    adjacency = sp.csr_matrix(graph.cooccurs, dtype=np.float64)
    adjacency.setdiag(0)
    adjacency.eliminate_zeros()
    label = leiden(adjacency, resolution=resolution, seed=seed)
    return label, modularity(sp.triu(adjacency, k=1).tocoo(), label, resolution)


def leiden(adjacency: sp.spmatrix, *, resolution: float = RESOLUTION, seed: int = SEED) -> np.ndarray:
    """Leiden modularity maximisation (Traag, Waltman and van Eck, 2019) of a symmetric
    weighted graph without self-loops: each node's community label (0, 1, ...).

    graspologic-native's ``leiden_csr`` reads the CSR arrays in place: local moving, then a
    refinement that keeps every community connected (Louvain can leave one split in two),
    then aggregation, in compiled code; its default randomness (0.001), one iteration, and
    ``seed`` fixed, so the same graph always gets the same labels. A graph without edges
    (which graspologic-native refuses) leaves every node a community of its own. Labels are
    numbered by graspologic-native's community ids, in order.

    >>> two_triangles = sp.csr_matrix(np.array([[0, 1, 1, 0, 0, 0], [1, 0, 1, 0, 0, 0], [1, 1, 0, 1, 0, 0],
    ...                                          [0, 0, 1, 0, 1, 1], [0, 0, 0, 1, 0, 1], [0, 0, 0, 1, 1, 0]]))
    >>> leiden(two_triangles).tolist()
    [0, 0, 0, 1, 1, 1]
    """
    a = sp.csr_matrix(adjacency, dtype=np.float64)
    a.sort_indices()
    n = a.shape[0]
    if a.nnz == 0:
        return np.arange(n)
    _, found = graspologic_native.leiden_csr(a.indptr.astype(np.int64), a.indices.astype(np.int32), a.data, n,
                                             resolution=resolution, seed=seed)
    label = np.full(n, -1, dtype=np.int64)
    label[np.fromiter(found.keys(), np.int64, len(found))] = np.fromiter(found.values(), np.int64, len(found))
    alone = label < 0                               # a node it did not return: a community of its own
    label[alone] = label.max() + 1 + np.arange(int(alone.sum()))
    _, label = np.unique(label, return_inverse=True)
    return label


def modularity(edges: sp.coo_matrix, label: np.ndarray, resolution: float = RESOLUTION) -> float:
    """Newman's modularity of a partition, ``Σ_c [L_c / W − γ (D_c / 2W)²]`` (``edges``: each
    undirected edge once with its weight; ``W`` their total, ``L_c`` the weight inside
    community c, ``D_c`` its members' summed degree), in O(E) with numpy (networkx's
    ``modularity`` gives the same figure, slower).

    >>> edges = sp.coo_matrix(([1.0, 1.0, 1.0], ([0, 1, 2], [1, 2, 3])), shape=(4, 4))   # a path
    >>> round(modularity(edges, np.array([0, 0, 1, 1])), 4)
    0.1667
    """
    total = edges.data.sum()
    if total <= 0:
        return 0.0
    k = int(label.max()) + 1
    inside = label[edges.row] == label[edges.col]
    weight_in = np.bincount(label[edges.row][inside], weights=edges.data[inside], minlength=k)
    degree = np.bincount(edges.row, weights=edges.data, minlength=len(label)) + \
        np.bincount(edges.col, weights=edges.data, minlength=len(label))
    degree_c = np.bincount(label, weights=degree, minlength=k)
    return float((weight_in / total).sum() - resolution * ((degree_c / (2 * total)) ** 2).sum())


def detect_communities(graph: ConceptGraph, texts: Mapping[str, str], *, seed: int = SEED,
                       resolution: float = RESOLUTION, min_chunks: int = MIN_CHUNKS) -> Communities:
    """The communities of ``graph``, each with its top concepts, representative chunks and an
    extractive summary cut from ``texts`` ({chunk id: chunk text, without its title})."""
    started = time.perf_counter()
    n, m = len(graph.chunk_ids), len(graph.keys)
    raw, modularity = leiden_partition(graph, seed=seed, resolution=resolution)
    sizes = np.bincount(raw, minlength=int(raw.max()) + 1 if m else 0)
    first_key = _first_keys(raw)
    mentions = graph.mentions.tocsr()
    home = home_communities(graph, raw)
    homes = np.bincount(home[home >= 0], minlength=len(sizes))
    order = sorted(range(len(sizes)), key=lambda c: (-homes[c], -sizes[c], first_key[c]))
    new_id = np.empty(len(sizes), dtype=np.int64)
    new_id[order] = np.arange(len(sizes))
    label = new_id[raw]
    home = np.where(home >= 0, new_id[np.maximum(home, 0)], -1)

    centrality = inside_centrality(graph, label)

    members_of: list[list[int]] = [[] for _ in order]
    for i in range(m):
        members_of[int(label[i])].append(i)
    # Chunk × community: how many of each chunk's concepts each community holds, and their
    # centrality summed.
    rows = np.repeat(np.arange(n), np.diff(mentions.indptr))
    cols = label[mentions.indices]
    counts = sp.csc_matrix((np.ones(mentions.nnz), (rows, cols)), shape=(n, len(order)))
    mass = sp.csc_matrix((centrality[mentions.indices], (rows, cols)), shape=(n, len(order)))
    counts.sum_duplicates()
    mass.sum_duplicates()
    per_chunk = np.maximum(np.diff(mentions.indptr), 1).astype(np.float64)

    communities: list[Community] = []
    sentences: dict[str, list[tuple[str, set[int]]]] = {}      # each chunk's, across communities
    matcher = ConceptMatcher(graph)
    for cid, members in enumerate(members_of):
        top = top_concepts(graph, members, centrality)
        reps = representatives(graph, counts, mass, cid, per_chunk, home)
        summary = extractive_summary(graph, members, centrality, [r["chunk_id"] for r in reps], texts,
                                     cache=sentences, matcher=matcher)
        communities.append(Community(id=cid, size=len(members), chunks=int(homes[order[cid]]),
                                     members=[graph.keys[i] for i in members], top_concepts=top,
                                     representatives=reps, summary=summary))
    meta = {"algorithm": "leiden", "weight": "CO_OCCURS", "seed": seed, "resolution": resolution,
            "min_chunks": min_chunks, "concepts": m, "modularity": round(modularity, 4),
            "seconds": round(time.perf_counter() - started, 4)}
    return Communities(communities, n, meta)


def _first_keys(label: np.ndarray) -> dict[int, int]:
    """Each community's smallest member (keys are sorted, so its first position)."""
    first: dict[int, int] = {}
    for i in range(len(label) - 1, -1, -1):
        first[int(label[i])] = i
    return first


def home_communities(graph: ConceptGraph, label: np.ndarray) -> np.ndarray:
    """Each chunk's home: the community (of ``label``, one per concept) holding most of its
    concepts; on a tie the one with more concepts, then the one with the smaller first key;
    -1 for a chunk without concepts."""
    sizes = np.bincount(label, minlength=int(label.max()) + 1) if len(label) else np.zeros(0, np.int64)
    first_key = _first_keys(label)
    mentions = graph.mentions.tocsr()
    home = np.full(len(graph.chunk_ids), -1, dtype=np.int64)
    for r in range(len(home)):
        concepts = mentions.indices[mentions.indptr[r]:mentions.indptr[r + 1]]
        if len(concepts):
            labels, counts = np.unique(label[concepts], return_counts=True)
            home[r] = min(zip(labels, counts), key=lambda x: (-x[1], -sizes[x[0]], first_key[int(x[0])]))[0]
    return home


def inside_centrality(graph: ConceptGraph, label: np.ndarray) -> np.ndarray:
    """Each concept's weighted degree inside its community, counted in sentences (the
    sentences it shares with other members: a CO_OCCURS weight times ``sqrt(df_a · df_b)``),
    times its ``idf = log(N / df)``. Counting sentences rather than summing the weights,
    which already divide by the chunk frequencies, keeps idf the only rarity term: a name
    that many members' sentences mention (a country, a network function) ranks above a
    phrase of one long sentence."""
    n, m = len(graph.chunk_ids), len(graph.keys)
    coo = graph.cooccurs.tocoo()
    inside = label[coo.row] == label[coo.col]
    sentences = np.rint(coo.data * np.sqrt(graph.df[coo.row] * graph.df[coo.col]))
    degree = np.bincount(coo.row[inside], weights=sentences[inside], minlength=m)
    return degree * np.log(max(n, 1) / np.maximum(graph.df, 1.0))


def top_concepts(graph: ConceptGraph, members: list[int], centrality: np.ndarray,
                 limit: int = TOP_CONCEPTS) -> list[dict]:
    """The members by centrality (weighted degree inside × idf), best first, leaving out a
    concept whose words (of its key or its label) overlap one already shown: a word n-gram of
    the same phrase, or a title that repeats a name ("4.2 SMF" after "SMF")."""
    ranked = sorted(members, key=lambda i: (-centrality[i], -graph.df[i], graph.keys[i]))
    chosen: list[int] = []
    forms = lambda i: (graph.keys[i], concept_key(graph.labels[i]))     # noqa: E731 (an abbreviation's key is its long form)
    for i in ranked:
        if any(_overlap(a, b) for j in chosen for a in forms(i) for b in forms(j)):
            continue
        chosen.append(i)
        if len(chosen) == limit:
            break
    return [{"concept": graph.labels[i], "key": graph.keys[i], "score": round(float(centrality[i]), 4),
             "df": int(graph.df[i])} for i in chosen]


def _overlap(a: str, b: str) -> bool:
    """Whether two keys are pieces of one phrase: one inside the other, or one's last words
    the other's first ("tien tru" and "tru ngoai")."""
    x, y = a.split(), b.split()
    if len(x) > len(y):
        x, y = y, x
    if any(y[i:i + len(x)] == x for i in range(len(y) - len(x) + 1)):
        return True
    return any(x[-k:] == y[:k] or y[-k:] == x[:k] for k in range(1, len(x)))


def representatives(graph: ConceptGraph, counts: sp.csc_matrix, mass: sp.csc_matrix, cid: int,
                    per_chunk: np.ndarray, home: np.ndarray, limit: int = REPRESENTATIVES) -> list[dict]:
    """The chunks whose concepts fall most in community ``cid``, ranked by the centrality of
    the members they mention times the share of their concepts that are members
    (``counts``, ``mass``: chunks × communities, member counts and centrality sums)."""
    span = slice(counts.indptr[cid], counts.indptr[cid + 1])     # both built alike: one pattern
    rows, inside, central = counts.indices[span], counts.data[span], mass.data[span]
    score = central * inside / per_chunk[rows]
    best = sorted(range(len(rows)), key=lambda j: (-score[j], rows[j]))[:limit]
    return [{"chunk_id": graph.chunk_ids[rows[j]], "in_community": int(inside[j]),
             "share": round(float(inside[j] / per_chunk[rows[j]]), 4), "home": bool(home[rows[j]] == cid)}
            for j in best]


def extractive_summary(graph: ConceptGraph, members: list[int], centrality: np.ndarray,
                       chunk_ids: list[str], texts: Mapping[str, str],
                       limit: int = SUMMARY_SENTENCES, cache: dict | None = None,
                       matcher: "ConceptMatcher | None" = None) -> list[dict]:
    """Sentences of the representative chunks that cover the community's central concepts:
    each pick adds the most centrality weight of members no earlier pick mentions (ties: the
    better chunk, then the earlier sentence); shown in reading order. ``cache`` keeps each
    chunk's sentences and their concepts across communities (a chunk represents several)."""
    cache = {} if cache is None else cache
    matcher = matcher or ConceptMatcher(graph)
    member_set = set(members)
    candidates = []        # (chunk rank, position, text, concepts mentioned, chunk id)
    for rank, cid in enumerate(chunk_ids):
        for pos, (sentence, concepts) in enumerate(sentence_concepts(matcher, cid, texts.get(cid, ""), cache)):
            found = concepts & member_set
            if found:
                candidates.append((rank, pos, sentence, found, cid))
    covered: set[int] = set()
    picked: list[tuple[int, int, str, set[int], str]] = []
    while candidates and len(picked) < limit:
        gains = [sum(centrality[c] for c in found - covered) for *_, found, _ in candidates]
        best = max(range(len(candidates)), key=lambda j: (gains[j], -candidates[j][0], -candidates[j][1]))
        if gains[best] <= 0:
            break
        picked.append(candidates.pop(best))
        covered |= picked[-1][3]
    picked.sort(key=lambda x: (x[0], x[1]))
    return [{"text": text, "chunk_id": cid} for _, _, text, _, cid in picked]


def sentence_concepts(matcher: "ConceptMatcher", chunk_id: str, text: str, cache: dict) -> list[tuple[str, set]]:
    """A chunk's sentences (``summary_sentences``), each with the concepts it mentions."""
    if chunk_id not in cache:
        cache[chunk_id] = [(s, matcher.find(s)) for s in summary_sentences(text)]
    return cache[chunk_id]


class ConceptMatcher:
    """Finds the concepts of a graph a text mentions: every word n-gram whose key is a
    concept's, directly or through an alias. An n-gram grows only while it is the start of
    some key, so a text costs about one lookup per word."""

    def __init__(self, graph: ConceptGraph):
        self.graph = graph
        self.prefixes: set[str] = set()
        for key in [*graph.keys, *graph.aliases]:
            words = key.split()
            self.prefixes.update(" ".join(words[:j]) for j in range(1, len(words) + 1))
        self._keys: dict[str, str] = {}

    def _key(self, word: str) -> str:
        key = self._keys.get(word)
        if key is None:
            key = self._keys[word] = concept_key(word)
        return key

    def find(self, text: str) -> set[int]:
        keys = [k for k in (self._key(m.group(0)) for m in _WORD.finditer(text)) if k]
        found = set()
        for i in range(len(keys)):
            key = keys[i]
            for j in range(i + 1, min(i + 7, len(keys) + 1)):
                if j > i + 1:
                    key = f"{key} {keys[j - 1]}"
                if key not in self.prefixes:
                    break
                concept = self.graph.concept_of(key)
                if concept is not None:
                    found.add(concept)
        return found


def mentioned_concepts(graph: ConceptGraph, text: str) -> set[int]:
    """The concepts of ``graph`` a text mentions (``ConceptMatcher``).

    >>> from ragkit.corpus import Doc
    >>> g, _, _ = ConceptGraph.build([Doc("a", "The Bubye River flows in Zimbabwe.")], progress=False)
    >>> sorted(g.labels[c] for c in mentioned_concepts(g, "Is the bubye river in zimbabwe?"))
    ['Bubye River', 'Zimbabwe']
    """
    return ConceptMatcher(graph).find(text)


def summary_sentences(text: str) -> list[str]:
    """The sentences of a chunk a summary may quote: its sentences (``ragkit.text.split_sentences``:
    hard-wrapped lines joined, list items and steps apart, not cut after an initial or a common
    abbreviation), each with its runs of spaces and line breaks read as one space and its list
    marker left out. Headings, table rows, tab-separated lines and code are no sentences; nor
    are pieces of fewer than ``MIN_SENTENCE_WORDS`` words (fragments) or more than
    ``MAX_SENTENCE_CHARS`` characters (lists or tables run together), or lead-ins ending with
    ":" (what they introduce is in the items after them).

    >>> for sentence in summary_sentences("# Safety\\n- Wear goggles at all times. Dr. Who agrees with U.S. "
    ...                                   "rules.\\n- Keep hands away from the\\n  spindle while it turns."):
    ...     print(sentence)
    Wear goggles at all times.
    Dr. Who agrees with U.S. rules.
    Keep hands away from the spindle while it turns.
    """
    out = []
    for a, b in sentence_spans(text):
        piece = text[a:b].strip()
        if piece.startswith(("#", "|", "```")) or "\t" in piece:
            continue
        sentence = LIST_MARKER.sub("", " ".join(piece.split()), count=1)
        if len(_WORD.findall(sentence)) >= MIN_SENTENCE_WORDS and len(sentence) <= MAX_SENTENCE_CHARS \
                and not sentence.endswith(":"):
            out.append(sentence)
    return out


def coverage(community: Community, chunks: int) -> float:
    """The share of the corpus's chunks a community is home to."""
    return community.chunks / chunks if chunks else 0.0


__all__ = ["Communities", "Community", "detect_communities", "leiden_partition", "leiden", "modularity",
           "home_communities",
           "top_concepts",
           "representatives", "extractive_summary", "mentioned_concepts", "ConceptMatcher", "summary_sentences",
           "coverage",
           "MIN_CHUNKS", "SEED", "RESOLUTION"]
