"""Concept graphs: extraction on real text, incremental rebuilds, personalized PageRank on a
graph checked by hand, the bridge in the trace, the graph in a real Neo4j over Bolt (read
back, rebuilt, shared with the spec graph), ``graph build --corpus``, and refused inputs."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

from ragkit.concepts.extract import abbreviations, concept_key, extract_concepts
from ragkit.concepts.graph import ConceptGraph, read_extractions
from ragkit.concepts.ppr import personalized_pagerank
from ragkit.concepts.search import ConceptSearcher
from ragkit.retrieval.fusion import weighted
from ragkit.retrieval.search import fuse_with_walk
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


def _same_graph(a: ConceptGraph, b: ConceptGraph) -> bool:
    return (a.chunk_ids == b.chunk_ids and a.keys == b.keys and a.labels == b.labels and a.aliases == b.aliases
            and a.hubs == b.hubs and np.array_equal(a.df, b.df) and a.mentions.shape == b.mentions.shape
            and (a.mentions != b.mentions).nnz == 0 and (a.cooccurs != b.cooccurs).nnz == 0
            and np.array_equal(a.cooccurs.toarray(), b.cooccurs.toarray()))


def test_a_saved_graph_loads_as_built_and_an_older_folder_is_assembled_again(tmp_path, musique):
    """``load`` reads the matrices and names the build saved (no assembly from the
    extractions); a folder saved before they were kept (extractions, graph.json.gz and
    meta.json only) is assembled from its extraction rows, to the same graph."""
    docs = [musique[f"p{i}"] for i in range(60)]
    graph, rows, _ = ConceptGraph.build(docs, progress=False)
    graph.save(tmp_path / "c", rows)
    assert {"graph.npz", "names.json"} <= {f.name for f in (tmp_path / "c").iterdir()}
    loaded = ConceptGraph.load(tmp_path / "c")
    assert _same_graph(loaded, graph) and loaded.meta["chunks"] == 60 and loaded.meta["extractor"]
    assert _same_graph(ConceptGraph.from_extractions(list(rows), rows), graph)
    for name in ("graph.npz", "names.json"):
        (tmp_path / "c" / name).unlink()
    assert _same_graph(ConceptGraph.load(tmp_path / "c"), graph)


def test_a_saved_graph_keeps_its_linker_keys_for_this_key_version_only(tmp_path, musique):
    """``names.json`` keeps the keys the linker files the labels and aliases under; a loaded
    graph's linker takes them as they are and links as one that computes them. Keys of
    another KEY_VERSION are computed again; a count that does not match the names is a
    one-line IndexFormatError."""
    from ragkit.errors import IndexFormatError
    from ragkit.text.linking import KEY_VERSION, surface_keys

    docs = [musique[f"p{i}"] for i in range(60)]
    graph, rows, _ = ConceptGraph.build(docs, progress=False)
    assert graph.link_keys is None
    graph.save(tmp_path / "c", rows)
    assert graph.link_keys is None                      # saving does not change the graph
    loaded = ConceptGraph.load(tmp_path / "c")
    assert graph.aliases and loaded.link_keys == surface_keys([*graph.labels, *graph.aliases])
    fresh, saved = ConceptSearcher(graph), ConceptSearcher(loaded)      # keys computed / read
    assert saved.linker.by_key == fresh.linker.by_key and saved.linker.by_plain == fresh.linker.by_plain
    for doc in docs[:10]:
        question = f"What connects {doc.title} and {docs[-1].title}?"
        assert saved.link_question(question) == fresh.link_question(question)
    names_file = tmp_path / "c" / "names.json"
    names = json.loads(names_file.read_text())
    names["link_keys"]["version"] = 0
    names_file.write_text(json.dumps(names))
    assert ConceptGraph.load(tmp_path / "c").link_keys is None
    names["link_keys"] = {"version": KEY_VERSION, "keys": names["link_keys"]["keys"][:-1]}
    names_file.write_text(json.dumps(names))
    with pytest.raises(IndexFormatError, match="names.json keeps .* link keys for"):
        ConceptGraph.load(tmp_path / "c")
    names["link_keys"] = ["not", "an", "object"]
    names_file.write_text(json.dumps(names))
    with pytest.raises(IndexFormatError, match="keeps its link keys as list, not an object"):
        ConceptGraph.load(tmp_path / "c")


def test_extraction_rows_are_kept_as_text_and_written_as_before(tmp_path, musique):
    """The rows a build returns read as dicts, compare equal to plain dicts, and are written
    to ``extractions.jsonl`` line for line as ``json.dumps({"chunk_id": ..., **row})``; a
    line written another way (other key order) still reads."""
    from ragkit.concepts.extractions import ExtractionRows

    docs = [musique[f"p{i}"] for i in range(15)]
    graph, rows, _ = ConceptGraph.build(docs, progress=False)
    assert isinstance(rows, ExtractionRows) and len(rows) == 15
    plain = {cid: rows[cid] for cid in rows}
    assert rows == plain and plain["p0"]["concepts"] and isinstance(plain["p0"]["hash"], str)
    graph.save(tmp_path / "c", rows)
    lines = (tmp_path / "c" / "extractions.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines == [json.dumps({"chunk_id": cid, **plain[cid]}, ensure_ascii=False) for cid in graph.chunk_ids]
    reordered = [json.dumps(dict(reversed(list(json.loads(line).items()))), ensure_ascii=False) for line in lines]
    (tmp_path / "c" / "extractions.jsonl").write_text("\n".join(reordered) + "\n", encoding="utf-8")
    assert read_extractions(tmp_path / "c") == plain
    # A rebuild from plain dicts (as a Neo4j store gives them) reuses every row.
    _, again, report = ConceptGraph.build(docs, previous=plain, progress=False)
    assert (report.extracted, report.reused) == (0, 15) and again == rows


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


def test_extraction_in_worker_processes_gives_the_same_graph(musique, monkeypatch):
    """Two worker processes extract what one process does, row for row, in corpus order;
    a rebuild reuses what did not change either way."""
    from ragkit.concepts import extractions

    docs = list(musique.values())[:240]
    serial, rows, _ = ConceptGraph.build(docs, progress=False, workers=1)
    monkeypatch.setattr(extractions, "PARALLEL_FROM", 10)
    monkeypatch.setattr(extractions, "PARALLEL_BATCH", 50)
    parallel, parallel_rows, report = ConceptGraph.build(docs, progress=False, workers=2)
    assert parallel_rows == rows and list(parallel_rows) == [d.doc_id for d in docs]
    assert parallel.keys == serial.keys and (parallel.cooccurs != serial.cooccurs).nnz == 0
    assert report.extracted == 240
    changed = docs[:5] + [Doc(d.doc_id, d.text + " The Limpopo River floods.", d.title) for d in docs[5:30]] + docs[30:]
    _, again, report = ConceptGraph.build(changed, previous=rows, progress=False, workers=2)
    assert (report.extracted, report.reused) == (25, 215)
    assert again == ConceptGraph.build(changed, previous=rows, progress=False, workers=1)[1]


def test_forward_push_agrees_with_the_power_iteration():
    """The push's mass is the PageRank to within ε × degree per node: on a random weighted
    graph with a node of no edges (whose share goes back to the seeds), against a power
    iteration run to convergence; the hand-checked star to 1e-6."""
    from ragkit.concepts.ppr import LocalPageRank

    a = sp.csr_matrix(np.array([[0, 1, 1, 1], [1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]], dtype=float))
    mass, reached = LocalPageRank(a)({1: 2.0}, damping=0.5, epsilon=1e-9)
    assert np.allclose(mass, [1 / 3, 5 / 9, 1 / 18, 1 / 18], atol=1e-6) and list(reached) == [0, 1, 2, 3]
    rng = np.random.default_rng(3)
    upper = sp.random(400, 400, density=0.02, random_state=4, format="csr")
    upper.data = rng.uniform(0.05, 1.0, upper.nnz)
    graph = sp.triu(upper, k=1)
    graph = (graph + graph.T).tolil()
    graph[7, :] = 0
    graph[:, 7] = 0
    graph = graph.tocsr()
    seeds = {3: 0.5, 7: 0.2, 11: 0.3}
    exact = personalized_pagerank(graph, seeds, damping=0.7, max_iter=500, tol=1e-14)
    mass, reached = LocalPageRank(graph)(seeds, damping=0.7, epsilon=1e-8)
    degree = np.asarray(graph.sum(axis=1)).ravel()
    assert np.all(np.abs(mass - exact) <= 1e-8 * np.maximum(degree, 1) * 20)
    assert list(np.argsort(-mass)[:20]) == list(np.argsort(-exact)[:20])
    assert set(reached) == set(np.flatnonzero(mass)) and mass[7] > 0
    assert LocalPageRank(graph)({}, damping=0.7)[0].sum() == 0


def test_a_large_graph_is_walked_by_push_and_ranks_as_the_power_iteration(musique, monkeypatch):
    """Above ``PUSH_FROM_EDGES`` the searcher walks by forward push: on MuSiQue's paragraphs
    the chunks it ranks first are the power iteration's."""
    from ragkit.concepts import search as search_module

    graph = ConceptGraph.build(list(musique.values())[:600], progress=False)[0]
    exact = ConceptSearcher(graph)
    monkeypatch.setattr(search_module, "PUSH_FROM_EDGES", 0)
    pushed = ConceptSearcher(graph)
    assert exact.local is None and pushed.local is not None
    for question, base in (("Who founded the university where Jan Philip Solovej works?", [("p0", 1.0)]),
                           ("Which river flows south to the Limpopo?", [])):
        a, info_a, _ = exact.rank(question, base, k=10)
        b, info_b, walk = pushed.rank(question, base, k=10)
        assert info_a == info_b and a
        assert [d for d, _ in a[:5]] == [d for d, _ in b[:5]]
        assert np.allclose([s for _, s in a[:5]], [s for _, s in b[:5]], rtol=0.05)
        assert pushed.bridge(walk, b[0][0])


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
    ranking, weight = fuse_with_walk(searcher.params, base, walked, 1.0)
    assert weight == searcher.params.weight
    assert [d for d, _ in ranking][:3] == ["d3", "d4", "d2"]      # the base's first two stay first
    assert [d for d, _ in fuse_with_walk(searcher.params, base, walked, 0.0)[0]] == ["d3", "d4", "d1", "d2"]


def test_a_title_is_the_subject_of_its_chunk(musique):
    doc = musique["p926"]          # "Ceelmakoile": one word, opening its own text
    found = {m.key: m for m in extract_concepts(doc.full_text, title=doc.title)}
    assert found["ceelmakoile"].how == "title" and found["ceelmakoile"].label == "Ceelmakoile"
    sentences = {s for m in found.values() for s in m.sentences}
    assert set(found["ceelmakoile"].sentences) == sentences          # it co-occurs with all of them
    graph = ConceptGraph.build([musique[p] for p in ("p926", "p63", "p1023")], progress=False)[0]
    somalia, town = graph.concept_of("somalia"), graph.concept_of("ceelmakoile")
    assert graph.cooccurs[town, somalia] > 0


def test_a_headings_clause_number_is_no_part_of_its_concept():
    text = "The Session Management Function (SMF) allocates the UE IP address.\nIt controls the UPF."
    found = {m.key: m for m in extract_concepts(text, title="4 Network functions > 4.2 SMF")}
    assert found["smf"].how == "title" and found["smf"].label == "SMF" and "4.2 smf" not in found
    for title in ("Games > 1964 Summer Olympics", "Rappers > 50 Cent"):      # a bare number may be the name's
        assert extract_concepts("They came.", title=title)[0].label == title.split(" > ")[1]
    assert extract_concepts("It applies.", title="1. Scope")[0].label == "Scope"


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


@pytest.mark.slow
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


# ------------------------------------------------------------------ the graph in Neo4j
@pytest.fixture
def concept_store(neo4j_uri):
    """The concept graph's store on the shared Neo4j, empty at the start of each test."""
    from ragkit.concepts.neo4j_store import Neo4jConceptStore

    store = Neo4jConceptStore(neo4j_uri)
    store.clear()
    yield store
    store.clear()
    store.close()


def assert_same_graph(a: ConceptGraph, b: ConceptGraph) -> None:
    assert a.chunk_ids == b.chunk_ids and a.keys == b.keys and a.labels == b.labels
    assert np.array_equal(a.df, b.df) and a.aliases == b.aliases and a.hubs == b.hubs
    assert a.mentions.shape == b.mentions.shape and (a.mentions != b.mentions).nnz == 0
    assert a.cooccurs.shape == b.cooccurs.shape and (a.cooccurs != b.cooccurs).nnz == 0


@pytest.fixture(scope="module")
def musique_questions():
    path = shared("multihop_passages", "musique_beir", "queries.jsonl")
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line)["text"] for line in handle][:12]


@pytest.mark.slow
def test_the_graph_read_back_from_neo4j_is_the_file_graph_and_ranks_the_same(
        concept_store, tmp_path, musique, musique_questions):
    docs = [musique[f"p{i}"] for i in range(200)]
    graph, rows, _ = ConceptGraph.build(docs, progress=False)
    graph.save(tmp_path / "concepts", rows)
    from_file = ConceptGraph.load(tmp_path / "concepts")
    stats = concept_store.write(graph, rows)
    assert (stats.written.chunks, stats.written.concepts, stats.written.mentions, stats.written.cooccurrences) == \
        (200, len(graph.keys), graph.mentions.nnz, graph.cooccurs.nnz // 2)
    assert concept_store.counts() == {"CO_OCCURS": graph.cooccurs.nnz // 2, "ConceptChunk": 200,
                                            "ConceptNode": len(graph.keys), "MENTIONS": graph.mentions.nnz}
    stored = concept_store.read()
    assert_same_graph(stored, from_file)
    assert concept_store.extractions() == rows
    by_file, by_store = ConceptSearcher(from_file), ConceptSearcher(stored)
    linked = 0
    for question in musique_questions:
        base = [(f"p{i}", 1.0 / (i + 1)) for i in range(3)]
        a, seeds_a, _ = by_file.rank(question, base)
        b, seeds_b, _ = by_store.rank(question, base)
        assert a == b and seeds_a == seeds_b
        linked += bool(seeds_a["seed_concepts"])
    assert linked >= 3                                    # the questions did reach the graph


@pytest.mark.slow
def test_a_rebuild_writes_only_what_changed_and_leaves_nothing_stale(concept_store, musique):
    docs = [musique[f"p{i}"] for i in range(30)]
    graph, rows, _ = ConceptGraph.build(docs, progress=False)
    concept_store.write(graph, rows)

    nothing = concept_store.write(graph, rows)         # the same graph again: no write at all
    assert nothing.written == nothing.deleted == type(nothing.written)()

    changed = Doc(docs[0].doc_id, docs[0].text + " It moved to Zimbabwe Press in 2020.", docs[0].title)
    removed = docs[29].doc_id
    again = [changed] + docs[1:29]
    graph2, rows2, report = ConceptGraph.build(again, previous=concept_store.extractions(), progress=False)
    assert (report.extracted, report.reused, report.removed) == (1, 28, 1)   # rows from the store
    stats = concept_store.write(graph2, rows2)
    assert stats.written.chunks == 1 and stats.deleted.chunks == 1
    gone = set(graph.keys) - set(graph2.keys)
    assert gone and stats.deleted.concepts == len(gone)
    assert stats.written.mentions < graph2.mentions.nnz // 4          # not a rewrite

    assert_same_graph(concept_store.read(), graph2)
    run = concept_store.connection.run
    assert concept_store.counts() == {"CO_OCCURS": graph2.cooccurs.nnz // 2, "ConceptChunk": 29,
                                            "ConceptNode": len(graph2.keys), "MENTIONS": graph2.mentions.nnz}
    assert run("MATCH (c:ConceptChunk {id: $id}) RETURN count(c) AS n", id=removed)[0]["n"] == 0
    assert run("MATCH (n:ConceptNode) WHERE n.key IN $keys RETURN count(n) AS n", keys=sorted(gone))[0]["n"] == 0
    assert run("MATCH (n:ConceptNode) WHERE NOT (n)<-[:MENTIONS]-(:ConceptChunk) "
               "RETURN count(n) AS n")[0]["n"] == 0                    # every concept still mentioned
    mentioned = run("MATCH (:ConceptChunk {id: $id})-[:MENTIONS]->(n:ConceptNode) RETURN collect(n.key) AS keys",
                    id=changed.doc_id)[0]["keys"]
    row = graph2.chunk_position[changed.doc_id]
    assert sorted(mentioned) == sorted(graph2.keys[c] for c in graph2.concepts_of_chunk(row))
    assert "zimbabwe press" in mentioned
    stored_row = run("MATCH (c:ConceptChunk {id: $id}) RETURN c.hash AS hash", id=changed.doc_id)[0]
    assert stored_row["hash"] == rows2[changed.doc_id]["hash"] != rows[changed.doc_id]["hash"]
    weights = run("MATCH (a:ConceptNode)-[r:CO_OCCURS]->(b:ConceptNode) RETURN a.key AS a, b.key AS b, "
                  "r.weight AS w")
    expected = {(graph2.keys[a], graph2.keys[b]): w for a, b, w in zip(*sp.find(sp.triu(graph2.cooccurs)))}
    assert {(r["a"], r["b"]): r["w"] for r in weights} == expected    # weights updated, none stale


@pytest.mark.slow
def test_chunks_that_only_moved_keep_the_new_order(concept_store, musique):
    docs = [musique[f"p{i}"] for i in range(10)]
    graph, rows, _ = ConceptGraph.build(docs, progress=False)
    concept_store.write(graph, rows)
    moved = docs[5:] + docs[1:5]                       # p0 removed, the rest in another order
    graph2, rows2, report = ConceptGraph.build(moved, previous=rows, progress=False)
    assert report.extracted == 0
    stats = concept_store.write(graph2, rows2)
    assert stats.written.chunks == 9 and stats.deleted.chunks == 1
    assert_same_graph(concept_store.read(), graph2)


@pytest.mark.slow
def test_text_and_ids_are_data_to_cypher(concept_store):
    import ast
    import inspect

    from ragkit.concepts import neo4j_store

    tree = ast.parse(inspect.getsource(neo4j_store))
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.JoinedStr)]        # no f-string anywhere
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)]
    assert ".format(" not in inspect.getsource(neo4j_store)
    text = ("The Bobby Tables Foundation' }) DETACH DELETE n // was founded by Robert Tables in Oslo. "
            "Robert Tables later moved to the Foundation office in Bergen.")
    docs = [Doc("x' OR 1=1 //", text), Doc("p`) MATCH (n) DETACH DELETE n //", "Oslo and Bergen are in Norway.")]
    graph, rows, _ = ConceptGraph.build(docs, progress=False)
    concept_store.write(graph, rows)
    stored = concept_store.read()
    assert_same_graph(stored, graph)
    assert set(stored.chunk_ids) == {d.doc_id for d in docs}
    assert concept_store.extractions() == rows


@pytest.mark.slow
def test_the_concept_graph_and_the_spec_graph_share_a_database(concept_store, empty_neo4j_spec_store, musique):
    from ragkit.specs.build import build_kg

    from .conftest import DEMO_SPEC

    graph, rows, _ = ConceptGraph.build([musique[f"p{i}"] for i in range(10)], progress=False)
    concept_store.write(graph, rows)
    build_kg([DEMO_SPEC], empty_neo4j_spec_store, progress=False)
    spec_counts, concept_counts = empty_neo4j_spec_store.counts(), concept_store.counts()
    empty_neo4j_spec_store.clear()
    assert concept_store.counts() == concept_counts      # the spec store's clear kept ours
    build_kg([DEMO_SPEC], empty_neo4j_spec_store, progress=False)
    concept_store.clear()
    assert empty_neo4j_spec_store.counts() == spec_counts      # and ours kept the spec graph
    assert concept_store.read() is None and concept_store.extractions() is None


@pytest.mark.slow
def test_a_write_that_fails_midway_leaves_the_store_as_it_was(concept_store, musique, monkeypatch):
    from neo4j.exceptions import ClientError

    docs = [musique[f"p{i}"] for i in range(20)]
    graph, rows, _ = ConceptGraph.build(docs, progress=False)
    concept_store.write(graph, rows)
    graph2, rows2, _ = ConceptGraph.build(docs[5:] + [musique["p40"]], previous=rows, progress=False)
    # The last statement fails, after the deletes and the node writes ran.
    monkeypatch.setattr("ragkit.concepts.neo4j_store._CREATE_COOCCURS", "UNWIND $rows AS row RETURN 1 / 0")
    with pytest.raises(ClientError):
        concept_store.write(graph2, rows2)
    assert_same_graph(concept_store.read(), graph)


# ------------------------------------------------------------------ ragkit graph build --corpus
@pytest.mark.slow
def test_cli_graph_build_from_a_corpus_into_neo4j(concept_store, neo4j_uri, tmp_path):
    out = tmp_path / "g"
    info = json.loads(ragkit("graph", "build", "--corpus", MANUALS, "--out", out, "--store", neo4j_uri,
                             "--json").stdout)
    for key in ("graph", "chunks", "concepts", "mentions", "cooccurrences", "extracted", "reused",
                "removed", "seconds", "store", "index"):
        assert key in info, key
    assert info["extracted"] == info["chunks"] == info["index"]["docs"] and info["reused"] == 0
    assert info["store"]["written"] == {"chunks": info["chunks"], "concepts": info["concepts"],
                                        "mentions": info["mentions"], "cooccurrences": info["cooccurrences"]}
    assert concept_store.counts() == {"CO_OCCURS": info["cooccurrences"], "ConceptChunk": info["chunks"],
                                            "ConceptNode": info["concepts"], "MENTIONS": info["mentions"]}
    found = json.loads(ragkit("search", "--index", out, "--query", "Các bước vận hành máy phay",
                              "--method", "graph", "--json").stdout)["results"]
    assert found and found[0]["bridge"] and found[0]["doc_id"].startswith("may_phay.md")
    assert_same_graph(concept_store.read(), ConceptGraph.load(out / "concepts"))

    # A new folder, the same store: the extractions come from the store, nothing changes there.
    again = json.loads(ragkit("graph", "build", "--corpus", MANUALS, "--out", tmp_path / "h",
                              "--store", neo4j_uri, "--json").stdout)
    assert (again["extracted"], again["reused"]) == (0, info["chunks"])
    assert set(again["store"]["written"].values()) == set(again["store"]["deleted"].values()) == {0}

    plain = json.loads(ragkit("graph", "build", "--corpus", MANUALS, "--out", tmp_path / "p", "--json").stdout)
    assert plain["store"] is None and plain["concepts"] == info["concepts"]


@pytest.mark.slow
def test_cli_graph_build_refuses_bad_input_and_writes_nothing(concept_store, neo4j_uri, tmp_path):
    from .conftest import BIOMED_EDGES

    target = tmp_path / "never"
    refused("graph", "build", "--edges", BIOMED_EDGES, "--corpus", MANUALS, "--out", target,
            match="graph build: --edges and --corpus do not go together")
    refused("graph", "build", "--out", target, match="graph build: needs --edges CSV")
    refused("graph", "build", "--edges", BIOMED_EDGES, "--out", target, "--store", neo4j_uri,
            match="--store: goes with --corpus")
    refused("graph", "build", "--corpus", MANUALS, "--out", target, "--store", tmp_path / "s.json.gz",
            match="the concept graph goes to Neo4j, a bolt:// or neo4j:// URI")
    refused("graph", "build", "--corpus", MANUALS, "--out", target, "--store", "bolt://127.0.0.1:1",
            match="store bolt://127.0.0.1:1: Neo4j is not reachable", code=4)

    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    ragkit("graph", "build", "--corpus", MANUALS, "--out", tmp_path / "kept", "--store", neo4j_uri)
    before = concept_store.counts()
    refused("graph", "build", "--corpus", empty, "--out", target, "--store", neo4j_uri,
            match=f"corpus {empty}: holds no documents")
    assert concept_store.counts() == before            # the stored graph is untouched
    assert not target.exists() and not any(p.name.startswith(".never") for p in tmp_path.iterdir())


# ------------------------------------------------------------------ vector linking
@pytest.mark.slow
def test_concept_vectors_link_a_phrase_the_corpus_names_otherwise(tmp_path, musique):
    """Real MiniLM vectors: built beside the graph by the CLI, kept on a rebuild, and used by
    search to link "Novair Intl Airways" to "Novair International Airways"."""
    from ragkit.embeddings import MiniLMEmbedder
    from ragkit.retrieval.search import load_concepts, load_dense, load_index

    corpus = tmp_path / "corpus.jsonl"
    ids = ["p63", "p926", "p1023", "p0", "p332"]
    corpus.write_text("".join(json.dumps({"_id": d, "title": musique[d].title, "text": musique[d].text}) + "\n"
                              for d in ids))
    out = tmp_path / "idx"
    args = ["index", "build", "--corpus", corpus, "--out", out, "--concepts", "--dense", "minilm",
            "--concept-vectors", "--json"]
    first = json.loads(ragkit(*args).stdout)["concepts"]["label_vectors"]
    assert first["embedder"] == MiniLMEmbedder.name and first["labels"] == first["embedded"] > 20
    again = json.loads(ragkit(*args).stdout)["concepts"]["label_vectors"]
    assert again["embedded"] == 0 and again["labels"] == first["labels"]

    index = load_index(out)
    searcher = load_concepts(out, load_dense(index, out))
    seeds = searcher.link_question("When was the owner of Novair Intl Airways dissolved?")
    by_vector = [(s.span, searcher.graph.labels[s.concept]) for s in seeds if s.how == "vector"]
    assert ("Novair Intl Airways", "Novair International Airways") in by_vector
    assert not any(s.how == "vector" for s in load_concepts(out).link_question("Novair Intl Airways?"))
    refused("index", "build", "--corpus", corpus, "--out", tmp_path / "x", "--concepts", "--concept-vectors",
            match="--concept-vectors: needs the concept graph and --dense")
