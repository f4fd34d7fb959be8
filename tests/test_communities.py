"""Communities of the concept graph and questions about the whole corpus: detection on real
text (MuSiQue paragraphs, the demo manuals), the partition, the extractive summaries, the
routing of broad and specific questions in English and Vietnamese, the trace, a corpus too
small for communities, and the command line."""

import doctest
import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from ragkit.concepts import broad as broad_module
from ragkit.concepts import communities as communities_module
from ragkit.concepts.broad import broad_question, corpus_cues
from ragkit.retrieval.build import IndexSpec, build_index
from ragkit.concepts.communities import Communities, detect_communities, summary_sentences
from ragkit.concepts.graph import ConceptGraph
from ragkit.config import LexicalConfig
from ragkit.corpus import Doc, load_beir_corpus, load_corpus
from ragkit.errors import InputError
from ragkit.llm.base import Generation
from ragkit.pipelines.lexical import ask_lexical
from ragkit.retrieval.bm25 import BM25Index
from ragkit.retrieval.community_search import load_communities, rank_communities, route
from ragkit.retrieval.search import concepts_dir_for

from .conftest import MANUALS, shared
from .test_cli import ragkit, refused

PARAGRAPHS = 400


@pytest.fixture(scope="module")
def musique_docs():
    docs = load_beir_corpus(shared("multihop_passages", "musique_beir", "corpus.jsonl"))
    return docs[:PARAGRAPHS]


@pytest.fixture(scope="module")
def musique(musique_docs):
    graph, _, _ = ConceptGraph.build(musique_docs, progress=False)
    return graph, detect_communities(graph, {d.doc_id: d.text for d in musique_docs})


@pytest.fixture(scope="module")
def musique_index(musique_docs, tmp_path_factory):
    """An index of the paragraphs with its concept graph and communities, built by the CLI
    from a corpus file written here (the paragraphs are read from ../shared at test time)."""
    folder = tmp_path_factory.mktemp("communities")
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": d.doc_id, "title": d.title, "text": d.text}) + "\n"
                              for d in musique_docs), encoding="utf-8")
    out = folder / "index"
    info = json.loads(ragkit("index", "build", "--corpus", corpus, "--out", out, "--concepts", "--json").stdout)
    return out, info


@pytest.fixture(scope="module")
def manuals():
    docs = load_corpus(MANUALS)
    graph, _, _ = ConceptGraph.build(docs, progress=False)
    return graph, BM25Index.for_corpus(docs, "auto", progress=False)


# ------------------------------------------------------------------ detection
def test_every_concept_is_in_exactly_one_community(musique):
    graph, found = musique
    members = [k for c in found.communities for k in c.members]
    assert len(members) == len(set(members)) == len(graph.keys)
    assert set(members) == set(graph.keys)
    assert all(c.size == len(c.members) for c in found.communities)
    assert all(found.community_of(k) is not None for k in graph.keys[:50])


def test_communities_are_numbered_by_the_chunks_they_are_home_to(musique):
    graph, found = musique
    homes = [c.chunks for c in found.communities]
    assert homes == sorted(homes, reverse=True)
    with_concepts = int((np.diff(graph.mentions.indptr) > 0).sum())
    assert sum(homes) == with_concepts              # every chunk with a concept has one home
    assert [c.id for c in found.communities] == list(range(len(found.communities)))
    themes = found.themes
    assert themes and all(c.chunks >= 2 for c in themes) and found.unavailable is None
    assert 0.5 < found.meta["modularity"] < 1


def test_detection_is_deterministic_and_survives_a_save(musique, musique_docs, tmp_path):
    graph, found = musique
    again = detect_communities(graph, {d.doc_id: d.text for d in musique_docs})
    strip = lambda c: {**c.to_dict(), "seconds": 0}                       # noqa: E731
    assert strip(again) == strip(found)
    found.save(tmp_path)
    loaded = Communities.load(tmp_path)
    assert strip(loaded) == strip(found) and loaded.themes[0].label == found.themes[0].label
    assert Communities.load(tmp_path / "nowhere") is None


def test_top_concepts_rank_by_sentences_shared_inside_times_idf(musique):
    graph, found = musique
    community = found.themes[0]
    inside = set(community.members)
    n = len(graph.chunk_ids)
    top = community.top_concepts[0]
    i = graph.position[top["key"]]
    row = graph.cooccurs[i]
    sentences = sum(round(w * np.sqrt(graph.df[i] * graph.df[j])) for j, w in zip(row.indices, row.data)
                    if graph.keys[j] in inside)
    assert top["score"] == pytest.approx(sentences * np.log(n / graph.df[i]), abs=1e-3)
    scores = [t["score"] for t in community.top_concepts]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.slow
def test_summary_sentences_are_verbatim_in_the_chunks_they_cite(musique, musique_docs):
    graph, found = musique
    text = {d.doc_id: " ".join(d.text.split()) for d in musique_docs}
    checked = 0
    for community in found.communities:
        reps = {r["chunk_id"] for r in community.representatives}
        for s in community.summary:
            assert s["text"] in text[s["chunk_id"]], (community.id, s)
            assert s["chunk_id"] in reps
            keys = {graph.keys[c] for c in communities_module.mentioned_concepts(graph, s["text"])}
            assert keys & set(community.members)            # it mentions the community
            checked += 1
        assert len(community.summary) <= communities_module.SUMMARY_SENTENCES
    assert checked > len(found.themes)
    assert all(c.summary for c in found.themes)


def test_vietnamese_manuals_have_themes_with_vietnamese_sentences():
    docs = load_corpus(MANUALS)
    graph, _, _ = ConceptGraph.build(docs, progress=False)
    found = detect_communities(graph, {d.doc_id: d.text for d in docs})
    assert found.themes and found.unavailable is None
    text = {d.doc_id: " ".join(d.text.split()) for d in docs}
    sentences = [s for c in found.themes for s in c.summary]
    assert sentences and all(s["text"] in text[s["chunk_id"]] for s in sentences)
    assert not any(s["text"].endswith(":") for s in sentences)          # lead-ins are left out


def networkx_graph(adjacency):
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(range(adjacency.shape[0]))
    coo = sp.triu(adjacency, k=1).tocoo()
    g.add_weighted_edges_from(zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist()))
    return g


def parts_of(label):
    parts: dict = {}
    for node, community in enumerate(label.tolist()):
        parts.setdefault(community, set()).add(node)
    return list(parts.values())


def test_leiden_modularity_is_networkx_s_and_its_communities_are_connected(musique):
    """graspologic-native's Leiden on real text: its modularity is networkx's own measure of
    the same partition, and every community it finds is connected."""
    import networkx as nx

    graph, found = musique
    label, quality = communities_module.leiden_partition(graph)
    assert found.meta["algorithm"] == "leiden"
    g = networkx_graph(graph.cooccurs)
    assert quality == pytest.approx(nx.community.modularity(g, parts_of(label), weight="weight"), abs=1e-9)
    assert quality == pytest.approx(found.meta["modularity"], abs=1e-4)
    assert quality > 0.9
    # Every community is connected (Leiden's refinement; Louvain does not promise it).
    for part in parts_of(label):
        assert len(part) == 1 or nx.is_connected(g.subgraph(part))


def test_leiden_ends_on_the_graph_networkx_louvain_loops_on():
    """The graph of networkx issue 8739, on which networkx 3.6's louvain_communities loops
    forever with seed 123, and graphs without edges (graspologic-native refuses them)."""
    import networkx as nx

    atlas = sp.csr_matrix(nx.to_scipy_sparse_array(nx.Graph([(0, 1), (0, 2), (0, 5), (0, 6), (1, 2), (1, 4),
                                                             (2, 3), (2, 5), (2, 6), (3, 4)]), nodelist=range(7)))
    label = communities_module.leiden(atlas, seed=123)
    assert len(label) == 7 and sorted(set(label.tolist())) == list(range(label.max() + 1))
    assert communities_module.leiden(sp.csr_matrix((4, 4))).tolist() == [0, 1, 2, 3]
    assert communities_module.leiden(sp.csr_matrix((0, 0))).tolist() == []


def test_leiden_gives_the_same_communities_in_another_process():
    """The seed fixes the partition: a fresh interpreter finds the same labels."""
    docs = load_corpus(MANUALS)
    graph, _, _ = ConceptGraph.build(docs, progress=False)
    label, _ = communities_module.leiden_partition(graph)
    script = ("from ragkit.corpus import load_corpus; from ragkit.concepts.graph import ConceptGraph; "
              "from ragkit.concepts.communities import leiden_partition; "
              f"g, _, _ = ConceptGraph.build(load_corpus({str(MANUALS)!r}), progress=False); "
              "print(leiden_partition(g)[0].tolist())")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == label.tolist()
    assert communities_module.leiden_partition(graph)[0].tolist() == label.tolist()


@st.composite
def weighted_graphs(draw):
    """A symmetric weighted graph of up to 30 nodes, some of them without edges."""
    n = draw(st.integers(1, 30))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1),
                                    st.floats(0.01, 10, allow_nan=False)), max_size=80))
    rows = [i for i, j, _ in pairs if i != j]
    cols = [j for i, j, _ in pairs if i != j]
    weights = [w for i, j, w in pairs if i != j]
    a = sp.coo_matrix((weights, (rows, cols)), shape=(n, n)).tocsr()
    return sp.csr_matrix(a + a.T)


@settings(max_examples=80, deadline=None)
@given(weighted_graphs(), st.integers(0, 2**31 - 1))
def test_leiden_partitions_the_nodes(a, seed):
    """Every node is in exactly one community, labels are 0..k-1 with none empty, a node
    without edges is alone, every community is connected, the same seed gives the same
    labels, and the partition's modularity is no lower than every node alone."""
    import networkx as nx

    label = communities_module.leiden(a, seed=seed)
    n = a.shape[0]
    assert label.shape == (n,)
    assert set(label.tolist()) == set(range(int(label.max()) + 1))
    degree = np.asarray(a.sum(axis=1)).ravel()
    sizes = np.bincount(label)
    assert all(sizes[label[i]] == 1 for i in range(n) if degree[i] == 0)
    g = networkx_graph(a)
    assert all(len(part) == 1 or nx.is_connected(g.subgraph(part)) for part in parts_of(label))
    assert communities_module.leiden(a, seed=seed).tolist() == label.tolist()
    edges = sp.triu(a, k=1).tocoo()
    assert communities_module.modularity(edges, label) >= communities_module.modularity(edges, np.arange(n)) - 1e-9


def test_sentences_are_cut_where_sentences_end():
    text = ("# Heading\nThe U.S. Army moved to Fort Bragg in 1918. Dr. Smith led it. it was cold.\n\n"
            "A paragraph that is\nhard-wrapped over lines. And a second one here.\n\n"
            "- Check the oil level daily.\n- Replace the filter\n  every month.\nAMF\tAccess and Mobility")
    assert summary_sentences(text) == [
        "The U.S. Army moved to Fort Bragg in 1918.", "Dr. Smith led it. it was cold.",
        "A paragraph that is hard-wrapped over lines.", "And a second one here.",
        "Check the oil level daily.", "Replace the filter every month."]


def test_a_corpus_too_small_for_communities_says_why():
    one = [Doc("a", "The Bubye River flows into the Limpopo River in Zimbabwe.")]
    graph, _, _ = ConceptGraph.build(one, progress=False)
    found = detect_communities(graph, {"a": one[0].text})
    assert found.themes == [] and "the corpus has 1 chunk" in found.unavailable
    apart = [Doc("a", "The Bubye River flows in Zimbabwe."), Doc("b", "Niagara Falls lies in Canada.")]
    graph, _, _ = ConceptGraph.build(apart, progress=False)
    found = detect_communities(graph, {d.doc_id: d.text for d in apart})
    assert found.themes == [] and "share too few concepts" in found.unavailable


def test_the_module_examples_hold():
    for module in (communities_module, broad_module):
        failed, tried = doctest.testmod(module)
        assert tried > 0 and failed == 0, module.__name__


# ------------------------------------------------------------------ broad questions
BROAD_EN = ["What are the main themes of these documents?", "Give me an overview of the corpus.",
            "summarize the collection", "What topics does this corpus cover?",
            "Overall, what is this collection about?", "What are the key points of all the documents?"]
SPECIFIC_EN = ["What are the main topics about the Journal of Mathematical Physics?",
               "Give an overview of Harare.", "Which river flows through Zimbabwe?",
               "What is the main reason for the war?", "Summarize the American Institute of Physics."]
BROAD_VI = ["Các chủ đề chính của tài liệu là gì?", "Tổng quan về bộ tài liệu này",
            "Tóm tắt nội dung chính của các tài liệu", "Tài liệu này nói về những chủ đề gì?",
            "cho tôi biết tổng quan"]
SPECIFIC_VI = ["Các chủ đề chính về máy nén khí là gì?", "Tóm tắt về dầu bôi trơn",
               "Quy trình bảo dưỡng máy phay gồm những bước nào?", "Tổng quan về Máy Phay",
               "Tổng quan về an toàn khi vận hành máy tiện"]


@pytest.mark.parametrize("question", BROAD_EN)
def test_broad_english_questions(question, musique):
    verdict = broad_question(question, musique[0])
    assert verdict.broad, verdict.reason
    assert verdict.cues and not verdict.specific


@pytest.mark.parametrize("question", SPECIFIC_EN)
def test_specific_english_questions(question, musique):
    verdict = broad_question(question, musique[0])
    assert not verdict.broad
    assert verdict.specific or verdict.reason.startswith("no whole-corpus word")


@pytest.mark.parametrize("question", BROAD_VI)
def test_broad_vietnamese_questions(question, manuals):
    graph, index = manuals
    verdict = broad_question(question, graph, index)
    assert verdict.broad, verdict.reason


@pytest.mark.parametrize("question", SPECIFIC_VI)
def test_specific_vietnamese_questions(question, manuals):
    graph, index = manuals
    verdict = broad_question(question, graph, index)
    assert not verdict.broad, verdict.to_dict()


def test_the_verdict_says_why():
    assert corpus_cues("What are the MAIN THEMES of these documents?") == ["THEMES", "these documents"]
    docs = [Doc("a", "The Bubye River flows in Zimbabwe."), Doc("b", "Victoria Falls is in Zimbabwe.")]
    graph, _, _ = ConceptGraph.build(docs, progress=False)
    verdict = broad_question("Give an overview of the documents about the Bubye River", graph)
    assert verdict.specific[0]["concept"] == "Bubye River"
    assert "names 'Bubye River'" in verdict.reason
    named = broad_question("Give an overview of Harare", graph)
    assert named.specific == [{"span": "Harare", "name": "a name the graph does not hold"}]
    assert "no whole-corpus word" in broad_question("Where is the Bubye River?", graph).reason
    # A hub (a concept in too many chunks to be a node) describes the corpus, not a part of it.
    names = ["Bubye", "Limpopo", "Zambezi", "Save", "Runde", "Mazowe", "Gwayi", "Sanyati", "Shangani", "Umniati",
             "Nyadiri", "Mupfure", "Manyame", "Tokwe", "Mwenezi", "Shashe", "Umzingwane", "Insiza", "Gwanda",
             "Nata", "Pungwe", "Odzi", "Ruenya", "Kariba", "Deka"]
    rivers = [Doc(f"d{i}", f"The {name} River flows in Zimbabwe.") for i, name in enumerate(names)]
    graph, _, _ = ConceptGraph.build(rivers, progress=False)
    assert graph.hubs == ["zimbabwe"]
    verdict = broad_question("Give an overview of the Zimbabwe documents", graph)
    assert verdict.broad and verdict.common == [{"span": "Zimbabwe", "hub": "zimbabwe"}]
    assert verdict.reason.endswith("(only 'Zimbabwe', common to the corpus)")


def test_specific_questions_get_the_communities_of_their_concepts(musique):
    graph, found = musique
    community = found.themes[3]
    concept = community.top_concepts[0]
    verdict = broad_question(f"What are the main topics about {concept['concept']}?", graph)
    hits = rank_communities(found, verdict, 3)
    assert hits[0].community.id == community.id and hits[0].linked == [concept["concept"]]
    broad = rank_communities(found, broad_question("What are the main themes?", graph), 3)
    assert [h.community.id for h in broad] == [0, 1, 2]
    assert broad[0].score == pytest.approx(found.communities[0].chunks / found.chunks)


# ------------------------------------------------------------------ the pipeline and the trace
def test_auto_routes_only_broad_questions_and_the_trace_says_why(musique_index):
    index_dir, info = musique_index
    assert info["concepts"]["communities"]["themes"] > 5
    assert (concepts_dir_for(index_dir) / "communities.json.gz").is_file()
    config = LexicalConfig(method="auto", k=3)
    broad = ask_lexical("What are the main themes of these documents?", index_dir, config=config, use_llm=False)
    trace = broad.trace.to_dict()
    assert trace["method"] == "communities"
    assert trace["method_reason"].startswith("auto: a whole-corpus question: asks for 'themes', 'these documents'")
    assert trace["broad"]["broad"] and [c["id"] for c in trace["communities"]] == [0, 1, 2]
    assert broad.answer.startswith("Main themes:\n1. ")
    assert trace["answer_source"] == "evidence" and trace["check"]["passed"], trace["check"]
    # Each [n] cites the chunk its sentences were cut from.
    communities = load_communities(index_dir)
    cited = [c.doc_id for c in broad.citations]
    assert cited == list(dict.fromkeys(cid for c in communities.themes[:3] for cid in c.cited_chunks()))
    for citation, evidence in zip(broad.citations, broad.evidence):
        assert all(s["text"] in evidence for c in communities.themes[:3] for s in c.summary
                   if s["chunk_id"] == citation.doc_id)

    specific = ask_lexical("What is the Journal of Mathematical Physics?", index_dir, config=config, use_llm=False)
    trace = specific.trace.to_dict()
    assert trace["method"] == "graph" and trace["communities"] is None     # auto: the index has a concept graph
    assert trace["method_reason"].startswith("auto: the index has a concept graph; the walk seeded from")
    assert not trace["broad"]["broad"] and "no whole-corpus word" in trace["broad"]["route"]
    assert specific.citations[0].doc_id == "p0"


class Scripted:
    """A stand-in model that gives one reply."""

    name, n_ctx = "scripted", 2048

    def __init__(self, reply):
        self.reply, self.calls = reply, []

    def count_tokens(self, text):
        return len(text.split())

    def chat(self, messages, **kwargs):
        self.calls.append(messages)
        return Generation(text=self.reply, finish_reason="stop", completion_tokens=len(self.reply.split()))


def test_a_model_writes_the_themes_from_the_summaries_and_is_checked(musique_index):
    index_dir, _ = musique_index
    config = LexicalConfig(method="communities", k=2)
    plain = ask_lexical("What are the main themes?", index_dir, config=config, use_llm=False)
    first = plain.evidence[0].split(". ")[0].rstrip(".")
    model = Scripted(f"{first} [1].")
    written = ask_lexical("What are the main themes?", index_dir, config=config, llm=model)
    assert written.trace.answer_source == "model" and written.answer == f"{first} [1]."
    prompt = model.calls[0][1]["content"]
    assert "[1] " in prompt and "grouped by theme" in model.calls[0][0]["content"]
    made_up = ask_lexical("What are the main themes?", index_dir, config=config,
                          llm=Scripted("The documents are mostly about Martian volcanoes [1]."))
    assert made_up.trace.answer_source == "fallback"
    assert made_up.answer.startswith(plain.answer)


# ------------------------------------------------------------------ the command line
@pytest.mark.slow
def test_cli_search_and_ask_answer_from_communities(musique_index):
    index_dir, info = musique_index
    assert info["concepts"]["communities"]["communities"] >= info["concepts"]["communities"]["themes"]
    out = json.loads(ragkit("search", "--index", index_dir, "--method", "communities", "--k", "2", "--json",
                            "--query", "What are the main themes of these documents?").stdout)
    assert out["method"] == "communities" and out["method_reason"] == "asked for"
    first = out["results"][0]
    assert first["doc_id"] == "community:0" and first["text"] == " ".join(s["text"] for s in first["summary"])
    assert set(first) >= {"score", "title", "concepts", "representatives", "chunks", "size"}
    auto = json.loads(ragkit("search", "--index", index_dir, "--method", "auto", "--json",
                             "--query", "Give me an overview of the corpus").stdout)
    assert auto["method"] == "communities" and auto["method_reason"].startswith("auto: a whole-corpus question")
    specific = json.loads(ragkit("search", "--index", index_dir, "--method", "auto", "--json",
                                 "--query", "Who edits the Journal of Mathematical Physics?").stdout)
    assert "method" not in specific and specific["results"][0]["doc_id"] == "p0"

    answer = json.loads(ragkit("ask", "Các chủ đề chính của tài liệu là gì?", "--pipeline", "lexical",
                               "--index", index_dir, "--method", "auto", "--no-llm", "--json").stdout)
    assert answer["trace"]["method"] == "communities" and answer["answer"].startswith("Các chủ đề chính:\n1. ")
    assert answer["citations"] and answer["trace"]["check"]["passed"]


@pytest.mark.slow
def test_cli_refuses_communities_where_there_are_none(tmp_path):
    plain = tmp_path / "plain"
    ragkit("index", "build", "--corpus", MANUALS, "--out", plain)
    refused("search", "--index", plain, "--query", "main themes?", "--method", "communities",
            match="--method communities: this index has no concept communities (build it with "
                  "'ragkit index build --concepts')")
    tiny = tmp_path / "tiny.jsonl"
    tiny.write_text(json.dumps({"_id": "a", "text": "The Bubye River flows into the Limpopo River in Zimbabwe."})
                    + "\n", encoding="utf-8")
    small = tmp_path / "small"
    built = ragkit("index", "build", "--corpus", tiny, "--out", small, "--concepts").stdout
    assert "none a theme: the corpus has 1 chunk" in built
    refused("ask", "What are the main themes?", "--pipeline", "lexical", "--index", small,
            "--method", "communities", "--no-llm",
            match="--method communities: this index has no communities to answer from: the corpus has 1 chunk")
    auto = json.loads(ragkit("ask", "What are the main themes?", "--pipeline", "lexical", "--index", small,
                             "--method", "auto", "--no-llm", "--json").stdout)
    assert auto["trace"]["method"] == "graph"
    assert "a whole-corpus question, but the index has no communities" in auto["trace"]["broad"]["route"]
    refused("eval", "retrieval", "--corpus", tiny, "--queries", tiny, "--qrels", tiny, "--method", "communities",
            match="--method communities: answers from community summaries and ranks no chunks")


def test_a_rebuild_recomputes_the_communities(tmp_path):
    docs = load_corpus(MANUALS)
    out = tmp_path / "index"
    spec = IndexSpec(corpus=MANUALS, out=out, concepts=True)
    report = build_index(spec, progress=False).concepts
    first = Communities.load(out / "concepts")
    assert report["communities"]["themes"] == len(first.themes) and report["extracted"] == len(docs)
    fewer = [d for d in docs if not d.source.startswith("may_tien")]
    report = build_index(spec, docs=fewer, progress=False).concepts
    assert report["reused"] == len(fewer) and report["removed"] == len(docs) - len(fewer)
    second = Communities.load(out / "concepts")
    kept = {d.doc_id for d in fewer}
    assert second.communities and all(s["chunk_id"] in kept for c in second.communities for s in c.summary)


def test_the_walk_subgraph_marks_the_bridge_and_is_drawn():
    from matplotlib.figure import Figure

    from ragkit.concepts.draw import draw_walk, walk_layout, walk_subgraph
    from ragkit.concepts.search import ConceptSearcher

    docs = [Doc("d1", "The Bubye River is a river in Zimbabwe. It flows south to the Limpopo River."),
            Doc("d2", "Victoria Falls is a waterfall on the Zambezi River, in Zimbabwe and Zambia."),
            Doc("d3", "Niagara Falls is a waterfall between Canada and the United States.")]
    graph, _, _ = ConceptGraph.build(docs, progress=False)
    question = "What is the name of the waterfall in the country where the Bubye River is found?"
    g = walk_subgraph(ConceptSearcher(graph), question, [("d1", 1.0)], chunks=2)
    roles = {d["label"]: d["role"] for _, d in g.nodes(data=True)}
    assert roles["Bubye River"] == "question" and roles["Zimbabwe"] == "bridge"
    assert roles["1. d1"] == roles["2. d2"] == "ranked"
    assert g.has_edge("concept:zimbabwe", "chunk:d2") and g.edges["concept:zimbabwe", "chunk:d2"]["relation"] == "MENTIONS"
    assert g.graph["bridges"]["d2"][0]["concept"] == "Zimbabwe"
    pos = walk_layout(g)
    assert pos["concept:bubye river"][0] == 0 and pos["concept:zimbabwe"][0] == 1 and pos["chunk:d2"][0] == 2
    assert isinstance(draw_walk(g), Figure)
    assert walk_subgraph(ConceptSearcher(graph), "nothing here links", []).number_of_nodes() == 0


def test_route_needs_the_graph_for_the_method(musique):
    with pytest.raises(InputError, match="no concept communities"):
        route("communities", "main themes?", musique[1], None)
    assert not route("bm25", "What are the main themes?", musique[1], None).communities
