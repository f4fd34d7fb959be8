"""The concept extraction of every chunk, kept beside the graph so that a rebuild extracts
only the chunks that changed: one JSON line per chunk (``extractions.jsonl.gz``) headed by
its hash (``chunk_hash``: the extractor's version, the dictionary's size and the text), read
back lazily (``ExtractionRows``, ``read_extractions``); the extraction itself runs here, in
a process per core past ``PARALLEL_FROM`` chunks (``extract_all``) or on a Ray cluster's
workers (``extract_batch``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from ..corpus import Doc
from ..runtime.progress import progress_bar
from ..text import document_language
from .extract import abbreviations, extract_concepts

EXTRACTOR = "rules-7"          # changes when extraction changes: every chunk is extracted again
PARALLEL_FROM = 20_000         # chunks to extract from which the build uses a process per core ...
PARALLEL_BATCH = 500           # ... handing each this many chunks at a time


def chunk_hash(doc: Doc, terms: Sequence[str] = ()) -> str:
    """What a chunk's concepts depend on: the extractor, the term list and the chunk's text."""
    digest = hashlib.sha1(f"{EXTRACTOR}\0{len(terms)}\0{doc.full_text}".encode("utf-8"))
    return digest.hexdigest()[:16]


class ExtractionRows(Mapping):
    """{chunk id: extraction row} (``{"hash", "abbreviations", "concepts"}``), each row kept as
    its JSON text and read when asked for. A million chunks hold some 22 million concept
    entries: as Python lists they took most of a build's memory; as text, a few times less,
    and a row is read once by the graph's assembly and written to ``extractions.jsonl`` as it is."""

    def __init__(self, texts: dict[str, str] | None = None):
        self._texts: dict[str, str] = texts if texts is not None else {}

    def __getitem__(self, chunk_id: str) -> dict:
        return json.loads(self._texts[chunk_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._texts

    def text(self, chunk_id: str) -> str:
        """The row of ``chunk_id`` as JSON text."""
        return self._texts[chunk_id]


def unchanged_row(previous: Mapping[str, dict], chunk_id: str, digest: str) -> str | None:
    """The JSON text of ``chunk_id``'s row in ``previous`` when its hash is ``digest``, else
    None (rows of another text are not serialized only to be dropped)."""
    if chunk_id not in previous:
        return None
    if isinstance(previous, ExtractionRows):
        text = previous.text(chunk_id)
        return text if _hash_of(text) == digest else None
    row = previous[chunk_id]
    return json.dumps(row, ensure_ascii=False) if row.get("hash") == digest else None


def text_of(rows: Mapping[str, dict], chunk_id: str) -> str:
    return rows.text(chunk_id) if isinstance(rows, ExtractionRows) else json.dumps(rows[chunk_id], ensure_ascii=False)


_DECODER = json.JSONDecoder()
_HASH_PREFIX = '{"hash": '
_CHUNK_PREFIX = '{"chunk_id": '


def _hash_of(text: str) -> str | None:
    """The ``hash`` of a row's JSON text, read from its start where ``build`` wrote it."""
    if text.startswith(_HASH_PREFIX):
        return _DECODER.raw_decode(text, len(_HASH_PREFIX))[0]
    return json.loads(text).get("hash")


def jsonl_line(chunk_id: str, text: str) -> str:
    """``json.dumps({"chunk_id": chunk_id, **row}, ensure_ascii=False)`` from the row's text."""
    head = _CHUNK_PREFIX + json.dumps(chunk_id, ensure_ascii=False)
    return head + "}" if text == "{}" else f"{head}, {text[1:]}"


def read_extractions(directory: str | Path) -> ExtractionRows | None:
    """{chunk id: extraction row} of a saved concept graph, or None when there is none."""
    path = Path(directory) / "extractions.jsonl"
    if not path.is_file():
        return None
    texts: dict[str, str] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            line = line.rstrip("\n")
            if not line.strip():
                continue
            if line.startswith(_CHUNK_PREFIX):       # as write_files writes it: no parse
                chunk_id, end = _DECODER.raw_decode(line, len(_CHUNK_PREFIX))
                rest = line[end:]
                if rest == "}" or rest.startswith(", "):
                    texts[chunk_id] = "{" + rest[2:] if rest != "}" else "{}"
                    continue
            row = json.loads(line)
            chunk_id = row.pop("chunk_id")
            texts[chunk_id] = json.dumps(row, ensure_ascii=False)
    return ExtractionRows(texts)


def extract_row(doc: Doc, terms: Sequence[str] = ()) -> dict:
    """One chunk's extraction row, without its hash: its abbreviations and its concepts."""
    text = doc.full_text
    found = extract_concepts(text, language=document_language(text), terms=terms, title=doc.title)
    return {"abbreviations": abbreviations(text),
            "concepts": [[m.key, m.label, m.how, list(m.sentences)] for m in found]}


def _extract_text(doc: Doc, terms: Sequence[str] = ()) -> str:
    return json.dumps(extract_row(doc, terms), ensure_ascii=False)


def extract_batch(batch: list[Doc], terms: tuple[str, ...]) -> list[str]:
    return [_extract_text(doc, terms) for doc in batch]


def extract_all(docs: list[Doc], terms: tuple[str, ...], progress: bool | None,
                 workers: int | None) -> Iterator[str]:
    """``extract_row`` of each of ``docs`` as JSON text, in order: in this process, or in ``workers``
    processes taking batches of ``PARALLEL_BATCH`` chunks, when there are ``PARALLEL_FROM``
    or more. The workers are forked where the system can (they only run the rules on text),
    so that a script or notebook without a ``__main__`` guard works as it did."""
    from ..runtime.threads import thread_count

    workers = thread_count() if workers is None else max(1, workers)
    bar = progress_bar(total=len(docs), desc="concepts", unit="chunk", progress=progress)
    try:
        if workers == 1 or len(docs) < PARALLEL_FROM:
            for doc in docs:
                yield _extract_text(doc, terms)
                bar.update(1)
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        batches = [docs[i:i + PARALLEL_BATCH] for i in range(0, len(docs), PARALLEL_BATCH)]
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(method)) as pool:
            for batch, texts in zip(batches, pool.map(extract_batch, batches, [terms] * len(batches))):
                yield from texts
                bar.update(len(batch))
    finally:
        bar.close()
