"""The MuSiQue concept graph (1,890 paragraphs) written to a real Neo4j over Bolt
(``Neo4jConceptStore``, what ``ragkit graph build --corpus ... --store`` does): the first
write into an empty store, a rebuild that changed nothing, a rebuild after one paragraph
was edited and one removed, and reading the graph back. The first write right after Neo4j
starts is reported apart (its JIT is cold); the rest are medians of repeats.

    .venv/bin/python bench/concept_neo4j.py        # -> outputs/bench/concept_neo4j.json
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._common import SHARED, write  # noqa: E402

from ragkit.concepts.graph import ConceptGraph  # noqa: E402
from ragkit.concepts.neo4j_store import Neo4jConceptStore  # noqa: E402
from ragkit.corpus import Doc, load_corpus  # noqa: E402
from ragkit.stores.neo4j_launcher import running_neo4j  # noqa: E402

REPEAT = 3


def timed(fn) -> tuple[float, object]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def main() -> None:
    docs = load_corpus(SHARED / "multihop_passages" / "musique_beir" / "corpus.jsonl")
    graph, rows, report = ConceptGraph.build(docs, progress=False)
    edited = [Doc(docs[0].doc_id, docs[0].text + " It moved to Zimbabwe Press in 2020.", docs[0].title)]
    graph2, rows2, _ = ConceptGraph.build(edited + docs[1:-1], previous=rows, progress=False)
    result = {"chunks": report.chunks, "concepts": report.concepts, "mentions": report.mentions,
              "cooccurrences": report.cooccurrences, "repeat": REPEAT}
    with tempfile.TemporaryDirectory() as tmp, running_neo4j(Path(tmp) / "neo4j") as uri:
        store = Neo4jConceptStore(uri)
        cold, stats = timed(lambda: store.write(graph, rows))
        result["first_write_cold_s"] = round(cold, 3)
        first, again, changed, read = [], [], [], []
        for _ in range(REPEAT):
            store.clear()
            first.append(timed(lambda: store.write(graph, rows))[0])
            seconds, nothing = timed(lambda: store.write(graph, rows))
            assert nothing.written == nothing.deleted == type(nothing.written)()
            again.append(seconds)
            seconds, diff = timed(lambda: store.write(graph2, rows2))
            changed.append(seconds)
            store.write(graph, rows)
            read.append(timed(store.read)[0])
        store.close()
    result.update({
        "first_write_s": round(statistics.median(first), 3), "first_write": stats.to_dict()["written"],
        "no_change_rebuild_s": round(statistics.median(again), 3),
        "one_edited_one_removed_s": round(statistics.median(changed), 3),
        "one_edited_one_removed": {"written": diff.to_dict()["written"], "deleted": diff.to_dict()["deleted"]},
        "read_s": round(statistics.median(read), 3),
        "samples": {"first_write_s": [round(s, 3) for s in first], "no_change_rebuild_s": [round(s, 3) for s in again],
                    "one_edited_one_removed_s": [round(s, 3) for s in changed], "read_s": [round(s, 3) for s in read]},
    })
    print(result)
    write("concept_neo4j", result)


if __name__ == "__main__":
    main()
