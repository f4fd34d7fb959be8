"""TREC run files, the format trec_eval, pytrec_eval, ranx and BEIR's tools exchange: one line
per retrieved document, ``qid Q0 docid rank score tag``.

``write_trec_run`` writes a ragkit ranking so that any of those tools reads it in ragkit's
order; ``read_trec_run`` reads a run from any system back into ranked lists, the way
trec_eval orders it (by score, highest first), with one-line errors naming the file and the
line; ``drop_identical_ids`` is BEIR's ``ignore_identical_ids``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from ..errors import InputError
from ..inputs import lines

RUN_LINE = "qid Q0 docid rank score tag"


@dataclass
class TrecRun:
    """A run read from a file: {query id: [(doc id, score), ...]} in rank order, and the
    tag of its lines (the system's name; the first line's where lines disagree)."""

    rankings: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    tag: str = ""


def write_trec_run(path: str | Path, run: Mapping[str, Sequence[tuple[str, float]]], tag: str = "ragkit") -> Path:
    """The run as TREC run lines, ``qid Q0 docid rank score tag``, atomically. Tools that
    read it (trec_eval) sort by score: where a rerank or MMR reordered a ranking, so that its
    scores no longer descend, the score column is ``n − rank + 1`` instead, keeping our order.

    >>> import tempfile, pathlib
    >>> out = write_trec_run(pathlib.Path(tempfile.mkdtemp()) / "run.trec", {"q1": [("d3", 2.5), ("d1", 1.0)]}, "bm25")
    >>> print(out.read_text(), end="")
    q1 Q0 d3 1 2.500000 bm25
    q1 Q0 d1 2 1.000000 bm25
    """
    from ..stores.files import atomic_write_text

    if not tag or any(c.isspace() for c in tag):
        raise InputError(f"--run-out: run tag {tag!r} must be one word")
    out = []
    for qid, hits in run.items():
        if any(c.isspace() for c in qid):
            raise InputError(f"--run-out: query id {qid!r} has white space, which a TREC run cannot hold")
        scores = [s for _, s in hits]
        descending = all(a >= b for a, b in zip(scores, scores[1:]))
        for rank, (doc_id, score) in enumerate(hits, 1):
            if any(c.isspace() for c in doc_id):
                raise InputError(f"--run-out: document id {doc_id!r} has white space, which a TREC run cannot hold")
            value = score if descending else float(len(hits) - rank + 1)
            out.append(f"{qid} Q0 {doc_id} {rank} {value:.6f} {tag}\n")
    path = Path(path)
    if not path.parent.is_dir():
        raise InputError(f"--run-out {path}: folder {path.parent} does not exist")
    atomic_write_text(path, "".join(out))
    return path


def read_trec_run(path: str | Path, what: str = "run") -> TrecRun:
    """A TREC run file from any system. Each query's documents are ordered as trec_eval
    orders them, by score, highest first; equal scores keep the order of the rank column
    (trec_eval breaks such ties by document id instead). A line that is not
    ``qid Q0 docid rank score tag``, a rank that is not an integer, a score that is not a
    finite number, or a document listed twice for one query is a one-line error naming the
    file and the line.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "run.txt"
    >>> _ = p.write_text("q1 Q0 b 1 0.5 other\\nq1 Q0 a 2 0.9 other\\n")
    >>> read_trec_run(p).rankings
    {'q1': [('a', 0.9), ('b', 0.5)]}
    """
    rows: dict[str, list[tuple[float, int, str]]] = {}
    seen: dict[tuple[str, str], int] = {}
    tag = None
    for lineno, text in lines(path, what):
        parts = text.split()
        if not parts:
            continue
        where = f"{what} {path}:{lineno}"
        if len(parts) != 6:
            raise InputError(f"{where}: expected '{RUN_LINE}' (6 fields), got {len(parts)} field(s)")
        qid, _, doc_id, rank, score, line_tag = parts
        try:
            rank_n = int(rank)
        except ValueError:
            raise InputError(f"{where}: rank {rank!r} is not an integer") from None
        try:
            value = float(score)
        except ValueError:
            raise InputError(f"{where}: score {score!r} is not a number") from None
        if not math.isfinite(value):
            raise InputError(f"{where}: score {score!r} is not a finite number")
        if (qid, doc_id) in seen:
            raise InputError(f"{where}: document {doc_id!r} is listed twice for query {qid!r} "
                             f"(first at line {seen[qid, doc_id]})")
        seen[qid, doc_id] = lineno
        tag = line_tag if tag is None else tag
        rows.setdefault(qid, []).append((-value, rank_n, doc_id))
    if tag is None:
        raise InputError(f"{what} {path}: holds no run lines ('{RUN_LINE}')")
    return TrecRun({q: [(d, -neg) for neg, _, d in sorted(r)] for q, r in rows.items()}, tag)


def drop_identical_ids(run: Mapping[str, Sequence[tuple[str, float]]]) -> dict[str, list[tuple[str, float]]]:
    """The run without the documents whose id is the query's id, as BEIR scores by default
    (``EvaluateRetrieval.evaluate(..., ignore_identical_ids=True)``): in ArguAna and Quora
    the queries are documents of the corpus too, and a query that finds itself is no hit.
    The documents below move up a rank; the qrels are left as they are.

    >>> drop_identical_ids({"q1": [("q1", 3.0), ("d2", 2.0)]})
    {'q1': [('d2', 2.0)]}
    """
    return {qid: [(d, s) for d, s in hits if d != qid] for qid, hits in run.items()}
