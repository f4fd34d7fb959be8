"""Converters from public dataset formats to BEIR files (corpus.jsonl, queries.jsonl,
qrels/test.tsv), so every collection goes through the same ``ragkit eval retrieval``."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import InputError
from ..stores.files import atomic_dir


def _read_json(path: Path, what: str):
    if not path.is_file():
        raise InputError(f"{what} {path}: no such file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} {path}: not JSON ({exc.msg} at line {exc.lineno})") from None


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
