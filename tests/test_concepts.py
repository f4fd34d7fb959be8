"""Concept graphs: extraction on real text, incremental rebuilds, personalized PageRank on a
graph checked by hand, the bridge in the trace, and refused inputs."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

from ragkit.concepts.extract import abbreviations, concept_key, extract_concepts
from ragkit.concepts.graph import ConceptGraph, read_extractions
from ragkit.concepts.ppr import personalized_pagerank
from ragkit.concepts.search import ConceptSearcher
from ragkit.retrieval.fusion import weighted
from ragkit.corpus import Doc, load_beir_corpus
from ragkit.errors import InputError

from .conftest import MANUALS, shared
from .test_cli import ragkit, refused


@pytest.fixture(scope="module")
def musique():
    docs = load_beir_corpus(shared("multihop_passages", "musique_beir", "corpus.jsonl"))
    return {d.doc_id: d for d in docs}


# ------------------------------------------------------------------ extraction
def test_names_and_phrases_from_a_musique_paragraph(musique):
    doc = musique["p0"]        # Journal of Mathematical Physics
    labels = [m.label for m in extract_concepts(doc.full_text)]
    for name in ("Journal of Mathematical Physics", "American Institute of Physics",
                 "Jan Philip Solovej", "University of Copenhagen"):
        assert name in labels
    assert "mathematical physics" in labels                 # a lower-case noun phrase
    assert not any(l.lower() in ("the", "its", "it") for l in labels)
    assert not any(l.endswith((" published", " monthly")) for l in labels)   # verbs end a run


def test_vietnamese_manual_gives_syllable_ngrams_and_no_sentence_initial_syllables():
    text = (MANUALS / "may_phay.md").read_text(encoding="utf-8")
    mentions = extract_concepts(text)
    labels = {m.label for m in mentions}
    assert {"dao phay", "trục chính", "dầu bôi trơn"} & labels
    assert all(m.how in ("syllables", "name", "initial", "term") for m in mentions)
    assert "Tài" not in labels and "Bàn" not in labels     # a capital opening a sentence, not a name
    assert "OSHA" in labels                                # an abbreviation is a name


def test_keys_merge_case_plurals_accents_and_abbreviations():
    assert concept_key("Máy Phay") == concept_key("may phay")
    assert concept_key("the Operating Bands") == concept_key("operating band")
    assert concept_key("Beatles'") == concept_key("Beatle")
    assert abbreviations("routed by the Service Communication Proxy (SCP) today") == \
        {"scp": "service communication proxy"}
    docs = [Doc("a", "The Service Communication Proxy (SCP) routes messages to the Network Function."),
            Doc("b", "An SCP can sit between two Network Function instances.")]
    graph, _, _ = ConceptGraph.build(docs, progress=False)
    scp = graph.concept_of("scp")
    assert scp is not None and graph.keys[scp] == "service communication proxy"
    rows = [graph.chunk_position[c] for c in "ab"]
    assert all(scp in graph.concepts_of_chunk(r) for r in rows)


def test_dictionary_terms_are_found_where_they_occur():
    found = extract_concepts("check the relief valve before starting", terms=["relief valve"], language="en")
    assert any(m.how in ("term", "phrase") and m.key == "relief valve" for m in found)


# ------------------------------------------------------------------ graph and rebuilds
def test_incremental_rebuild_reextracts_only_changed_chunks(tmp_path, musique):
    docs = [musique[f"p{i}"] for i in range(12)]
    graph, rows, first = ConceptGraph.build(docs, progress=False)
    graph.save(tmp_path / "concepts", rows)
    assert (first.extracted, first.reused, first.removed) == (12, 0, 0)

    changed = Doc(docs[0].doc_id, docs[0].text + " It moved to Zimbabwe Press in 2020.", docs[0].title)
    again = [changed] + docs[1:10]                      # p10, p11 removed
    graph2, rows2, second = ConceptGraph.build(again, previous=read_extractions(tmp_path / "concepts"),
                                               progress=False)
    assert (second.extracted, second.reused, second.removed) == (1, 9, 2)
    assert "zimbabwe press" in graph2.position
    assert set(graph2.chunk_ids) == {d.doc_id for d in again}
    gone = {k for k, _, _, _ in rows["p11"]["concepts"]} - \
        {k for cid in graph2.chunk_ids for k, _, _, _ in rows2[cid]["concepts"]}
    assert gone and not gone & set(graph2.keys)         # a removed chunk's mentions went with it
    graph2.save(tmp_path / "concepts", rows2)
    loaded = ConceptGraph.load(tmp_path / "concepts")
    assert loaded.keys == graph2.keys and (loaded.mentions != graph2.mentions).nnz == 0


def test_graph_file_is_networkx_with_mentions_and_cooccurrence(tmp_path, musique):
    import gzip

    import networkx as nx

    docs = [musique[f"p{i}"] for i in range(20)]
    graph, rows, _ = ConceptGraph.build(docs, progress=False)
    graph.save(tmp_path / "c", rows)
    data = json.loads(gzip.decompress((tmp_path / "c" / "graph.json.gz").read_bytes()))
    g = nx.node_link_graph(data["graph"], edges="edges")
    relations = {d["relation"] for _, _, d in g.edges(data=True)}
    assert relations == {"MENTIONS", "CO_OCCURS"}
    assert g.number_of_nodes() == len(graph.keys) + len(docs)


# ------------------------------------------------------------------ PageRank
def test_ppr_on_a_hand_checked_star():
    # A star: node 0 in the centre, 1..3 around it. Seeded at 1 with damping 0.5:
    # p1 = 1/2 + 1/2 * p0/3, p0 = 1/2 * (p1 + p2 + p3), p2 = p3 = 1/2 * p0/3.
    # Then p0 = 1/2 p1 + 1/6 p0 -> p0 = 3/5 p1; p1 = 1/2 + 1/10 p1 -> p1 = 5/9, p0 = 1/3, p2 = p3 = 1/18.
    a = sp.csr_matrix(np.array([[0, 1, 1, 1], [1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]], dtype=float))
    p = personalized_pagerank(a, {1: 2.0}, damping=0.5, max_iter=200, tol=1e-12)
    assert np.allclose(p, [1 / 3, 5 / 9, 1 / 18, 1 / 18])
    assert personalized_pagerank(a, {}, damping=0.5).sum() == 0


def test_fusion_keeps_both_lists():
    fused = weighted([("a", 3.0), ("b", 1.0)], [("c", 2.0), ("a", 1.0)], 0.5)
    assert [d for d, _ in fused] == ["a", "c", "b"]


def test_hybrid_graph_fusion_keeps_the_base_head_and_weighs_the_walk_by_names():
    docs = [Doc("d1", "The Bubye River is a river in Zimbabwe. It flows south to the Limpopo River."),
            Doc("d2", "Victoria Falls is a waterfall on the Zambezi River, in Zimbabwe and Zambia."),
            Doc("d3", "A waterfall forms where a river flows over a cliff of hard rock."),
            Doc("d4", "The Orange River flows through South Africa and Namibia.")]
    searcher = ConceptSearcher(ConceptGraph.build(docs, progress=False)[0])
    named = searcher.link_question("Does the Bubye River run over hard rock?")
    common = searcher.link_question("How does a waterfall form over hard rock?")
    assert 0 < searcher.name_share(named) < 1 and searcher.name_share(common) == 0.0
    assert searcher.name_share([]) == 0.0
    base = [("d3", 0.9), ("d4", 0.8), ("d1", 0.1)]
    walked = [("d2", 1.0), ("d1", 0.9), ("d3", 0.1)]
    ranking, weight = searcher.fuse(base, walked, 1.0)
    assert weight == searcher.params.weight
    assert [d for d, _ in ranking][:3] == ["d3", "d4", "d2"]      # the base's first two stay first
    assert [d for d, _ in searcher.fuse(base, walked, 0.0)[0]] == ["d3", "d4", "d1", "d2"]


def test_a_title_is_the_subject_of_its_chunk(musique):
    doc = musique["p926"]          # "Ceelmakoile": one word, opening its own text
    found = {m.key: m for m in extract_concepts(doc.full_text, title=doc.title)}
    assert found["ceelmakoile"].how == "title" and found["ceelmakoile"].label == "Ceelmakoile"
    sentences = {s for m in found.values() for s in m.sentences}
    assert set(found["ceelmakoile"].sentences) == sentences          # it co-occurs with all of them
    graph = ConceptGraph.build([musique[p] for p in ("p926", "p63", "p1023")], progress=False)[0]
    somalia, town = graph.concept_of("somalia"), graph.concept_of("ceelmakoile")
    assert graph.cooccurs[town, somalia] > 0


def test_question_spans_link_as_users_write_them(musique):
    searcher = ConceptSearcher(ConceptGraph.build([musique[p] for p in ("p63", "p926", "p1023", "p0")],
                                                  progress=False)[0])

    def linked(question):
        return {(searcher.graph.labels[s.concept], s.how) for s in searcher.link_question(question)}

    # Several lower-case words may name a name; one lower-case word may not.
    assert ("Journal of Mathematical Physics", "normalized") in linked("who edits the journal of mathematical physics?")
    assert not any(label == "Ceelmakoile" for label, _ in linked("which town is ceelmakoile in?"))
    # A misspelt name links; between spans of one length, the name wins.
    assert ("Journal of Mathematical Physics", "fuzzy") in linked("Who edits the Journal of Mathematical Phisics?")
    assert ("Bubye River", "normalized") in linked("Which waterfall is in the nation where the Bubye river flows?")


# ------------------------------------------------------------------ the bridge
def test_trace_names_the_bridge_concept():
    docs = [Doc("d1", "The Bubye River is a river in Zimbabwe. It flows south to the Limpopo River."),
            Doc("d2", "Victoria Falls is a waterfall on the Zambezi River, in Zimbabwe and Zambia."),
            Doc("d3", "Niagara Falls is a waterfall between Canada and the United States."),
            Doc("d4", "The Orange River flows through South Africa and Namibia.")]
    graph, _, _ = ConceptGraph.build(docs, progress=False)
    searcher = ConceptSearcher(graph)
    question = "What is the name of the waterfall in the country where the Bubye River is found?"
    ranked, seeds, walk = searcher.rank(question, base=[("d1", 1.0)])
    assert [s["concept"] for s in seeds["seed_concepts"]] == ["Bubye River"]
    order = [d for d, _ in ranked]
    assert order[:2] == ["d1", "d2"]                        # d2 reached through Zimbabwe
    assert "d3" not in order[:2] and "d4" not in order[:2]
    bridge = searcher.bridge(walk, "d2")
    assert bridge[0]["concept"] == "Zimbabwe"
    assert "d1 --MENTIONS--> Zimbabwe" in bridge[0]["via"]
    assert bridge[0]["via"][-1] == "Zimbabwe --MENTIONS--> d2"


# ------------------------------------------------------------------ refused inputs
def test_empty_corpus_and_a_corpus_without_concepts_are_refused():
    with pytest.raises(InputError, match="^corpus x.jsonl: holds no documents"):
        ConceptGraph.build([], progress=False, what="corpus x.jsonl")
    with pytest.raises(InputError, match="^corpus y.jsonl: no concept found in any of its 2 chunks"):
        ConceptGraph.build([Doc("a", "1 2 3"), Doc("b", "and the of")], progress=False, what="corpus y.jsonl")


def test_cli_builds_concepts_and_refuses_bad_corpora(tmp_path):
    out = tmp_path / "idx"
    info = json.loads(ragkit("index", "build", "--corpus", MANUALS, "--out", out, "--concepts", "--json").stdout)
    assert info["concepts"]["concepts"] > 50 and info["concepts"]["extracted"] == info["docs"]
    again = json.loads(ragkit("index", "build", "--corpus", MANUALS, "--out", out, "--concepts", "--json").stdout)
    assert again["concepts"]["reused"] == info["docs"] and again["concepts"]["extracted"] == 0
    found = json.loads(ragkit("search", "--index", out, "--query", "Các bước vận hành máy phay",
                              "--method", "hybrid+graph", "--json").stdout)["results"]
    assert found and "bridge" in found[0]
    plain = tmp_path / "plain"
    ragkit("index", "build", "--corpus", MANUALS, "--out", plain, "--json")
    refused("search", "--index", plain, "--query", "máy phay", "--method", "graph",
            match="--method graph: this index has no concept graph")

    blank = tmp_path / "blank.jsonl"
    blank.write_text(json.dumps({"_id": "a", "text": "12 34"}) + "\n")
    target = tmp_path / "never"
    refused("index", "build", "--corpus", blank, "--out", target, "--concepts",
            match=f"corpus {blank}: no concept found")
    assert not target.exists() and not any(p.name.startswith(".never") for p in tmp_path.iterdir())
