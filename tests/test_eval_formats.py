"""Evaluation in the formats IR tools exchange: TREC run files written (``--run-out``) and
read from any system (``--run``), per-query metrics (``--per-query``), paired significance
tests between two runs (``eval compare``) and BEIR's ``ignore_identical_ids``."""

import csv
import json
import math

import pytest

from ragkit.cli import main
from ragkit.corpus import load_qrels
from ragkit.eval.metrics import METRICS
from ragkit.eval.significance import compare_metric, paired_t_test, randomization_test
from ragkit.eval.trec import read_trec_run

from .conftest import scifact_subset


def _json(capsys, argv) -> dict:
    assert main([*map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _error(capsys, argv) -> list[str]:
    assert main([*map(str, argv)]) == 3
    return capsys.readouterr().err.strip().splitlines()


def _beir(folder, docs: dict, queries: dict, qrels: list[tuple[str, str, int]]):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": "", "text": t}) + "\n"
                                                 for i, t in docs.items()))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in queries.items()))
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in qrels))
    return folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels.tsv"


@pytest.fixture(scope="module")
def scifact_small(tmp_path_factory):
    """The first 40 judged SciFact test queries, their abstracts and 300 others."""
    rows, docs, queries = scifact_subset(40, 300)
    queries = {q["_id"]: q["text"] for q in queries}
    return _beir(tmp_path_factory.mktemp("scifact"), {d["_id"]: d["title"] + ". " + d["text"] for d in docs},
                 queries, [(q, d, int(g)) for q, d, g in rows])


# ------------------------------------------------------------------ TREC qrels
def test_trec_qrels_score_as_the_same_judgements_in_beir_form(scifact_small, tmp_path, capsys):
    corpus, queries, qrels = scifact_small
    rows = [line.split("\t") for line in qrels.read_text().splitlines()[1:]]
    trec = tmp_path / "qrels.trec"
    trec.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in rows))
    assert load_qrels(trec) == load_qrels(qrels)
    beir = _json(capsys, ["eval", "retrieval", "--corpus", corpus, "--queries", queries, "--qrels", qrels, "--lang", "en"])
    as_trec = _json(capsys, ["eval", "retrieval", "--corpus", corpus, "--queries", queries, "--qrels", trec,
                             "--lang", "en"])
    assert {m: as_trec[m] for m in METRICS} == {m: beir[m] for m in METRICS}
    (tmp_path / "bad.trec").write_text("q1 0 d1\tx 1\n")
    assert _error(capsys, ["eval", "retrieval", "--corpus", corpus, "--queries", queries, "--qrels",
                           tmp_path / "bad.trec", "--lang", "en"]) == [
        f"ragkit: error: qrels {tmp_path / 'bad.trec'}:1: expected query-id, corpus-id, score (BEIR) "
        "or query-id, iteration, doc-id, relevance (TREC)"]


# ------------------------------------------------------------------ TREC runs, both ways
@pytest.mark.parametrize("extra", [(), ("--mmr",)], ids=["bm25", "bm25-mmr"])
def test_a_run_written_by_ragkit_scores_the_same_through_run(scifact_small, tmp_path, capsys, extra):
    """--mmr reorders, so its run file carries rank-derived scores: the order still holds."""
    corpus, queries, qrels = scifact_small
    run_file = tmp_path / "run.trec"
    ranked = _json(capsys, ["eval", "retrieval", "--corpus", corpus, "--queries", queries, "--qrels", qrels,
                            "--lang", "en", "--run-out", run_file, *extra])
    tag = "bm25+mmr" if extra else "bm25"
    assert {line.split()[5] for line in run_file.read_text().splitlines()} == {tag}
    scored = _json(capsys, ["eval", "retrieval", "--run", run_file, "--qrels", qrels])
    assert (scored["tag"], scored["queries"], scored["queries_not_in_run"]) == (tag, 40, 0)
    assert {m: scored[m] for m in METRICS} == {m: ranked[m] for m in METRICS}
    assert 0.3 < ranked["ndcg@10"] < 1


def test_a_run_from_another_system_is_ordered_by_score(tmp_path, capsys):
    """trec_eval's reading: the score orders a query's documents (not the rank column), a
    judged query missing from the run scores 0, an unjudged one is ignored."""
    _, _, qrels = _beir(tmp_path, {}, {}, [("q1", "d1", 1), ("q2", "d2", 2), ("q2", "d3", 1), ("q3", "d9", 1)])
    run = tmp_path / "other.run"
    run.write_text("q1 Q0 d5 1 3.0 othersys\n"
                   "q1 Q0 d1 2 4.5 othersys\n"       # the higher score: first
                   "q2\tQ0\td3\t1\t9\tothersys\n"     # tabs are white space too
                   "q2 Q0 d7 2 8 othersys\n"
                   "q2 Q0 d2 3 7e0 othersys\n"
                   "\n"
                   "qx Q0 d1 1 1.0 othersys\n")
    assert read_trec_run(run).rankings["q1"] == [("d1", 4.5), ("d5", 3.0)]
    result = _json(capsys, ["eval", "retrieval", "--run", run, "--qrels", qrels])
    ndcg_q2 = (1 + 2 / math.log2(4)) / (2 + 1 / math.log2(3))        # d3 (gain 1) at 1, d2 (gain 2) at 3
    assert (result["tag"], result["queries"], result["queries_not_in_run"]) == ("othersys", 3, 1)
    assert result["ndcg@10"] == round((1 + ndcg_q2 + 0) / 3, 5)
    assert (result["recall@2"], result["recall@5"], result["mrr@10"], result["hit@1"]) == (0.5, 0.66667, 0.66667, 0.66667)


@pytest.mark.parametrize("line, problem", [
    ("q1 Q0 d2 2 1.0", "expected 'qid Q0 docid rank score tag' (6 fields), got 5 field(s)"),
    ("q1 Q0 d2 two 1.0 sys", "rank 'two' is not an integer"),
    ("q1 Q0 d2 2 high sys", "score 'high' is not a number"),
    ("q1 Q0 d2 2 nan sys", "score 'nan' is not a finite number"),
    ("q1 Q0 d1 2 0.5 sys", "document 'd1' is listed twice for query 'q1' (first at line 1)"),
], ids=["fields", "rank", "score", "nan", "twice"])
def test_a_malformed_run_line_is_one_line_naming_file_and_line(tmp_path, capsys, line, problem):
    _, _, qrels = _beir(tmp_path, {}, {}, [("q1", "d1", 1)])
    run = tmp_path / "bad.run"
    run.write_text(f"q1 Q0 d1 1 2.0 sys\n{line}\n")
    assert _error(capsys, ["eval", "retrieval", "--run", run, "--qrels", qrels]) == \
        [f"ragkit: error: run {run}:2: {problem}"]
    assert _error(capsys, ["eval", "compare", run, run, "--qrels", qrels]) == [f"ragkit: error: run {run}:2: {problem}"]


def test_run_takes_no_ranking_options_and_ranking_needs_a_corpus(tmp_path, capsys):
    _, _, qrels = _beir(tmp_path, {}, {}, [("q1", "d1", 1)])
    run = tmp_path / "r.run"
    run.write_text("q1 Q0 d1 1 1.0 sys\n")
    err = _error(capsys, ["eval", "retrieval", "--run", run, "--qrels", qrels, "--method", "hybrid"])
    assert len(err) == 1 and err[0].startswith("ragkit: error: --run: --method is for a ranking ragkit makes")
    assert _error(capsys, ["eval", "retrieval", "--qrels", qrels]) == \
        ["ragkit: error: --corpus: required (or --run FILE to score a run from another system)"]
    assert _error(capsys, ["eval", "retrieval", "--run", run, "--qrels", qrels, "--per-query", tmp_path / "pq.csv"]) \
        == [f"ragkit: error: --per-query {tmp_path / 'pq.csv'}: name a .jsonl file (JSON lines) or a .tsv file"]


# ------------------------------------------------------------------ per-query figures
def test_per_query_has_one_row_per_query_and_method(scifact_small, tmp_path, capsys):
    corpus, queries, qrels = scifact_small
    means = {}
    for method, extra, name in (("bm25", (), "bm25.tsv"), ("bm25+mmr", ("--mmr",), "mmr.jsonl")):
        means[method] = _json(capsys, ["eval", "retrieval", "--corpus", corpus, "--queries", queries, "--qrels",
                                       qrels, "--lang", "en", "--per-query", tmp_path / name, *extra])
    with (tmp_path / "bm25.tsv").open() as handle:
        tsv = list(csv.DictReader(handle, delimiter="\t"))
    jsonl = [json.loads(line) for line in (tmp_path / "mmr.jsonl").open()]
    judged = [line.split("\t")[0] for line in qrels.read_text().splitlines()[1:]]
    for rows, method in ((tsv, "bm25"), (jsonl, "bm25+mmr")):
        assert list(rows[0]) == ["qid", "method", *METRICS]
        assert [r["qid"] for r in rows] == list(dict.fromkeys(judged)) and {r["method"] for r in rows} == {method}
        for metric in METRICS:
            assert round(sum(float(r[metric]) for r in rows) / len(rows), 5) == means[method][metric]
    # the same rows from the run file
    run = tmp_path / "mmr.trec"
    _json(capsys, ["eval", "retrieval", "--corpus", corpus, "--queries", queries, "--qrels", qrels, "--lang", "en",
                   "--mmr", "--run-out", run])
    _json(capsys, ["eval", "retrieval", "--run", run, "--qrels", qrels, "--per-query", tmp_path / "again.jsonl"])
    assert [json.loads(line) for line in (tmp_path / "again.jsonl").open()] == jsonl


# ------------------------------------------------------------------ significance
def test_randomization_test_is_exact_for_few_queries_and_agrees_with_scipy():
    from scipy.stats import permutation_test

    a = [0.2, 0.5, 0.1, 0.9, 0.4, 0.3, 0.0, 0.6, 0.7, 0.2]
    b = [0.4, 0.6, 0.1, 1.0, 0.3, 0.5, 0.2, 0.6, 0.9, 0.4]
    ours = randomization_test(a, b)                          # 2^10 flips: every one
    theirs = permutation_test((b, a), lambda x, y: sum(x) / len(x) - sum(y) / len(y),
                              permutation_type="samples", n_resamples=math.inf).pvalue
    assert ours == pytest.approx(theirs, abs=1e-12) and ours < 0.05
    sampled = randomization_test(a * 3, b * 3, permutations=5000, seed=1)   # 2^30: sampled, repeatable
    assert sampled == randomization_test(a * 3, b * 3, permutations=5000, seed=1) and sampled < 0.001
    assert paired_t_test(a, b) == pytest.approx(0.0115, abs=1e-4)           # t = 0.11 / (0.1100 / √10) = 3.16, 9 df


def test_identical_values_give_p_one():
    values = [0.1, 0.7, 0.3, 1.0]
    c = compare_metric("ndcg@10", values, values)
    assert (c.delta, c.p_randomization, c.p_ttest, c.significant) == (0.0, 1.0, 1.0, False)
    assert randomization_test(values * 100, values * 100) == 1.0


def _runs(tmp_path, n=30):
    """30 queries with one relevant document each; A finds it at rank 4, B at rank 1 (but
    for three queries, where B has it at rank 6)."""
    qrels = [(f"q{i}", f"rel{i}", 1) for i in range(n)]
    _, _, qrels_file = _beir(tmp_path, {}, {}, qrels)

    def write(name, rank_of):
        lines = []
        for i in range(n):
            docs = [f"x{i}_{j}" for j in range(9)]
            docs.insert(rank_of(i) - 1, f"rel{i}")
            lines += [f"q{i} Q0 {d} {r} {10 - r}.0 {name}\n" for r, d in enumerate(docs, 1)]
        path = tmp_path / f"{name}.run"
        path.write_text("".join(lines))
        return path

    return write("a", lambda i: 4), write("b", lambda i: 6 if i < 3 else 1), qrels_file


def test_compare_finds_a_known_difference_and_none_between_identical_runs(tmp_path, capsys):
    run_a, run_b, qrels = _runs(tmp_path)
    result = _json(capsys, ["eval", "compare", run_a, run_b, "--qrels", qrels])
    assert (result["queries"], result["tag_a"], result["tag_b"], result["exact"]) == (30, "a", "b", False)
    assert (result["permutations"], result["seed"]) == (10_000, 0)
    mrr = result["metrics"]["mrr@10"]
    assert (mrr["mean_a"], mrr["mean_b"]) == (0.25, round((27 + 3 / 6) / 30, 5))
    assert mrr["delta"] == round(mrr["mean_b"] - mrr["mean_a"], 5)
    assert mrr["p_randomization"] < 0.001 and mrr["p_ttest"] < 0.001 and mrr["significant"]
    assert result["metrics"]["hit@10"] == {"mean_a": 1.0, "mean_b": 1.0, "delta": 0.0, "p_randomization": 1.0,
                                           "p_ttest": 1.0, "significant": False}
    # the means are what eval retrieval --run prints for each run
    assert _json(capsys, ["eval", "retrieval", "--run", run_b, "--qrels", qrels])["ndcg@10"] == \
        result["metrics"]["ndcg@10"]["mean_b"]
    same = _json(capsys, ["eval", "compare", run_a, run_a, "--qrels", qrels, "--metric", "ndcg@10"])
    assert list(same["metrics"]) == ["ndcg@10"]
    assert same["metrics"]["ndcg@10"]["p_randomization"] == 1.0 and not same["metrics"]["ndcg@10"]["significant"]
    few = _json(capsys, ["eval", "compare", run_a, run_b, "--qrels", qrels, "--limit", "8"])
    assert (few["queries"], few["exact"], few["permutations"]) == (8, True, 256)
    assert main(["eval", "compare", str(run_a), str(run_b), "--qrels", str(qrels)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[2].split() == ["metric", "mean", "A", "mean", "B", "delta", "p", "p", "(t)", "significant"]
    rows = {line.split()[0]: line.split() for line in table[3:-1]}
    assert list(rows) == list(METRICS) and rows["mrr@10"][-1] == "yes" and rows["hit@10"][-1] == "no"
    assert table[-1].startswith("30 queries; p: Fisher's randomization test")


# ------------------------------------------------------------------ BEIR's ignore_identical_ids
def test_ignore_identical_ids_drops_the_self_hit(tmp_path, capsys):
    """As in ArguAna, the query is a document of the corpus: it finds itself first."""
    docs = {"arg1": "Nuclear power is safe because modern reactors have passive cooling systems.",
            "arg2": "Nuclear reactors are not safe: passive cooling failed at older plants.",
            "arg3": "School uniforms reduce bullying among pupils, and they are safe.",
            **{f"other{i}": f"Unrelated debate number {i} about taxes, sport and music." for i in range(6)}}
    corpus, queries, qrels = _beir(tmp_path / "c", docs, {"arg1": docs["arg1"]}, [("arg1", "arg2", 1)])
    common = ["eval", "retrieval", "--corpus", corpus, "--queries", queries, "--qrels", qrels, "--lang", "en"]
    kept = _json(capsys, [*common, "--run-out", tmp_path / "kept.run"])
    assert (kept["hit@1"], kept["mrr@10"]) == (0.0, 0.5)
    dropped = _json(capsys, [*common, "--ignore-identical-ids", "--run-out", tmp_path / "dropped.run"])
    assert (dropped["hit@1"], dropped["mrr@10"], dropped["ignore_identical_ids"]) == (1.0, 1.0, True)
    assert [d for d, _ in read_trec_run(tmp_path / "dropped.run").rankings["arg1"]] == ["arg2", "arg3"]
    # a run that holds the self-hit, scored with and without the option
    for flag, mrr in (((), 0.5), (("--ignore-identical-ids",), 1.0)):
        assert _json(capsys, ["eval", "retrieval", "--run", tmp_path / "kept.run", "--qrels", qrels, *flag])["mrr@10"] == mrr
    compared = _json(capsys, ["eval", "compare", tmp_path / "kept.run", tmp_path / "dropped.run", "--qrels", qrels,
                              "--ignore-identical-ids"])
    assert compared["metrics"]["mrr@10"]["delta"] == 0.0


def test_the_examples_in_the_docstrings_hold():
    import doctest

    from ragkit.eval import metrics, retrieval, significance, trec

    for module in (metrics, retrieval, significance, trec):
        failed, tried = doctest.testmod(module)
        assert tried > 0 and failed == 0, module.__name__
