"""The embedded graph store: a networkx MultiDiGraph persisted to one gzip'd JSON file,
saved atomically (temporary file, then rename) after every write."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Sequence

import networkx as nx

from ..errors import InputError
from ..stores.files import read_graph, write_graph
from .model import Chunk, SpecDocument, Term
from .store import SPEC_DEFINITIONS, GraphStore, WriteStats, chunk_rows, lowered, plan_replacement

FORMAT_VERSION = 1


def _node(kind: str, key: str) -> str:
    return f"{kind}:{key}"


class NetworkXStore(GraphStore):
    """Documents, chunks and terms as nodes of one MultiDiGraph (``label`` attribute)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.uri = str(self.path)
        self.graph = nx.MultiDiGraph()
        if self.path.exists():
            self._load()

    # ----------------------------------------------------------------- persistence
    def _load(self) -> None:
        header, self.graph = read_graph(self.path)
        if header.get("format_version") != FORMAT_VERSION:
            raise InputError(f"store {self.path}: format version {header.get('format_version')!r}, "
                             f"this ragkit reads {FORMAT_VERSION}")

    def save(self) -> None:
        write_graph(self.path, self.graph, {"format_version": FORMAT_VERSION})

    # ----------------------------------------------------------------- writes
    def replace_documents(self, docs: Sequence[SpecDocument], chunks: Sequence[Chunk],
                          terms: Sequence[Term]) -> WriteStats:
        """Edits a copy of the graph and saves it in one atomic file write; only then does
        this store object see the new graph, so a failure anywhere leaves file and object
        as they were."""
        started = time.perf_counter()
        specs = [d.spec_id for d in docs]
        g = self.graph.copy()
        replaced = tuple(s for s in specs if g.has_node(_node("doc", s)))
        g.remove_nodes_from([n for n, d in g.nodes(data=True)
                             if d["label"] in ("Document", "Chunk") and d["spec_id"] in specs])
        plan = plan_replacement(specs, terms, self._stored_terms(g, specs, {t.term_id for t in terms}))
        g.remove_nodes_from(_node("term", tid) for tid in plan.removed)
        for doc in docs:
            g.add_node(_node("doc", doc.spec_id), label="Document", **doc.to_dict())
        for row in chunk_rows(chunks):
            node = _node("chunk", row["chunk_id"])
            g.add_node(node, label="Chunk", **row)
            g.add_edge(node, _node("doc", row["spec_id"]), key="PART_OF", type="PART_OF")
        for term, wordings in plan.terms:
            node = _node("term", term.term_id)
            if g.has_node(node):
                g.remove_node(node)          # no stale property or link survives
            g.add_node(node, label="Term", **term.to_dict(), **{SPEC_DEFINITIONS: wordings})
            for spec in term.source_specs:
                if g.has_node(_node("doc", spec)):
                    g.add_edge(node, _node("doc", spec), key="DEFINED_IN", type="DEFINED_IN")
        write_graph(self.path, g, {"format_version": FORMAT_VERSION})
        self.graph = g
        return WriteStats(len(docs), len(chunks), len(plan.terms), time.perf_counter() - started,
                          replaced, len(plan.removed))

    @staticmethod
    def _stored_terms(g: nx.MultiDiGraph, specs: Sequence[str],
                      ids: set[str]) -> dict[str, tuple[Term, list[str] | None]]:
        """Stored terms that one of ``specs`` gives or whose id is in ``ids``, with their
        per-spec wordings."""
        out = {}
        for _, data in g.nodes(data=True):
            if data["label"] == "Term" and (data["term_id"] in ids or set(data["source_specs"]) & set(specs)):
                out[data["term_id"]] = (NetworkXStore._term(data), data.get(SPEC_DEFINITIONS))
        return out

    def clear(self) -> None:
        self.graph = nx.MultiDiGraph()
        self.save()

    # ----------------------------------------------------------------- reads
    def _nodes(self, label: str) -> list[dict]:
        return [data for _, data in self.graph.nodes(data=True) if data.get("label") == label]

    @staticmethod
    def _term(data: dict) -> Term:
        return Term(**{k: v for k, v in data.items() if k not in ("label", SPEC_DEFINITIONS)})

    @staticmethod
    def _chunk(data: dict) -> Chunk:
        return Chunk(**{k: v for k, v in data.items() if k not in ("label", "ordinal")})

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for _, data in self.graph.nodes(data=True):
            out[data["label"]] = out.get(data["label"], 0) + 1
        for _, _, rel in self.graph.edges(keys=True):
            out[rel] = out.get(rel, 0) + 1
        return dict(sorted(out.items()))

    def documents(self) -> list[dict]:
        docs = [{k: v for k, v in d.items() if k != "label"} for d in self._nodes("Document")]
        return sorted(docs, key=lambda d: d["spec_id"])

    def terms_by_ids(self, term_ids: Sequence[str]) -> dict[str, Term]:
        out = {}
        for tid in term_ids:
            data = self.graph.nodes.get(_node("term", tid))
            if data:
                out[tid] = self._term(data)
        return out

    def terms_by_abbreviation(self, abbreviation: str) -> list[Term]:
        wanted = abbreviation.lower()
        found = [self._term(d) for d in self._nodes("Term")
                 if d["term_type"] == "abbreviation" and d["abbreviation"].lower() == wanted]
        return sorted(found, key=lambda t: t.term_id)

    def terms_by_name(self, name: str, term_type: str | None = None) -> list[Term]:
        wanted = name.lower()
        found = [self._term(d) for d in self._nodes("Term")
                 if d["full_name"].lower() == wanted and (term_type is None or d["term_type"] == term_type)]
        return sorted(found, key=lambda t: t.term_id)

    def terms_containing(self, text: str, term_type: str | None = None, limit: int = 50) -> list[Term]:
        wanted = text.lower()
        found = [self._term(d) for d in self._nodes("Term")
                 if (wanted in d["full_name"].lower() or wanted in d["abbreviation"].lower())
                 and (term_type is None or d["term_type"] == term_type)]
        return sorted(found, key=lambda t: t.term_id)[:limit]

    def find_chunks(self, *, spec_ids=None, title_any=None, content_any=None, content_all=None,
                    chunk_types=None, limit=None) -> list[Chunk]:
        title_any, content_any, content_all = lowered(title_any), lowered(content_any), lowered(content_all)
        out = []
        for d in self._nodes("Chunk"):
            if spec_ids and d["spec_id"] not in spec_ids:
                continue
            if chunk_types and d["chunk_type"] not in chunk_types:
                continue
            title, content = d["section_title"].lower(), d["content"].lower()
            if title_any and not any(x in title for x in title_any):
                continue
            if content_any and not any(x in content for x in content_any):
                continue
            if content_all and not all(x in content for x in content_all):
                continue
            out.append(d)
        out.sort(key=lambda d: (d["spec_id"], d["ordinal"]))
        return [self._chunk(d) for d in (out[:limit] if limit else out)]

    def term_neighbourhood(self, term_id: str) -> dict:
        node = _node("term", term_id)
        if node not in self.graph:
            return {}
        docs = []
        for _, target, rel in self.graph.out_edges(node, keys=True):
            if rel == "DEFINED_IN":
                data = self.graph.nodes[target]
                chunks = sum(1 for _, _, r in self.graph.in_edges(target, keys=True) if r == "PART_OF")
                docs.append({"spec_id": data["spec_id"], "title": data["title"], "chunks": chunks})
        return {"term": self._term(self.graph.nodes[node]).to_dict(),
                "defined_in": sorted(docs, key=lambda d: d["spec_id"])}
