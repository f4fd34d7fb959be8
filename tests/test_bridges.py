"""Evidence that keeps the answer in front of the reader: bridge documents reached through a
name the first evidence gives, and a text's first sentence kept with a sentence that leans on
it. Texts written for these tests."""

from __future__ import annotations

from ragkit.answer.bridges import bridge_documents
from ragkit.answer.weighing import Weigher, refers_back, relevant_sentences
from ragkit.config import LexicalConfig
from ragkit.corpus import Doc
from ragkit.pipelines.base import AskContext
from ragkit.pipelines.lexical import LexicalPipeline
from ragkit.retrieval.bm25 import BM25Index

DOCS = [
    Doc("d1", "Harbor Lights is a 1994 stage musical. Its score was written by Mara Quill, and it opened in "
              "the Velm Theatre.", "Harbor Lights"),
    Doc("d2", "Mara Quill (born 3 May 1951) is a pianist. Quill was raised in Ostrava Lane and studied at the "
              "Northgate Conservatory.", "Mara Quill (composer)"),
    Doc("d3", "The Velm Theatre is a playhouse on the Upper Velm river. It seats nine hundred people.",
        "Velm Theatre"),
    Doc("d4", "Ostrava Lane is a small market town known for its clock tower.", "Ostrava Lane"),
    Doc("d5", "Copper Road is a 2001 musical whose score was written by Ilse Brandt.", "Copper Road"),
]


def index() -> BM25Index:
    return BM25Index.build(DOCS)


def test_a_name_the_evidence_gives_brings_its_own_document():
    idx = index()
    question = "In which town did the composer of Harbor Lights grow up?"
    found = bridge_documents(question, [DOCS[0].text], [DOCS[0].title], Weigher.for_index(idx), idx.titled)
    names = [bridge.name for bridge, _ in found]
    assert names[0] == "Mara Quill"                # a title with a qualifier is still the name's page
    assert found[0][1].doc_id == "d2"
    assert all(b.source_rank == 0 for b, _ in found)


def test_the_questions_own_names_and_titles_already_read_are_no_bridges():
    idx = index()
    question = "Who wrote the score of Harbor Lights, which opened in the Velm Theatre?"
    found = bridge_documents(question, [DOCS[0].text, DOCS[2].text], [DOCS[0].title, DOCS[2].title],
                             Weigher.for_index(idx), idx.titled)
    assert [b.doc_id for b, _ in found] == ["d2"]      # not Harbor Lights, not the Velm Theatre


def test_a_name_no_document_is_titled_with_links_nothing():
    idx = index()
    found = bridge_documents("Who wrote the score of Copper Road?", [DOCS[4].text], [DOCS[4].title],
                             Weigher.for_index(idx), idx.titled)
    assert found == []          # Ilse Brandt has no document of her own


def test_the_lexical_pipeline_reads_the_bridge_and_says_so():
    question = "Where was the composer of the 1994 stage musical Harbor Lights raised?"
    config = LexicalConfig(k=1, steps=1)
    answer = LexicalPipeline().ask(question, (index(), None, None, None), config, AskContext(None, False, None))
    # both names of the top document's sentence have pages; the one that covers more of the
    # question comes first, and right after the document that names it
    assert [b["doc_id"] for b in answer.trace.bridge_documents] == ["d2", "d3"]
    assert answer.trace.bridge_documents[0] == {"name": "Mara Quill", "from": 1, "doc_id": "d2"}
    assert answer.trace.selected == ["d1", "d2", "d3"]
    assert any("Ostrava Lane" in e for e in answer.evidence)
    assert not any("Ostrava Lane" in r for r in answer.retrieved)     # retrieval's top 1 alone lacks it
    off = LexicalPipeline().ask(question, (index(), None, None, None), LexicalConfig(k=1, steps=1, bridges=0),
                                AskContext(None, False, None))
    assert off.trace.bridge_documents is None and not any("Ostrava Lane" in e for e in off.evidence)


def test_a_sentence_that_leans_on_the_first_brings_it():
    assert refers_back("It seats nine hundred people.")
    assert refers_back("Quill grew up in the town of Ostrava Lane.", "Mara Quill (composer)")
    assert not refers_back("Mara Quill grew up in Ostrava Lane.", "Mara Quill (composer)")
    assert not refers_back("The composer grew up in Ostrava Lane.", "Mara Quill")
    assert not refers_back("Máy nén khí cần được xả nước.", "Máy nén khí piston > Vận hành")
    assert refers_back("Quill was raised there.", "Handbook > People > Mara Quill")
    assert refers_back("Nó được lắp đặt năm 2019.")

    text = ("Mara Quill (born 3 May 1951) is a composer. She studied piano as a child. She wrote six musicals. "
            "Quill grew up in the town of Ostrava Lane.")
    idx = index()
    cut = relevant_sentences("Which town did Mara Quill grow up in?", [text], Weigher.for_index(idx), per_item=1,
                             neighbours=0, titles=["Mara Quill (composer)"])[0]
    assert cut.startswith("Mara Quill (born 3 May 1951)") and "Ostrava Lane" in cut
    assert "six musicals" not in cut
