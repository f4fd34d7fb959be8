"""ragkit's retrieval in LangChain and LlamaIndex, with the real packages: the documents a
chain or a query engine gets are ragkit's ranking, each with its citation."""

from __future__ import annotations

import sys

import pytest

from ragkit.config import LexicalConfig
from ragkit.errors import MissingExtraError
from ragkit.retrieval.search import load_index, retrieve

QUESTION = "Các bước khởi động máy nén khí?"


def ragkit_ranking(index_dir, k: int, method: str = "bm25") -> list[tuple[str, float]]:
    _, hits = retrieve(load_index(index_dir), QUESTION, LexicalConfig(k=k, method=method))
    return [(h.doc_id, h.score) for h in hits]


def test_langchain_retriever_in_a_chain(manual_index_dir):
    from langchain_core.prompts import PromptTemplate
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough

    from ragkit.adapters.langchain import RagkitRetriever

    retriever = RagkitRetriever(index=manual_index_dir, k=3)
    cited = lambda docs: "\n".join(f"[{d.metadata['rank']}] {d.metadata['doc_id']}: {d.page_content[:40]}"
                                   for d in docs)  # noqa: E731
    prompt = PromptTemplate.from_template("Context:\n{context}\nQuestion: {question}")
    chain = {"context": retriever | RunnableLambda(cited), "question": RunnablePassthrough()} | prompt
    text = chain.invoke(QUESTION).to_string()
    expected = ragkit_ranking(manual_index_dir, 3)
    assert text.startswith(f"Context:\n[1] {expected[0][0]}: ") and text.endswith(f"Question: {QUESTION}")
    docs = retriever.invoke(QUESTION)
    assert [(d.metadata["doc_id"], d.metadata["score"]) for d in docs] == expected
    assert docs[0].metadata == {"rank": 1, "doc_id": expected[0][0], "title": docs[0].metadata["title"],
                                "source": "may_nen_khi.md", "score": expected[0][1], "method": "bm25"}
    assert docs[0].id == expected[0][0] and "Kiểm tra mức dầu" in docs[0].page_content


def test_llama_index_retriever_in_a_query_engine(manual_index_dir, monkeypatch):
    from llama_index.core import Settings
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine

    from ragkit.adapters.llama_index import RagkitLlamaRetriever

    monkeypatch.setattr(Settings, "_llm", MockLLM())    # no answer is written: the sources are what is checked
    engine = RetrieverQueryEngine.from_args(RagkitLlamaRetriever(manual_index_dir, k=4), llm=Settings.llm,
                                            response_mode="no_text")
    response = engine.query(QUESTION)
    got = [(n.node.node_id, n.score) for n in response.source_nodes]
    assert got == ragkit_ranking(manual_index_dir, 4)
    assert [n.node.metadata["rank"] for n in response.source_nodes] == [1, 2, 3, 4]
    assert response.source_nodes[0].node.metadata["source"] == "may_nen_khi.md"


def test_a_loaded_index_and_its_limits(manual_index, manual_index_dir):
    from ragkit.adapters import RagkitSearch

    in_memory = RagkitSearch(manual_index, LexicalConfig(k=2))
    assert [(h.doc_id, c["rank"]) for h, c in in_memory.hits(QUESTION)] == \
        [(d, r) for r, (d, _) in enumerate(ragkit_ranking(manual_index_dir, 2), 1)]
    from ragkit.errors import InputError

    with pytest.raises(InputError, match="method 'hybrid': needs the index folder"):
        RagkitSearch(manual_index, LexicalConfig(method="hybrid")).hits(QUESTION)
    with pytest.raises(InputError, match="question: is empty"):
        in_memory.hits("  ")


@pytest.mark.parametrize("module, package, extra", [("ragkit.adapters.langchain", "langchain_core", "langchain"),
                                                    ("ragkit.adapters.llama_index", "llama_index", "llamaindex")])
def test_a_missing_framework_names_its_extra(monkeypatch, module, package, extra):
    monkeypatch.setitem(sys.modules, package, None)
    monkeypatch.delitem(sys.modules, module, raising=False)
    for name in [m for m in sys.modules if m.startswith(package + ".")]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MissingExtraError, match=rf"is not installed: pip install 'ragkit\[{extra}\]'"):
        __import__(module)
