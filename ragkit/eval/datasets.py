"""Converters from public dataset formats to BEIR files (corpus.jsonl, queries.jsonl,
qrels/test.tsv), so every collection goes through the same ``ragkit eval retrieval``."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import InputError
from ..inputs import read_text
from ..stores.files import atomic_dir


def _read_json(path: Path, what: str):
    try:
        return json.loads(read_text(path, what))
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} {path}: not JSON ({exc.msg} at line {exc.lineno})") from None


def read_json_or_lines(path: str | Path, what: str):
    """A JSON document, or JSON lines when the file is not one JSON document (one-line
    errors naming ``what`` and the file)."""
    path = Path(path)
    text = read_text(path, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        try:
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise InputError(f"{what} {path}: neither JSON nor JSON lines ({exc.msg})") from None


def alqac_to_beir(passages: str | Path, questions: str | Path, out_dir: str | Path) -> Path:
    """ALQAC 2023 (Vietnamese laws and legal statements) as a BEIR collection.

    Documents are articles, ``<law id>|<article id>``, titled with the law's name; queries
    are the statements; each statement's gold articles are its relevant documents.
    """
    laws = _read_json(Path(passages), "passages")
    items = _read_json(Path(questions), "questions")
    with atomic_dir(out_dir) as tmp:
        (tmp / "qrels").mkdir()
        with (tmp / "corpus.jsonl").open("w", encoding="utf-8") as corpus:
            for law in laws:
                for article in law["articles"]:
                    doc = {"_id": f"{law['id']}|{article['id']}", "title": law["id"],
                           "text": article["text"]}
                    corpus.write(json.dumps(doc, ensure_ascii=False) + "\n")
        with (tmp / "queries.jsonl").open("w", encoding="utf-8") as queries, \
                (tmp / "qrels" / "test.tsv").open("w", encoding="utf-8") as qrels:
            qrels.write("query-id\tcorpus-id\tscore\n")
            for item in items:
                queries.write(json.dumps({"_id": item["example_id"], "text": item["statement"]},
                                         ensure_ascii=False) + "\n")
                for gold in item["legal_passages"]:
                    qrels.write(f"{item['example_id']}\t{gold['law_id']}|{gold['article_id']}\t1\n")
    return Path(out_dir)


def musique_to_questions(beir_dir: str | Path, questions: str | Path, out: str | Path) -> Path:
    """MuSiQue's questions as ``eval answers`` input: each BEIR query with the gold answer and
    its aliases (from the original question file, matched by the question's text) and the
    supporting paragraphs (the qrels) as evidence ids."""
    from ..corpus import load_beir_queries

    beir_dir = Path(beir_dir)
    queries = load_beir_queries(beir_dir / "queries.jsonl")
    originals = {item["question"].strip(): item for item in _read_json(Path(questions), "questions")}
    qrels_path = beir_dir / "qrels.tsv" if (beir_dir / "qrels.tsv").is_file() else beir_dir / "qrels" / "test.tsv"
    if not qrels_path.is_file():
        raise InputError(f"qrels {qrels_path}: no such file")
    gold: dict[str, list[str]] = {}
    for line in qrels_path.read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, *_ = line.split("\t")
        gold.setdefault(qid, []).append(doc)
    rows = []
    for qid, text in queries.items():
        item = originals.get(text.strip())
        if item is None:
            raise InputError(f"questions {questions}: no question reads {text[:60]!r}")
        rows.append({"id": qid, "question": text, "answers": [item["answer"], *item.get("answer_aliases", [])],
                     "evidence": gold.get(qid, [])})
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return out
