"""Graph RAG multi-hop (seed 003) on the demo edge list, with Chroma embedded and as a real
server (`chroma run`), and on PathQuestion from ../shared."""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from ragkit.errors import InputError
from ragkit.graph.multihop import GraphQueryParams, GraphRAG
from ragkit.pipelines.graph_rag import ask_graph

from .conftest import ROOT, shared

pytestmark = pytest.mark.slow
EDGES = ROOT / "data" / "nobel_edges.csv"


@pytest.fixture(scope="module")
def nobel(tmp_path_factory):
    out = tmp_path_factory.mktemp("graph") / "nobel"
    report = GraphRAG.build(EDGES, out, progress=False)
    assert report.nodes == 40 and report.edges == 57 and report.embedded == 40
    return GraphRAG.load(out)


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory):
    """A real Chroma server on a free loopback port, stopped after the module."""
    from ragkit.graph.neo4j_launcher import free_port

    port = free_port()
    exe = shutil.which("chroma", path=os.path.dirname(sys.executable))
    proc = subprocess.Popen([exe, "run", "--host", "127.0.0.1", "--port", str(port),
                             "--path", str(tmp_path_factory.mktemp("chroma-server"))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    import chromadb

    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            chromadb.HttpClient(host="127.0.0.1", port=port).heartbeat()
            break
        except Exception:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("chroma server did not start")
    yield url
    proc.terminate()
    proc.wait(timeout=30)


def test_one_anchor_two_hop_path(nobel):
    result = nobel.query("What is the nationality of Marie Curie's spouse?")
    assert result["entities"] == ["marie curie"] and result["anchors"][0]["node"] == "Marie_Curie"
    assert result["paths"][0]["relations"] == ["spouse", "nationality"] and result["answer"] == "France"
    assert all(n["text"].startswith("Cạnh: ") for n in result["neighbours"])
    assert len(result["neighbours"]) <= GraphQueryParams().neighbor_top_k


def test_two_anchors_are_joined_by_a_path(nobel):
    result = nobel.query("What did Einstein and Bohr have in common?")
    assert [a["how"] for a in result["anchors"]][:2] == ["vector", "vector"]
    assert " -[award]-> Nobel Prize in Physics" in result["paths"][0]["text"]
    assert result["answer"] == "Nobel_Prize_in_Physics"


def test_nothing_in_the_graph_says_so(nobel):
    answer = ask_graph("Who is Zorro?", nobel)
    assert answer.answer.startswith("Không đủ dữ kiện") and answer.citations == []
    assert answer.trace["answer_source"] == "none"


def test_ask_contract_and_citations(nobel):
    data = ask_graph("Where was the parent of Aage Bohr born?", nobel).to_dict()
    assert set(data) == {"question", "pipeline", "answer", "citations", "trace", "timings_ms"}
    assert data["answer"].startswith("Copenhagen") and data["citations"][0]["stage"] == "path"
    assert {"entities", "anchors", "neighbours", "paths"} <= set(data["trace"])


def test_rebuild_reuses_unchanged_vectors(tmp_path):
    out = tmp_path / "g"
    first = GraphRAG.build(EDGES, out, progress=False)
    again = GraphRAG.build(EDGES, out, progress=False)
    assert first.embedded == 40 and again.embedded == 0 and again.reused == 40


def test_chroma_server_gives_the_same_answers(chroma_url, nobel, tmp_path, monkeypatch):
    monkeypatch.setenv("CHROMA_URL", chroma_url)
    report = GraphRAG.build(EDGES, tmp_path / "served", progress=False)
    assert report.chroma == chroma_url
    served = GraphRAG.load(tmp_path / "served")
    for q in ("What is the nationality of Marie Curie's spouse?", "What did Einstein and Bohr have in common?"):
        a, b = nobel.query(q), served.query(q)
        assert [x["node"] for x in a["anchors"]] == [x["node"] for x in b["anchors"]]
        assert a["answer"] == b["answer"]


def test_bad_inputs(tmp_path, monkeypatch):
    bad = tmp_path / "bad.csv"
    bad.write_text("from,to\nA,B\n")
    with pytest.raises(InputError, match="missing column"):
        GraphRAG.build(bad, tmp_path / "x", progress=False)
    empty = tmp_path / "empty.csv"
    empty.write_text("source,relation,target\n")
    with pytest.raises(InputError, match="empty"):
        GraphRAG.build(empty, tmp_path / "y", progress=False)
    hole = tmp_path / "hole.csv"
    hole.write_text("source,relation,target\nA,knows,\n")
    with pytest.raises(InputError, match="without source or target"):
        GraphRAG.build(hole, tmp_path / "z", progress=False)
    with pytest.raises(InputError, match="not a built graph"):
        GraphRAG.load(tmp_path)
    from ragkit.graph.neo4j_launcher import free_port

    monkeypatch.setenv("CHROMA_URL", f"http://127.0.0.1:{free_port()}")
    with pytest.raises(InputError, match="server not reachable"):
        GraphRAG.build(EDGES, tmp_path / "w", progress=False)


def test_pathquestion_hits_at_1(tmp_path):
    """PQ-2H from ../shared, converted by bench/pathquestion.py's converter."""
    sys.path.insert(0, str(ROOT / "bench"))
    from pathquestion import convert

    from ragkit.eval.graphqa import evaluate_graphqa

    edges, questions = convert(shared("pathquestion", "2H-kb.txt"), shared("pathquestion", "PQ-2H.txt"), tmp_path)
    GraphRAG.build(edges, tmp_path / "graph", progress=False)
    result = evaluate_graphqa(tmp_path / "graph", questions, progress=False, limit=400)
    committed = json.loads((ROOT / "outputs" / "bench" / "pathquestion.json").read_text())
    assert result["found_anchor"] == 1.0
    assert result["hits@1"] >= committed["hits@1"] - 0.05
