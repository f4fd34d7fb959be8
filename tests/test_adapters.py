"""ragkit's retrieval in LangChain, LlamaIndex and neo4j-graphrag, with the real packages:
the documents a chain, a query engine or a GraphRAG pipeline gets are ragkit's ranking,
each with its citation."""

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


@pytest.mark.slow
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
                                                    ("ragkit.adapters.llama_index", "llama_index", "llamaindex"),
                                                    ("ragkit.adapters.neo4j_graphrag", "neo4j_graphrag",
                                                     "neo4j-graphrag")])
def test_a_missing_framework_names_its_extra(monkeypatch, module, package, extra):
    monkeypatch.setitem(sys.modules, package, None)
    monkeypatch.delitem(sys.modules, module, raising=False)
    for name in [m for m in sys.modules if m.startswith(package + ".")]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MissingExtraError, match=rf"is not installed: pip install 'ragkit-workbench\[{extra}\]'"):
        __import__(module)


@pytest.mark.slow
def test_neo4j_graphrag_retriever_in_its_graphrag_pipeline(manual_index_dir, neo4j_uri):
    """With a real Neo4j (neo4j-graphrag checks the server's version through the driver) and
    neo4j-graphrag's own GraphRAG pipeline: the context its LLM is given is ragkit's ranking."""
    import neo4j
    from neo4j_graphrag.generation import GraphRAG
    from neo4j_graphrag.llm import LLMInterface, LLMResponse

    from ragkit.adapters.neo4j_graphrag import RagkitNeo4jRetriever

    from .conftest import NEO4J_PASSWORD

    class Echo(LLMInterface):
        """An LLM that answers with the prompt it was given (what the pipeline fed it)."""

        def invoke(self, input, message_history=None, system_instruction=None):
            return LLMResponse(content=input)

        async def ainvoke(self, input, message_history=None, system_instruction=None):
            return LLMResponse(content=input)

    with neo4j.GraphDatabase.driver(neo4j_uri, auth=("neo4j", NEO4J_PASSWORD)) as driver:
        retriever = RagkitNeo4jRetriever(driver, manual_index_dir)
        result = retriever.search(query_text=QUESTION, top_k=3)
        expected = ragkit_ranking(manual_index_dir, 3)
        assert [(i.metadata["doc_id"], i.metadata["score"]) for i in result.items] == expected
        assert result.metadata["method"] == "bm25" and result.metadata["__retriever"] == "RagkitNeo4jRetriever"
        answer = GraphRAG(retriever=retriever, llm=Echo(model_name="echo")).search(
            query_text=QUESTION, retriever_config={"top_k": 2}, return_context=True)
        assert [i.metadata["doc_id"] for i in answer.retriever_result.items] == [d for d, _ in expected[:2]]
        assert "Kiểm tra mức dầu" in answer.answer and QUESTION in answer.answer
