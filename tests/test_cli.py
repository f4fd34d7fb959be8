"""The command-line contract: names, JSON keys, exit codes and one-line errors."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import MANUALS, ROOT, shared

ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}


def ragkit(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "ragkit.cli", *map(str, args)], capture_output=True,
                          text=True, env=ENV, cwd=ROOT, timeout=900)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def refused(*args, match, code=3):
    """One line naming the problem, nothing on stdout, and exit status ``code`` (3: bad input)."""
    proc = ragkit(*args, check=False)
    assert proc.returncode == code, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragkit: error: "), proc.stderr
    assert match in lines[0], lines[0]
    assert proc.stdout == ""
    return lines[0]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "ix"
    data = json.loads(ragkit("index", "build", "--corpus", MANUALS, "--out", out, "--json").stdout)
    assert data["docs"] > 20 and data["vocab"] > 500 and Path(out, "meta.json").exists()
    return out


def test_search_json(index_dir):
    data = json.loads(ragkit("search", "--index", index_dir, "--query", "máy nén khí", "--k", "3",
                             "--json").stdout)
    assert len(data["results"]) == 3
    assert set(data["results"][0]) >= {"doc_id", "score", "text"}
    assert data["results"][0]["doc_id"].startswith("may_nen_khi.md")
    scores = [r["score"] for r in data["results"]]
    assert scores == sorted(scores, reverse=True)


def test_search_with_mmr(index_dir):
    data = json.loads(ragkit("search", "--index", index_dir, "--query", "các bước", "--k", "5",
                             "--mmr", "--json").stdout)
    assert len({r["doc_id"] for r in data["results"]}) == 5


def test_ask_no_llm_json(index_dir):
    data = json.loads(ragkit("ask", "Các bước khởi động máy nén khí?", "--pipeline", "lexical",
                             "--index", index_dir, "--no-llm", "--json").stdout)
    assert set(data) == {"question", "pipeline", "answer", "citations", "trace", "timings_ms"}
    assert data["pipeline"] == "lexical" and "Xả nước ngưng tụ" in data["answer"]
    assert data["citations"][0]["source"] == "may_nen_khi.md"


@pytest.mark.slow
def test_ask_with_the_default_gguf(index_dir):
    data = json.loads(ragkit("ask", "Các bước khoan lỗ?", "--index", index_dir, "--max-tokens", "48",
                             "--json").stdout)
    assert data["timings_ms"]["generation"] > 0 and data["citations"]
    assert data["trace"]["answer_source"] in ("model", "fallback")


@pytest.mark.slow
def test_eval_retrieval_on_a_beir_collection():
    data = json.loads(ragkit("eval", "retrieval", "--corpus", shared("scifact", "corpus.jsonl"),
                             "--queries", shared("scifact", "queries.jsonl"),
                             "--qrels", shared("scifact", "qrels", "test.tsv"),
                             "--lang", "en", "--json").stdout)
    for key in ("method", "queries", "ndcg@10", "recall@10", "recall@100", "mrr@10", "qps", "index_s"):
        assert key in data
    assert data["queries"] == 300 and data["method"] == "bm25"
    committed = json.loads((ROOT / "outputs" / "bench" / "retrieval_quality.json").read_text())
    figure = committed["scifact"]["bm25"]["ndcg@10"]
    assert abs(data["ndcg@10"] - figure) <= 0.02


def test_bad_inputs(tmp_path, index_dir):
    refused("index", "build", "--corpus", tmp_path / "missing", "--out", tmp_path / "o",
            match="no such file")
    bad = tmp_path / "corpus.jsonl"
    bad.write_text('{"_id": "1", "text": "ok"}\nthis is not json\n')
    refused("index", "build", "--corpus", bad, "--out", tmp_path / "o", match=":2: not JSON")
    assert not (tmp_path / "o").exists()  # nothing half-written
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".o.tmp")]
    refused("search", "--index", tmp_path, "--query", "x", match="not a ragkit BM25 index")
    refused("ask", "", "--index", index_dir, "--no-llm", match="question: is empty")
    refused("ask", "máy " * 4000, "--index", index_dir, "--no-llm", match="too long")
    fake = tmp_path / "fake.gguf"
    fake.write_text("not a model")
    refused("ask", "Các bước?", "--index", index_dir, "--model", fake, match="not a GGUF")
    refused("ask", "x", "--pipeline", "kg", match="--store: the kg pipeline needs")
    refused("ask", "x", "--pipeline", "graph", match="--graph: the graph pipeline needs")
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td1\tone\n")
    refused("eval", "retrieval", "--corpus", bad, "--queries", bad, "--qrels", qrels, match="not an integer")


def test_rebuild_replaces_index_atomically(tmp_path):
    out = tmp_path / "ix"
    ragkit("index", "build", "--corpus", MANUALS, "--out", out)
    first = (out / "meta.json").read_text()
    ragkit("index", "build", "--corpus", MANUALS, "--out", out, "--idf", "okapi")
    assert (out / "meta.json").read_text() != first
    # ix is a symlink to its current version; the one before stays for readers that opened it.
    names = sorted(p.name for p in tmp_path.iterdir())
    assert [n for n in names if not n.startswith(".ix.v-")] == ["ix"] and len(names) == 3
    assert out.is_symlink() and os.readlink(out) in names


# --------------------------------------------------------------------------- manners
def test_version_and_complete_help():
    import argparse

    from ragkit import __version__
    from ragkit.cli import build_parser

    assert ragkit("--version").stdout == f"ragkit {__version__}\n"
    top = ragkit("--help").stdout
    assert "``" not in top and "retrieval-augmented and knowledge-graph question answering" in top
    missing = []

    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*path, name])
            elif not action.help:
                missing.append(f"{' '.join(path)} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(), ["ragkit"])
    assert missing == []
    assert "(default 1.5)" in ragkit("index", "build", "--help").stdout      # %(default)s filled in


def test_a_question_from_stdin(manual_index_dir):
    def ask(stdin, *extra):
        return subprocess.run([sys.executable, "-m", "ragkit.cli", "ask", "-", "--index", str(manual_index_dir),
                               "--no-llm", "--json", *extra], input=stdin, capture_output=True, text=True,
                              env=ENV, cwd=ROOT, timeout=300)

    done = ask("Các bước khởi động máy nén khí?\n")
    data = json.loads(done.stdout)
    assert done.returncode == 0 and data["question"] == "Các bước khởi động máy nén khí?"
    assert data["citations"][0]["doc_id"] == "may_nen_khi.md#3"
    empty = ask("")
    assert empty.returncode == 3 and "question: is empty" in empty.stderr


def test_exit_status_and_json_errors(tmp_path):
    from .conftest import _free_port

    usage = ragkit("ask", "--no-such-option", "x", "--json", check=False)
    assert usage.returncode == 2 and usage.stderr.count("\n") == 1
    assert json.loads(usage.stdout)["error"]["type"] == "UsageError"
    bad = ragkit("ask", "x", "--index", tmp_path / "nothing", "--no-llm", "--json", check=False)
    error = json.loads(bad.stdout)["error"]
    assert bad.returncode == 3 and bad.stdout.count("\n") == 1
    assert error == {"type": "IndexFormatError", "exit_code": 3,
                     "message": bad.stderr.strip().removeprefix("ragkit: error: ")}
    down = ragkit("ask", "What treats fever?", "--pipeline", "kg", "--store", f"bolt://127.0.0.1:{_free_port()}",
                  "--no-llm", "--json", check=False)
    assert down.returncode == 4 and json.loads(down.stdout)["error"]["type"] == "StoreUnavailableError"
    plain = ragkit("ask", "x", "--index", tmp_path / "nothing", "--no-llm", check=False)
    assert plain.returncode == 3 and plain.stdout == ""          # without --json, stdout stays empty
