"""Building into a store that already holds a version replaces it: spec graphs (networkx
file and real Neo4j, the same tests), typed KG imports and graph RAG builds. An edited
spec, KG file or edges file must be served as edited, with nothing left of the old
version, and terms other specs give keep what those specs say."""

import json
import shutil
import subprocess
import sys

import pytest

from ragkit.specs.build import build_kg
from ragkit.specs.model import Term
from ragkit.specs.nx_store import NetworkXStore
from ragkit.specs.store import plan_replacement
from ragkit.stores.chroma import ChromaVectors

from .conftest import DEMO_SPEC, ROOT

VOCAB_SPEC = ROOT / "data" / "specs" / "demo_vocab.md"
OLD_EXPANSION = "SCP\tService Communication Proxy"
NEW_EXPANSION = "SCP\tSignalling Control Point"
OLD_DEFINITION = "NF Set: a group of interchangeable instances"
NEW_DEFINITION = "NF Set: a pool of network function instances of one type, any of which can serve"


def edited_copy(tmp_path, name="demo_5gc.md"):
    """A copy of the demo spec (same spec_id) to edit and build again."""
    copy = tmp_path / name
    shutil.copy(DEMO_SPEC, copy)
    return copy


def edit(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def second_glossary(tmp_path):
    """A spec of our own that also defines NF Set (in other words) and also lists NF."""
    path = tmp_path / "glossary.md"
    path.write_text("spec_id: demo_glossary\n\n# Glossary\n\n# 3 Definitions and abbreviations\n\n"
                    "## 3.1 Definitions\n\nNF Set: interchangeable network function instances "
                    "sharing context data.\n\n## 3.2 Abbreviations\n\nNF\tNetwork Function\n",
                    encoding="utf-8")
    return path


# --------------------------------------------------------------------------- the plan (units)
def term(tid, specs, definition=""):
    return Term(term_id=tid, term_type="definition", full_name=tid, definition=definition,
                source_specs=list(specs), primary_spec=specs[0], sections=[f"{s}:3.1" for s in specs])


def test_replacing_one_spec_falls_back_to_what_the_other_spec_says():
    stored = {"def:x": (term("def:x", ["a", "b"], "a says"), ["a says", "b says"])}
    plan = plan_replacement(["a"], [], stored)
    (kept, wordings), = plan.terms
    assert kept.source_specs == ["b"] and kept.definition == "b says" and wordings == ["b says"]
    assert kept.sections == ["b:3.1"] and kept.primary_spec == "b" and plan.removed == []


def test_a_rebuilt_spec_keeps_its_place_and_its_new_wording_wins():
    stored = {"def:x": (term("def:x", ["a", "b"], "a says"), ["a says", "b says"])}
    plan = plan_replacement(["a"], [term("def:x", ["a"], "a now says")], stored)
    (kept, wordings), = plan.terms
    assert kept.source_specs == ["a", "b"] and kept.definition == "a now says"
    assert wordings == ["a now says", "b says"]


def test_a_5g_spec_wording_wins_as_it_does_within_one_build():
    stored = {"def:x": (term("def:x", ["tr_21.905"], "old vocabulary"), ["old vocabulary"])}
    plan = plan_replacement(["ts_23.501"], [term("def:x", ["ts_23.501"], "5G wording")], stored)
    (kept, _), = plan.terms
    assert kept.primary_spec == "ts_23.501" and kept.definition == "5G wording"
    assert kept.source_specs == ["tr_21.905", "ts_23.501"]


def test_terms_only_the_replaced_spec_gave_are_removed():
    stored = {"def:x": (term("def:x", ["a"], "a says"), ["a says"]),
              "def:y": (term("def:y", ["a", "b"], "y"), None)}   # a store written before wordings were kept
    plan = plan_replacement(["a"], [term("def:z", ["a"], "new")], stored)
    assert plan.removed == ["def:x"]
    assert [(t.term_id, t.source_specs, t.definition) for t, _ in plan.terms] == \
        [("def:y", ["b"], "y"), ("def:z", ["a"], "new")]


# --------------------------------------------------------------------------- both stores
def test_rebuilding_an_edited_spec_serves_the_edit_and_nothing_of_the_old(empty_spec_store, tmp_path):
    store = empty_spec_store
    spec = edited_copy(tmp_path)
    build_kg([spec, VOCAB_SPEC], store, progress=False)
    edit(spec, OLD_EXPANSION, NEW_EXPANSION)
    edit(spec, OLD_DEFINITION, NEW_DEFINITION)
    info = build_kg([spec], store, progress=False)
    assert info["replaced"] == ["demo_5gc"]

    assert [t.full_name for t in store.terms_by_abbreviation("SCP")] == ["Signalling Control Point"]
    assert store.terms_containing("Service Communication Proxy") == []
    nf_set, = store.terms_by_name("NF Set", "definition")
    assert nf_set.definition.startswith("a pool of network function instances")
    assert nf_set.source_specs == ["demo_5gc"]
    abbreviations = store.find_chunks(spec_ids=["demo_5gc"], chunk_types=["abbreviation"])
    assert any("Signalling Control Point" in c.content for c in abbreviations)
    assert not store.find_chunks(content_any=["a group of interchangeable instances"])
    # The same graph a fresh build of the edited specs gives.
    fresh = NetworkXStore(tmp_path / "fresh.json.gz")
    build_kg([spec, VOCAB_SPEC], fresh, progress=False)
    assert store.counts() == fresh.counts()
    assert [t.to_dict() for t in store.terms_containing("")] == [t.to_dict() for t in fresh.terms_containing("")]


def test_a_term_two_specs_give_keeps_the_other_spec(empty_spec_store, tmp_path):
    store = empty_spec_store
    spec, glossary = edited_copy(tmp_path), second_glossary(tmp_path)
    build_kg([spec, VOCAB_SPEC, glossary], store, progress=False)
    nf_set, = store.terms_by_name("NF Set", "definition")
    assert nf_set.source_specs == ["demo_5gc", "demo_glossary"] and nf_set.definition.startswith("a group")
    assert store.terms_by_abbreviation("NF")[0].source_specs == ["demo_5gc", "demo_vocab", "demo_glossary"]

    # The demo spec drops NF Set's definition and the NF line; the other specs still give both.
    text = spec.read_text(encoding="utf-8")
    spec.write_text("\n".join(line for line in text.splitlines()
                              if not line.startswith(("NF Set:", "NF\t"))) + "\n", encoding="utf-8")
    build_kg([spec], store, progress=False)
    nf_set, = store.terms_by_name("NF Set", "definition")
    assert nf_set.source_specs == ["demo_glossary"]
    assert nf_set.definition == "interchangeable network function instances sharing context data."
    nf, = store.terms_by_abbreviation("NF")
    assert nf.source_specs == ["demo_vocab", "demo_glossary"] and nf.sections == ["demo_vocab:3.2", "demo_glossary:3.2"]
    assert [d["spec_id"] for d in store.term_neighbourhood(nf.term_id)["defined_in"]] == ["demo_glossary", "demo_vocab"]
    # Terms the demo spec alone gave are still there, and UE keeps both of its sources.
    assert store.terms_by_abbreviation("UE")[0].source_specs == ["demo_5gc", "demo_vocab"]
    assert store.counts()["Document"] == 3


def test_a_failure_midway_leaves_the_store_as_it_was(empty_spec_store, tmp_path, monkeypatch):
    """The last step of the write fails after the old version was deleted: the networkx
    file is written in one atomic rename, Neo4j rolls its one transaction back."""
    store = empty_spec_store
    spec = edited_copy(tmp_path)
    build_kg([spec, VOCAB_SPEC], store, progress=False)
    before = (store.counts(), [t.to_dict() for t in store.terms_containing("")], store.documents())
    edit(spec, OLD_EXPANSION, NEW_EXPANSION)

    class Injected(Exception):
        pass

    if isinstance(store, NetworkXStore):
        def fail(*args, **kwargs):
            raise Injected()
        monkeypatch.setattr("ragkit.specs.nx_store.write_graph", fail)
        with pytest.raises(Injected):
            build_kg([spec], store, progress=False)
        monkeypatch.undo()
        reopened = NetworkXStore(store.path)
    else:
        from neo4j.exceptions import ClientError

        # Division by zero in the last statement of the transaction, after the deletes ran.
        monkeypatch.setattr("ragkit.specs.neo4j_store._WRITE_TERMS", "UNWIND $rows AS row RETURN 1 / 0")
        with pytest.raises(ClientError):
            build_kg([spec], store, progress=False)
        monkeypatch.undo()
        reopened = store
    for s in (store, reopened):
        assert (s.counts(), [t.to_dict() for t in s.terms_containing("")], s.documents()) == before
        assert [t.full_name for t in s.terms_by_abbreviation("SCP")] == ["Service Communication Proxy"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["networkx", "neo4j"])
def test_cli_rebuild_serves_the_edit(kind, tmp_path, request):
    """``ragkit kg build`` twice into one store, then ``terms define``/``resolve`` and
    ``ask --pipeline spec``."""
    if kind == "neo4j":
        request.getfixturevalue("empty_neo4j_spec_store")
        store = request.getfixturevalue("neo4j_uri")
    else:
        store = tmp_path / "new" / "kg.json.gz"        # a new path: building creates it
    run = lambda *a: subprocess.run([sys.executable, "-m", "ragkit.cli", *map(str, a)],  # noqa: E731
                                    capture_output=True, text=True, cwd=ROOT, timeout=600)
    spec = edited_copy(tmp_path)
    for _ in range(2):
        out = run("kg", "build", "--specs", spec, VOCAB_SPEC, "--store", store, "--json")
        assert out.returncode == 0, out.stderr
        edit(spec, OLD_EXPANSION, NEW_EXPANSION) if OLD_EXPANSION in spec.read_text() else None
        edit(spec, OLD_DEFINITION, NEW_DEFINITION) if OLD_DEFINITION in spec.read_text() else None
    assert json.loads(out.stdout)["replaced"] == ["demo_5gc", "demo_vocab"]
    defined = json.loads(run("terms", "define", "NF Set", "--store", store, "--json").stdout)
    assert [m["definition"][:35] for m in defined["matches"]] == ["a pool of network function instance"]
    resolved = json.loads(run("terms", "resolve", "SCP", "--store", store, "--json").stdout)
    assert [m["full_name"] for m in resolved["matches"]] == ["Signalling Control Point"]
    asked = json.loads(run("ask", "What is SCP?", "--pipeline", "spec", "--store", store,
                           "--no-llm", "--json").stdout)
    assert [t["full_name"] for t in asked["trace"]["resolved"]["SCP"]] == ["Signalling Control Point"]
    assert "Service Communication Proxy" not in json.dumps(asked["trace"]["resolved"])


@pytest.mark.parametrize("pipeline,hint", [("spec", "build one with 'ragkit kg build'"),
                                           ("kg", "import one with 'ragkit kg import'")])
def test_asking_a_store_path_that_does_not_exist_is_one_line(pipeline, hint, tmp_path, capsys):
    from ragkit.cli import main

    missing = tmp_path / "no" / "store.json.gz"
    code = main(["ask", "What is SCP?", "--pipeline", pipeline, "--store", str(missing), "--no-llm"])
    assert code == 3
    assert capsys.readouterr().err == f"ragkit: error: store {missing}: no such store ({hint})\n"
    assert not missing.parent.exists()


# --------------------------------------------------------------------------- typed KG import
BIOMED = ROOT / "data" / "biomed"


@pytest.fixture(params=["networkx", pytest.param("neo4j", marks=pytest.mark.slow)])
def empty_typed_store(request, tmp_path):
    from ragkit.kgqa.store import Neo4jTypedStore, NxTypedStore

    if request.param == "networkx":
        yield NxTypedStore(tmp_path / "kg.json.gz")
        return
    from .conftest import NEO4J_PASSWORD

    store = Neo4jTypedStore(request.getfixturevalue("neo4j_uri"), password=NEO4J_PASSWORD)
    store.clear()
    yield store
    store.clear()
    store.close()


def edited_biomed(tmp_path):
    """The demo KG with Naproxen gone (and its edges), Aspirin's aliases and source changed,
    Aspirin no longer TREATS osteoarthritis, and a source note reworded."""
    import csv

    def rewrite(name, change):
        with (BIOMED / name).open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            fields, rows = reader.fieldnames, [r for r in (change(r) for r in reader) if r]
        out = tmp_path / name
        with out.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fields)
            writer.writeheader()
            writer.writerows(rows)
        return out

    def node(row):
        if row["id"] == "compound:naproxen":
            return None
        if row["id"] == "compound:aspirin":
            return {**row, "aliases": "ASA", "source": "https://example.org/aspirin-label-2025"}
        return row

    def edge(row):
        if "compound:naproxen" in (row["source"], row["target"]):
            return None
        if (row["source"], row["relation"], row["target"]) == \
                ("compound:aspirin", "TREATS", "disease:osteoarthritis"):
            return None
        if (row["source"], row["target"]) == ("compound:aspirin", "disease:rheumatoid_arthritis"):
            return {**row, "source_note": "reworded note"}
        return row

    return rewrite("nodes.csv", node), rewrite("edges.csv", edge)


def test_reimporting_an_edited_kg_leaves_nothing_of_the_old(empty_typed_store, tmp_path):
    from ragkit.kgqa.importer import import_kg
    from ragkit.kgqa.store import NxTypedStore

    store = empty_typed_store
    import_kg(BIOMED / "nodes.csv", BIOMED / "edges.csv", store)
    nodes, edges = edited_biomed(tmp_path)
    report = import_kg(nodes, edges, store)
    assert report["nodes_removed"] == 1 and report["edges_removed"] > 1

    fresh = NxTypedStore(tmp_path / "fresh.json.gz")
    import_kg(nodes, edges, fresh)
    assert store.all_nodes() == fresh.all_nodes() and store.counts() == fresh.counts()
    assert store.schema() == fresh.schema()
    assert "compound:naproxen" not in {n["id"] for n in store.all_nodes()}
    aspirin = next(n for n in store.all_nodes() if n["id"] == "compound:aspirin")
    assert aspirin["aliases"] == ["ASA"] and aspirin["source"] == "https://example.org/aspirin-label-2025"
    treated, via = store.expand(["compound:aspirin"], "TREATS", "out")
    assert "disease:osteoarthritis" not in {n["id"] for n in treated}
    assert {e.target: e.properties for e in via}["disease:rheumatoid_arthritis"] == {"source_note": "reworded note"}
    assert store.expand(["disease:osteoarthritis"], "TREATS", "in")[0] == \
        fresh.expand(["disease:osteoarthritis"], "TREATS", "in")[0]


def test_a_failed_reimport_leaves_the_kg_as_it_was(empty_typed_store, tmp_path, monkeypatch):
    from ragkit.kgqa.importer import import_kg
    from ragkit.kgqa.store import Edge, NxTypedStore

    store = empty_typed_store
    import_kg(BIOMED / "nodes.csv", BIOMED / "edges.csv", store)
    before = (store.all_nodes(), store.counts(), store.schema())
    nodes = [{"id": "x", "name": "X", "type": "Compound", "aliases": []}]
    if isinstance(store, NxTypedStore):
        def fail(*args, **kwargs):
            raise OSError("disk full")
        monkeypatch.setattr("ragkit.kgqa.store.write_graph", fail)
        with pytest.raises(OSError):
            store.replace_graph(nodes, [])
        monkeypatch.undo()
        stores = [store, NxTypedStore(store.path)]
    else:
        from neo4j.exceptions import Neo4jError

        # A map is not a storable property value: the edge write fails after the delete ran.
        with pytest.raises(Neo4jError):
            store.replace_graph(nodes, [Edge("x", "TREATS", "x", {"bad": {"nested": 1}})])
        stores = [store]
    for s in stores:
        assert (s.all_nodes(), s.counts(), s.schema()) == before


# --------------------------------------------------------------------------- graph RAG build
@pytest.mark.slow
def test_rebuilding_a_graph_leaves_no_stale_node_edge_or_vector(tmp_path):
    import csv

    from ragkit.multihop.graph import GraphRAG

    edges = tmp_path / "edges.csv"
    shutil.copy(ROOT / "data" / "nobel_edges.csv", edges)
    out = tmp_path / "graph"
    GraphRAG.build(edges, out, progress=False)

    with edges.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    # Vietnam leaves the graph with its one edge; every "spouse" edge becomes "married_to".
    rows = [r for r in rows if "Vietnam" not in (r["source"], r["target"])]
    rows = [{**r, "relation": "married_to" if r["relation"] == "spouse" else r["relation"]} for r in rows]
    rows[0]["source_note"] = "reworded note"
    with edges.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    report = GraphRAG.build(edges, out, progress=False)
    assert report.embedded == 0 and report.reused == report.nodes   # names unchanged: vectors kept

    rebuilt = GraphRAG.load(out)
    fresh_dir = tmp_path / "fresh"
    GraphRAG.build(edges, fresh_dir, progress=False)
    fresh = GraphRAG.load(fresh_dir)
    assert sorted(rebuilt.graph.nodes) == sorted(fresh.graph.nodes) and "Vietnam" not in rebuilt.graph
    assert sorted(rebuilt.graph.edges(keys=True, data=True)) == sorted(fresh.graph.edges(keys=True, data=True))
    assert "spouse" not in {k for _, _, k in rebuilt.graph.edges(keys=True)}
    chroma = ChromaVectors.for_dir(out.resolve() / "chroma", "nodes_minilm")      # what the copy was made from
    assert sorted(chroma.fingerprints()) == sorted(rebuilt.graph.nodes) == sorted(rebuilt.vectors.ids)
    assert chroma.count() == rebuilt.vectors.count() == fresh.vectors.count() == rebuilt.graph.number_of_nodes()
