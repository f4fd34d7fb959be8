"""Concept graphs built from text, without a model: concepts extracted by rule from each chunk
(``extract``), a graph of chunks, concepts and their co-occurrence (``graph``), personalized
PageRank over it (``ppr``), and multi-hop passage retrieval seeded from a question (``search``);
the graph's communities with their extractive summaries (``communities``), whether a question
is about the whole corpus (``broad``), the one build of both (``build``), and a drawing of a
question's walk (``draw``)."""
